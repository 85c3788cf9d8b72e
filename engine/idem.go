package engine

import (
	"fmt"
	"hash/maphash"
)

// idemEntry remembers an enqueue's idempotency key: the producer's key
// within q. Entries live by value in idemKeys.fifo, in creation order; with
// one window for all keys the front always expires first.
type idemEntry struct {
	q         *queue
	key       string
	jobID     JobID
	createdAt int64
}

// idemKeys is the set of remembered idempotency keys: a FIFO of entries in
// creation order and an open-addressing hash index into it. A million keys
// would cost about 170 bytes each as a map of "queue\x00key" strings to
// entry pointers; here an entry is 40 bytes in the FIFO, its key string
// (shared with nothing else) and 8 to 16 bytes of index.
//
// The index holds, per slot, the entry's sequence number (its position in
// the FIFO plus the number of entries ever popped, so slots stay valid as the
// front moves) in the low 40 bits and 24 bits of its hash above them, so a
// probe compares keys only when those bits match; 0 is an empty slot.
// Collisions probe linearly; a removal shifts the run after it back, so
// there are no tombstones.
//
// The hash is seeded at random, like a Go map's, so clients choosing keys
// cannot make every key collide; nothing about it shows in any output (the
// snapshot and every read walk the FIFO, never the index).
type idemKeys struct {
	fifo  deque[idemEntry]
	head  uint64   // sequence number of the FIFO's front
	slots []uint64 // len is 0 or a power of two
}

var idemSeed = maphash.MakeSeed()

func (q *queue) keyHash() uint64 {
	if q.nameHash == 0 {
		q.nameHash = maphash.String(idemSeed, q.name) | 1
	}
	return q.nameHash
}

func idemHash(q *queue, key string) uint64 {
	return maphash.String(idemSeed, key) ^ q.keyHash()
}

const (
	slotSeqBits = 40
	slotSeqMask = 1<<slotSeqBits - 1
)

// slotFor packs a sequence number and its hash's tag; never 0.
func slotFor(h, seq uint64) uint64 { return (h>>slotSeqBits|1)<<slotSeqBits | seq&slotSeqMask }

// tagMatch reports whether slot s may hold an entry of hash h.
func tagMatch(s, h uint64) bool { return s>>slotSeqBits == h>>slotSeqBits|1 }

// index returns the FIFO position of the entry slot s names.
func (k *idemKeys) index(s uint64) int { return int((s - k.head) & slotSeqMask) }

func (k *idemKeys) len() int { return k.fifo.Len() }

// at returns the i-th entry in creation order. The pointer is valid until
// the next add or popFront.
func (k *idemKeys) at(i int) *idemEntry { return k.fifo.ptr(i) }

func (k *idemKeys) front() *idemEntry { return k.fifo.ptr(0) }

// get returns the entry of key in q, or nil.
func (k *idemKeys) get(q *queue, key string) *idemEntry {
	if len(k.slots) == 0 {
		return nil
	}
	mask := uint64(len(k.slots) - 1)
	h := idemHash(q, key)
	for i := h & mask; ; i = (i + 1) & mask {
		s := k.slots[i]
		if s == 0 {
			return nil
		}
		if tagMatch(s, h) {
			if ent := k.fifo.ptr(k.index(s)); ent.q == q && ent.key == key {
				return ent
			}
		}
	}
}

// add appends an entry whose key must not be present.
func (k *idemKeys) add(ent idemEntry) {
	if n := k.fifo.Len() + 1; n*4 > len(k.slots)*3 {
		k.rehash(max(16, 2*len(k.slots)), n)
	}
	seq := k.head + uint64(k.fifo.Len())
	k.fifo.PushBack(ent)
	k.place(idemHash(ent.q, ent.key), seq)
}

func (k *idemKeys) place(h, seq uint64) {
	mask := uint64(len(k.slots) - 1)
	i := h & mask
	for k.slots[i] != 0 {
		i = (i + 1) & mask
	}
	k.slots[i] = slotFor(h, seq)
}

// popFront forgets the oldest entry.
func (k *idemKeys) popFront() {
	ent := k.fifo.Front()
	mask := uint64(len(k.slots) - 1)
	h := idemHash(ent.q, ent.key)
	want := slotFor(h, k.head)
	i := h & mask
	for k.slots[i] != want {
		i = (i + 1) & mask
	}
	// Backward-shift deletion: move later members of the run into the hole
	// when their home slot is not between the hole and them.
	for j := (i + 1) & mask; k.slots[j] != 0; j = (j + 1) & mask {
		o := k.fifo.ptr(k.index(k.slots[j]))
		home := idemHash(o.q, o.key) & mask
		if (j-home)&mask >= (j-i)&mask {
			k.slots[i] = k.slots[j]
			i = j
		}
	}
	k.slots[i] = 0
	k.fifo.PopFront()
	k.head++
	if n := k.fifo.Len(); len(k.slots) > 16 && n*8 < len(k.slots) {
		k.rehash(len(k.slots)/2, n)
	}
}

// rehash rebuilds the index for the entries in the FIFO with size slots, or
// more if n entries (how many there are about to be) would load it above
// three quarters.
func (k *idemKeys) rehash(size, n int) {
	for n*4 > size*3 {
		size *= 2
	}
	k.slots = make([]uint64, size)
	for i := 0; i < k.fifo.Len(); i++ {
		ent := k.fifo.ptr(i)
		k.place(idemHash(ent.q, ent.key), k.head+uint64(i))
	}
}

// reserve sizes the index and the FIFO for n entries at once (Restore).
func (k *idemKeys) reserve(n int) {
	if n <= k.fifo.Len() {
		return
	}
	size := 16
	for n*4 > size*3 {
		size *= 2
	}
	if size > len(k.slots) {
		k.rehash(size, n)
	}
	k.fifo.grow(n)
}

// check verifies the index against the FIFO: every entry is found under its
// own key, in a live queue, in creation order, and the index holds nothing
// else.
func (k *idemKeys) check(queues map[string]*queue) error {
	used := 0
	for _, s := range k.slots {
		if s != 0 {
			used++
			if i := k.index(s); i >= k.fifo.Len() {
				return fmt.Errorf("idempotency keys: index slot names entry %d outside the FIFO", i)
			}
		}
	}
	if used != k.fifo.Len() {
		return fmt.Errorf("idempotency keys: FIFO %d, index %d", k.fifo.Len(), used)
	}
	for i := 0; i < k.fifo.Len(); i++ {
		ent := k.fifo.ptr(i)
		if ent.q == nil || queues[ent.q.name] != ent.q {
			return fmt.Errorf("idempotency key %q: not in a known queue", ent.key)
		}
		if ent.key == "" {
			return fmt.Errorf("idempotency key %d of the FIFO is empty", i)
		}
		if k.get(ent.q, ent.key) != ent {
			return fmt.Errorf("idempotency key %q of queue %q: FIFO and index disagree", ent.key, ent.q.name)
		}
		if i > 0 && ent.createdAt < k.fifo.ptr(i-1).createdAt {
			return fmt.Errorf("idempotency key %q of queue %q out of creation order", ent.key, ent.q.name)
		}
	}
	return nil
}
