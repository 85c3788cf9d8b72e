package engine

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// A snapshot's capture in two stages (issue 35 item 3).
//
// A snapshot is taken between two applies, and applies wait until its
// state is captured. Written at once, that capture is a walk over every
// job and key: at 10M waiting jobs, 0.5 s of encoding and the write of
// a third of a gigabyte into a file, which a node whose disk is busy
// flushing sees slowed several times over. Most of a large backlog is
// compact jobs and idempotency keys, both held by value in chunkFIFOs,
// which can be frozen: their chunks shared with the capture and copied by
// the apply that next changes one (chunkFIFO.mut). So CaptureSnapshot
// encodes into memory only what is not in such a FIFO (queues, full jobs,
// dead letters, reservations, completed ids: small in a backlog), freezes
// the FIFOs, and returns; SnapshotCapture.WriteTo then writes the stream,
// byte for byte what SnapshotWith writes at the same moment, merging the
// frozen compact jobs into the full ones by id, from any goroutine while
// applies go on.

// maxCapturedBytes bounds what a capture encodes into memory: past it,
// CaptureSnapshot declines and the caller writes the snapshot at once
// (SnapshotWith), as when most of the state is full jobs.
const maxCapturedBytes = 32 << 20

// maxCapturedPlainKeys bounds the keys not packed into 16 bytes whose
// table a capture copies (16 bytes each): the table's slots are reused
// once a key is forgotten, so a frozen key must read its own copy.
const maxCapturedPlainKeys = 1 << 20

// errCaptureTooLarge is a capture's buffer past maxCapturedBytes.
var errCaptureTooLarge = errors.New("engine: capture larger than its bound")

// SnapshotCapture is the engine's state at one moment between two
// applies, written by WriteTo as SnapshotWith would have written it then.
// Release it once written, or when it will not be: until then the chunks
// it shares are copied by the applies that change them.
type SnapshotCapture struct {
	release func()
	once    sync.Once

	// buf is what was encoded under the capture: buf[:headEnd] the stream
	// up to the jobs, buf[headEnd:jobsEnd] the full jobs' elements (the
	// i-th ends at jobEnds[i] and is job jobIDs[i]), up to deadEnd the
	// dead letters, and after it what follows the keys.
	buf                     []byte
	headEnd, jobsEnd, dead  int
	jobIDs                  []JobID
	jobEnds                 []int
	levels                  []frozenLevel
	keys                    fifoView[idemEntry]
	keyQueues               []uint64 // a key's queue's index in the stream, by its slot in idemKeys.queues
	plain                   []string // idemKeys.plain as captured
	payloadLengths, written bool
}

// frozenLevel is one priority level's compact ring as captured.
type frozenLevel struct {
	ring  fifoView[readyEntry]
	types []string // the queue's job types then (appended to only)
	queue uint64   // the queue's index in the stream
	prio  int
	// skip holds the ids of the ring's live entries written as full jobs
	// (those with a dependency record: not plain), ascending.
	skip []JobID
}

// capBuffer is an io.Writer into memory that fails past maxCapturedBytes.
type capBuffer struct{ b []byte }

func (c *capBuffer) Write(p []byte) (int, error) {
	if len(c.b)+len(p) > maxCapturedBytes {
		return 0, errCaptureTooLarge
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// CaptureSnapshot captures the state for a snapshot written as o says,
// or returns nil when it cannot be captured this way (only the protobuf
// form with payload lengths is; or what is not in a FIFO is too large):
// then the caller writes it with SnapshotWith, between the same two
// applies. It must be called between applies, as SnapshotWith is.
func (e *Engine) CaptureSnapshot(o SnapshotOptions) (*SnapshotCapture, error) {
	if e.payloadsAhead {
		return nil, ErrPayloadsAhead
	}
	if !o.Protobuf || !o.PayloadLengths || len(e.keys.plain) > maxCapturedPlainKeys {
		return nil, nil
	}
	buf := &capBuffer{}
	c := newEncoder(buf, o)
	w := &pbWriter{c: c, opts: pbMarshal}
	at := func() int { return len(buf.b) + len(c.out) }

	qs, qindex := e.pbWriteHead(w)
	s := &SnapshotCapture{headEnd: at(), payloadLengths: o.PayloadLengths}

	// The full jobs in id order, and the compact ones that are not plain
	// (a dependency record) among them, as views.
	var fullCompact []*job
	skips := make(map[*readyLevel][]JobID)
	if len(e.deps) > 0 && e.nCompact > 0 {
		for id := range e.deps { // sorted below
			if q, prio, i, ok := e.findCompact(id); ok && e.jobs.get(id) == nil {
				fullCompact = append(fullCompact, viewOf(q, prio, q.ready[prio].compact.ptr(i)))
				skips[&q.ready[prio]] = append(skips[&q.ready[prio]], id)
			}
		}
		slices.SortFunc(fullCompact, func(a, b *job) int { return cmpID(a.id, b.id) })
	}
	var m storepb.EngineJob
	writeJob := func(j *job) bool {
		e.pbWriteJob(w, &m, j, qindex)
		s.jobIDs = append(s.jobIDs, j.id)
		s.jobEnds = append(s.jobEnds, at())
		return c.err == nil
	}
	e.jobs.each(func(j *job) bool {
		for len(fullCompact) > 0 && fullCompact[0].id < j.id {
			if !writeJob(fullCompact[0]) {
				return false
			}
			fullCompact = fullCompact[1:]
		}
		return writeJob(j)
	})
	for _, j := range fullCompact {
		if !writeJob(j) {
			break
		}
	}
	s.jobsEnd = at()
	e.pbWriteDeadLetters(w, qindex)
	s.dead = at()
	e.pbWriteAfterKeys(w, qs, qindex)
	c.flush()
	if errors.Is(c.err, errCaptureTooLarge) {
		return nil, nil
	}
	if c.err != nil {
		return nil, fmt.Errorf("engine snapshot: %w", c.err)
	}
	s.buf = buf.b

	// Freeze what the stream reads later: every compact ring with a live
	// entry, and the keys with their queues and plain forms.
	if e.capturePins == nil {
		e.capturePins = new(atomic.Int32)
	}
	pins := e.capturePins
	pins.Add(1)
	s.release = func() { pins.Add(-1) }
	for _, q := range qs {
		for prio := range q.ready {
			r := &q.ready[prio]
			if r.nCompact == 0 {
				continue
			}
			skip := skips[r]
			slices.Sort(skip)
			s.levels = append(s.levels, frozenLevel{
				ring: r.compact.freeze(pins), types: q.types[:len(q.types):len(q.types)],
				queue: qindex[q], prio: prio, skip: skip,
			})
		}
	}
	s.keys = e.keys.fifo.freeze(pins)
	s.keyQueues = make([]uint64, len(e.keys.queues))
	for i, q := range e.keys.queues {
		s.keyQueues[i] = qindex[q]
	}
	s.plain = slices.Clone(e.keys.plain)
	return s, nil
}

// Release lets the applies change the captured chunks in place again.
// It may be called more than once, and from any goroutine.
func (s *SnapshotCapture) Release() {
	s.once.Do(s.release)
}

// WriteTo writes the captured state, as SnapshotWith would have written
// it at the capture, and releases the capture. From any goroutine, once.
func (s *SnapshotCapture) WriteTo(w io.Writer) (int64, error) {
	defer s.Release()
	if s.written {
		return 0, errors.New("engine: snapshot capture written twice")
	}
	s.written = true
	crc := crc32.NewIEEE()
	cw := &countingWriter{w: io.MultiWriter(w, crc)}
	c := newEncoder(cw, SnapshotOptions{PayloadLengths: s.payloadLengths, Protobuf: true})
	pw := &pbWriter{c: c, opts: pbMarshal}
	c.raw(s.buf[:s.headEnd])
	s.writeJobs(pw)
	c.raw(s.buf[s.jobsEnd:s.dead])
	for i := 0; i < s.keys.Len() && c.err == nil; i++ {
		ent := s.keys.ptr(i)
		at := pw.begin(pbIdempotencyKeys)
		c.out = appendKeyPB(c.out, ent, s.plain, s.keyQueues[ent.queue-1])
		pw.end(at)
	}
	c.raw(s.buf[s.dead:])
	c.flush()
	if c.err != nil {
		return cw.n, fmt.Errorf("engine snapshot: %w", c.err)
	}
	var trailer [4]byte
	binary.LittleEndian.PutUint32(trailer[:], crc.Sum32())
	n, err := w.Write(trailer[:])
	if err != nil {
		return cw.n + int64(n), fmt.Errorf("engine snapshot: %w", err)
	}
	return cw.n + int64(n), nil
}

// frozenCursor walks one frozen level for writeJobs.
type frozenCursor struct {
	l    *frozenLevel
	i    int
	skip int // next index into l.skip
}

func (k *frozenCursor) id() JobID { return k.l.ring.ptr(k.i).id }

// live moves k to its ring's next live entry not written as a full job;
// false when none is left.
func (k *frozenCursor) live() bool {
	for ; k.i < k.l.ring.Len(); k.i++ {
		ent := k.l.ring.ptr(k.i)
		if ent.maxAttempts == 0 {
			continue
		}
		for k.skip < len(k.l.skip) && k.l.skip[k.skip] < ent.id {
			k.skip++
		}
		if k.skip < len(k.l.skip) && k.l.skip[k.skip] == ent.id {
			continue
		}
		return true
	}
	return false
}

// frozenHeap orders the levels' cursors by their next job's id.
type frozenHeap []frozenCursor

func (h frozenHeap) Len() int           { return len(h) }
func (h frozenHeap) Less(a, b int) bool { return h[a].id() < h[b].id() }
func (h frozenHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *frozenHeap) Push(x any)        { *h = append(*h, x.(frozenCursor)) }
func (h *frozenHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// writeJobs writes the jobs' elements in id order: the full ones as
// encoded at the capture, the compact ones from their frozen rings.
func (s *SnapshotCapture) writeJobs(w *pbWriter) {
	h := make(frozenHeap, 0, len(s.levels))
	for i := range s.levels {
		if k := (frozenCursor{l: &s.levels[i]}); k.live() {
			h = append(h, k)
		}
	}
	heap.Init(&h)
	var view job
	full, start := 0, s.headEnd
	for w.c.err == nil {
		if full < len(s.jobIDs) && (len(h) == 0 || s.jobIDs[full] < h[0].id()) {
			w.c.raw(s.buf[start:s.jobEnds[full]])
			start = s.jobEnds[full]
			full++
			continue
		}
		if len(h) == 0 {
			return
		}
		cur := &h[0]
		l := cur.l
		ent := l.ring.ptr(cur.i)
		fillView(&view, nil, l.prio, ent)
		at := w.begin(pbJobs)
		w.c.out = appendPlainJobFields(w.c.out, w.c, &view, l.queue, l.types[ent.typ], 0, "", 0)
		w.end(at)
		cur.i++
		switch {
		case !cur.live():
			heap.Pop(&h)
		case len(h) > 1: // one level, the common backlog: nothing to reorder
			heap.Fix(&h, 0)
		}
	}
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
