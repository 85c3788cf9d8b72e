package engine_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// Idempotency keys are stored as "queue\x00key"; Restore files each under its
// queue and refuses a key twice, a key of no known queue, and a malformed
// one, whichever way the snapshot is read.
func TestRestoreChecksIdempotencyKeys(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	// Two plain keys, and two of the form the SDKs generate, which the
	// engine holds packed.
	const packed1, packed2 = "0123456789abcdef0123456789abcde1", "0123456789abcdef0123456789abcde2"
	for _, k := range []string{"key-1", "key-2", packed1, packed2} {
		et.MustEnqueue(t, e, clock.Advance(1), engine.EnqueueParams{Queue: "qq", JobType: "t", IdempotencyKey: k})
	}
	good := snapshotBytes(t, e)
	replace := func(old, new string) []byte {
		if bytes.Count(good, []byte(old)) != 1 || len(old) != len(new) {
			t.Fatalf("%q is not once in the snapshot, or %q differs in length", old, new)
		}
		return withCRC(bytes.Replace(bytes.Clone(good), []byte(old), []byte(new), 1))
	}
	tests := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"as written", good, true},
		{"a key twice", replace("qq\x00key-2", "qq\x00key-1"), false},
		{"a packed key twice", replace("qq\x00"+packed2, "qq\x00"+packed1), false},
		{"key of an unknown queue", replace("qq\x00key-2", "zz\x00key-2"), false},
		{"no separator", replace("qq\x00key-2", "qqXkey-2"[:len("qq\x00key-2")-1]+"2"), false},
		{"empty key", replace("qq\x00key-2", "qqqqqqq\x00"), false},
	}
	for _, tc := range tests {
		for _, rk := range readerKinds {
			t.Run(tc.name+"/"+rk.name, func(t *testing.T) {
				fresh := engine.New(engine.DefaultConfig())
				err := fresh.Restore(rk.wrap(tc.data))
				if tc.ok {
					if err != nil {
						t.Fatal(err)
					}
					if fresh.Digest() != e.Digest() {
						t.Fatal("restored state differs")
					}
					res, err := fresh.Enqueue(clock.Now(), engine.EnqueueParams{Queue: "qq", JobType: "t", IdempotencyKey: "key-2"})
					if err != nil || !res.Duplicate {
						t.Fatalf("key-2 after restore: %+v, %v", res, err)
					}
					return
				}
				if !errors.Is(err, engine.ErrCorruptSnapshot) {
					t.Fatalf("restore: %v, want ErrCorruptSnapshot", err)
				}
			})
		}
	}
}

// Values longer than the decoder's 64 KiB buffer (payloads, custom fields,
// reasons) take its other path; each comes back whole, whatever the reader.
func TestRestoreLongValues(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, func(c *engine.Config) { c.Limits.MaxCustomFieldBytes = 300 << 10 })
	long := func(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n) }
	for i, n := range []int{0, 1, 64<<10 - 1, 64 << 10, 64<<10 + 1, 1 << 20} {
		et.MustEnqueue(t, e, clock.Advance(1), engine.EnqueueParams{Queue: "q", JobType: "t", Payload: long(n, byte('a'+i)),
			Custom: map[string]string{"k": string(long(n/4+1, 'z'))}, IdempotencyKey: string(long(100+i, 'k'))})
	}
	data := snapshotBytes(t, e)
	for _, rk := range readerKinds {
		t.Run(rk.name, func(t *testing.T) {
			fresh := engine.New(engine.DefaultConfig())
			if err := fresh.Restore(rk.wrap(data)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(snapshotBytes(t, fresh), data) {
				t.Fatal("restored state snapshots differently")
			}
		})
	}
}

// Keys of 32 lowercase hex digits are kept packed in memory; nothing
// outside shows it: the snapshot holds every key as the producer gave it,
// the state restores to the same digest, and each key, packed or not, still
// finds its own job and no other.
func TestPackedIdempotencyKeysRoundTrip(t *testing.T) {
	t.Parallel()
	const hexKey = "00112233445566778899aabbccddeeff"
	keys := []string{
		hexKey,
		"00112233445566778899AABBCCDDEEFF", // upper case: another key, kept as it is
		"sixteen-byte-key",                 // 16 bytes, as long as a packed key
		"short",
	}
	clock := et.NewClock()
	e := et.New(t)
	ids := map[string]engine.JobID{}
	for _, k := range keys {
		ids[k] = et.MustEnqueue(t, e, clock.Advance(1), engine.EnqueueParams{Queue: "qq", JobType: "t", IdempotencyKey: k})
	}
	snap := snapshotBytes(t, e)
	if !bytes.Contains(snap, []byte("qq\x00"+hexKey)) {
		t.Fatal("the snapshot does not hold the hex key as given")
	}
	fresh := engine.New(engine.DefaultConfig())
	if err := fresh.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	if fresh.Digest() != e.Digest() {
		t.Fatal("restored state differs")
	}
	if again := snapshotBytes(t, fresh); !bytes.Equal(again, snap) {
		t.Fatal("the restored engine writes a different snapshot")
	}
	for _, eng := range []*engine.Engine{e, fresh} {
		for _, k := range keys {
			res, err := eng.Enqueue(clock.Now(), engine.EnqueueParams{Queue: "qq", JobType: "t", IdempotencyKey: k})
			if err != nil || !res.Duplicate || res.JobID != ids[k] {
				t.Fatalf("key %q again: %+v, %v; want a duplicate of job %d", k, res, err, ids[k])
			}
		}
	}
}
