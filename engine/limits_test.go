package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

func TestEnqueue_Limits(t *testing.T) {
	t.Parallel()
	small := func(c *engine.Config) {
		c.Limits.MaxPayloadBytes = 10
		c.Limits.MaxCustomFields = 2
		c.Limits.MaxCustomFieldBytes = 8
		c.Limits.MaxJobTypeBytes = 5
	}
	tests := []struct {
		name    string
		mut     func(*engine.EnqueueParams)
		want    error
		wantMsg string
	}{
		{name: "WithinLimits", mut: func(p *engine.EnqueueParams) {
			p.Payload = make([]byte, 10)
			p.Custom = map[string]string{"a": "1234567"}
		}},
		{name: "PayloadTooLarge", mut: func(p *engine.EnqueueParams) { p.Payload = make([]byte, 11) }, want: engine.ErrInvalidArgument, wantMsg: "payload: is 11 bytes, above limits.max_payload_bytes 10"},
		{name: "JobTypeRequired", mut: func(p *engine.EnqueueParams) { p.JobType = "" }, want: engine.ErrInvalidArgument, wantMsg: "job_type: is required"},
		{name: "JobTypeTooLong", mut: func(p *engine.EnqueueParams) { p.JobType = "abcdef" }, want: engine.ErrInvalidArgument, wantMsg: "job_type: is 6 bytes, above limits.max_job_type_bytes 5"},
		{name: "JobTypeNotUTF8", mut: func(p *engine.EnqueueParams) { p.JobType = "a\xff" }, want: engine.ErrInvalidArgument, wantMsg: "job_type: must be valid UTF-8"},
		{name: "TooManyCustomFields", mut: func(p *engine.EnqueueParams) { p.Custom = map[string]string{"a": "", "b": "", "c": ""} }, want: engine.ErrInvalidArgument, wantMsg: "custom: has 3 fields, above limits.max_custom_fields 2"},
		{name: "CustomFieldTooLargeNamesSmallestKey", mut: func(p *engine.EnqueueParams) { p.Custom = map[string]string{"zz": "123456789", "b": "123456789"} },
			want: engine.ErrInvalidArgument, wantMsg: `custom["b"]: key plus value is 10 bytes, above limits.max_custom_field_bytes 8`},
		{name: "CustomEmptyKey", mut: func(p *engine.EnqueueParams) { p.Custom = map[string]string{"": "x"} }, want: engine.ErrInvalidArgument, wantMsg: `custom[""]: key must not be empty`},
		{name: "CustomNotUTF8", mut: func(p *engine.EnqueueParams) { p.Custom = map[string]string{"k": "\xff"} }, want: engine.ErrInvalidArgument, wantMsg: "valid UTF-8"},
		{name: "IdempotencyKeyTooLong", mut: func(p *engine.EnqueueParams) { p.IdempotencyKey = strings.Repeat("k", 257) }, want: engine.ErrInvalidArgument, wantMsg: "idempotency_key: is 257 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, small)
			p := engine.EnqueueParams{Queue: "q", JobType: "job"}
			tt.mut(&p)
			before := e.Digest()
			_, err := e.Enqueue(clock.Now(), p)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %v, want %v with %q", err, tt.want, tt.wantMsg)
			}
			if e.Digest() != before {
				t.Fatal("a refused enqueue changed the state")
			}
		})
	}
}

func TestEnqueue_PayloadIsCopied(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	p := et.Job("q")
	p.Custom = map[string]string{"k": "v"}
	id := et.MustEnqueue(t, e, clock.Now(), p)
	p.Payload[0] = 'X'
	p.Custom["k"] = "changed"
	j, _ := e.GetJob(id)
	if string(j.Payload) != "payload" || j.Custom["k"] != "v" {
		t.Fatalf("engine shares the caller's memory: %q %v", j.Payload, j.Custom)
	}
}

func TestEnqueueBatch(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, func(c *engine.Config) { c.Limits.MaxBatchSize = 3 })
	if _, err := e.EnqueueBatch(clock.Now(), make([]engine.EnqueueParams, 4)); !errors.Is(err, engine.ErrInvalidArgument) || !strings.Contains(err.Error(), "limits.max_batch_size 3") {
		t.Fatalf("oversized batch: %v", err)
	}
	bad := et.Job("q")
	bad.Priority = et.Ptr[uint32](11)
	res, err := e.EnqueueBatch(clock.Now(), []engine.EnqueueParams{et.Job("q"), bad, et.Job("q")})
	if err != nil || len(res) != 3 || res[0].Err != nil || !errors.Is(res[1].Err, engine.ErrInvalidArgument) || res[2].Err != nil {
		t.Fatalf("batch results %+v %v", res, err)
	}
	if res[2].Result.JobID != res[0].Result.JobID+1 {
		t.Fatalf("ids %d, %d: the bad item must not take an id", res[0].Result.JobID, res[2].Result.JobID)
	}
}

func TestQueueMaxLength_RefusesWhenFull(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "q", MaxLength: et.Ptr(2)}))
	et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	_, err := e.Enqueue(clock.Now(), et.Job("q"))
	var fe *engine.FieldError
	if !errors.Is(err, engine.ErrQueueFull) || !errors.As(err, &fe) || !strings.Contains(err.Error(), "max_length") {
		t.Fatalf("enqueue to a full queue: %v, want ErrQueueFull", err)
	}
	d := et.MustReserveOne(t, e, clock.Now(), "q")
	if _, err := e.Enqueue(clock.Now(), et.Job("q")); !errors.Is(err, engine.ErrQueueFull) {
		t.Fatal("a reserved job still counts toward the length")
	}
	if err := e.Ack(clock.Now(), et.Ref(d)); err != nil {
		t.Fatal(err)
	}
	et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, func(c *engine.Config) {
		c.Limits.IdempotencyWindow = time.Hour
		c.Limits.MaxIdempotencyKeys = 2
		c.Limits.IdempotencyMinWindow = time.Hour // a full store refuses: see TestIdempotencyKeyStoreFull
	})
	p := et.Job("q")
	p.IdempotencyKey = "order-1"
	first, err := e.Enqueue(clock.Now(), p)
	if err != nil || first.Duplicate {
		t.Fatal(first, err)
	}
	again, err := e.Enqueue(clock.Advance(time.Minute), p)
	if err != nil || !again.Duplicate || again.JobID != first.JobID || again.State != engine.StateReady {
		t.Fatalf("repeat = %+v %v, want the original job", again, err)
	}
	other := et.Job("other")
	other.IdempotencyKey = "order-1" // keys are per queue
	if res, _ := e.Enqueue(clock.Now(), other); res.Duplicate {
		t.Fatal("a key on another queue matched")
	}
	third := et.Job("q")
	third.IdempotencyKey = "order-3"
	if _, err := e.Enqueue(clock.Now(), third); !errors.Is(err, engine.ErrCapacity) {
		t.Fatalf("key store full: %v, want ErrCapacity", err)
	}
	// The original is acked: the repeat still dedupes, state unknown.
	d := et.MustReserveOne(t, e, clock.Now(), "q")
	_ = e.Ack(clock.Now(), et.Ref(d))
	if res, _ := e.Enqueue(clock.Now(), p); !res.Duplicate || res.State != engine.StateUnknown {
		t.Fatalf("repeat after ack: %+v", res)
	}
	if next, ok := e.NextDeadline(); !ok || !next.Equal(et.Epoch.Add(time.Hour)) {
		t.Fatalf("NextDeadline = %v, want the key expiry", next)
	}
	if res := e.Tick(et.Epoch.Add(time.Hour)); res.KeysExpired != 1 {
		t.Fatalf("tick %+v", res)
	}
	if res, _ := e.Enqueue(clock.Advance(time.Hour), p); res.Duplicate || res.JobID == first.JobID {
		t.Fatalf("after the window a new job is added: %+v", res)
	}
	et.RequireInvariants(t, e)
}

// TestRememberedKeys follows the counts /metrics reports against
// max_idempotency_keys: a key and a reserve request id are counted once (a
// repeat adds nothing); a key is forgotten by the tick that passes its
// window, a request id by the one that passes the lease its reserve granted.
func TestRememberedKeys(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, func(c *engine.Config) { c.Limits.IdempotencyWindow = time.Minute; c.Limits.MaxIdempotencyKeys = 10 })
	want := func(step string, keys, requests int) {
		t.Helper()
		got := e.RememberedKeys()
		if w := (engine.RememberedKeys{IdempotencyKeys: keys, ReserveRequestIDs: requests, Limit: 10}); got != w {
			t.Errorf("%s: RememberedKeys = %+v, want %+v", step, got, w)
		}
	}
	want("empty", 0, 0)
	keyed := func(key string) engine.EnqueueParams {
		p := et.Job("q")
		p.IdempotencyKey = key
		return p
	}
	et.MustEnqueue(t, e, clock.Now(), keyed("a"))
	et.MustEnqueue(t, e, clock.Now(), keyed("b"))
	et.MustEnqueue(t, e, clock.Now(), et.Job("q")) // no key: nothing to remember
	want("two keyed enqueues", 2, 0)
	et.MustEnqueue(t, e, clock.Now(), keyed("a"))
	want("a repeated key", 2, 0)
	if _, err := e.Reserve(clock.Advance(30*time.Second), engine.ReserveParams{Queue: "q", N: 1, Lease: 45 * time.Second, RequestID: "r1"}); err != nil {
		t.Fatal(err)
	}
	want("a reserve with a request id", 2, 1)
	e.Tick(clock.Advance(30 * time.Second))
	want("the keys' window passed", 0, 1)
	e.Tick(clock.Advance(30 * time.Second))
	want("the reserve's lease passed", 0, 0)
}

// TestIdempotencyKeyStoreFull: once max_idempotency_keys are held, a new key
// makes the oldest be forgotten before its window ends if it has been kept
// idempotency_min_window, and is refused otherwise; 0 never forgets early.
// A minimum above the window is valid and means the window (TestIdempotencyKey
// runs with the two equal).
func TestIdempotencyKeyStoreFull(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		minWindow time.Duration
		age       time.Duration // of the oldest key when the new one comes
		forgets   bool
	}{
		{"the oldest kept the minimum is forgotten", 20 * time.Second, 20 * time.Second, true},
		{"the oldest kept less is not", 20 * time.Second, 19 * time.Second, false},
		{"a minimum of 0 never forgets early", 0, 90 * time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, func(c *engine.Config) {
				c.Limits.IdempotencyWindow = 2 * time.Minute
				c.Limits.MaxIdempotencyKeys = 2
				c.Limits.IdempotencyMinWindow = tc.minWindow
			})
			keyed := func(key string) engine.EnqueueParams {
				p := et.Job("q")
				p.IdempotencyKey = key
				return p
			}
			first := et.MustEnqueue(t, e, clock.Now(), keyed("k1"))
			et.MustEnqueue(t, e, clock.Advance(time.Second), keyed("k2"))
			clock.Advance(tc.age - time.Second)
			// A remembered key needs no room: it still finds its job.
			if res, err := e.Enqueue(clock.Now(), keyed("k2")); err != nil || !res.Duplicate {
				t.Fatalf("repeat of k2 in a full store = %+v %v, want the duplicate", res, err)
			}
			res, err := e.Enqueue(clock.Now(), keyed("k3"))
			if !tc.forgets {
				var fe *engine.FieldError
				if !errors.Is(err, engine.ErrCapacity) || !errors.As(err, &fe) || fe.Field != "idempotency_key" || !strings.Contains(err.Error(), "max_idempotency_keys") {
					t.Fatalf("new key in a full store = %+v %v, want ErrCapacity on idempotency_key naming max_idempotency_keys", res, err)
				}
				// The minimum is named only where there is one to wait for.
				if names := strings.Contains(err.Error(), "idempotency_min_window_ms"); names != (tc.minWindow > 0) {
					t.Errorf("refusal %q names idempotency_min_window_ms: %v, want %v", err, names, tc.minWindow > 0)
				}
				if got := e.RememberedKeys(); got.IdempotencyKeys != 2 || got.ForgottenEarly != 0 {
					t.Errorf("after the refusal: %+v", got)
				}
				return
			}
			if err != nil || res.Duplicate {
				t.Fatalf("new key = %+v %v, want a new job", res, err)
			}
			if got := e.RememberedKeys(); got.IdempotencyKeys != 2 || got.ForgottenEarly != 1 {
				t.Errorf("after forgetting k1 early: %+v, want 2 keys and 1 forgotten early", got)
			}
			// k1 is forgotten: its repeat is a new job; k2 is still known.
			if again, _ := e.Enqueue(clock.Now(), keyed("k1")); again.Duplicate || again.JobID == first {
				t.Errorf("repeat of the forgotten k1 = %+v, want a new job", again)
			}
			et.RequireInvariants(t, e)
		})
	}
}
