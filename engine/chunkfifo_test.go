package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"
)

// fifoModel drives a chunkFIFO and a plain slice through the same pushes
// and pops and checks after each step that they agree, that popped slots
// are zeroed and that the chunks keep their invariants.
type fifoModel struct {
	t    testing.TB
	f    chunkFIFO[idemEntry]
	want []idemEntry
	seq  uint64
}

// entry is the seq-th pushed entry: every field set, so a slot left
// unzeroed shows.
func (m *fifoModel) entry() idemEntry {
	m.seq++
	ent := idemEntry{queue: uint32(m.seq%2) + 1, job: m.seq, createdAt: int64(m.seq)}
	ent.packedKey[m.seq%16] = byte(m.seq)
	return ent
}

func (m *fifoModel) push(count int) {
	for range count {
		ent := m.entry()
		m.f.PushBack(ent)
		m.want = append(m.want, ent)
	}
	m.check()
}

func (m *fifoModel) pop(count int) {
	for range min(count, len(m.want)) {
		slot := m.f.ptr(0)
		m.f.PopFront()
		if *slot != (idemEntry{}) {
			m.t.Fatalf("after %d pushes: the popped slot still holds %+v", m.seq, *slot)
		}
		m.want = m.want[1:]
	}
	m.check()
}

// grow asks for room for n elements in all; the contents must not change.
func (m *fifoModel) grow(n int) {
	m.f.grow(n)
	m.check()
}

func (m *fifoModel) check() {
	m.t.Helper()
	f := &m.f
	if f.Len() != len(m.want) {
		m.t.Fatalf("after %d pushes: Len() = %d, model %d", m.seq, f.Len(), len(m.want))
	}
	for i := range m.want {
		if got := f.ptr(i); *got != m.want[i] {
			m.t.Fatalf("after %d pushes: ptr(%d) = %+v, model %+v", m.seq, i, *got, m.want[i])
		}
	}
	live := len(f.chunks) - f.first
	if f.head < 0 || f.head >= fifoChunkLen || live != (f.head+f.n+fifoChunkLen-1)/fifoChunkLen {
		m.t.Fatalf("after %d pushes: head %d, n %d in %d chunks", m.seq, f.head, f.n, live)
	}
	if f.n == 0 && (f.head != 0 || f.first != 0) {
		m.t.Fatalf("after %d pushes: empty with head %d, first %d", m.seq, f.head, f.first)
	}
	for i, c := range f.chunks {
		if (c == nil) != (i < f.first) {
			m.t.Fatalf("after %d pushes: chunk %d is %p with first %d", m.seq, i, c, f.first)
		}
	}
	if f.spare != nil && *f.spare != (fifoChunk[idemEntry]{}) {
		m.t.Fatalf("after %d pushes: the spare chunk is not zero", m.seq)
	}
	if got := chunkFIFOSlots(f, false); got > f.n+2*fifoChunkLen-1 {
		m.t.Fatalf("after %d pushes: %d elements in %d slots", m.seq, f.n, got)
	}
}

// chunkFIFOSlots counts the element slots of the chunks f holds: those in
// use and, with spare, the spare. Every chunk is one fifoChunk array, so it
// counts chunks, which keeps it O(1) for a check after every push.
func chunkFIFOSlots[T any](f *chunkFIFO[T], spare bool) int {
	chunks := len(f.chunks) - f.first
	if spare && f.spare != nil {
		chunks++
	}
	return chunks * fifoChunkLen
}

func TestChunkFIFO_AgainstSlice(t *testing.T) {
	const chunk = fifoChunkLen
	tests := []struct {
		name string
		run  func(m *fifoModel)
	}{
		{"PushPopOne", func(m *fifoModel) { m.push(1); m.pop(1); m.push(1); m.pop(1) }},
		{"FillChunksExactlyThenEmpty", func(m *fifoModel) {
			m.push(3 * chunk)
			m.pop(3 * chunk)
			m.push(3 * chunk)
			m.pop(3*chunk - 1)
			m.pop(1)
		}},
		{"OscillateAcrossBoundary", func(m *fifoModel) {
			m.push(chunk - 1)
			for range 2 * chunk {
				m.push(2)
				m.pop(2)
			}
		}},
		{"EmptyAndRefillMidChunk", func(m *fifoModel) {
			for _, k := range []int{7, chunk + 3, 2*chunk - 1, 5*chunk + 17} {
				m.push(k)
				m.pop(k / 2)
				m.push(k)
				m.pop(2 * k)
			}
		}},
		{"GrowThenPush", func(m *fifoModel) {
			m.grow(10 * chunk)
			m.push(10*chunk + 1)
			m.pop(3*chunk + 5)
			m.grow(20 * chunk)
			m.grow(1) // smaller than Len: nothing to do
			m.push(15 * chunk)
			m.pop(30 * chunk)
			m.grow(4 * chunk)
			m.push(chunk)
		}},
		{"SlidingWindow", func(m *fifoModel) {
			m.push(3*chunk + 100)
			for range 40 {
				m.push(chunk / 2)
				m.pop(chunk / 2)
			}
		}},
		{"RandomWalk", func(m *fifoModel) {
			rng := rand.New(rand.NewPCG(7, 11))
			for range 3000 {
				switch op := rng.IntN(10); {
				case op < 5:
					m.push(rng.IntN(2 * chunk))
				case op < 9:
					m.pop(rng.IntN(2 * chunk))
				case rng.IntN(2) == 0:
					m.pop(len(m.want)) // empty fully
				default:
					m.grow(len(m.want) + rng.IntN(8*chunk))
				}
				if len(m.want) > 8*chunk {
					m.pop(len(m.want) - 4*chunk) // keep the full checks cheap
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &fifoModel{t: t}
			tt.run(m)
		})
	}
}

func TestChunkFIFO_MisusePanics(t *testing.T) {
	tests := []struct {
		name string
		op   func(f *chunkFIFO[int])
	}{
		{"PopEmpty", func(f *chunkFIFO[int]) { f.PopFront() }},
		{"PtrEmpty", func(f *chunkFIFO[int]) { f.ptr(0) }},
		{"PtrPastBack", func(f *chunkFIFO[int]) { f.PushBack(1); f.ptr(1) }},
		{"PtrNegative", func(f *chunkFIFO[int]) { f.PushBack(1); f.ptr(-1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tt.op(&chunkFIFO[int]{})
		})
	}
}

// A FIFO that oscillates across a chunk boundary, empties and refills, or
// slides along at a steady size reuses its spare chunk and compacts its
// chunk-pointer slice in place: nothing allocates once it is warm.
func TestChunkFIFO_SteadyStateDoesNotAllocate(t *testing.T) {
	tests := []struct {
		name  string
		fill  int
		cycle func(f *chunkFIFO[idemEntry])
	}{
		{"OscillateAcrossBoundary", fifoChunkLen - 1, func(f *chunkFIFO[idemEntry]) {
			// The back crosses into a new chunk and the front leaves one
			// once per cycle.
			for range fifoChunkLen / 2 {
				f.PushBack(idemEntry{job: 1})
				f.PushBack(idemEntry{job: 2})
				f.PopFront()
				f.PopFront()
			}
		}},
		{"EmptyAndRefill", 0, func(f *chunkFIFO[idemEntry]) {
			f.PushBack(idemEntry{job: 1})
			f.PopFront()
		}},
		{"SlidingWindow", 10*fifoChunkLen + 3, func(f *chunkFIFO[idemEntry]) {
			for range 30 * fifoChunkLen { // past the 11 live chunk pointers, twice
				f.PushBack(idemEntry{job: 1})
				f.PopFront()
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f chunkFIFO[idemEntry]
			for range tt.fill {
				f.PushBack(idemEntry{job: 1})
			}
			for range 40 { // warm up: the pointer slice reaches its size
				tt.cycle(&f)
			}
			if allocs := testing.AllocsPerRun(20, func() { tt.cycle(&f) }); allocs != 0 {
				t.Fatalf("%v allocations per cycle", allocs)
			}
		})
	}
}

// At a million keys the chunks, spare included, hold at most two chunks'
// worth of slots beyond the entries, both while filling from empty and in
// a sliding window at that size (a doubling ring holds up to 2N).
func TestChunkFIFO_MemoryAtAMillion(t *testing.T) {
	const n = 1_000_000
	limit := n + 2*fifoChunkLen
	var f chunkFIFO[idemEntry]
	for i := range n {
		f.PushBack(idemEntry{job: uint64(i)})
		if got := chunkFIFOSlots(&f, true); got > i+1+2*fifoChunkLen {
			t.Fatalf("filling, at %d entries: %d slots", i+1, got)
		}
	}
	if got := chunkFIFOSlots(&f, true); got > limit {
		t.Fatalf("%d entries in %d slots, limit %d", n, got, limit)
	}
	for i := range 3 * fifoChunkLen {
		f.PushBack(idemEntry{job: uint64(n + i)})
		if got := chunkFIFOSlots(&f, true); got > limit+1 {
			t.Fatalf("window, %d pushed: %d entries in %d slots", i, f.Len(), got)
		}
		f.PopFront()
		if got := chunkFIFOSlots(&f, true); got > limit {
			t.Fatalf("window, %d popped: %d entries in %d slots", i, f.Len(), got)
		}
	}
	slots := chunkFIFOSlots(&f, true)
	t.Logf("%d entries: %d slots in chunks (%.2f MB of %d-byte entries)", n, slots, float64(slots)*float64(unsafe.Sizeof(idemEntry{}))/1e6, unsafe.Sizeof(idemEntry{}))
}

// fifoChunkLen is tuned so that a chunk of either element the engine
// keeps in a chunkFIFO uses at least 95% of the allocator's size class it
// falls in; a change to either element's size must retune it.
func TestChunkFIFO_ChunkFillsSizeClass(t *testing.T) {
	// Go's size classes from 8 KiB to the largest small one
	// (runtime/sizeclasses.go); neither element has a pointer, so a chunk
	// has no malloc header.
	classes := []uintptr{8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}
	for _, c := range []struct {
		name        string
		chunk, elem uintptr
	}{
		{"idemEntry", unsafe.Sizeof(fifoChunk[idemEntry]{}), unsafe.Sizeof(idemEntry{})},
		{"readyEntry", unsafe.Sizeof(fifoChunk[readyEntry]{}), unsafe.Sizeof(readyEntry{})},
	} {
		i := slices.IndexFunc(classes, func(size uintptr) bool { return size >= c.chunk })
		if i < 0 {
			t.Fatalf("a chunk of %d-byte %s takes %d bytes, above the largest small size class", c.elem, c.name, c.chunk)
		}
		if used := float64(c.chunk) / float64(classes[i]); used < 0.95 {
			t.Errorf("a chunk of %d-byte %s takes %d bytes of a %d-byte size class (%.0f%%); retune fifoChunkLen", c.elem, c.name, c.chunk, classes[i], 100*used)
		}
	}
}

// FuzzChunkFIFO decodes the bytes into pushes, pops and grows, in counts
// large enough to cross chunk boundaries, and runs them on the model.
func FuzzChunkFIFO(f *testing.F) {
	f.Add([]byte{0x3f, 0xbf, 0x01, 0xff, 0x20})
	f.Add([]byte{0x3f, 0x3f, 0x3f, 0x7f, 0x80, 0xc0, 0x3f, 0xbf, 0xbf, 0xbf})
	f.Add([]byte{0xc5, 0x1f, 0x9f, 0x1f, 0x9f, 0x1f, 0x9f, 0x00, 0x80})
	f.Fuzz(func(t *testing.T, ops []byte) {
		// Each step checks every element, so inputs stay short enough
		// for thousands of executions a second.
		if len(ops) > 64 {
			ops = ops[:64]
		}
		m := &fifoModel{t: t}
		for _, b := range ops {
			count := int(b&0x3f) * 37 // 0 to 2331: up to four and a half chunks
			switch b >> 6 {
			case 0:
				m.push(count)
			case 1:
				m.push(count + fifoChunkLen - 1)
			case 2:
				m.pop(count)
			case 3:
				if b&1 == 0 {
					m.pop(len(m.want))
				} else {
					m.grow(len(m.want) + count)
				}
			}
			if len(m.want) > 8*fifoChunkLen {
				m.pop(len(m.want) - 4*fifoChunkLen)
			}
		}
	})
}

// BenchmarkChunkFIFO compares chunkFIFO with the doubling deque it replaced
// as the idempotency-key FIFO. grow pushes a million entries into an empty
// FIFO (one op is the million; max-256push-ns is the slowest run of 256
// consecutive pushes, where a doubling's copy shows as a stall); window
// pushes one and pops one at a million.
func BenchmarkChunkFIFO(b *testing.B) {
	const n = 1_000_000
	type fifo interface {
		Len() int
		PushBack(idemEntry)
		PopFront()
	}
	impls := []struct {
		name string
		make func() fifo
	}{
		{"chunkFIFO", func() fifo { return &chunkFIFO[idemEntry]{} }},
		{"deque", func() fifo { return &dequeNoReturn{} }},
	}
	for _, impl := range impls {
		b.Run("grow/"+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			var worst []time.Duration // per op
			for b.Loop() {
				f := impl.make()
				var opWorst time.Duration
				for i := 0; i < n; i += 256 {
					start := time.Now()
					for j := i; j < min(i+256, n); j++ {
						f.PushBack(idemEntry{job: uint64(j), createdAt: int64(j)})
					}
					opWorst = max(opWorst, time.Since(start))
				}
				worst = append(worst, opWorst)
			}
			// The median op's worst, so one stray preemption or collection
			// on a shared machine does not stand for the whole run.
			slices.Sort(worst)
			b.ReportMetric(float64(worst[len(worst)/2].Nanoseconds()), "max-256push-ns")
		})
		b.Run("window/"+impl.name, func(b *testing.B) {
			f := impl.make()
			for i := range n {
				f.PushBack(idemEntry{job: uint64(i), createdAt: int64(i)})
			}
			b.ReportAllocs()
			i := n
			for b.Loop() {
				f.PushBack(idemEntry{job: uint64(i), createdAt: int64(i)})
				f.PopFront()
				i++
			}
		})
	}
}

// dequeNoReturn is deque[idemEntry] with the PopFront the FIFO interface
// wants.
type dequeNoReturn struct{ deque[idemEntry] }

func (d *dequeNoReturn) PopFront() { d.deque.PopFront() }
