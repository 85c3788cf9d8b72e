package engine

import (
	"bytes"
	"cmp"
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"
	"time"
)

// Snapshot encoding, the hand-written layouts 1 to 18 (layout 19, the
// protobuf form that replaces them, is in snapshot_pb.go; these are still
// read, to restore a data directory of an earlier release, and written
// while a member of the cluster may not read layout 19). The stream is
//
//	magic "SEPPENG\x00" | version (uvarint) | body | CRC-32 (IEEE, little endian) of all before it
//
// and the body holds, in this order: the clock and counters; the config; the
// queues by name; the live jobs by id; the dead-letter records in failed_at
// order; the idempotency keys in creation order; the reserve request ids by
// id. Integers are varints (encoding/binary), strings and byte slices are
// length-prefixed. Nothing depends on map order or on how the engine happens
// to hold things internally, so equal states give equal bytes.
const (
	snapshotMagic = "SEPPENG\x00"
	// The layouts (snapshotVersion and the rest) are in snapshot_layouts.go.
	// maxDecodeBytes bounds any one string or byte slice read from a
	// snapshot, so a corrupt length cannot ask for a huge allocation.
	maxDecodeBytes = 1 << 30
)

// ErrCorruptSnapshot is wrapped by every error Restore returns for input
// that is not a snapshot written by this engine (truncated, altered, an
// unknown version, or inconsistent).
var ErrCorruptSnapshot = errors.New("corrupt snapshot")

// Snapshot writes the whole state in a canonical encoding: equal states give
// equal bytes. It streams through a buffer and does not change the engine.
func (e *Engine) Snapshot(w io.Writer) error { return e.SnapshotWith(w, SnapshotOptions{}) }

// SnapshotOptions choose how Snapshot writes what it writes.
type SnapshotOptions struct {
	// PayloadLengths writes each job's payload length in place of its
	// bytes (a uvarint where the length-prefixed bytes would be) and reads
	// no payload from the store: the state machine writes the bodies
	// afterwards from a point-in-time view of its store, off the apply
	// path (fsm/snapshot.go), so the part taken under its lock costs
	// O(jobs), not O(bytes). Such a stream is restored only by RestoreWith
	// with the same option, then LoadPayload; nothing in the stream says
	// which way it was written (its container does).
	PayloadLengths bool
	// CompletedSection leaves the completed jobs' records out of the
	// completed section (completed.go): the state machine writes them
	// after the payloads from the same point-in-time view of its store
	// (fsm snapshot format 3), off the apply path. Restored only by
	// RestoreWith with the same option, then LoadCompleted.
	CompletedSection bool
	// Protobuf writes layout 19, the protobuf form (snapshot_pb.go), in
	// place of the oldest hand-written layout that holds the state. A
	// binary older than the form refuses it: the state machine asks for
	// it once every member reads it. Restore reads either form, whatever
	// this says.
	Protobuf bool
}

// SnapshotWith is Snapshot written as o says.
func (e *Engine) SnapshotWith(w io.Writer, o SnapshotOptions) error {
	if e.payloadsAhead {
		return ErrPayloadsAhead
	}
	crc := crc32.NewIEEE()
	enc := newEncoder(io.MultiWriter(w, crc), o)
	if !o.PayloadLengths {
		read, done := e.payloadReader()
		defer done()
		enc.payload = read
	}
	if o.Protobuf {
		e.encodeProto(enc)
	} else {
		e.encode(enc)
	}
	enc.flush()
	if enc.err != nil {
		return fmt.Errorf("engine snapshot: %w", enc.err)
	}
	var trailer [4]byte
	binary.LittleEndian.PutUint32(trailer[:], crc.Sum32())
	if _, err := w.Write(trailer[:]); err != nil {
		return fmt.Errorf("engine snapshot: %w", err)
	}
	return nil
}

// Digest is the SHA-256 of the snapshot stream in its hand-written
// layout: equal exactly when the states are, on binaries of either side
// of the protobuf form. It is hashed while encoding; no copy of the state
// is built.
func (e *Engine) Digest() [32]byte {
	h := sha256.New()
	if err := e.Snapshot(h); err != nil {
		panic(fmt.Sprintf("engine: snapshot to a hash failed: %v", err)) // hash writes never fail
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

type encoder struct {
	// w receives the stream (and its checksum) in blocks of about
	// encodeFlushSize: the fields are appended to out, which costs a few
	// nanoseconds each, where a buffered writer's call per field cost
	// most of a large snapshot's capture.
	w   io.Writer
	out []byte
	err error
	// payload reads a job's payload for the walk (payloadReader).
	payload func(JobID) []byte
	// lengthsOnly: payload lengths, not bytes (SnapshotOptions).
	lengthsOnly bool
	// completedSection: no completed record (SnapshotOptions).
	completedSection bool
	// lastQ and lastQIndex spare the queue index's map lookup for runs
	// of jobs of one queue, the common order of a backlog.
	lastQ      *queue
	lastQIndex uint64
}

// encodeFlushSize is how many encoded bytes the encoder holds before it
// writes them.
const encodeFlushSize = 64 << 10

func newEncoder(w io.Writer, o SnapshotOptions) *encoder {
	return &encoder{w: w, out: make([]byte, 0, encodeFlushSize+binary.MaxVarintLen64), lengthsOnly: o.PayloadLengths, completedSection: o.CompletedSection}
}

// flush writes what out holds. After an error nothing more is written,
// and out is still emptied, so a failed stream does not grow it.
func (c *encoder) flush() {
	if len(c.out) > 0 && c.err == nil {
		_, c.err = c.w.Write(c.out)
	}
	c.out = c.out[:0]
}

func (c *encoder) flushIfFull() {
	if len(c.out) >= encodeFlushSize {
		c.flush()
	}
}

func (c *encoder) uvarint(v uint64) {
	c.out = binary.AppendUvarint(c.out, v)
	c.flushIfFull()
}

func (c *encoder) varint(v int64) {
	c.out = binary.AppendVarint(c.out, v)
	c.flushIfFull()
}

func (c *encoder) byte(b uint8) {
	c.out = append(c.out, b)
	c.flushIfFull()
}

func (c *encoder) bool(b bool) {
	if b {
		c.byte(1)
	} else {
		c.byte(0)
	}
}

// raw appends b as it is, with no length; a large b is written directly
// rather than copied into out.
func (c *encoder) raw(b []byte) {
	if len(b) < encodeFlushSize {
		c.out = append(c.out, b...)
		c.flushIfFull()
		return
	}
	c.flush()
	if c.err == nil {
		_, c.err = c.w.Write(b)
	}
}

func (c *encoder) rawString(s string) {
	if len(s) < encodeFlushSize {
		c.out = append(c.out, s...)
		c.flushIfFull()
		return
	}
	c.flush()
	if c.err == nil {
		_, c.err = io.WriteString(c.w, s)
	}
}

func (c *encoder) string(s string) {
	c.out = binary.AppendUvarint(c.out, uint64(len(s)))
	c.rawString(s)
}

func (c *encoder) bytes(b []byte) {
	c.out = binary.AppendUvarint(c.out, uint64(len(b)))
	c.raw(b)
}

// queueIndex is q's index among the snapshot's queues (qindex).
func (c *encoder) queueIndex(q *queue, qindex map[*queue]uint64) uint64 {
	if q != c.lastQ {
		c.lastQ, c.lastQIndex = q, qindex[q]
	}
	return c.lastQIndex
}

func (e *Engine) encode(c *encoder) {
	c.rawString(snapshotMagic)
	version := e.snapshotLayout()
	c.uvarint(version)
	c.varint(e.now)
	c.uvarint(e.nextID)
	c.uvarint(e.nextLease)
	encodeConfig(c, e.cfg, version)

	v5 := version >= snapshotVersionReserveLimits
	v7 := version >= snapshotVersionUnique
	qs := e.sortedQueues()
	qindex := make(map[*queue]uint64, len(qs))
	c.uvarint(uint64(len(qs)))
	for i, q := range qs {
		qindex[q] = uint64(i)
		c.string(q.name)
		c.bool(q.paused)
		c.uvarint(q.enqueued)
		c.uvarint(q.acked)
		for cause := CauseAttemptsExhausted; cause <= CauseAdmin; cause++ {
			c.uvarint(q.deadLettered[cause])
		}
		c.uvarint(q.dropped)
		c.uvarint(q.deadRequeued)
		c.uvarint(q.deadDrained)
		c.uvarint(q.deadDeleted)
		c.uvarint(q.deadExpired)
		if v5 {
			c.varint(q.rateTAT)
		}
	}

	c.uvarint(uint64(e.liveJobs()))
	e.eachJob(func(j *job) bool { // in id order
		e.encodeJob(c, j, qindex, v7)
		return c.err == nil
	})

	c.uvarint(uint64(len(e.dead)))
	for r := e.deadHead; r != nil && c.err == nil; r = r.next {
		e.encodeJob(c, r.j, qindex, v7)
		c.byte(uint8(r.cause))
		c.varint(r.failedAt)
		c.varint(r.expiresAt)
		c.uvarint(uint64(r.finalAttempt))
	}

	c.uvarint(uint64(e.keys.len()))
	for i := 0; i < e.keys.len(); i++ {
		ent := e.keys.at(i)
		q := e.keys.queueOf(ent)
		// queue name, NUL, the producer's key: one length-prefixed string.
		c.uvarint(uint64(len(q.name) + 1 + e.keys.keyLen(ent)))
		c.rawString(q.name)
		c.byte(0)
		// The key as the producer gave it, packed or not: the snapshot
		// (and the digest) do not depend on how memory holds it.
		if ent.packed() {
			c.out = e.keys.appendKey(ent, c.out)
			c.flushIfFull()
		} else {
			c.rawString(e.keys.plain[ent.plainIndex()])
		}
		c.uvarint(uint64(ent.jobID()))
		c.varint(ent.createdAt)
	}

	rs := slices.Clone([]*reservation(e.resHeap))
	slices.SortFunc(rs, func(a, b *reservation) int { return cmp.Compare(a.requestID, b.requestID) })
	c.uvarint(uint64(len(rs)))
	for _, r := range rs {
		c.string(r.requestID)
		c.varint(r.expiresAt)
		c.uvarint(uint64(len(r.ids)))
		for i := range r.ids {
			c.uvarint(uint64(r.ids[i]))
			c.uvarint(uint64(r.tokens[i]))
		}
	}
	if version >= snapshotVersionOperator {
		e.encodeOperatorSection(c, qs)
	}
	if version >= snapshotVersionSchedules {
		e.encodeSchedules(c)
	}
	if v7 {
		done := e.sortedUniqueDone()
		c.uvarint(uint64(len(done)))
		for _, ent := range done {
			c.uvarint(qindex[ent.ref.q])
			c.string(ent.ref.key)
			c.uvarint(uint64(ent.jobID))
			c.varint(ent.doneUntil)
		}
	}
	if version >= snapshotVersionCancel {
		e.encodeCancelSection(c, qs)
	}
	if version >= snapshotVersionRedrive {
		e.encodeRedriveSection(c)
	}
	if version >= snapshotVersionExpiryFair {
		e.encodeExpiryFairSection(c, qs)
	}
	if version >= snapshotVersionAttempts {
		e.encodeAttemptsSection(c, version)
	}
	if version >= snapshotVersionTrace {
		e.encodeTraceSection(c)
	}
	if version >= snapshotVersionTags {
		encodeTagsSection(c, e.cfg)
	}
	if version >= snapshotVersionCompleted {
		e.encodeCompletedSection(c, qs)
	}
	if version >= snapshotVersionProgress {
		e.encodeProgressSection(c)
	}
	if version >= snapshotVersionDependencies {
		e.encodeDepsSection(c)
	}
}

func encodeConfig(c *encoder, cfg Config, version uint64) {
	l := cfg.Limits
	c.uvarint(uint64(l.DefaultPriority))
	c.uvarint(uint64(l.DefaultMaxAttempts))
	c.uvarint(uint64(l.MaxAttemptsCeiling))
	c.varint(int64(l.RetryDelay))
	c.byte(uint8(l.RetryBackoff))
	c.varint(int64(l.RetryDelayMax))
	c.varint(int64(l.MaxScheduleHorizon))
	c.varint(int64(l.MaxReserveBatch))
	c.varint(int64(l.DefaultLease))
	c.varint(int64(l.MaxLease))
	c.varint(int64(l.MaxPayloadBytes))
	c.varint(int64(l.MaxBatchSize))
	c.varint(int64(l.MaxCustomFields))
	c.varint(int64(l.MaxCustomFieldBytes))
	c.varint(int64(l.MaxJobTypeBytes))
	c.varint(int64(l.IdempotencyWindow))
	c.varint(int64(l.MaxIdempotencyKeys))
	c.varint(int64(l.MaxQueueLength))
	c.varint(int64(l.MaxDeadLetters))
	c.varint(int64(l.AttemptHistory))
	c.varint(int64(l.DeadLetterRetention))
	c.bool(l.Strict)
	c.varint(int64(l.IdempotencyMinWindow))
	v3 := version >= snapshotVersionMemoryBudget
	v5 := version >= snapshotVersionReserveLimits
	if v3 {
		c.varint(l.MaxMemoryBytes)
	}
	if version >= snapshotVersionPayloadsOff {
		c.varint(l.MaxDiskBytes)
	}
	c.uvarint(uint64(len(cfg.Queues)))
	for _, q := range cfg.Queues {
		c.string(q.Name)
		encodeOpt(c, q.DefaultPriority, func(v uint32) { c.uvarint(uint64(v)) })
		encodeOpt(c, q.DefaultMaxAttempts, func(v uint32) { c.uvarint(uint64(v)) })
		encodeOpt(c, q.RetryDelay, func(v time.Duration) { c.varint(int64(v)) })
		encodeOpt(c, q.RetryBackoff, func(v Backoff) { c.byte(uint8(v)) })
		encodeOpt(c, q.RetryDelayMax, func(v time.Duration) { c.varint(int64(v)) })
		encodeOpt(c, q.MaxScheduleHorizon, func(v time.Duration) { c.varint(int64(v)) })
		encodeOpt(c, q.MaxLength, func(v int) { c.varint(int64(v)) })
		c.string(q.DeadLetterQueue)
		if v3 {
			encodeOpt(c, q.MaxMemoryBytes, func(v int64) { c.varint(v) })
		}
		if v5 {
			c.varint(int64(q.MaxReserved))
			c.varint(int64(q.RateLimit))
			c.varint(int64(q.RatePeriod))
			c.varint(int64(q.RateBurst))
			c.string(q.ConcurrencyKey)
			c.varint(int64(q.MaxPerKey))
		}
	}
}

// snapshotVersionOf is the layout a state running cfg is written in: 5
// when a queue sets a reserve limit, 3 when a memory budget is set, else 2.
func snapshotVersionOf(cfg Config) uint64 {
	if HasReserveLimits(cfg) {
		return snapshotVersionReserveLimits
	}
	if cfg.Limits.MaxMemoryBytes != 0 {
		return snapshotVersionMemoryBudget
	}
	for _, q := range cfg.Queues {
		if q.MaxMemoryBytes != nil {
			return snapshotVersionMemoryBudget
		}
	}
	return snapshotVersionMinWindow
}

// snapshotVersion is the layout the state is written in: 7 while a unique
// key is held, else what its config needs.

func encodeOpt[T any](c *encoder, p *T, put func(T)) {
	c.bool(p != nil)
	if p != nil {
		put(*p)
	}
}

func (e *Engine) encodeJob(c *encoder, j *job, qindex map[*queue]uint64, v7 bool) {
	c.uvarint(uint64(j.id))
	c.uvarint(c.queueIndex(j.q, qindex))
	c.string(j.jobType())
	if c.lengthsOnly {
		c.uvarint(uint64(j.payloadLen))
	} else {
		c.bytes(payloadVia(j, c.payload))
	}
	c.byte(j.priority)
	c.byte(uint8(j.state))
	c.byte(j.flags & flagRetryWait)
	c.varint(j.enqueuedAt)
	c.varint(j.due)
	c.uvarint(uint64(e.leaseOf(j)))
	c.uvarint(uint64(j.attempt))
	c.uvarint(uint64(j.maxAttempts))
	if j.state == StateReserved {
		c.string(e.workers[j.id])
	}
	x := j.ext
	if x == nil || (x.scheduledAt == 0 && x.lastReason == "" && len(x.custom) == 0 && len(x.history) == 0 && x.uniqueKey == "") {
		c.byte(0)
		return
	}
	c.byte(1)
	c.varint(x.scheduledAt)
	c.string(x.lastReason)
	keys := make([]string, 0, len(x.custom))
	for k := range x.custom {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	c.uvarint(uint64(len(keys)))
	for _, k := range keys {
		c.string(k)
		c.string(x.custom[k])
	}
	c.uvarint(uint64(len(x.history)))
	for _, h := range x.history {
		c.uvarint(uint64(h.attempt))
		c.byte(h.outcome)
		c.varint(h.at)
		c.string(h.worker)
		c.string(h.reason)
	}
	if v7 {
		c.string(x.uniqueKey)
		if x.uniqueKey != "" {
			c.bool(x.uniqueDead)
			c.varint(x.uniqueDoneFor)
		}
	}
}

// Restore replaces the state with one written by Snapshot. A corrupt,
// truncated or inconsistent stream is rejected with an error wrapping
// ErrCorruptSnapshot, and the engine is left as it was; it never panics.
//
// When r tells how much input it holds (a Len method, as bytes.Reader and
// bytes.Buffer have, or an *io.LimitedReader's N), a declared count or
// length larger than what is left is refused at once: every counted item
// takes at least one byte, so such a count can only be corrupt, and
// refusing it early spares reading and allocating for it.
func (e *Engine) Restore(r io.Reader) error { return e.RestoreWith(r, SnapshotOptions{}) }

// RestoreWith is Restore of a stream SnapshotWith wrote with o. With
// PayloadLengths the restored jobs have their payload lengths but no
// payload in the store: the caller then hands each one to LoadPayload
// (or keeps a store that holds them, SetPayloadsAhead).
func (e *Engine) RestoreWith(r io.Reader, o SnapshotOptions) error {
	tr := &trailerReader{r: r, crc: crc32.NewIEEE()}
	d := newDecoder(tr)
	d.lengthsOnly = o.PayloadLengths
	d.completedSection = o.CompletedSection
	if n, ok := inputSize(r); ok {
		d.size = n
	}
	if _, inHeap := e.payloads.(heapPayloads); !inHeap {
		d.payloads = e.payloads
		d.payloadsAhead = e.payloadsAhead
	}
	fresh, err := d.decodeEngine()
	if err != nil {
		return fmt.Errorf("engine restore: %w: %w", ErrCorruptSnapshot, err)
	}
	if !d.atEnd() {
		err := d.err
		if err == nil {
			err = errors.New("data after the last record")
		}
		return fmt.Errorf("engine restore: %w: %w", ErrCorruptSnapshot, err)
	}
	if err := tr.check(); err != nil {
		return fmt.Errorf("engine restore: %w: %w", ErrCorruptSnapshot, err)
	}
	if o.PayloadLengths {
		// LoadPayload's lookups by id come next, one per job: they find
		// a job in the job index in O(1), a compact one by a search of
		// the levels. PayloadsLoaded files them compact after.
	} else {
		fresh.compactAll() // once every section has filled the jobs in
	}
	if err := fresh.checkInvariants(restoreChecks); err != nil {
		return fmt.Errorf("engine restore: %w: %w", ErrCorruptSnapshot, err)
	}
	*e = *fresh
	return nil
}

// trailerReader passes through everything but the last 4 bytes of r,
// feeding them to the CRC; the last 4 are the trailer.
type trailerReader struct {
	r      io.Reader
	crc    hash.Hash32
	buf    []byte
	off    int
	done   bool
	err    error
	passed int64 // bytes handed out so far
}

func (t *trailerReader) Read(p []byte) (int, error) {
	for {
		if pending := len(t.buf) - t.off - 4; pending > 0 {
			n := copy(p, t.buf[t.off:t.off+pending])
			t.crc.Write(p[:n])
			t.off += n
			t.passed += int64(n)
			return n, nil
		}
		if t.done {
			return 0, io.EOF
		}
		if t.err != nil {
			return 0, t.err
		}
		// Keep the undelivered tail (at most 4 bytes), then read more.
		t.buf = append(t.buf[:0], t.buf[t.off:]...)
		t.off = 0
		if cap(t.buf) < 32<<10 {
			nb := make([]byte, len(t.buf), 32<<10)
			copy(nb, t.buf)
			t.buf = nb
		}
		n, err := t.r.Read(t.buf[len(t.buf):cap(t.buf)])
		t.buf = t.buf[:len(t.buf)+n]
		if err == io.EOF {
			t.done = true
		} else if err != nil {
			t.err = err
		}
	}
}

// check compares the trailer with the CRC of what was passed through.
func (t *trailerReader) check() error {
	if len(t.buf)-t.off != 4 {
		return io.ErrUnexpectedEOF
	}
	if got, want := binary.LittleEndian.Uint32(t.buf[t.off:]), t.crc.Sum32(); got != want {
		return fmt.Errorf("checksum mismatch: trailer %08x, content %08x", got, want)
	}
	return nil
}

// decoder reads the snapshot body from its own buffer: varints and short
// strings are decoded in place, without a call per byte, and job types,
// queue names and idempotency keys are looked up without allocating.
type decoder struct {
	version uint64    // of the snapshot, from its header
	src     io.Reader // the trailerReader
	buf     []byte    // buf[pos:] is read but not yet decoded
	pos     int
	eof     bool // src is exhausted
	err     error
	// tr counts what the decoder has pulled; size is the whole input's
	// length (trailer included) when known, else -1.
	tr   *trailerReader
	size int64
	// lease is the lease token of the job decodeJob read last (0 unless
	// Reserved): the job has no field for it (Engine.leaseOf).
	lease LeaseToken
	// payloads is the store the restored engine keeps payloads in: the
	// restoring engine's own when it is not the in-heap map.
	payloads PayloadStore
	// payloadsAhead: that store already holds the snapshot's payloads
	// (Engine.SetPayloadsAhead); they are read past, not written.
	payloadsAhead bool
	// lengthsOnly: the jobs carry payload lengths, not bytes
	// (SnapshotOptions.PayloadLengths).
	lengthsOnly bool
	// completedSection: the completed section holds no record
	// (SnapshotOptions.CompletedSection).
	completedSection bool
}

const decodeBufSize = 64 << 10

func newDecoder(tr *trailerReader) *decoder {
	return &decoder{src: tr, buf: make([]byte, 0, decodeBufSize), tr: tr, size: -1}
}

// fill makes at least n bytes available (n at most decodeBufSize), unless
// the input ends first; it reports whether they are.
func (d *decoder) fill(n int) bool {
	if len(d.buf)-d.pos >= n {
		return true
	}
	if d.pos > 0 {
		d.buf = d.buf[:copy(d.buf, d.buf[d.pos:])]
		d.pos = 0
	}
	for len(d.buf) < n && !d.eof {
		m, err := d.src.Read(d.buf[len(d.buf):cap(d.buf)])
		d.buf = d.buf[:len(d.buf)+m]
		if err == io.EOF {
			d.eof = true
		} else if err != nil {
			if d.err == nil {
				d.err = err
			}
			return false
		}
	}
	return len(d.buf) >= n
}

// atEnd reports whether the input holds nothing more.
func (d *decoder) atEnd() bool { return !d.fill(1) && d.err == nil }

// inputSize returns how many bytes r holds, when r can tell.
func inputSize(r io.Reader) (int64, bool) {
	switch x := r.(type) {
	case interface{ Len() int }:
		return int64(x.Len()), true
	case *io.LimitedReader:
		return max(x.N, 0), true
	}
	return 0, false
}

// left returns how many content bytes remain to decode (the 4-byte trailer
// excluded), or -1 when the input's size is unknown.
func (d *decoder) left() int64 {
	if d.size < 0 {
		return -1
	}
	return max(d.size-4-d.tr.passed+int64(len(d.buf)-d.pos), 0)
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.buf)-d.pos < binary.MaxVarintLen64 {
		d.fill(binary.MaxVarintLen64)
	}
	// A one-byte value is the common case: counts, flags, small ints.
	if d.pos < len(d.buf) && d.buf[d.pos] < 0x80 {
		v := d.buf[d.pos]
		d.pos++
		return uint64(v)
	}
	v, n := binary.Uvarint(d.buf[d.pos:])
	switch {
	case n > 0:
		d.pos += n
		return v
	case n < 0:
		d.fail("varint overflows a 64-bit integer")
	case d.err == nil:
		d.err = io.ErrUnexpectedEOF
	}
	return 0
}

func (d *decoder) varint() int64 {
	ux := d.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func eofIsUnexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (d *decoder) byte() uint8 {
	if d.err != nil {
		return 0
	}
	if d.pos >= len(d.buf) && !d.fill(1) {
		if d.err == nil {
			d.err = io.ErrUnexpectedEOF
		}
		return 0
	}
	b := d.buf[d.pos]
	d.pos++
	return b
}

func (d *decoder) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("bad boolean")
	return false
}

// u32 reads a uvarint that must fit in 32 bits.
func (d *decoder) u32() uint32 {
	v := d.uvarint()
	if v > 1<<32-1 {
		d.fail("value %d out of range", v)
		return 0
	}
	return uint32(v)
}

// int reads a varint that must fit in an int.
func (d *decoder) int() int {
	v := d.varint()
	if int64(int(v)) != v {
		d.fail("value %d out of range", v)
		return 0
	}
	return int(v)
}

// count reads a length that must not exceed limit, nor the bytes left in
// the input when that is known (each counted item or byte takes at least
// one byte of input).
func (d *decoder) count(limit uint64) int {
	v := d.uvarint()
	if v > limit {
		d.fail("count %d above %d", v, limit)
		return 0
	}
	if left := d.left(); d.err == nil && left >= 0 && v > uint64(left) {
		d.fail("count %d exceeds the %d bytes left in the input", v, left)
		return 0
	}
	return int(v)
}

// read copies len(p) bytes into p.
func (d *decoder) read(p []byte) {
	for len(p) > 0 && d.err == nil {
		if d.pos >= len(d.buf) && !d.fill(1) {
			if d.err == nil {
				d.err = io.ErrUnexpectedEOF
			}
			return
		}
		n := copy(p, d.buf[d.pos:])
		d.pos += n
		p = p[n:]
	}
}

func (d *decoder) bytes() []byte {
	n := d.count(maxDecodeBytes)
	if d.err != nil || n == 0 {
		return nil
	}
	return d.bytesN(n)
}

// bytesN reads n bytes into a new slice.
func (d *decoder) bytesN(n int) []byte {
	if n <= decodeBufSize || d.left() >= 0 {
		// The length is small, or bounded by what the input holds.
		buf := make([]byte, n)
		d.read(buf)
		if d.err != nil {
			return nil
		}
		return buf
	}
	// Size unknown: grow as bytes arrive, so a bad length over a short
	// stream fails without first allocating what it claims.
	buf := make([]byte, 0, decodeBufSize)
	for len(buf) < n {
		chunk := min(n-len(buf), max(len(buf), decodeBufSize))
		start := len(buf)
		buf = slices.Grow(buf, chunk)[:start+chunk]
		d.read(buf[start:])
		if d.err != nil {
			return nil
		}
	}
	return buf
}

func (d *decoder) string() string { return string(d.view()) }

// view reads a length-prefixed string or byte slice. One that fits the
// buffer is returned in place, valid until the next read: callers copy what
// they keep (or look it up in a map, which does not allocate).
func (d *decoder) view() []byte {
	n := d.count(maxDecodeBytes)
	if d.err != nil || n == 0 {
		return nil
	}
	if n > decodeBufSize {
		return d.bytesN(n)
	}
	if !d.fill(n) {
		if d.err == nil {
			d.err = io.ErrUnexpectedEOF
		}
		return nil
	}
	b := d.buf[d.pos : d.pos+n : d.pos+n]
	d.pos += n
	return b
}

func (d *decoder) decodeEngine() (*Engine, error) {
	var magic [len(snapshotMagic)]byte
	if d.read(magic[:]); d.err != nil {
		return nil, fmt.Errorf("reading header: %w", eofIsUnexpected(d.err))
	}
	if string(magic[:]) != snapshotMagic {
		return nil, errors.New("not an engine snapshot (bad magic)")
	}
	if v := d.uvarint(); d.err == nil && (v < 1 || v > snapshotVersion || !knownSnapshotLayout(v)) {
		return nil, fmt.Errorf("unsupported snapshot version %d (this engine reads 1..%d)", v, snapshotVersion)
	} else {
		d.version = v
	}
	e := newEmpty()
	if d.payloads != nil {
		e.payloads = d.payloads
		e.payloadsAhead = d.payloadsAhead
		if c, ok := d.payloads.(CompletedStore); ok {
			e.completed = c
		}
	}
	if d.version == snapshotVersionProto {
		return d.decodeProto(e)
	}
	e.now = d.varint()
	e.nextID = d.uvarint()
	e.nextLease = d.uvarint()
	cfg := d.decodeConfig()
	if d.err != nil {
		return nil, d.err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if e.nextID < 1 || e.nextLease < 1 || e.nextID > 1<<63 || e.nextLease > 1<<63 {
		return nil, errors.New("bad id counters")
	}

	nq := d.count(1 << 32)
	var qs []*queue
	for i := 0; i < nq && d.err == nil; i++ {
		q := &queue{name: d.string()}
		if d.err == nil && (!ValidQueueName(q.name) || (i > 0 && q.name <= qs[i-1].name)) {
			d.fail("queue %d: bad or unsorted name %q", i, q.name)
		}
		q.paused = d.bool()
		q.enqueued = d.uvarint()
		q.acked = d.uvarint()
		for c := CauseAttemptsExhausted; c <= CauseAdmin; c++ {
			q.deadLettered[c] = d.uvarint()
		}
		q.dropped = d.uvarint()
		q.deadRequeued = d.uvarint()
		q.deadDrained = d.uvarint()
		q.deadDeleted = d.uvarint()
		q.deadExpired = d.uvarint()
		if d.version >= snapshotVersionReserveLimits {
			q.rateTAT = d.varint()
		}
		qs = append(qs, q)
		e.queues[q.name] = q
	}
	if d.err != nil {
		return nil, d.err
	}
	for _, qc := range cfg.Queues {
		if e.queues[qc.Name] == nil {
			return nil, fmt.Errorf("configured queue %q missing", qc.Name)
		}
	}
	e.applyConfig(cfg)

	nj := d.count(1 << 40)
	var prev JobID
	for i := 0; i < nj && d.err == nil; i++ {
		j := d.decodeJob(e, qs)
		if d.err != nil {
			break
		}
		if j.id <= prev {
			return nil, fmt.Errorf("job %d out of order", j.id)
		}
		prev = j.id
		switch j.state {
		case StateReady:
			e.makeReady(j)
			// Held compact from the start, as an enqueue holds it: filed
			// full and compacted at the end, a restore held every waiting
			// job as a full record at once (82 B each against 24.6 B:
			// 5M jobs did not restart in 512 MiB). A later section that
			// gives such a job a deadline or a trace context finds it with
			// jobForChange, which converts it back.
			if e.compactify(j) {
				continue // decodeJob reuses its struct for the next job
			}
		case StateScheduled:
			j.q.nScheduled++
			j.heapIdx = int32(len(e.sched.items))
			e.sched.items = append(e.sched.items, j)
		case StateReserved:
			j.q.nReserved++
			j.heapIdx = int32(len(e.leases.items))
			e.leases.items = append(e.leases.items, j)
			e.leases.tokens = append(e.leases.tokens, d.lease)
		case StateBlocked:
			if d.version < snapshotVersionDependencies {
				return nil, fmt.Errorf("job %d: blocked in layout %d", j.id, d.version)
			}
			j.q.nBlocked++
		default:
			return nil, fmt.Errorf("job %d: state %v is not live", j.id, j.state)
		}
		e.jobs.set(j)
	}
	if d.err != nil {
		return nil, d.err
	}
	heap.Init(&e.sched)
	heap.Init(&e.leases)

	nd := d.count(1 << 40)
	for i := 0; i < nd && d.err == nil; i++ {
		j := d.decodeJob(e, qs)
		r := &deadRecord{j: j}
		r.cause = Cause(d.byte())
		r.failedAt = d.varint()
		r.expiresAt = d.varint()
		r.finalAttempt = d.u32()
		if d.err != nil {
			break
		}
		if j.state != StateDead || r.cause < CauseAttemptsExhausted || r.cause > d.maxCause() {
			return nil, fmt.Errorf("dead-letter record of job %d: bad state or cause", j.id)
		}
		if e.holdsLive(j.id) || e.dead[j.id] != nil {
			return nil, fmt.Errorf("job %d appears twice", j.id)
		}
		e.linkDead(r)
	}
	if d.err != nil {
		return nil, d.err
	}

	nk := d.count(1 << 40)
	e.keys.reserve(nk)
	for i := 0; i < nk && d.err == nil; i++ {
		// "queue\x00key": the queue is looked up, the key alone copied
		// (packed when it can be).
		full := d.view()
		if d.err != nil {
			break
		}
		name, key, ok := bytes.Cut(full, []byte{0})
		q := e.queues[string(name)]
		if !ok || q == nil || len(key) == 0 {
			return nil, fmt.Errorf("idempotency key %q: not of a known queue", full)
		}
		// The view is valid only until the next read: pack or copy the
		// key before reading its job id and time.
		sk := storedKeyOf(key)
		jobID, createdAt := JobID(d.uvarint()), d.varint()
		if d.err != nil {
			break
		}
		if n := e.keys.len(); n > 0 && createdAt < e.keys.at(n-1).createdAt {
			return nil, fmt.Errorf("idempotency key %q of queue %q out of creation order", sk.text(), q.name)
		}
		if jobID >= idemPacked {
			return nil, fmt.Errorf("idempotency key %q of queue %q: job id %d out of range", sk.text(), q.name, jobID)
		}
		e.keys.appendRestored(q, &sk, jobID, createdAt)
	}
	if d.err == nil {
		if err := e.keys.restoredKeysCheck(); err != nil {
			return nil, err
		}
	}

	nr := d.count(1 << 40)
	for i := 0; i < nr && d.err == nil; i++ {
		r := &reservation{requestID: d.string(), expiresAt: d.varint()}
		n := d.count(1 << 32)
		for k := 0; k < n && d.err == nil; k++ {
			r.ids = append(r.ids, JobID(d.uvarint()))
			r.tokens = append(r.tokens, LeaseToken(d.uvarint()))
		}
		if d.err != nil {
			break
		}
		if e.reservations[r.requestID] != nil {
			return nil, fmt.Errorf("reserve request id %q appears twice", r.requestID)
		}
		e.reservations[r.requestID] = r
		heap.Push(&e.resHeap, r)
		if r.retryWindow() {
			e.indexReservation(r)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.version >= snapshotVersionOperator {
		if err := d.decodeOperatorSection(e, qs); err != nil {
			return nil, err
		}
	}
	if d.err == nil && d.version >= snapshotVersionSchedules {
		if err := d.decodeSchedules(e); err != nil {
			return nil, err
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if d.version >= snapshotVersionUnique {
		if err := d.decodeUniqueDone(e, qs); err != nil {
			return nil, err
		}
	}
	if d.version >= snapshotVersionCancel {
		if err := d.decodeCancelSection(e, qs); err != nil {
			return nil, err
		}
	}
	if d.version >= snapshotVersionRedrive {
		if err := d.decodeRedriveSection(e); err != nil {
			return nil, err
		}
	}
	if d.version >= snapshotVersionExpiryFair {
		if err := d.decodeExpiryFairSection(e, qs); err != nil {
			return nil, err
		}
	}
	if d.version >= snapshotVersionAttempts {
		if err := d.decodeAttemptsSection(e); err != nil {
			return nil, err
		}
	}
	if d.version >= snapshotVersionTrace {
		if err := d.decodeTraceSection(e); err != nil {
			return nil, err
		}
	}
	if d.version >= snapshotVersionTags {
		if err := d.decodeTagsSection(&e.cfg); err != nil {
			return nil, err
		}
	}
	if d.version >= snapshotVersionCompleted {
		if err := d.decodeCompletedSection(e); err != nil {
			return nil, err
		}
	}
	if d.version >= snapshotVersionProgress {
		if err := d.decodeProgressSection(e); err != nil {
			return nil, err
		}
	}
	if d.version >= snapshotVersionDependencies {
		if err := d.decodeDepsSection(e); err != nil {
			return nil, err
		}
	}
	if err := e.rebuildUnique(); err != nil {
		return nil, err
	}
	for _, q := range qs {
		if q.rateTAT != 0 && q.set.limits.rateInterval == 0 {
			return nil, fmt.Errorf("queue %q: a token bucket without a rate limit", q.name)
		}
		if q.keys != nil {
			e.rebuildKeyLimits(q) // the leases were loaded after the config
		}
	}
	e.recount()
	return e, nil
}

func (d *decoder) decodeConfig() Config {
	var l Limits
	l.DefaultPriority = d.u32()
	l.DefaultMaxAttempts = d.u32()
	l.MaxAttemptsCeiling = d.u32()
	l.RetryDelay = time.Duration(d.varint())
	l.RetryBackoff = Backoff(d.byte())
	l.RetryDelayMax = time.Duration(d.varint())
	l.MaxScheduleHorizon = time.Duration(d.varint())
	l.MaxReserveBatch = d.int()
	l.DefaultLease = time.Duration(d.varint())
	l.MaxLease = time.Duration(d.varint())
	l.MaxPayloadBytes = d.int()
	l.MaxBatchSize = d.int()
	l.MaxCustomFields = d.int()
	l.MaxCustomFieldBytes = d.int()
	l.MaxJobTypeBytes = d.int()
	l.IdempotencyWindow = time.Duration(d.varint())
	l.MaxIdempotencyKeys = d.int()
	l.MaxQueueLength = d.int()
	l.MaxDeadLetters = d.int()
	l.AttemptHistory = d.int()
	l.DeadLetterRetention = time.Duration(d.varint())
	l.Strict = d.bool()
	if d.version >= snapshotVersionMinWindow {
		l.IdempotencyMinWindow = time.Duration(d.varint())
	}
	if d.version >= snapshotVersionMemoryBudget {
		l.MaxMemoryBytes = d.varint()
	}
	if d.version >= snapshotVersionPayloadsOff {
		l.MaxDiskBytes = d.varint()
	}
	cfg := Config{Limits: l}
	n := d.count(1 << 20)
	for i := 0; i < n && d.err == nil; i++ {
		q := QueueConfig{Name: d.string()}
		q.DefaultPriority = decodeOpt(d, d.u32)
		q.DefaultMaxAttempts = decodeOpt(d, d.u32)
		q.RetryDelay = decodeOpt(d, func() time.Duration { return time.Duration(d.varint()) })
		q.RetryBackoff = decodeOpt(d, func() Backoff { return Backoff(d.byte()) })
		q.RetryDelayMax = decodeOpt(d, func() time.Duration { return time.Duration(d.varint()) })
		q.MaxScheduleHorizon = decodeOpt(d, func() time.Duration { return time.Duration(d.varint()) })
		q.MaxLength = decodeOpt(d, d.int)
		q.DeadLetterQueue = d.string()
		if d.version >= snapshotVersionMemoryBudget {
			q.MaxMemoryBytes = decodeOpt(d, d.varint)
		}
		if d.version >= snapshotVersionReserveLimits {
			q.MaxReserved = d.int()
			q.RateLimit = d.int()
			q.RatePeriod = time.Duration(d.varint())
			q.RateBurst = d.int()
			q.ConcurrencyKey = d.string()
			q.MaxPerKey = d.int()
		}
		cfg.Queues = append(cfg.Queues, q)
	}
	return cfg
}

func decodeOpt[T any](d *decoder, get func() T) *T {
	if !d.bool() {
		return nil
	}
	v := get()
	return &v
}

// restoredJob is an empty job for a restore to fill: the struct of the
// last job restored compact (referenced nowhere since), or a new one.
func (e *Engine) restoredJob() *job {
	j := e.spareJob
	if j == nil {
		j = new(job)
	} else {
		e.spareJob = nil
		*j = job{}
	}
	j.heapIdx = -1
	return j
}

func (d *decoder) decodeJob(e *Engine, qs []*queue) *job {
	j := e.restoredJob()
	j.id = JobID(d.uvarint())
	qi := d.uvarint()
	if d.err == nil && qi >= uint64(len(qs)) {
		d.fail("job %d: queue index %d out of range", j.id, qi)
	}
	if jt := d.view(); d.err == nil {
		if len(jt) == 0 {
			d.fail("job %d: empty job type", j.id)
		} else {
			j.q = qs[qi]
			j.setJobTypeBytes(jt)
		}
	}
	if d.lengthsOnly {
		n := d.uvarint()
		if d.err == nil && n > maxDecodeBytes {
			d.fail("job %d: payload length %d exceeds the limit of %d", j.id, n, maxDecodeBytes)
		}
		j.payloadLen = uint32(n) // its bytes come with LoadPayload
		e.diskHeld += int64(j.payloadLen)
		if j.payloadLen > 0 {
			e.payloadRecords++
		}
	} else {
		e.putPayload(j, d.view()) // the store copies it
	}
	j.priority = d.byte()
	j.state = State(d.byte())
	j.flags = d.byte()
	j.enqueuedAt = d.varint()
	j.due = d.varint()
	d.lease = LeaseToken(d.uvarint())
	if d.lease != 0 && j.state != StateReserved {
		// Only a Reserved job has a lease (kept in the leases heap, which
		// holds nothing else); this was an invariant of the job struct.
		d.fail("job %d: %v with lease %d", j.id, j.state, d.lease)
	}
	j.attempt = d.u32()
	j.maxAttempts = d.u32()
	var worker string
	if j.state == StateReserved {
		worker = d.string()
	}
	if d.err != nil {
		return j
	}
	switch {
	case j.id == 0 || uint64(j.id) >= e.nextID:
		d.fail("job id %d outside [1, %d)", j.id, e.nextID)
	case j.priority > MaxPriority:
		d.fail("job %d: priority %d above %d", j.id, j.priority, MaxPriority)
	case j.flags&^flagRetryWait != 0:
		d.fail("job %d: bad flags %#x", j.id, j.flags)
	}
	if worker != "" {
		e.workers[j.id] = worker
	}
	switch d.byte() {
	case 0:
		return j
	case 1:
	default:
		d.fail("job %d: bad extension marker", j.id)
		return j
	}
	x := j.extension()
	x.scheduledAt = d.varint()
	x.lastReason = d.string()
	nc := d.count(1 << 24)
	if nc > 0 {
		x.custom = make(map[string]string, min(nc, 64))
	}
	prevKey := ""
	for i := 0; i < nc && d.err == nil; i++ {
		k, v := d.string(), d.string()
		if d.err == nil && i > 0 && k <= prevKey {
			d.fail("job %d: custom keys out of order", j.id)
		}
		prevKey = k
		x.custom[k] = v
	}
	nh := d.count(maxAttemptHistory)
	for i := 0; i < nh && d.err == nil; i++ {
		h := attemptRecord{attempt: d.u32(), outcome: d.byte(), at: d.varint(), worker: d.string(), reason: d.string()}
		if d.err == nil && (h.outcome < outcomeNack || h.outcome > d.maxOutcome()) {
			d.fail("job %d: bad attempt outcome %d", j.id, h.outcome)
		}
		x.history = append(x.history, h)
	}
	if d.version >= snapshotVersionUnique {
		if x.uniqueKey = d.string(); x.uniqueKey != "" {
			x.uniqueDead = d.bool()
			x.uniqueDoneFor = d.varint()
			if d.err == nil && x.uniqueDoneFor < 0 {
				d.fail("job %d: negative unique hold after completion", j.id)
			}
		}
	}
	return j
}

// decodeUniqueDone reads the holds of acked jobs' unique keys, in
// (doneUntil, id) order.
func (d *decoder) decodeUniqueDone(e *Engine, qs []*queue) error {
	n := d.count(1 << 40)
	for i := 0; i < n && d.err == nil; i++ {
		qi := d.uvarint()
		key := d.string()
		jobID, doneUntil := JobID(d.uvarint()), d.varint()
		if d.err != nil {
			break
		}
		var q *queue
		if qi < uint64(len(qs)) {
			q = qs[qi]
		}
		if err := e.restoreUniqueHold(q, key, jobID, doneUntil); err != nil {
			return err
		}
	}
	return d.err
}

// restoreUniqueHold files the next hold of an acked job's unique key (of
// queue q, nil when the snapshot named none), as restored: holds come in
// (doneUntil, id) order, so the list stays a valid heap.
func (e *Engine) restoreUniqueHold(q *queue, key string, jobID JobID, doneUntil int64) error {
	i := len(e.uniqueDone)
	ent := &uniqueEntry{jobID: jobID, doneUntil: doneUntil, heapIdx: -1}
	var prev *uniqueEntry
	if i > 0 {
		prev = e.uniqueDone[i-1]
	}
	switch {
	case q == nil || key == "":
		return fmt.Errorf("unique key hold %d: bad queue or empty key", i)
	case ent.jobID == 0 || uint64(ent.jobID) >= e.nextID || ent.doneUntil <= 0:
		return fmt.Errorf("unique key %s: bad job %d or hold end %d", quoteShort(key), ent.jobID, ent.doneUntil)
	case e.holdsLive(ent.jobID) || e.dead[ent.jobID] != nil:
		return fmt.Errorf("unique key %s: acked job %d is still kept", quoteShort(key), ent.jobID)
	case prev != nil && (ent.doneUntil < prev.doneUntil || (ent.doneUntil == prev.doneUntil && ent.jobID <= prev.jobID)):
		return fmt.Errorf("unique key %s: holds out of order", quoteShort(key))
	}
	ent.ref = uniqueRef{q, key}
	if e.unique[ent.ref] != nil {
		return fmt.Errorf("unique key %s of queue %q held twice", quoteShort(key), q.name)
	}
	if e.unique == nil {
		e.unique = make(map[uniqueRef]*uniqueEntry)
	}
	e.unique[ent.ref] = ent
	ent.heapIdx = i
	e.uniqueDone = append(e.uniqueDone, ent) // sorted: a valid heap
	return nil
}
