package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// TestIdemKeys drives the key index through scripted steps and checks it
// against a map after each: lookups, FIFO order, and the index's own
// invariants (every entry found under its key, nothing else held).
func TestIdemKeys(t *testing.T) {
	t.Parallel()
	qa, qb := &queue{name: "a"}, &queue{name: "b"}
	queues := map[string]*queue{"a": qa, "b": qb}
	type step struct {
		add  []string // "queue/key" to add
		pop  int      // entries to pop from the front first
		want []string // keys expected present afterwards, in FIFO order
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"empty", []step{{want: nil}}},
		{"one key", []step{{add: []string{"a/k"}, want: []string{"a/k"}}}},
		{"same key in two queues is two keys", []step{{add: []string{"a/k", "b/k"}, want: []string{"a/k", "b/k"}}}},
		{"pop in creation order", []step{
			{add: []string{"a/1", "b/2", "a/3"}},
			{pop: 1, want: []string{"b/2", "a/3"}},
			{pop: 2, want: nil},
		}},
		{"a key can come back once forgotten", []step{
			{add: []string{"a/k"}},
			{pop: 1, add: []string{"a/k"}, want: []string{"a/k"}},
		}},
		{"packed and plain keys", []step{
			{add: []string{"a/" + hexKey, "a/" + upperHexKey, "a/" + packedBytesKey, "b/" + hexKey}},
			{pop: 1, want: []string{"a/" + upperHexKey, "a/" + packedBytesKey, "b/" + hexKey}},
		}},
		{"growth and shrink keep every key", []step{
			{add: keysN("a", 0, 1000), want: keysN("a", 0, 1000)},
			{pop: 990, want: keysN("a", 990, 1000)},
			{add: keysN("b", 0, 50), want: append(keysN("a", 990, 1000), keysN("b", 0, 50)...)},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var k idemKeys
			for si, s := range tc.steps {
				for range s.pop {
					k.popFront()
				}
				for _, qk := range s.add {
					q, key := splitQK(queues, qk)
					if k.get(q, key) != nil {
						t.Fatalf("step %d: %s present before its add", si, qk)
					}
					k.addKey(q, key, JobID(k.head)+JobID(k.len())+1, 0)
				}
				if s.want == nil && s.add == nil && s.pop == 0 && k.len() != 0 {
					t.Fatalf("step %d: %d keys, want none", si, k.len())
				}
				if s.want != nil || s.pop > 0 {
					if k.len() != len(s.want) {
						t.Fatalf("step %d: %d keys, want %d", si, k.len(), len(s.want))
					}
					for i, qk := range s.want {
						q, key := splitQK(queues, qk)
						if ent := k.at(i); k.queueOf(ent) != q || string(k.appendKey(ent, nil)) != key {
							t.Fatalf("step %d: entry %d is %s/%s, want %s", si, i, k.queueOf(ent).name, k.appendKey(ent, nil), qk)
						}
						if k.get(q, key) != k.at(i) {
							t.Fatalf("step %d: %s not found", si, qk)
						}
					}
				}
				if err := k.check(queues, true); err != nil {
					t.Fatalf("step %d: %v", si, err)
				}
				if k.get(qa, "never-added") != nil {
					t.Fatalf("step %d: found a key never added", si)
				}
			}
		})
	}
}

// A key the clients generate (packed), the same digits in upper case, and
// a 16-byte key of the producer's equal to the packed form of the first:
// three different keys.
const (
	hexKey         = "00112233445566778899aabbccddeeff"
	upperHexKey    = "00112233445566778899AABBCCDDEEFF"
	packedBytesKey = "\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb\xcc\xdd\xee\xff"
)

func keysN(q string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s/key-%d", q, i))
	}
	return out
}

func splitQK(queues map[string]*queue, qk string) (*queue, string) {
	return queues[qk[:1]], qk[2:]
}

// randomKey draws from keys that look alike but are all different: short
// plain keys, the 32 hex digits a client generates (kept packed), the same
// digits in upper case, and 16 bytes equal to a packed key's.
func randomKey(rng *rand.Rand) string {
	n := rng.IntN(1000)
	digits := fmt.Sprintf("%032x", n*2654435761)
	switch rng.IntN(4) {
	case 0:
		return fmt.Sprint(n)
	case 1:
		return digits
	case 2:
		return strings.ToUpper(digits)
	default:
		b, _ := packKey(digits)
		return string(b[:])
	}
}

// TestIndexRestored: keys filed by appendRestored and indexed at once are
// each found under their own key, in tables small enough to wrap and large
// enough to place in several groups; a key filed twice is refused, the
// later entry named, wherever the two are, while the same key in another
// queue, or the same bytes packed and plain, is not the same key.
func TestIndexRestored(t *testing.T) {
	t.Parallel()
	// The two queues' names hash alike (the cached hash set by hand), so a
	// key's text in both has one hash and one tag: only the queue tells
	// the two entries apart.
	qs := []*queue{{name: "a", nameHash: 0x5bd1e995}, {name: "b", nameHash: 0x5bd1e995}}
	queues := map[string]*queue{"a": qs[0], "b": qs[1]}
	for _, tc := range []struct {
		name     string
		n        int
		dupFirst int // -1: no duplicate; else the entry filed again at the end
	}{
		{"none", 0, -1},
		{"one", 1, -1},
		{"a few, wrapping", 11, -1},
		{"many groups", 200_000, -1},
		{"twice, adjacent", 10, 9},
		{"twice, far apart", 50_000, 3},
		{"twice, in a large table", 200_000, 123_456},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var k idemKeys
			type filed struct {
				q   *queue
				key string
			}
			var all []filed
			for i := range tc.n {
				q := qs[i%2]
				var key string
				switch i % 3 {
				case 0:
					key = fmt.Sprintf("%032x", i*2654435761) // packed
				case 1:
					key = fmt.Sprintf("order-%d", i/6) // entries i and i+3 share it, in the other queue
				default:
					b, _ := packKey(fmt.Sprintf("%032x", (i-2)*2654435761))
					key = string(b[:]) // a packed key's bytes, kept plain
				}
				all = append(all, filed{q, key})
			}
			if tc.dupFirst >= 0 {
				all = append(all, all[tc.dupFirst])
			}
			for i, f := range all {
				sk := storedKeyOf(f.key)
				k.appendRestored(f.q, &sk, JobID(i+1), int64(i))
			}
			dup := k.indexRestored()
			if tc.dupFirst >= 0 {
				if dup == nil || dup.jobID() != JobID(len(all)) {
					t.Fatalf("duplicate of entry %d: indexRestored named %v, want the last entry", tc.dupFirst, dup)
				}
				return
			}
			if dup != nil {
				t.Fatalf("no duplicate, but indexRestored named job %d", dup.jobID())
			}
			if err := k.check(queues, true); err != nil {
				t.Fatal(err)
			}
			for i, f := range all {
				if ent := k.get(f.q, f.key); ent == nil || ent.jobID() != JobID(i+1) {
					t.Fatalf("key %d (%q of %s): found %v", i, f.key, f.q.name, ent)
				}
			}
			if ent := k.get(qs[0], "never filed"); ent != nil {
				t.Fatalf("a key never filed was found: %v", ent)
			}
			// The index goes on as add and popFront keep it.
			k.addKey(qs[1], "after the restore", JobID(len(all)+1), int64(len(all)))
			for range min(5, len(all)) {
				k.popFront()
			}
			if err := k.check(queues, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestIdemKeysAgainstMap runs random adds and expiries (a fixed seed) and
// compares every lookup with a map.
func TestIdemKeysAgainstMap(t *testing.T) {
	t.Parallel()
	qs := []*queue{{name: "a"}, {name: "b"}, {name: "c"}}
	queues := map[string]*queue{"a": qs[0], "b": qs[1], "c": qs[2]}
	rng := rand.New(rand.NewPCG(1, 2))
	var k idemKeys
	model := map[[2]string]JobID{}
	var order [][2]string
	for step := range 20000 {
		if rng.IntN(3) > 0 || len(order) == 0 {
			q := qs[rng.IntN(len(qs))]
			key := randomKey(rng)
			mk := [2]string{q.name, key}
			ent := k.get(q, key)
			if id, ok := model[mk]; ok != (ent != nil) || (ok && ent.jobID() != id) {
				t.Fatalf("step %d: get(%v) = %v, model has %v %v", step, mk, ent, id, ok)
			}
			if ent == nil {
				model[mk] = JobID(step + 1)
				order = append(order, mk)
				k.addKey(q, key, JobID(step+1), 0)
			}
		} else {
			for range rng.IntN(20) + 1 {
				if len(order) == 0 {
					break
				}
				delete(model, order[0])
				order = order[1:]
				k.popFront()
			}
		}
		if step%1000 == 0 {
			if err := k.check(queues, true); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	if k.len() != len(model) {
		t.Fatalf("%d keys, model %d", k.len(), len(model))
	}
}

// TestEnqueueKeepsCopies: the engine keeps copies of the payload, custom
// fields and key, never the caller's memory, so a caller may reuse or
// change its buffers after Enqueue returns.
func TestEnqueueKeepsCopies(t *testing.T) {
	e := New(DefaultConfig())
	payload := []byte("payload")
	custom := map[string]string{"k": "v"}
	// A key that shares a larger string's memory: kept as it is, it would
	// pin the whole string.
	key := strings.Repeat("key-", 4)[:3]
	res, err := e.Enqueue(fromNanos(1), EnqueueParams{Queue: "q", JobType: "t", Payload: payload, Custom: custom, IdempotencyKey: key})
	if err != nil {
		t.Fatal(err)
	}
	j := e.jobs.get(res.JobID)
	stored := e.payloadOf(j)
	if &stored[0] == &payload[0] {
		t.Fatal("the engine kept the caller's payload, not a copy")
	}
	if cap(stored) != len(stored) {
		t.Fatalf("stored payload has spare capacity %d", cap(stored)-len(stored))
	}
	if unsafe.StringData(e.keys.plain[e.keys.at(0).plainIndex()]) == unsafe.StringData(key) {
		t.Fatal("the engine kept the caller's key string, not a copy")
	}
	payload[0] = 'X'
	custom["k2"] = "v2"
	if string(e.payloadOf(j)) != "payload" {
		t.Fatalf("stored payload %q changed with the caller's buffer", e.payloadOf(j))
	}
	if got := len(j.ext.custom); got != 1 {
		t.Fatalf("custom has %d fields after the caller's change, want 1", got)
	}
	dup, err := e.Enqueue(fromNanos(2), EnqueueParams{Queue: "q", JobType: "t", IdempotencyKey: "key"})
	if err != nil || !dup.Duplicate || dup.JobID != res.JobID {
		t.Fatalf("repeat: %+v, %v", dup, err)
	}
}

// clientKeys returns n distinct keys of the form the clients generate.
func clientKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%032x", uint64(i)*0x9e3779b97f4a7c15)
	}
	return keys
}

// BenchmarkIdemKeysGrow adds b.N client keys to an empty index, each after
// a lookup that misses, as a fresh node taking keyed jobs does: every
// doubling of the table rehashes it.
func BenchmarkIdemKeysGrow(b *testing.B) {
	q := &queue{name: "q"}
	keys := clientKeys(b.N)
	b.ReportAllocs()
	b.ResetTimer()
	var k idemKeys
	for i := 0; i < b.N; i++ {
		if k.get(q, keys[i]) != nil {
			b.Fatal("a new key was found")
		}
		k.addKey(q, keys[i], JobID(i+1), 0)
	}
}

// BenchmarkIdemKeysWindow keeps a million keys remembered: each new key
// (after its lookup) expires the oldest, as in a node's steady state.
func BenchmarkIdemKeysWindow(b *testing.B) {
	const window = 1 << 20
	q := &queue{name: "q"}
	keys := clientKeys(window + b.N)
	var k idemKeys
	for i := 0; i < window; i++ {
		k.addKey(q, keys[i], JobID(i+1), 0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := window; i < window+b.N; i++ {
		if k.get(q, keys[i]) != nil {
			b.Fatal("a new key was found")
		}
		k.addKey(q, keys[i], JobID(i+1), 0)
		k.popFront()
	}
}

// packKey packs exactly 32 lowercase hex digits and nothing else: every
// byte just outside the digit ranges, upper case and a wrong length stay
// plain keys.
func TestPackKey(t *testing.T) {
	t.Parallel()
	if b, ok := packKey(hexKey); !ok || string(b[:]) != packedBytesKey {
		t.Fatalf("packKey(%q) = %x, %v", hexKey, b, ok)
	}
	for _, c := range []byte{'/', ':', '`', 'g', 'A', 'F', 'G', ' ', 0, 0x80, 0xff} {
		for _, pos := range []int{0, 1, 17, 31} {
			key := []byte(hexKey)
			key[pos] = c
			if _, ok := packKey(key); ok {
				t.Errorf("packKey packed %q (byte %q at %d)", key, c, pos)
			}
		}
	}
	for _, key := range []string{"", hexKey[:31], hexKey + "0", upperHexKey} {
		if _, ok := packKey(key); ok {
			t.Errorf("packKey packed %q", key)
		}
	}
	// Every digit value, in both nibbles.
	digits := "0123456789abcdef"
	for i := range 16 {
		key := strings.Repeat(digits[i:i+1]+digits[15-i:16-i], 16)
		b, ok := packKey(key)
		if want := byte(i<<4 | (15 - i)); !ok || b[0] != want || b[15] != want {
			t.Errorf("packKey(%q) = %x, %v; want bytes %#x", key, b, ok, want)
		}
	}
}

// addKey remembers key in q for job id.
func (k *idemKeys) addKey(q *queue, key string, id JobID, createdAt int64) *idemEntry {
	sk := storedKeyOf(key)
	return k.add(q, &sk, id, createdAt)
}

// Deleting a queue forgets its keys, packed and plain, and keeps every
// other queue's in creation order; the rebuilt index numbers the queues
// afresh, and a queue that had a number before finds its keys still.
func TestDeleteQueueForgetsItsKeysOnly(t *testing.T) {
	t.Parallel()
	e := New(DefaultConfig())
	at := func(i int) time.Time { return fromNanos(int64(1 + i)) }
	keys := []string{hexKey, "order-17", strings.Repeat("ab", 16), "order-18"}
	ids := map[string]JobID{}
	for i, key := range keys {
		for _, q := range []string{"a", "b", "c"} {
			res, err := e.Enqueue(at(i), EnqueueParams{Queue: q, JobType: "t", IdempotencyKey: key})
			if err != nil {
				t.Fatal(err)
			}
			ids[q+"/"+key] = res.JobID
		}
	}
	if _, err := e.DeleteQueue(at(10), "b", true); err != nil {
		t.Fatal(err)
	}
	if err := e.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if got, want := e.keys.len(), 2*len(keys); got != want {
		t.Fatalf("%d keys remembered after deleting b, want %d", got, want)
	}
	for i, key := range keys {
		for _, q := range []string{"a", "c"} {
			res, err := e.Enqueue(at(20+i), EnqueueParams{Queue: q, JobType: "t", IdempotencyKey: key})
			if err != nil || res.JobID != ids[q+"/"+key] || !res.Duplicate {
				t.Fatalf("enqueue %s/%s again: %+v %v, want the duplicate of job %d", q, key, res, err, ids[q+"/"+key])
			}
		}
		res, err := e.Enqueue(at(20+i), EnqueueParams{Queue: "b", JobType: "t", IdempotencyKey: key})
		if err != nil || res.Duplicate {
			t.Fatalf("enqueue b/%s after b was deleted: %+v %v, want a new job", key, res, err)
		}
	}
	if err := e.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
