package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// held is the engine's count and queue q's.
func held(e *engine.Engine, q string) (total, queue int64) {
	m := e.MemoryHeld()
	for _, u := range m.Queues {
		if u.Queue == q {
			queue = u.Held
		}
	}
	return m.Held, queue
}

func kib(n int) []byte { return make([]byte, n<<10) }

// TestMemory_CountFollowsEveryTransition drives each transition and checks
// that queue q's count grows when it adds, falls when it removes, the
// engine's is back to 0 once nothing is left, and both agree with a count from scratch (the
// invariants, which include a snapshot restore) after every step.
// (issue 22, part 2)
func TestMemory_CountFollowsEveryTransition(t *testing.T) {
	type step struct {
		name string
		do   func(t *testing.T, e *engine.Engine, c *et.Clock, s *state)
		// grows: the count must be above the one before; shrinks: below;
		// base: back to the empty engine's 0.
		grows, shrinks, base bool
	}
	tests := []struct {
		name  string
		cfg   []func(*engine.Config)
		steps []step
	}{
		{name: "EnqueueReserveAck", steps: []step{
			{name: "enqueue", grows: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				p := et.Job("q")
				p.Payload = kib(1)
				p.Custom = map[string]string{"k": "v"}
				p.IdempotencyKey = "a-key-that-is-not-hex"
				s.id = et.MustEnqueue(t, e, c.Now(), p)
			}},
			{name: "reserve with worker and request id", grows: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				ds, err := e.Reserve(c.Now(), engine.ReserveParams{Queue: "q", WorkerID: "w1", RequestID: "r1"})
				if err != nil || len(ds) != 1 {
					t.Fatalf("reserve: %v %v", ds, err)
				}
				s.ref = engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}
			}},
			{name: "ack", shrinks: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				if err := e.Ack(c.Now(), s.ref); err != nil {
					t.Fatal(err)
				}
			}},
			{name: "key and request id expire", base: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				e.Tick(c.Advance(time.Hour))
			}},
		}},
		{name: "NackRetryReleaseExtend", steps: []step{
			{name: "enqueue", grows: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				s.id = et.MustEnqueue(t, e, c.Now(), et.Job("q"))
			}},
			{name: "reserve", grows: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				d := et.MustReserveOne(t, e, c.Now(), "q")
				s.ref = engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}
			}},
			{name: "nack with reason: history and last reason", grows: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				if _, err := e.Nack(c.Now(), engine.NackParams{LeaseRef: s.ref, Reason: strings.Repeat("x", 500)}); err != nil {
					t.Fatal(err)
				}
			}},
			{name: "reserve again", do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				d := et.MustReserveOne(t, e, c.Now(), "q")
				s.ref = engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}
			}},
			{name: "extend", do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				if _, err := e.ExtendLease(c.Now(), engine.ExtendParams{LeaseRef: s.ref}); err != nil {
					t.Fatal(err)
				}
			}},
			{name: "release", grows: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				if err := e.Release(c.Now(), s.ref); err != nil {
					t.Fatal(err)
				}
			}},
			{name: "reserve and ack", base: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				d := et.MustReserveOne(t, e, c.Now(), "q")
				if err := e.Ack(c.Now(), engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}); err != nil {
					t.Fatal(err)
				}
			}},
		}},
		{name: "DeadLetterRecordsForwardDrainDeleteSweepRequeue", cfg: []func(*engine.Config){
			et.WithRetention(time.Minute),
			et.WithQueue(engine.QueueConfig{Name: "q", DeadLetterQueue: "dlq"}),
		}, steps: []step{
			{name: "enqueue three", grows: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				for range 3 {
					p := et.Job("q")
					p.Payload = kib(2)
					et.MustEnqueue(t, e, c.Now(), p)
				}
			}},
			{name: "dead-letter all three (records and forwarded copies)", grows: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				for range 3 {
					d := et.MustReserveOne(t, e, c.Now(), "q")
					if _, err := e.Nack(c.Now(), engine.NackParams{LeaseRef: engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}, Directive: engine.DirectiveDeadLetter}); err != nil {
						t.Fatal(err)
					}
				}
			}},
			{name: "drain one", shrinks: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				if recs, err := e.DrainDeadLetters(c.Now(), engine.DrainParams{Queue: "q"}); err != nil || len(recs) != 1 {
					t.Fatalf("drain: %v %v", recs, err)
				}
			}},
			{name: "delete one", shrinks: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				recs, _ := e.ListDeadLetters("q", engine.Page{})
				if res := e.DeleteDeadLetters(c.Now(), []engine.JobID{recs[0].Job.ID}); res[0].Err != nil {
					t.Fatal(res[0].Err)
				}
			}},
			{name: "requeue the last: the record's overhead goes", shrinks: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				recs, _ := e.ListDeadLetters("q", engine.Page{})
				if res := e.RequeueDeadLetters(c.Now(), []engine.JobID{recs[0].Job.ID}); res[0].Err != nil {
					t.Fatal(res[0].Err)
				}
			}},
			{name: "admin dead-letter it, then the sweep", shrinks: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				jobs, _ := e.ListJobs("q", engine.StateReady, engine.Page{})
				if res := e.DeadLetterJobs(c.Now(), []engine.JobID{jobs[0].ID}, "operator"); res[0].Err != nil {
					t.Fatal(res[0].Err)
				}
				e.Tick(c.Advance(2 * time.Minute))
			}},
			{name: "drain the forwarded copies", base: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				for {
					ds, err := e.Reserve(c.Now(), engine.ReserveParams{Queue: "dlq", N: 10})
					if err != nil {
						t.Fatal(err)
					}
					if len(ds) == 0 {
						break
					}
					for _, d := range ds {
						if err := e.Ack(c.Now(), engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}); err != nil {
							t.Fatal(err)
						}
					}
				}
			}},
		}},
		{name: "LeaseExpiryToDeathWithoutRetention", steps: []step{
			{name: "enqueue scheduled", grows: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				p := et.Job("q")
				p.ScheduledAt = c.Now().Add(time.Second)
				p.MaxAttempts = 1
				et.MustEnqueue(t, e, c.Now(), p)
			}},
			{name: "promote and reserve", grows: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				c.Advance(2 * time.Second)
				ds, err := e.Reserve(c.Now(), engine.ReserveParams{Queue: "q", WorkerID: "w", Lease: time.Second})
				if err != nil || len(ds) != 1 {
					t.Fatalf("reserve: %v %v", ds, err)
				}
			}},
			{name: "the lease expires on the final attempt: dropped", base: true, do: func(t *testing.T, e *engine.Engine, c *et.Clock, s *state) {
				t.Helper()
				e.Tick(c.Advance(time.Minute))
			}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := et.New(t, tt.cfg...)
			c := et.NewClock()
			s := &state{}
			before := int64(0)
			for _, st := range tt.steps {
				st.do(t, e, c, s)
				total, got := held(e, "q")
				switch {
				case st.grows && got <= before:
					t.Fatalf("%s: queue q holds %d, was %d: expected growth", st.name, got, before)
				case st.shrinks && got >= before:
					t.Fatalf("%s: queue q holds %d, was %d: expected a release", st.name, got, before)
				case st.base && total != 0:
					t.Fatalf("%s: held %d with nothing left, want 0", st.name, total)
				}
				et.RequireInvariants(t, e)
				before = got
			}
		})
	}
}

type state struct {
	id  engine.JobID
	ref engine.LeaseRef
}

// TestMemory_EnqueueChargeIsWhatItAdds: the charge an enqueue is checked
// against is the growth of the count it causes, for each shape of job.
func TestMemory_EnqueueChargeIsWhatItAdds(t *testing.T) {
	clock := et.NewClock()
	shapes := []struct {
		name string
		mut  func(*engine.EnqueueParams)
	}{
		{name: "Bare"},
		{name: "Payload", mut: func(p *engine.EnqueueParams) { p.Payload = kib(3) }},
		{name: "Custom", mut: func(p *engine.EnqueueParams) { p.Custom = map[string]string{"a": "1", "bb": "22"} }},
		{name: "Scheduled", mut: func(p *engine.EnqueueParams) { p.ScheduledAt = clock.Now().Add(time.Hour) }},
		{name: "HexKey", mut: func(p *engine.EnqueueParams) { p.IdempotencyKey = strings.Repeat("ab", 16) }},
		{name: "PlainKey", mut: func(p *engine.EnqueueParams) { p.IdempotencyKey = "order-42" }},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			p := et.Job("q")
			if sh.mut != nil {
				sh.mut(&p)
			}
			free := et.New(t)
			et.MustEnqueue(t, free, clock.Now(), p)
			grown, _ := held(free, "q")
			// A budget of exactly that fits; one byte less refuses.
			exact := et.New(t, func(c *engine.Config) { c.Limits.MaxMemoryBytes = grown })
			if _, err := exact.Enqueue(clock.Now(), p); err != nil {
				t.Fatalf("budget %d = the job's growth: %v", grown, err)
			}
			short := et.New(t, func(c *engine.Config) { c.Limits.MaxMemoryBytes = grown - 1 })
			if _, err := short.Enqueue(clock.Now(), p); !errors.Is(err, engine.ErrMemoryFull) {
				t.Fatalf("budget %d, one below the job's growth: err = %v, want ErrMemoryFull", grown-1, err)
			}
		})
	}
}

// TestMemory_RefusesNewJobsAndKeepsDraining: at the budget, enqueues are
// refused (naming the limit, changing nothing) while reserve, extend,
// release, nack and ack still work; once drained, enqueues are accepted
// again. Table: the global budget and a queue's own.
// (issue 22, part 2: the anchor is Redis maxmemory with noeviction)
func TestMemory_RefusesNewJobsAndKeepsDraining(t *testing.T) {
	const budget = 20 << 10 // 20 KiB: a dozen or so 1 KiB jobs
	tests := []struct {
		name    string
		cfg     func(*engine.Config)
		wantMsg string
		other   bool // whether queue "other" still takes jobs
	}{
		{name: "Global", cfg: func(c *engine.Config) { c.Limits.MaxMemoryBytes = budget },
			wantMsg: "limits.max_memory_bytes 20480"},
		{name: "PerQueue", cfg: func(c *engine.Config) {
			c.Queues = append(c.Queues, engine.QueueConfig{Name: "q", MaxMemoryBytes: et.Ptr[int64](budget)})
		}, wantMsg: `memory budget of queue "q" reached`, other: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := et.New(t, tt.cfg)
			c := et.NewClock()
			job := func(q string) engine.EnqueueParams {
				p := et.Job(q)
				p.Payload = kib(1)
				return p
			}
			accepted := 0
			var refusal error
			for range 100 {
				if _, err := e.Enqueue(c.Now(), job("q")); err != nil {
					refusal = err
					break
				}
				accepted++
			}
			if refusal == nil || !errors.Is(refusal, engine.ErrMemoryFull) || !strings.Contains(refusal.Error(), tt.wantMsg) {
				t.Fatalf("after %d jobs: err = %v, want ErrMemoryFull naming %q", accepted, refusal, tt.wantMsg)
			}
			if total, _ := held(e, "q"); total > budget || accepted < 10 {
				t.Fatalf("held %d of %d after %d jobs", total, budget, accepted)
			}
			before := e.Digest()
			if _, err := e.Enqueue(c.Now(), job("q")); !errors.Is(err, engine.ErrMemoryFull) {
				t.Fatalf("second refusal: %v", err)
			}
			if e.Digest() != before {
				t.Fatal("a refused enqueue changed the state")
			}
			res, err := e.EnqueueBatch(c.Now(), []engine.EnqueueParams{job("q"), job("q")})
			if err != nil || !errors.Is(res[0].Err, engine.ErrMemoryFull) || !errors.Is(res[1].Err, engine.ErrMemoryFull) {
				t.Fatalf("batch at the budget: %v %+v", err, res)
			}
			if _, err := e.Enqueue(c.Now(), job("other")); (err == nil) != tt.other {
				t.Fatalf("enqueue to another queue: %v, want accepted %v", err, tt.other)
			}

			// Draining works at the budget: extend, release, nack (a retry
			// re-adds nothing new), ack.
			d := et.MustReserveOne(t, e, c.Now(), "q")
			ref := engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}
			if _, err := e.ExtendLease(c.Now(), engine.ExtendParams{LeaseRef: ref}); err != nil {
				t.Fatalf("extend at the budget: %v", err)
			}
			if err := e.Release(c.Now(), ref); err != nil {
				t.Fatalf("release at the budget: %v", err)
			}
			d = et.MustReserveOne(t, e, c.Now(), "q")
			if _, err := e.Nack(c.Now(), engine.NackParams{LeaseRef: engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}, Reason: "busy"}); err != nil {
				t.Fatalf("nack at the budget: %v", err)
			}
			acked := 0
			for {
				ds, err := e.Reserve(c.Now(), engine.ReserveParams{Queue: "q", N: 100})
				if err != nil {
					t.Fatal(err)
				}
				if len(ds) == 0 {
					break
				}
				for _, d := range ds {
					if err := e.Ack(c.Now(), engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}); err != nil {
						t.Fatalf("ack at the budget: %v", err)
					}
					acked++
				}
			}
			if acked != accepted {
				t.Fatalf("drained %d jobs, %d were accepted", acked, accepted)
			}
			if _, q := held(e, "q"); q != 0 {
				t.Fatalf("queue q holds %d bytes once drained", q)
			}
			et.MustEnqueue(t, e, c.Now(), job("q"))
			et.RequireInvariants(t, e)
		})
	}
}

// TestMemory_DuplicateKeyAnsweredAtTheBudget: a producer's retry of an
// accepted keyed enqueue still gets its job, even when the budget is full.
func TestMemory_DuplicateKeyAnsweredAtTheBudget(t *testing.T) {
	e := et.New(t, func(c *engine.Config) { c.Limits.MaxMemoryBytes = 4 << 10 })
	c := et.NewClock()
	p := et.Job("q")
	p.Payload = kib(3)
	p.IdempotencyKey = "k1"
	id := et.MustEnqueue(t, e, c.Now(), p)
	q := et.Job("q")
	q.Payload = kib(3)
	if _, err := e.Enqueue(c.Now(), q); !errors.Is(err, engine.ErrMemoryFull) {
		t.Fatalf("a second job: %v, want ErrMemoryFull", err)
	}
	res, err := e.Enqueue(c.Now(), p)
	if err != nil || !res.Duplicate || res.JobID != id {
		t.Fatalf("retry of the accepted job: %+v %v", res, err)
	}
}

// TestMemory_ConfigValidation: budgets must not be negative.
func TestMemory_ConfigValidation(t *testing.T) {
	tests := []struct {
		name, want string
		mut        func(*engine.Config)
	}{
		{name: "Global", want: "limits.max_memory_bytes", mut: func(c *engine.Config) { c.Limits.MaxMemoryBytes = -1 }},
		{name: "Queue", want: `queues["q"].max_memory_bytes`, mut: func(c *engine.Config) {
			c.Queues = []engine.QueueConfig{{Name: "q", MaxMemoryBytes: et.Ptr[int64](-1)}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := et.Config(tt.mut).Validate()
			if !errors.Is(err, engine.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %s", err, tt.want)
			}
		})
	}
}

// TestMemory_CountTracksTheHeap measures the heap an engine's jobs take
// (runtime.MemStats) against the engine's count of them: the count must not
// fall short of the heap by more than a tenth, or a budget would let the
// process grow past what its limit allows. The figures are logged; they are
// what memory.go's constants are derived from.
func TestMemory_CountTracksTheHeap(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("hundreds of thousands of jobs: skipped under -short and -race")
	}
	tests := []struct {
		name    string
		n       int
		payload int
		key     bool
	}{
		{name: "EmptyPayloadNoKey", n: 200_000},
		{name: "1KiBPayloadWithKey", n: 50_000, payload: 1024, key: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			e := engine.New(engine.DefaultConfig())
			now := et.Epoch
			for i := range tt.n {
				p := engine.EnqueueParams{Queue: "bench", JobType: "job", Payload: make([]byte, tt.payload)}
				if tt.key {
					p.IdempotencyKey = fmt.Sprintf("%032x", i)
				}
				if _, err := e.Enqueue(now, p); err != nil {
					t.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			heapPer := float64(after.HeapAlloc-before.HeapAlloc) / float64(tt.n)
			countPer := float64(e.MemoryHeldTotal()) / float64(tt.n)
			t.Logf("heap %.1f bytes per job, counted %.1f (count/heap %.2f)", heapPer, countPer, countPer/heapPer)
			if countPer < 0.9*heapPer {
				t.Fatalf("the count (%.1f bytes per job) falls short of the heap (%.1f)", countPer, heapPer)
			}
			runtime.KeepAlive(e)
		})
	}
}

// TestMemory_RestoreDoesNotDoubleTheState measures what Restore allocates
// (runtime.MemStats.TotalAlloc) against the live heap of the state it
// builds: the decoder streams, copying each payload once into the job that
// keeps it, so restoring a node's state needs about that state's memory,
// not twice it (a node must restart within the limit it ran in).
func TestMemory_RestoreDoesNotDoubleTheState(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("tens of thousands of 1 KiB jobs: skipped under -short and -race")
	}
	const n = 50_000
	data, want := snapshotOf1KiBJobs(t, n)
	var before, after, with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	dst := engine.New(engine.DefaultConfig())
	if err := dst.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := dst.MemoryHeldTotal(); got != want {
		t.Fatalf("restored engine counts %d bytes, the original %d", got, want)
	}
	runtime.GC()
	runtime.ReadMemStats(&with)
	runtime.KeepAlive(dst)
	dst = nil
	runtime.GC()
	runtime.ReadMemStats(&without)
	allocated := float64(after.TotalAlloc - before.TotalAlloc)
	kept := float64(with.HeapAlloc) - float64(without.HeapAlloc)
	t.Logf("restore of %d 1 KiB jobs with keys (%.1f MB snapshot): allocated %.1f MB in all, keeps %.1f MB live (%.2fx), counted %.1f MB",
		n, float64(len(data))/1e6, allocated/1e6, kept/1e6, allocated/kept, float64(want)/1e6)
	if allocated > 1.5*kept {
		t.Fatalf("restore allocated %.1f MB for %.1f MB of state", allocated/1e6, kept/1e6)
	}
}

// snapshotOf1KiBJobs is the snapshot of n waiting 1 KiB jobs with a
// client's key each, and the count of bytes they hold.
func snapshotOf1KiBJobs(t *testing.T, n int) ([]byte, int64) {
	t.Helper()
	src := engine.New(engine.DefaultConfig())
	for i := range n {
		p := engine.EnqueueParams{Queue: "q", JobType: "job", Payload: make([]byte, 1024), IdempotencyKey: fmt.Sprintf("%032x", i)}
		if _, err := src.Enqueue(et.Epoch, p); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := src.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), src.MemoryHeldTotal()
}

// TestRestore_ManyIdempotencyKeys: a snapshot of tens of thousands of keys
// restores. The decoder returned each key as a view of its buffer and read
// the key's job id and time before packing it, so a key that straddled a
// refill of the buffer was overwritten: a node holding about 36,000 or more
// keyed jobs could not restart ("FIFO and index disagree"). Table: sizes
// around and well past the first failing one, plain and packed keys.
func TestRestore_ManyIdempotencyKeys(t *testing.T) {
	for _, tc := range []struct {
		n     int
		plain bool
	}{{n: 5000}, {n: 36326, plain: true}, {n: 50000}, {n: 50000, plain: true}} {
		t.Run(fmt.Sprintf("%d_plain_%v", tc.n, tc.plain), func(t *testing.T) {
			src := engine.New(engine.DefaultConfig())
			for i := range tc.n {
				key := fmt.Sprintf("%032x", i)
				if tc.plain {
					key = fmt.Sprintf("order-%d", i)
				}
				if _, err := src.Enqueue(et.Epoch, engine.EnqueueParams{Queue: "q", JobType: "job", Payload: make([]byte, 10), IdempotencyKey: key}); err != nil {
					t.Fatal(err)
				}
			}
			var buf bytes.Buffer
			if err := src.Snapshot(&buf); err != nil {
				t.Fatal(err)
			}
			dst := engine.New(engine.DefaultConfig())
			if err := dst.Restore(&buf); err != nil {
				t.Fatalf("restore of %d keys: %v", tc.n, err)
			}
			if dst.Digest() != src.Digest() {
				t.Fatal("restored state differs")
			}
		})
	}
}
