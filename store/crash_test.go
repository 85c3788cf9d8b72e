package store

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/proto"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// crashOp is one record change of a model Raft entry.
type crashOp struct {
	key    []byte
	value  []byte // nil: a delete
	single bool   // a SingleDelete (write-once key)
}

// crashWorkload is a deterministic sequence of entries shaped like the
// engine's: each entry enqueues a job, and some ack, fail (progress),
// dead-letter or drop dead letters of older ones. entries[i] is the ops of
// Raft index i+1.
type crashWorkload struct {
	entries [][]crashOp
}

func newCrashWorkload(seed uint64, n int) *crashWorkload {
	rng := rand.New(rand.NewPCG(seed, 1))
	w := &crashWorkload{}
	live := map[uint64]bool{}   // job id -> has progress
	dead := map[uint64]string{} // job id -> dead-letter queue
	var liveIDs, deadIDs []uint64
	pick := func(ids []uint64, alive func(uint64) bool) (uint64, bool) {
		for range 4 {
			if len(ids) == 0 {
				return 0, false
			}
			id := ids[rng.IntN(len(ids))]
			if alive(id) {
				return id, true
			}
		}
		return 0, false
	}
	for i := 1; i <= n; i++ {
		var ops []crashOp
		id := uint64(i)
		body := &storepb.JobBody{Queue: fmt.Sprintf("q%d", i%3), JobType: "t", Payload: make([]byte, 100+rng.IntN(300)), EnqueuedAtUnixNano: int64(i)}
		body.Payload[0] = byte(i)
		ops = append(ops, crashOp{key: bodyKey(id), value: mustMarshal(body)})
		live[id] = false
		liveIDs = append(liveIDs, id)
		isLive := func(x uint64) bool { _, ok := live[x]; return ok }
		switch r := rng.IntN(10); {
		case r < 5: // ack
			if a, ok := pick(liveIDs, isLive); ok {
				ops = append(ops, crashOp{key: bodyKey(a), single: true})
				if live[a] {
					ops = append(ops, crashOp{key: progressKey(a)})
				}
				delete(live, a)
			}
		case r < 7: // nack: progress written or overwritten
			if a, ok := pick(liveIDs, isLive); ok {
				p := &storepb.JobProgress{LastReason: fmt.Sprintf("entry %d", i), Attempts: []*storepb.Attempt{{Attempt: uint32(i), Outcome: storepb.AttemptOutcome_ATTEMPT_OUTCOME_NACK}}}
				ops = append(ops, crashOp{key: progressKey(a), value: mustMarshal(p)})
				live[a] = true
			}
		case r < 9: // dead-letter
			if a, ok := pick(liveIDs, isLive); ok {
				q := fmt.Sprintf("q%d", a%3)
				ops = append(ops, crashOp{key: bodyKey(a), single: true})
				if live[a] {
					ops = append(ops, crashOp{key: progressKey(a)})
				}
				delete(live, a)
				k, _ := deadKey(q, a)
				ops = append(ops, crashOp{key: k, value: mustMarshal(&storepb.DeadLetter{Body: body, Cause: storepb.Cause_CAUSE_REJECTED, FailedAtUnixNano: int64(i)})})
				dead[a] = q
				deadIDs = append(deadIDs, a)
			}
		default: // delete a dead letter
			if a, ok := pick(deadIDs, func(x uint64) bool { _, ok := dead[x]; return ok }); ok {
				k, _ := deadKey(dead[a], a)
				ops = append(ops, crashOp{key: k, single: true})
				delete(dead, a)
			}
		}
		w.entries = append(w.entries, ops)
	}
	return w
}

func mustMarshal(m proto.Message) []byte {
	b, err := marshal.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// apply commits entries from..to (1-based, inclusive), one batch each.
func (w *crashWorkload) apply(s *Store, from, to int) error {
	for i := from; i <= to; i++ {
		b := s.NewBatch()
		for _, op := range w.entries[i-1] {
			var err error
			switch {
			case op.value != nil:
				err = b.b.Set(op.key, op.value, nil)
			case op.single:
				err = b.b.SingleDelete(op.key, nil)
			default:
				err = b.b.Delete(op.key, nil)
			}
			if err != nil {
				b.Close()
				return err
			}
		}
		if err := b.Commit(uint64(i), 1); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return nil
}

// model is the content the store must hold after entries 1..index.
func (w *crashWorkload) model(index uint64) map[string]string {
	m := map[string]string{}
	for _, ops := range w.entries[:index] {
		for _, op := range ops {
			if op.value != nil {
				m[string(op.key)] = string(op.value)
			} else {
				delete(m, string(op.key))
			}
		}
	}
	return m
}

// dump is every data record the store holds.
func dump(t testing.TB, s *Store) map[string]string {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindBody}, UpperBound: []byte{kindEnd}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	m := map[string]string{}
	for ok := it.First(); ok; ok = it.Next() {
		m[string(it.Key())] = string(it.Value())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkRecovered reports how the recovered store departs from the model
// at its applied index: records of entries at or below the index missing
// or different, records of entries after it present.
func checkRecovered(t *testing.T, w *crashWorkload, s *Store) error {
	t.Helper()
	applied := s.AppliedIndex()
	want := w.model(applied)
	got := dump(t, s)
	if maps.Equal(want, got) {
		return nil
	}
	var missing, extra int
	for k, v := range want {
		if got[k] != v {
			missing++
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra++
		}
	}
	return fmt.Errorf("applied index %d: %d records of applied entries missing or stale, %d records not in the applied state", applied, missing, extra)
}

// crashRun applies a workload to a store on a crashable in-memory file
// system, takes crash images at random points (some right after a flush,
// some with part of the unsynced data kept, as a kernel may), reopens each
// and checks it against the model. It returns the violations found.
func crashRun(t *testing.T, seed uint64, metaFirst bool) []error {
	t.Helper()
	const entries = 3000
	w := newCrashWorkload(seed, entries)
	rng := rand.New(rand.NewPCG(seed, 2))
	fs := vfs.NewCrashableMem()
	// Small memtables: a switch, and a flush in the background, every few
	// hundred entries.
	o := Options{FS: fs, MemTableBytes: 256 << 10}
	s, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	s.metaFirst = metaFirst
	var violations []error
	var lastImage *vfs.MemFS
	behind := 0 // images that lost applied entries (0 < index < entries written)
	for i := 1; i <= entries; {
		step := 1 + rng.IntN(60)
		to := min(i+step-1, entries)
		if err := w.apply(s, i, to); err != nil {
			t.Fatal(err)
		}
		i = to + 1
		// An explicit flush now and then, not often: memtable switches
		// (every ~550 entries) must happen between them too.
		if rng.IntN(20) == 0 {
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		img := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(50), RNG: rng})
		lastImage = img
		r, err := Open("db", Options{FS: img})
		if err != nil {
			t.Fatalf("reopen after crash at entry %d: %v", to, err)
		}
		if a := r.AppliedIndex(); a > 0 && a < uint64(to) {
			behind++
		}
		if err := checkRecovered(t, w, r); err != nil {
			violations = append(violations, fmt.Errorf("crash after entry %d: %w", to, err))
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if behind == 0 {
		t.Fatal("no crash image lost an applied entry: the run did not exercise recovery")
	}
	if metaFirst {
		return violations
	}
	// Replay after the last crash: entries at or below the applied index
	// are refused, the rest bring the store to the model of the whole log.
	r, err := Open("db", Options{FS: lastImage})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	a := r.AppliedIndex()
	if a > 0 {
		if err := w.apply(r, int(a), int(a)); !errors.Is(err, ErrStaleIndex) {
			t.Fatalf("replaying applied entry %d: err %v, want ErrStaleIndex", a, err)
		}
	}
	if err := w.apply(r, int(a)+1, entries); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(dump(t, r), w.model(entries)) {
		t.Fatalf("after replay from %d: content differs from the model of the log", a+1)
	}
	return violations
}

// TestCrash_AppliedIndexNeverAheadOfData: whatever point a crash hits, the
// reopened store holds exactly the records of the entries up to its
// applied index, and replaying the log from there rebuilds the rest.
func TestCrash_AppliedIndexNeverAheadOfData(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			for _, v := range crashRun(t, seed, false) {
				t.Error(v)
			}
		})
	}
}

// TestCrash_PlantedIndexOutsideBatchIsCaught: the same run with the bug
// planted (the applied index committed in its own batch, ahead of the
// data) must report a violation; if it did not, the test above would be
// blind to the bug it exists for.
func TestCrash_PlantedIndexOutsideBatchIsCaught(t *testing.T) {
	t.Parallel()
	var caught int
	for _, seed := range []uint64{1, 2, 3} {
		v := crashRun(t, seed, true)
		caught += len(v)
		if len(v) > 0 {
			t.Logf("seed %d: %d crash images violate the contract, first: %v", seed, len(v), v[0])
		}
	}
	if caught == 0 {
		t.Fatal("the planted bug went unnoticed by the crash check")
	}
}
