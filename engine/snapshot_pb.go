package engine

import (
	"container/heap"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// The engine's snapshot in protobuf (layout 19, snapshotVersionProto):
//
//	magic "SEPPENG\x00" | 19 (uvarint) | EngineSnapshot | CRC-32 (IEEE, little endian) of all before it
//
// The body is the deterministic encoding of one seppstore.v1.EngineSnapshot
// (proto/seppstore/v1/engine.proto), written field by field in number order
// and each repeated field element by element, so that ten million jobs are
// ten million small messages streamed through a buffer, never one message
// in memory. The reader takes it apart the same way (pbRestore).
//
// The form replaces the hand-written layouts 1 to 18 (snapshot.go), which
// the engine still reads, to restore a data directory of an older release,
// and still writes while a member of the cluster may not read layout 19
// (SnapshotOptions.Protobuf is the state machine's choice).

// Field numbers of EngineSnapshot, in the order they are written.
const (
	pbHeader           protowire.Number = 1
	pbQueues           protowire.Number = 2
	pbJobs             protowire.Number = 3
	pbDeadLetters      protowire.Number = 4
	pbIdempotencyKeys  protowire.Number = 5
	pbReservations     protowire.Number = 6
	pbDeclared         protowire.Number = 7
	pbSchedules        protowire.Number = 8
	pbUniqueHolds      protowire.Number = 9
	pbRedrives         protowire.Number = 10
	pbFairOrders       protowire.Number = 11
	pbCompleted        protowire.Number = 12
	pbCompletedRecords protowire.Number = 13
	pbLastField                         = pbCompletedRecords
)

// pbWriter streams EngineSnapshot's fields through the snapshot's encoder
// (its buffer, checksum and error).
type pbWriter struct {
	c    *encoder
	opts proto.MarshalOptions
	// scratch holds one element's encoding: its length goes before it.
	scratch []byte
}

// put writes m as one element of field num.
func (w *pbWriter) put(num protowire.Number, m proto.Message) {
	if w.c.err != nil {
		return
	}
	var err error
	w.scratch, err = w.opts.MarshalAppend(w.scratch[:0], m)
	if err != nil {
		w.c.err = fmt.Errorf("field %d: %w", num, err)
		return
	}
	w.c.out = protowire.AppendTag(w.c.out, num, protowire.BytesType)
	w.c.out = protowire.AppendVarint(w.c.out, uint64(len(w.scratch)))
	w.c.raw(w.scratch)
}

// pbMarshal marshals a snapshot's elements: deterministically, as every
// byte of a snapshot is a function of the state.
var pbMarshal = proto.MarshalOptions{Deterministic: true}

// encodeProto writes the state in layout 19 after the magic.
func (e *Engine) encodeProto(c *encoder) {
	w := &pbWriter{c: c, opts: pbMarshal}
	qs, qindex := e.pbWriteHead(w)
	e.pbWriteJobs(w, qindex)
	e.pbWriteDeadLetters(w, qindex)
	e.pbWriteKeys(w, qindex)
	e.pbWriteAfterKeys(w, qs, qindex)
}

// pbWriteHead writes the stream up to the jobs (the magic, the layout,
// the header and the queues) and returns the queues in the stream's
// order, with each one's index in it.
func (e *Engine) pbWriteHead(w *pbWriter) ([]*queue, map[*queue]uint64) {
	w.c.rawString(snapshotMagic)
	w.c.uvarint(snapshotVersionProto)
	qs := e.sortedQueues()
	qindex := make(map[*queue]uint64, len(qs))
	for i, q := range qs {
		qindex[q] = uint64(i)
	}
	w.put(pbHeader, e.pbHeader(w.c))
	e.pbWriteQueues(w, qs)
	return qs, qindex
}

// pbWriteAfterKeys writes the stream's sections after the keys.
func (e *Engine) pbWriteAfterKeys(w *pbWriter, qs []*queue, qindex map[*queue]uint64) {
	e.pbWriteReservations(w)
	e.pbWriteDeclared(w)
	e.pbWriteSchedules(w)
	e.pbWriteUniqueHolds(w, qindex)
	e.pbWriteRedrives(w)
	e.pbWriteFairOrders(w, qs)
	e.pbWriteCompleted(w, qs)
	e.pbWriteCompletedRecords(w)
}

// pbRestore is a layout 19 snapshot being read into a fresh engine.
type pbRestore struct {
	d  *decoder
	e  *Engine
	qs []*queue
	// field is the last field read: fields come in number order, and
	// passing one runs what ends it (enter).
	field protowire.Number
	// header is the snapshot's header, once read.
	header *storepb.EngineHeader
	// lastJob is the id of the last job read (jobs come in id order).
	lastJob JobID
	// The messages elements are read into, reused element after element.
	job  storepb.EngineJob
	dead storepb.EngineDeadLetter
	// cfg is the header's configuration, applied once the queues are read.
	cfg Config
	// lastRequest and lastDeclared are the last reservation's request id
	// and the last declaration's queue (both come in order).
	lastRequest  string
	lastDeclared string
	// fair orders, completed (snapshot_pb_completed.go)
	fairQ, fairPrio int              // the next fair level whose order is not restored
	compOwner       map[JobID]uint32 // completed job -> its queue's index
	compQ           uint32           // the last completed entry's queue index
	compAt          int64            // and its completion time
	compLastRecord  JobID            // the last completed record's job
	compRecords     int              // completed records read
	// schedules, unique holds, redrives (snapshot_pb_schedules.go)
	// lastSchedule is the last schedule's name (names come in order);
	// the redrive tasks read, active and ended, are each bounded.
	lastSchedule                  string
	redrivesActive, redrivesEnded int
}

// decodeProto reads a layout 19 body (after its header) into a fresh
// engine: the elements in field order, each checked as it is applied,
// then what the last field leaves to finish.
func (d *decoder) decodeProto(e *Engine) (*Engine, error) {
	r := &pbRestore{d: d, e: e}
	for d.err == nil && !d.atEnd() {
		num, typ := protowire.DecodeTag(d.uvarint())
		if d.err != nil {
			break
		}
		if typ != protowire.BytesType || num < pbHeader || num > pbLastField {
			return nil, fmt.Errorf("field %d of wire type %d: not a field of the snapshot", num, typ)
		}
		if num < r.field {
			return nil, fmt.Errorf("field %d after field %d: out of order", num, r.field)
		}
		if num == pbHeader && r.field == pbHeader {
			return nil, errors.New("a second header")
		}
		if err := r.enter(num); err != nil {
			return nil, err
		}
		b := d.view()
		if d.err != nil {
			break
		}
		if err := r.element(num, b); err != nil {
			return nil, fmt.Errorf("%s: %w", pbFieldName(num), err)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if err := r.enter(pbLastField + 1); err != nil {
		return nil, err
	}
	return e, nil
}

// pbFieldName names field num of EngineSnapshot for an error.
func pbFieldName(num protowire.Number) string {
	f := (&storepb.EngineSnapshot{}).ProtoReflect().Descriptor().Fields().ByNumber(num)
	if f == nil {
		return fmt.Sprintf("field %d", num)
	}
	return string(f.Name())
}

// enter moves the restore on to field num, finishing each field passed
// on the way: the header must come first; the queues are checked against
// the configuration once they are all read, and the configuration is then
// applied; the jobs' heaps are built once the jobs are all read; and at
// the end the state is finished as every layout's is.
func (r *pbRestore) enter(num protowire.Number) error {
	for r.field < num {
		var err error
		switch r.field {
		case 0:
			if num != pbHeader {
				return errors.New("no header")
			}
		case pbQueues:
			err = r.queuesRead()
		case pbJobs:
			heap.Init(&r.e.sched)
			heap.Init(&r.e.leases)
		case pbIdempotencyKeys:
			err = r.e.keys.restoredKeysCheck()
		case pbLastField:
			err = r.finish()
		}
		if err != nil {
			return err
		}
		r.field++
		if r.field == pbQueues && r.header == nil {
			return errors.New("no header")
		}
	}
	return nil
}

// element applies one element of field num.
func (r *pbRestore) element(num protowire.Number, b []byte) error {
	switch num {
	case pbHeader:
		return unmarshalThen(b, new(storepb.EngineHeader), r.restoreHeader)
	case pbQueues:
		return unmarshalThen(b, new(storepb.EngineQueue), r.restoreQueue)
	case pbJobs:
		if s, ok := parsePlainJob(b); ok {
			return r.restoreJob(&s, nil)
		}
		return unmarshalThen(b, &r.job, func(m *storepb.EngineJob) error {
			s := scalarsOf(m)
			return r.restoreJob(&s, m)
		})
	case pbDeadLetters:
		return unmarshalThen(b, &r.dead, r.restoreDeadLetter)
	case pbIdempotencyKeys:
		k, err := parseKey(b)
		if err != nil {
			return err
		}
		return r.restoreKey(&k)
	case pbReservations:
		return unmarshalThen(b, new(storepb.EngineReservation), r.restoreReservation)
	case pbDeclared:
		return unmarshalThen(b, new(storepb.EngineDeclaration), r.restoreDeclaration)
	case pbSchedules:
		return unmarshalThen(b, new(storepb.EngineSchedule), r.restoreSchedule)
	case pbUniqueHolds:
		return unmarshalThen(b, new(storepb.EngineUniqueHold), r.restoreUniqueHold)
	case pbRedrives:
		return unmarshalThen(b, new(storepb.EngineRedrive), r.restoreRedrive)
	case pbFairOrders:
		return unmarshalThen(b, new(storepb.EngineFairOrder), r.restoreFairOrder)
	case pbCompleted:
		return unmarshalThen(b, new(storepb.EngineCompletedEntry), r.restoreCompleted)
	case pbCompletedRecords:
		return unmarshalThen(b, new(storepb.EngineCompletedRecord), r.restoreCompletedRecord)
	}
	return fmt.Errorf("field %d: not a field of the snapshot", num)
}

// unmarshalThen reads b into m and applies it with restore.
func unmarshalThen[M proto.Message](b []byte, m M, restore func(M) error) error {
	if err := proto.Unmarshal(b, m); err != nil {
		return err
	}
	return restore(m)
}

// queueAt is the queue of index i in the snapshot's queue list.
func (r *pbRestore) queueAt(i uint32) (*queue, error) {
	if int(i) >= len(r.qs) {
		return nil, fmt.Errorf("queue index %d out of range (%d queues)", i, len(r.qs))
	}
	return r.qs[i], nil
}
