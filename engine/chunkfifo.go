package engine

import (
	"slices"
	"sync/atomic"
)

// chunkFIFO is a FIFO with random access, kept in fixed-size chunks. It
// holds the idempotency keys of the dedup window: millions of entries of 56
// bytes on a busy node. A doubling ring (deque) would allocate and zero a
// fresh array of up to 100+ MB at each doubling, copy every entry into it and
// fault its new half in, stalling the apply of the command that pushed for
// milliseconds, and would hold up to twice the memory it needs. Here no
// element is ever copied after its push, a push or pop costs O(1) apart from
// the slice of chunk pointers (8 bytes per chunk, compacted or regrown now
// and then, amortised O(1)), and the chunks in use hold at most Len()+2
// chunks' worth of slots, plus one spare.
//
// The spare is a chunk emptied at the front, kept (all zero) for the next one
// the back needs, so a FIFO that oscillates across a chunk boundary, or
// slides along in a steady window, allocates nothing.
//
// A snapshot reads the FIFO as it was between two applies, while later
// applies change it (freeze): the chunks it reads are shared until it is
// released, and a change to a shared chunk's elements copies the chunk
// first (mut), so the snapshot's capture costs O(chunks), not O(elements).
// A push writes past every frozen view's end and needs no copy.
//
// The zero value is an empty FIFO.
type chunkFIFO[T any] struct {
	// chunks[first:] hold the elements, the front at offset head of
	// chunks[first]; chunks[:first] are nil, room for a compaction.
	// Invariants: head < fifoChunkLen; len(chunks)-first is
	// ceil((head+n)/fifoChunkLen), so an empty FIFO has no chunk in use and
	// head 0.
	chunks []*fifoChunk[T]
	first  int
	head   int
	n      int
	spare  *fifoChunk[T] // nil or an all-zero chunk
	// epoch is bumped by each freeze: a chunk made before the last one
	// (its epoch below) may be read by a frozen view, so while pins
	// counts an unreleased view it is not written in place.
	epoch uint32
	pins  *atomic.Int32
}

// fifoChunkLen is the elements per chunk, for the two FIFOs the engine
// keeps: 585 idemEntry of 40 bytes are 23400 bytes, in the allocator's
// 24 KiB size class (95% used), and 585 readyEntry of 24 bytes are 14040
// bytes, in its 14 KiB class (98%); neither has a pointer, so neither
// chunk carries a malloc header. A longer chunk would fill the largest
// small class (32 KiB) with keys, but every priority level of every queue
// holding compact jobs keeps a ready chunk, so ready chunks stay small. A
// chunk is small enough that allocating and zeroing it is no stall.
const fifoChunkLen = 585

type fifoChunk[T any] struct {
	items [fifoChunkLen]T
	epoch uint32 // the FIFO's epoch when the chunk was made (0 while spare)
}

// shared reports whether c may be read by a frozen view not yet released.
func (f *chunkFIFO[T]) shared(c *fifoChunk[T]) bool {
	return c.epoch != f.epoch && f.pins != nil && f.pins.Load() > 0
}

func (f *chunkFIFO[T]) Len() int { return f.n }

// ptr returns a pointer to the i-th element from the front. It stays valid
// until that element is popped (elements never move).
func (f *chunkFIFO[T]) ptr(i int) *T {
	if uint(i) >= uint(f.n) {
		panic("engine: chunkFIFO index out of range")
	}
	pos := uint(f.head + i)
	return &f.chunks[f.first+int(pos/fifoChunkLen)].items[pos%fifoChunkLen]
}

// mut is ptr for a change of the element in place: a chunk a frozen view
// shares is copied first, so the view keeps what it froze.
func (f *chunkFIFO[T]) mut(i int) *T {
	if uint(i) >= uint(f.n) {
		panic("engine: chunkFIFO index out of range")
	}
	pos := uint(f.head + i)
	k := f.first + int(pos/fifoChunkLen)
	if c := f.chunks[k]; f.shared(c) {
		cp := new(fifoChunk[T])
		cp.items = c.items
		cp.epoch = f.epoch
		f.chunks[k] = cp
	}
	return &f.chunks[k].items[pos%fifoChunkLen]
}

// fifoView is a chunkFIFO as it was when frozen: read-only, safe to read
// from another goroutine while the FIFO changes, until released.
type fifoView[T any] struct {
	chunks  []*fifoChunk[T]
	head, n int
}

func (v *fifoView[T]) Len() int { return v.n }

func (v *fifoView[T]) ptr(i int) *T {
	if uint(i) >= uint(v.n) {
		panic("engine: fifoView index out of range")
	}
	pos := uint(v.head + i)
	return &v.chunks[pos/fifoChunkLen].items[pos%fifoChunkLen]
}

// freeze returns a view of f's elements now, pinned by pins: the caller
// has added one to pins, and subtracts it once the view is no longer
// read. O(chunks).
func (f *chunkFIFO[T]) freeze(pins *atomic.Int32) fifoView[T] {
	f.epoch++
	f.pins = pins
	return fifoView[T]{chunks: slices.Clone(f.chunks[f.first:]), head: f.head, n: f.n}
}

func (f *chunkFIFO[T]) PushBack(v T) {
	pos := uint(f.head + f.n)
	if pos == uint(len(f.chunks)-f.first)*fifoChunkLen {
		f.addChunk()
	}
	f.chunks[f.first+int(pos/fifoChunkLen)].items[pos%fifoChunkLen] = v
	f.n++
}

// PopFront drops the front element. Its slot is zeroed so the collector can
// free what it referenced; a chunk left empty becomes the spare.
func (f *chunkFIFO[T]) PopFront() {
	if f.n == 0 {
		panic("engine: PopFront of an empty chunkFIFO")
	}
	c := f.chunks[f.first]
	shared := f.shared(c)
	if !shared { // a view may read the slot: it is zeroed with the chunk below
		var zero T
		c.items[f.head] = zero
	}
	f.head++
	f.n--
	if f.head < fifoChunkLen && f.n > 0 {
		return
	}
	// c is all zero now: every slot before head was popped, and when head
	// stopped short of the end the back is at head, so nothing after it was
	// ever written. Unless a view froze it: then it is left to the view, or,
	// made before the last freeze, it may hold slots popped while shared.
	if f.spare == nil && !shared {
		if c.epoch != f.epoch {
			c.items = [fifoChunkLen]T{}
		}
		c.epoch = 0
		f.spare = c
	}
	f.chunks[f.first] = nil
	f.first++
	f.head = 0
	if f.n == 0 {
		f.chunks, f.first = f.chunks[:0], 0
	}
}

// grow makes room in the chunk-pointer slice for n elements in all, so the
// pushes that follow (Restore's) do not regrow it. It allocates no chunk:
// they come one at a time as the back reaches them, which costs the same.
func (f *chunkFIFO[T]) grow(n int) {
	want := (f.head + n + fifoChunkLen - 1) / fifoChunkLen
	if want <= cap(f.chunks)-f.first {
		return
	}
	f.resizeChunks(want)
}

// addChunk appends a chunk at the back, the spare if there is one.
func (f *chunkFIFO[T]) addChunk() {
	c := f.spare
	f.spare = nil
	if c == nil {
		c = new(fifoChunk[T])
	}
	c.epoch = f.epoch
	if len(f.chunks) == cap(f.chunks) {
		live := len(f.chunks) - f.first
		if f.first > 0 && live*2 <= cap(f.chunks) {
			// At least half the slice is dead room at the front: slide the
			// live pointers down instead of allocating.
			copy(f.chunks, f.chunks[f.first:])
			clear(f.chunks[live:])
			f.chunks, f.first = f.chunks[:live], 0
		} else {
			f.resizeChunks(max(4, 2*live))
		}
	}
	f.chunks = append(f.chunks, c)
}

// resizeChunks moves the live chunk pointers to a new slice of capacity size.
func (f *chunkFIFO[T]) resizeChunks(size int) {
	chunks := make([]*fifoChunk[T], len(f.chunks)-f.first, size)
	copy(chunks, f.chunks[f.first:])
	f.chunks, f.first = chunks, 0
}
