package engine

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"math/bits"
)

// idemEntry remembers an enqueue's idempotency key: the producer's key
// within a queue. Entries live by value in idemKeys.fifo, in creation
// order; with one window for all keys the front always expires first.
//
// An entry is 40 bytes with no pointer, so the collector never scans the
// FIFO's chunks, however many keys are remembered. The queue is its number
// in idemKeys.queues. A key of 32 lowercase hex digits, the form the
// clients generate, is kept packed as its 16 bytes, inside the entry: half
// the memory of the digits and no allocation of its own. Any other key is
// kept as it is, in idemKeys.plain, and the entry holds its index there.
// The packed bit of job tells the two apart (job ids stay far below 2^63),
// so a 16-byte key of the producer's never meets a packed one.
type idemEntry struct {
	packedKey [16]byte // the key's bytes when packed; else its index in idemKeys.plain, in the first 4
	job       uint64   // the job id, with idemPacked set when the key is packed
	createdAt int64
	queue     uint32 // 1 + the queue's index in idemKeys.queues
}

const idemPacked = 1 << 63

func (ent *idemEntry) jobID() JobID { return JobID(ent.job &^ idemPacked) }

func (ent *idemEntry) packed() bool { return ent.job&idemPacked != 0 }

// plainIndex is where in idemKeys.plain a key not packed is.
func (ent *idemEntry) plainIndex() uint32 { return binary.LittleEndian.Uint32(ent.packedKey[:4]) }

// storedKey is a producer's key in the form an entry keeps it, computed on
// the stack for a lookup.
type storedKey struct {
	packed bool
	bytes  [16]byte // when packed
	plain  string   // when not
}

// storedKeyOf packs a key of exactly 32 lowercase hex digits; any other
// key is kept as it is (a byte slice copied, a string shared: the caller
// clones one it does not own before the key is added).
func storedKeyOf[K ~string | ~[]byte](key K) storedKey {
	if b, ok := packKey(key); ok {
		return storedKey{packed: true, bytes: b}
	}
	return storedKey{plain: string(key)}
}

// text is the key as the producer gave it.
func (sk *storedKey) text() string {
	if sk.packed {
		return hex.EncodeToString(sk.bytes[:])
	}
	return sk.plain
}

// packKey decodes a key of exactly 32 lowercase hex digits. (Upper case is
// not packed: packing it would make "AB…" and "ab…" one key.)
func packKey[K ~string | ~[]byte](key K) (b [16]byte, ok bool) {
	if len(key) != 32 {
		return b, false
	}
	var bad byte
	for i := 0; i < 32; i += 2 {
		hi, lo := lowerHexValue[key[i]], lowerHexValue[key[i+1]]
		bad |= hi | lo
		b[i/2] = hi<<4 | lo&0x0f
	}
	return b, bad&0xf0 == 0
}

// lowerHexValue maps '0'-'9' and 'a'-'f' to their values and every other
// byte to 0xff, so one OR over a key's digits finds any that is not one.
var lowerHexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c-'a') + 10
	}
	return t
}()

// matches reports whether ent holds the key sk stands for in q.
func (k *idemKeys) matches(ent *idemEntry, q *queue, sk *storedKey) bool {
	if k.queues[ent.queue-1] != q {
		return false
	}
	if sk.packed {
		return ent.packed() && ent.packedKey == sk.bytes
	}
	return !ent.packed() && k.plain[ent.plainIndex()] == sk.plain
}

// firstWithKeyOf is the entry a lookup of ent's own queue and key finds:
// ent itself exactly when the index holds ent where a lookup finds it, and
// no earlier entry of the same key. The key is looked up in the form ent
// stores it, so no text is built.
func (k *idemKeys) firstWithKeyOf(ent *idemEntry) *idemEntry {
	sk := storedKey{packed: ent.packed(), bytes: ent.packedKey}
	if !sk.packed {
		sk.plain = k.plain[ent.plainIndex()]
	}
	return k.getStored(k.queueOf(ent), &sk)
}

// queueOf is the queue of ent.
func (k *idemKeys) queueOf(ent *idemEntry) *queue { return k.queues[ent.queue-1] }

// appendKey appends ent's key as the producer gave it.
func (k *idemKeys) appendKey(ent *idemEntry, dst []byte) []byte {
	if ent.packed() {
		return hex.AppendEncode(dst, ent.packedKey[:])
	}
	return append(dst, k.plain[ent.plainIndex()]...)
}

// keyLen is the length of ent's key as the producer gave it.
func (k *idemKeys) keyLen(ent *idemEntry) int {
	if ent.packed() {
		return 2 * len(ent.packedKey)
	}
	return len(k.plain[ent.plainIndex()])
}

// plainLen is the length of ent's key when it is not packed, 0 when it is:
// what a key costs beyond its entry.
func (k *idemKeys) plainLen(ent *idemEntry) int {
	if ent.packed() {
		return 0
	}
	return len(k.plain[ent.plainIndex()])
}

// dropQueue lets go of q, which holds no key any more (it is deleted).
func (k *idemKeys) dropQueue(q *queue) {
	if n := q.keysNumber; n != 0 && int(n) <= len(k.queues) && k.queues[n-1] == q {
		k.queues[n-1] = nil
	}
}

// numberOf is q's number in the index, given on its first key. A number
// the index gave another queue (the index was rebuilt since) is replaced.
func (k *idemKeys) numberOf(q *queue) uint32 {
	if n := q.keysNumber; n != 0 && int(n) <= len(k.queues) && k.queues[n-1] == q {
		return n
	}
	k.queues = append(k.queues, q)
	q.keysNumber = uint32(len(k.queues))
	return q.keysNumber
}

// idemKeys is the set of remembered idempotency keys: a FIFO of entries in
// creation order and an open-addressing hash index into it. A million keys
// would cost about 170 bytes each as a map of "queue\x00key" strings to
// entry pointers; here an entry is 56 bytes in the FIFO (a client key
// packed inside it; any other key a string of its own besides) and 8 to 16
// bytes of index: about 70 bytes per client-generated key.
//
// The index holds, per slot, the entry's sequence number (its position in
// the FIFO plus the number of entries ever popped, modulo 2^32, so slots
// stay valid as the front moves) in the low 32 bits and the top 32 bits of
// its hash above them; 0 is an empty slot. An entry's home slot is the top
// bits of its hash, so the slot itself says where its home is: growing,
// shrinking and deleting never read an entry or hash a key again, and a
// rehash walks the old slots in order and writes the new ones in order
// (old slot i goes to about 2i when growing), which keeps a table of
// millions of keys in the cache's reach. A probe compares keys only when
// the 32 tag bits match. Collisions probe linearly; a removal shifts the
// run after it back, so there are no tombstones.
//
// The hash is seeded at random, like a Go map's, so clients choosing keys
// cannot make every key collide; nothing about it shows in any output (the
// snapshot and every read walk the FIFO, never the index).
type idemKeys struct {
	fifo  chunkFIFO[idemEntry]
	head  uint64   // sequence number of the FIFO's front
	slots []uint64 // len is 0 or a power of two
	// queues are the queues that have remembered keys since the index was
	// built, numbered from 1 in the entries. A queue deleted drops its
	// keys and the index is built again (forgetKeysOf), so it is not kept.
	queues []*queue
	// plain holds the keys that are not packed, by the index their entry
	// holds; freePlain are the indexes of forgotten ones, for reuse.
	plain     []string
	freePlain []uint32
}

var idemSeed = maphash.MakeSeed()

func (q *queue) keyHash() uint64 {
	if q.nameHash == 0 {
		q.nameHash = maphash.String(idemSeed, q.name) | 1
	}
	return q.nameHash
}

// idemPackedSalt keeps a packed key's hash apart from that of a plain key
// with the same bytes.
const idemPackedSalt = 0x9e3779b97f4a7c15

func idemHash(q *queue, sk *storedKey) uint64 {
	if sk.packed {
		return maphash.Bytes(idemSeed, sk.bytes[:]) ^ q.keyHash() ^ idemPackedSalt
	}
	return maphash.String(idemSeed, sk.plain) ^ q.keyHash()
}

// hashOf is idemHash of the entry's own key.
func (k *idemKeys) hashOf(ent *idemEntry) uint64 {
	q := k.queueOf(ent)
	if ent.packed() {
		return maphash.Bytes(idemSeed, ent.packedKey[:]) ^ q.keyHash() ^ idemPackedSalt
	}
	return maphash.String(idemSeed, k.plain[ent.plainIndex()]) ^ q.keyHash()
}

const (
	slotSeqBits = 32
	slotSeqMask = 1<<slotSeqBits - 1
	// idemMaxSlots keeps the home bits inside the tag (and so inside the
	// slot). The key limit is far below it.
	idemMaxSlots = 1 << 30
)

// slotFor packs a sequence number and its hash's tag; never 0.
func slotFor(h, seq uint64) uint64 { return (h>>slotSeqBits|1)<<slotSeqBits | seq&slotSeqMask }

// tagMatch reports whether slot s may hold an entry of hash h.
func tagMatch(s, h uint64) bool { return s>>slotSeqBits == h>>slotSeqBits|1 }

// home is the home slot of a hash (or of a slot, whose top bits are its
// hash's) in a table of 1<<bits slots.
func home(h uint64, bits uint) uint64 { return h >> (64 - bits) }

// bits is log2 of the table's size.
func (k *idemKeys) bits() uint { return uint(bits.Len64(uint64(len(k.slots))) - 1) }

// index returns the FIFO position of the entry slot s names.
func (k *idemKeys) index(s uint64) int { return int((s - k.head) & slotSeqMask) }

func (k *idemKeys) len() int { return k.fifo.Len() }

// at returns the i-th entry in creation order. The pointer is valid until
// the next add or popFront.
func (k *idemKeys) at(i int) *idemEntry { return k.fifo.ptr(i) }

func (k *idemKeys) front() *idemEntry { return k.fifo.ptr(0) }

// get returns the entry of key in q, or nil.
func (k *idemKeys) get(q *queue, key string) *idemEntry {
	sk := storedKeyOf(key)
	return k.getStored(q, &sk)
}

// getStored is get for a key already in its stored form, so an enqueue
// decodes a packed key once for its lookup and its entry.
func (k *idemKeys) getStored(q *queue, sk *storedKey) *idemEntry {
	if len(k.slots) == 0 {
		return nil
	}
	mask := uint64(len(k.slots) - 1)
	h := idemHash(q, sk)
	for i := home(h, k.bits()); ; i = (i + 1) & mask {
		s := k.slots[i]
		if s == 0 {
			return nil
		}
		if tagMatch(s, h) {
			if ent := k.fifo.ptr(k.index(s)); k.matches(ent, q, sk) {
				return ent
			}
		}
	}
}

// add remembers the key sk stands for in q, for job id, created at
// createdAt; the key must not be present. A key not packed is kept as
// sk holds it: the caller owns it (or clones it first). It returns the
// new entry, valid until the next add or popFront.
func (k *idemKeys) add(q *queue, sk *storedKey, id JobID, createdAt int64) *idemEntry {
	if n := k.fifo.Len() + 1; n*4 > len(k.slots)*3 {
		k.rehash(max(16, 2*len(k.slots)), n)
	}
	ent := k.newEntry(q, sk, id, createdAt)
	seq := k.head + uint64(k.fifo.Len())
	k.fifo.PushBack(ent)
	k.place(slotFor(k.hashOf(&ent), seq))
	return k.fifo.ptr(k.fifo.Len() - 1)
}

// newEntry is the entry of the key sk stands for in q, its plain form (if
// it does not pack) filed in the plain table.
func (k *idemKeys) newEntry(q *queue, sk *storedKey, id JobID, createdAt int64) idemEntry {
	ent := idemEntry{job: uint64(id), createdAt: createdAt, queue: k.numberOf(q)}
	if sk.packed {
		ent.packedKey, ent.job = sk.bytes, ent.job|idemPacked
		return ent
	}
	var at uint32
	if n := len(k.freePlain); n > 0 {
		at = k.freePlain[n-1]
		k.freePlain = k.freePlain[:n-1]
		k.plain[at] = sk.plain
	} else {
		at = uint32(len(k.plain))
		k.plain = append(k.plain, sk.plain)
	}
	binary.LittleEndian.PutUint32(ent.packedKey[:4], at)
	return ent
}

// appendRestored files the key sk stands for in q, for job id, created
// at createdAt, at the FIFO's end without indexing it (Restore, which
// files the snapshot's keys in creation order): indexRestored then
// indexes them all at once. Until it does, no lookup finds them.
func (k *idemKeys) appendRestored(q *queue, sk *storedKey, id JobID, createdAt int64) {
	k.fifo.PushBack(k.newEntry(q, sk, id, createdAt))
}

// indexRestored builds the index of the entries appendRestored filed (the
// index must hold none of the FIFO's entries yet) and returns the later
// entry of a key that appears twice, nil when none does; a restore that
// gets one must be refused.
//
// Why not one insert per key as it is read: each insert is a random
// access into a table of up to 64 MiB, a cache miss apiece, and that was
// half of restoring a snapshot's engine part (4M keys: 760 ms). Here the
// slots are first grouped by the top bits of their home (a counting sort
// over the FIFO, read in order) and then placed group by group, so the
// placing stays within a few hundred KiB of the table at a time (4M keys:
// 375 ms, the FIFO's filling included). Any insertion order leaves a
// valid table: each slot sits on its home's run, with no empty slot
// between.
func (k *idemKeys) indexRestored() *idemEntry {
	n := k.fifo.Len()
	if size := slotsFor(n); len(k.slots) < size {
		k.slots = make([]uint64, size)
	}
	if n == 0 {
		return nil
	}
	tableBits := k.bits()
	// Groups of about 32K slots (256 KiB of the table) each.
	groupBits := max(1, int(tableBits)-15)
	// Each entry's hash is computed twice, once to count its group and
	// once to file it: a second buffer of n slots would cost more memory
	// than the hashing costs time.
	starts := make([]int, 1<<groupBits+1)
	for i := range n {
		starts[k.hashOf(k.fifo.ptr(i))>>(64-groupBits)+1]++
	}
	for g := 1; g < len(starts); g++ {
		starts[g] += starts[g-1]
	}
	sorted := make([]uint64, n)
	for i := range n {
		s := slotFor(k.hashOf(k.fifo.ptr(i)), k.head+uint64(i))
		g := s >> (64 - groupBits)
		sorted[starts[g]] = s
		starts[g]++
	}
	mask := uint64(len(k.slots) - 1)
	for _, s := range sorted {
		i := home(s, tableBits)
		for ; k.slots[i] != 0; i = (i + 1) & mask {
			// A key's slots share its hash's tag, and within a group the
			// slots keep the FIFO's order: s is the later one.
			if k.slots[i]>>slotSeqBits == s>>slotSeqBits && k.sameKey(k.fifo.ptr(k.index(k.slots[i])), k.fifo.ptr(k.index(s))) {
				return k.fifo.ptr(k.index(s))
			}
		}
		k.slots[i] = s
	}
	return nil
}

// restoredKeysCheck indexes the keys a restore filed (indexRestored) and
// refuses a key filed twice.
func (k *idemKeys) restoredKeysCheck() error {
	if dup := k.indexRestored(); dup != nil {
		return fmt.Errorf("idempotency key %q of queue %q appears twice", k.appendKey(dup, nil), k.queueOf(dup).name)
	}
	return nil
}

// sameKey reports whether a and b hold one key of one queue.
func (k *idemKeys) sameKey(a, b *idemEntry) bool {
	if a.queue != b.queue || a.packed() != b.packed() {
		return false
	}
	if a.packed() {
		return a.packedKey == b.packedKey
	}
	return k.plain[a.plainIndex()] == k.plain[b.plainIndex()]
}

// place puts slot s into the first free slot from its home on.
func (k *idemKeys) place(s uint64) {
	mask := uint64(len(k.slots) - 1)
	i := home(s, k.bits())
	for k.slots[i] != 0 {
		i = (i + 1) & mask
	}
	k.slots[i] = s
}

// popFront forgets the oldest entry.
func (k *idemKeys) popFront() {
	ent := k.fifo.ptr(0)
	mask := uint64(len(k.slots) - 1)
	tableBits := k.bits()
	want := slotFor(k.hashOf(ent), k.head)
	i := home(want, tableBits)
	for k.slots[i] != want {
		i = (i + 1) & mask
	}
	// Backward-shift deletion: move later members of the run into the hole
	// when their home slot is not between the hole and them.
	for j := (i + 1) & mask; k.slots[j] != 0; j = (j + 1) & mask {
		if (j-home(k.slots[j], tableBits))&mask >= (j-i)&mask {
			k.slots[i] = k.slots[j]
			i = j
		}
	}
	k.slots[i] = 0
	if !ent.packed() {
		at := ent.plainIndex()
		k.plain[at] = ""
		k.freePlain = append(k.freePlain, at)
	}
	k.fifo.PopFront()
	k.head++
	if k.fifo.Len() == 0 {
		// No entry names a queue or a plain key any more: start the
		// numbering again rather than keep queues deleted since.
		clear(k.queues)
		k.queues, k.plain, k.freePlain = k.queues[:0], k.plain[:0], k.freePlain[:0]
	}
	if n := k.fifo.Len(); len(k.slots) > 16 && n*8 < len(k.slots) {
		k.rehash(len(k.slots)/2, n)
	}
}

// rehash rebuilds the index with size slots, or more if n entries (how many
// there are about to be) would load it above three quarters. It walks the
// old slots from the start of a run, so the slots land in the new table in
// about the order they are written.
func (k *idemKeys) rehash(size, n int) {
	for n*4 > size*3 {
		size *= 2
	}
	size = min(size, idemMaxSlots)
	old := k.slots
	k.slots = make([]uint64, size)
	if len(old) == 0 {
		for i := 0; i < k.fifo.Len(); i++ {
			k.place(slotFor(k.hashOf(k.fifo.ptr(i)), k.head+uint64(i)))
		}
		return
	}
	start := 0
	for old[start] != 0 {
		start++ // the table is never full, so an empty slot exists
	}
	for i := range old {
		if s := old[(start+i)&(len(old)-1)]; s != 0 {
			k.place(s)
		}
	}
}

// slotsFor is the index's size for n entries: the smallest power of two,
// at least 16, that they load to three quarters at most, within
// idemMaxSlots.
func slotsFor(n int) int {
	size := 16
	for n*4 > size*3 {
		size *= 2
	}
	return min(size, idemMaxSlots)
}

// reserve sizes the index and the FIFO for n entries at once (Restore).
func (k *idemKeys) reserve(n int) {
	if n <= k.fifo.Len() {
		return
	}
	if size := slotsFor(n); size > len(k.slots) {
		k.rehash(size, n)
	}
	k.fifo.grow(n)
}

// check verifies the index against the FIFO: every entry is found under its
// own key, in a live queue, in creation order, and the index holds nothing
// else. Without lookups it skips finding each entry under its key, which
// an index that indexRestored built holds by construction (it refused every
// duplicate, and placed each slot on its key's run with nothing removed).
func (k *idemKeys) check(queues map[string]*queue, lookups bool) error {
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
	plainUsed := 0
	for i := 0; i < k.fifo.Len(); i++ {
		ent := k.fifo.ptr(i)
		if ent.queue == 0 || int(ent.queue) > len(k.queues) {
			return fmt.Errorf("idempotency key %d of the FIFO: queue number %d of %d", i, ent.queue, len(k.queues))
		}
		if !ent.packed() {
			if int(ent.plainIndex()) >= len(k.plain) {
				return fmt.Errorf("idempotency key %d of the FIFO: plain key %d of %d", i, ent.plainIndex(), len(k.plain))
			}
			plainUsed++
		}
		// The key's text is built only for an error's message: a restore
		// checks millions of keys, and their hex form cost most of it.
		q := k.queueOf(ent)
		text := func() string { return string(k.appendKey(ent, nil)) }
		if q == nil || queues[q.name] != q {
			return fmt.Errorf("idempotency key %q: not in a known queue", text())
		}
		// A packed key is canonical (lower-case hex packs back to the same
		// bytes); a plain one must be one that does not pack.
		if !ent.packed() {
			plain := k.plain[ent.plainIndex()]
			if plain == "" {
				return fmt.Errorf("idempotency key %d of the FIFO is empty", i)
			}
			if _, packs := packKey(plain); packs {
				return fmt.Errorf("idempotency key %q of queue %q: kept in the wrong form", plain, q.name)
			}
		}
		if lookups && k.firstWithKeyOf(ent) != ent {
			return fmt.Errorf("idempotency key %q of queue %q: FIFO and index disagree", text(), q.name)
		}
		if i > 0 && ent.createdAt < k.fifo.ptr(i-1).createdAt {
			return fmt.Errorf("idempotency key %q of queue %q out of creation order", text(), q.name)
		}
	}
	if plainUsed+len(k.freePlain) != len(k.plain) {
		return fmt.Errorf("idempotency keys: %d plain keys held and %d free, of %d", plainUsed, len(k.freePlain), len(k.plain))
	}
	return nil
}
