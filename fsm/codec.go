package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// Format versions this binary writes and accepts. A newer binary keeps
// accepting every older version it ever wrote, so it can apply an old log.
const (
	// EntryFormatVersion is the layout of a log entry this binary writes:
	// version 2 is a frame of one version byte, a CRC-32C (Castagnoli,
	// big-endian) of the rest, and the cmdpb.Entry (whose format_version
	// field says 2 again). Version 1 was the bare cmdpb.Entry with
	// format_version 1; it is still decoded.
	EntryFormatVersion = 2
)

const (
	// entryFormatV1 is the bare protobuf layout, without a checksum.
	entryFormatV1 = 1
	// entryFrameV2 is the first byte of a version 2 entry. A version 1
	// entry is a protobuf message, whose first byte is a field tag; 0x02
	// would be field number 0, which protobuf forbids, so the two layouts
	// can never be confused.
	entryFrameV2 byte = 0x02
	// entryHeaderV2 is the frame byte and the checksum.
	entryHeaderV2 = 5
)

// ErrDecode wraps every reason an entry cannot be decoded.
var ErrDecode = errors.New("fsm: cannot decode log entry")

// ErrNewerVersion wraps ErrDecode for a command of a version above
// CommandVersion: a newer sepp wrote it, and this binary must not apply it
// (it would apply something else than the others do). That is a downgrade
// past a command version, not a corrupt disk.
var ErrNewerVersion = fmt.Errorf("%w: written by a newer sepp", ErrDecode)

// newerVersionError is the error of command i of version v.
func newerVersionError(i int, v uint32) error {
	return fmt.Errorf("%w: command %d has version %d, this binary applies 1..%d; run the sepp that wrote it or a newer one (a downgrade past a command version is refused)", ErrNewerVersion, i, v, CommandVersion)
}

// ErrChecksum wraps ErrDecode for an entry whose bytes changed after it was
// written: a corrupt disk, never a version this binary does not know.
var ErrChecksum = fmt.Errorf("%w: checksum mismatch (the entry is corrupt)", ErrDecode)

// VerifyEntry checks an entry's frame and checksum without decoding its
// commands: cheap enough to run over a whole log at start. A version 1
// entry has no checksum and passes.
func VerifyEntry(data []byte) error {
	_, err := entryBody(data)
	return err
}

// entryBody checks the frame and returns the protobuf body and its format.
func entryBody(data []byte) ([]byte, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty entry", ErrDecode)
	}
	if data[0] != entryFrameV2 {
		return data, nil // version 1: the format_version field decides
	}
	if len(data) < entryHeaderV2 {
		return nil, fmt.Errorf("%w: truncated entry header (%d of %d bytes)", ErrDecode, len(data), entryHeaderV2)
	}
	want := binary.BigEndian.Uint32(data[1:entryHeaderV2])
	if got := crc32.Checksum(data[entryHeaderV2:], castagnoli); got != want {
		return nil, fmt.Errorf("%w: stored crc32c %08x, computed %08x over %d bytes", ErrChecksum, want, got, len(data)-entryHeaderV2)
	}
	return data[entryHeaderV2:], nil
}

// DecodeEntry parses one log entry's data and checks that this binary can
// apply every command in it: an intact checksum, a known entry format, a
// known command version and a known operation. It returns an error wrapping
// ErrDecode, never panics; Apply turns the error into a panic naming the
// log index.
func DecodeEntry(data []byte) (*cmdpb.Entry, error) {
	body, err := entryBody(data)
	if err != nil {
		return nil, err
	}
	framed := data[0] == entryFrameV2
	var entry cmdpb.Entry
	if err := proto.Unmarshal(body, &entry); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	// The version inside must match the frame: a version 2 body without
	// its frame (a lost first byte) is refused, not read unchecked.
	switch v := entry.GetFormatVersion(); {
	case framed && v == EntryFormatVersion, !framed && v == entryFormatV1:
	case framed:
		return nil, fmt.Errorf("%w: framed entry says format version %d, want %d", ErrDecode, v, EntryFormatVersion)
	default:
		return nil, fmt.Errorf("%w: entry format version %d, this binary applies %d and %d", ErrDecode, v, entryFormatV1, EntryFormatVersion)
	}
	for i, cmd := range entry.GetCommands() {
		if err := checkDecodedCommand(i, cmd); err != nil {
			return nil, err
		}
	}
	return &entry, nil
}

// checkDecodedCommand is DecodeEntry's verdict on command i of an entry
// that unmarshalled: a known version, a known operation that the version
// has, and a JobAckBatch's lists of equal length. decodeEntryFast applies
// it to each command it leaves to protobuf.
func checkDecodedCommand(i int, cmd *cmdpb.Command) error {
	if cmd == nil {
		return fmt.Errorf("%w: command %d is empty", ErrDecode, i)
	}
	v := cmd.GetVersion()
	if v > CommandVersion {
		return newerVersionError(i, v)
	}
	if v < 1 {
		return fmt.Errorf("%w: command %d has version %d, this binary applies 1..%d", ErrDecode, i, v, CommandVersion)
	}
	if cmd.GetOp() == nil {
		// A newer binary's operation that this one does not know, or a
		// command with no operation at all: applying it as a no-op would
		// diverge from the replicas that understand it.
		return fmt.Errorf("%w: command %d has no operation this binary knows", ErrDecode, i)
	}
	if since := opVersion(cmd.GetOp()); v < since {
		// Only a writer bug makes one; the version is what the leader
		// checked against the members, so it must be honest.
		return fmt.Errorf("%w: command %d has version %d, its operation needs %d", ErrDecode, i, v, since)
	}
	if a := cmd.GetJobsAct(); a != nil && v < jobsActVersion(engine.JobAction(a.GetAction())) {
		return fmt.Errorf("%w: command %d has version %d, job action %v needs %d", ErrDecode, i, v, engine.JobAction(a.GetAction()), jobsActVersion(engine.JobAction(a.GetAction())))
	}
	if b := cmd.GetJobAckBatch(); b != nil && len(b.GetJobIds()) != len(b.GetLeaseTokens()) {
		// Applying the shorter list, or padding it, would be a guess at
		// the writer's intent: refuse the entry like any corrupt one.
		return ackBatchLengthError(i, len(b.GetJobIds()), len(b.GetLeaseTokens()))
	}
	return nil
}

// ackBatchLengthError is the decode error, shared by DecodeEntry and
// CheckEntry, of a JobAckBatch whose parallel lists differ in length.
func ackBatchLengthError(i, jobIDs, leaseTokens int) error {
	return fmt.Errorf("%w: command %d: job ack batch has %d job ids but %d lease tokens (the lists are parallel)", ErrDecode, i, jobIDs, leaseTokens)
}

// EncodeEntry marshals commands into one log entry's data (format version
// 2: frame byte, CRC-32C, protobuf), deterministically. It stamps nothing:
// the proposer sets each command's now before calling it.
func EncodeEntry(cmds []*cmdpb.Command) ([]byte, error) {
	// An entry of enqueue batches, the bulk of the log, has a hand-written
	// encoder that writes the same bytes (encodeEntryFast).
	if data, ok := encodeEntryFast(cmds); ok {
		return data, nil
	}
	return encodeEntryGeneral(cmds)
}

// encodeEntryGeneral is EncodeEntry through protobuf's marshal, for every
// entry; encodeEntryFast must write exactly its bytes.
func encodeEntryGeneral(cmds []*cmdpb.Command) ([]byte, error) {
	entry := &cmdpb.Entry{FormatVersion: EntryFormatVersion, Commands: cmds}
	opts := proto.MarshalOptions{Deterministic: true}
	buf := make([]byte, entryHeaderV2, entryHeaderV2+opts.Size(entry))
	buf[0] = entryFrameV2
	data, err := opts.MarshalAppend(buf, entry)
	if err != nil {
		return nil, fmt.Errorf("fsm: encode entry: %w", err)
	}
	binary.BigEndian.PutUint32(data[1:entryHeaderV2], crc32.Checksum(data[entryHeaderV2:], castagnoli))
	return data, nil
}

// The XxxCommand builders turn engine parameters into commands. The proposer
// stamps now_unix_nano; every builder sets the lowest command version that
// has everything the command uses (the table in versions.go).

func newCommand() *cmdpb.Command { return &cmdpb.Command{Version: commandV1} }

// EnqueueCommand builds a JobEnqueue.
func EnqueueCommand(p engine.EnqueueParams) *cmdpb.Command {
	c := newCommand()
	if p.Unique != nil {
		c.Version = CommandVersionUnique
	}
	if p.Expiry != nil {
		atLeast(&c.Version, CommandVersionExpiryFairness)
	}
	if p.Trace != nil {
		atLeast(&c.Version, CommandVersionTraceContext)
	}
	c.Op = &cmdpb.Command_JobEnqueue{JobEnqueue: &cmdpb.JobEnqueue{Params: enqueueParamsToProto(p)}}
	return c
}

// EnqueueBatchCommand builds a JobEnqueueBatch.
func EnqueueBatchCommand(items []engine.EnqueueParams) *cmdpb.Command {
	pbItems := make([]*cmdpb.EnqueueParams, len(items))
	// One slab for the batch's messages, which live and die together
	// (encoded into one log entry): one allocation, not one per job.
	slab := make([]cmdpb.EnqueueParams, len(items))
	for i := range items {
		setEnqueueParamsProto(&slab[i], &items[i])
		pbItems[i] = &slab[i]
	}
	c := newCommand()
	if HasUnique(items) {
		c.Version = CommandVersionUnique
	}
	if HasExpiry(items) {
		atLeast(&c.Version, CommandVersionExpiryFairness)
	}
	if HasTrace(items) {
		atLeast(&c.Version, CommandVersionTraceContext)
	}
	c.Op = &cmdpb.Command_JobEnqueueBatch{JobEnqueueBatch: &cmdpb.JobEnqueueBatch{Items: pbItems}}
	return c
}

// ReserveCommand builds a JobReserve; one with RetryWindow (and a request
// id) takes CommandVersionReserveRetry.
func ReserveCommand(p engine.ReserveParams) *cmdpb.Command {
	c := newCommand()
	if p.RetryWindow && p.RequestID != "" {
		c.Version = CommandVersionReserveRetry
	}
	c.Op = &cmdpb.Command_JobReserve{JobReserve: &cmdpb.JobReserve{
		Queue: p.Queue, WorkerId: p.WorkerID, N: int64(p.N), LeaseNanos: int64(p.Lease), RequestId: p.RequestID,
	}}
	return c
}

// AckCommand builds a JobAck.
func AckCommand(ref engine.LeaseRef) *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_JobAck{JobAck: &cmdpb.JobAck{Ref: leaseRefToProto(ref)}}
	return c
}

// AckWithResultCommand builds a JobAck carrying the worker's result, of
// CommandVersionResults when result is not empty (an older binary would
// drop it); an empty one is AckCommand's, unchanged.
func AckWithResultCommand(ref engine.LeaseRef, result []byte) *cmdpb.Command {
	c := AckCommand(ref)
	if len(result) > 0 {
		c.Version = CommandVersionResults
		c.GetJobAck().Result = result
	}
	return c
}

// AckFollowUpsCommand builds a JobAck carrying a result (as
// AckWithResultCommand's) and follow-ups, of CommandVersionFollowUps when
// there are any (an older binary would drop them), of
// CommandVersionDependencies when one waits for another. The log holds the
// follow-ups as the API's EnqueueRequests (apiconv turns the checked
// params back into them), as etcd's log holds its PutRequest. Propose one
// with follow-ups only to a cluster whose every member applies that
// version.
func AckFollowUpsCommand(ref engine.LeaseRef, result []byte, followUps []engine.EnqueueParams) *cmdpb.Command {
	c := AckWithResultCommand(ref, result)
	if len(followUps) > 0 {
		c.Version = CommandVersionFollowUps
		if HasAfter(followUps) {
			c.Version = CommandVersionDependencies // an older binary would drop after
		}
		ack := c.GetJobAck()
		for i := range followUps {
			ack.FollowUps = append(ack.FollowUps, apiconv.EnqueueRequest(&followUps[i]))
		}
	}
	return c
}

// AckBatchCommand builds a JobAckBatch (command version 2): the refs ack in
// order, each as AckCommand's would, and the Result's Acks holds one error
// per ref. Propose it only to a cluster whose every member applies
// CommandVersionAckBatch; an older binary cannot apply it.
//
// The refs are two parallel lists, job ids and lease tokens, which encode as
// two packed fields: a list of LeaseRef messages would cost an allocation
// per ref on every replica's decode.
func AckBatchCommand(refs []engine.LeaseRef) *cmdpb.Command {
	// One array for both lists; the three-index slice keeps an append to
	// the ids from overwriting the tokens.
	both := make([]uint64, 2*len(refs))
	ids, tokens := both[:len(refs):len(refs)], both[len(refs):]
	for i, ref := range refs {
		ids[i], tokens[i] = uint64(ref.JobID), uint64(ref.LeaseToken)
	}
	return &cmdpb.Command{
		Version: CommandVersionAckBatch,
		Op:      &cmdpb.Command_JobAckBatch{JobAckBatch: &cmdpb.JobAckBatch{JobIds: ids, LeaseTokens: tokens}},
	}
}

// NackCommand builds a JobNack.
func NackCommand(p engine.NackParams) *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_JobNack{JobNack: &cmdpb.JobNack{
		Ref: leaseRefToProto(p.LeaseRef), Directive: uint32(p.Directive), AfterNanos: int64(p.After), Reason: p.Reason,
	}}
	return c
}

// ReleaseCommand builds a JobRelease.
func ReleaseCommand(ref engine.LeaseRef) *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_JobRelease{JobRelease: &cmdpb.JobRelease{Ref: leaseRefToProto(ref)}}
	return c
}

// ExtendLeaseCommand builds a LeaseExtend, of CommandVersionProgress when
// it carries progress (an older binary would drop it). Propose one with
// progress only to a cluster whose every member applies that version.
func ExtendLeaseCommand(p engine.ExtendParams) *cmdpb.Command {
	c := newCommand()
	ext := &cmdpb.LeaseExtend{Ref: leaseRefToProto(p.LeaseRef), LeaseNanos: int64(p.Lease)}
	if p.Progress != nil {
		c.Version = CommandVersionProgress
		ext.Progress = apiconv.ProgressToProto(p.Progress)
	}
	c.Op = &cmdpb.Command_LeaseExtend{LeaseExtend: ext}
	return c
}

// ExtendAllLeasesCommand builds a LeaseExtendAll, a new leader's first command.
func ExtendAllLeasesCommand(grace time.Duration) *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_LeaseExtendAll{LeaseExtendAll: &cmdpb.LeaseExtendAll{GraceNanos: int64(grace)}}
	return c
}

// DrainCommand builds a DeadLetterDrain.
func DrainCommand(p engine.DrainParams) *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_DeadLetterDrain{DeadLetterDrain: &cmdpb.DeadLetterDrain{Queue: p.Queue, Max: int64(p.Max)}}
	return c
}

// RequeueDeadLettersCommand builds a DeadLetterRequeue.
func RequeueDeadLettersCommand(ids []engine.JobID) *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_DeadLetterRequeue{DeadLetterRequeue: &cmdpb.DeadLetterRequeue{JobIds: jobIDsToProto(ids)}}
	return c
}

// DeleteDeadLettersCommand builds a DeadLetterDelete.
func DeleteDeadLettersCommand(ids []engine.JobID) *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_DeadLetterDelete{DeadLetterDelete: &cmdpb.DeadLetterDelete{JobIds: jobIDsToProto(ids)}}
	return c
}

// DeadLetterJobsCommand builds a JobDeadLetter (operator dead-lettering).
func DeadLetterJobsCommand(ids []engine.JobID, reason string) *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_JobDeadLetter{JobDeadLetter: &cmdpb.JobDeadLetter{JobIds: jobIDsToProto(ids), Reason: reason}}
	return c
}

// PauseQueueCommand builds a QueuePause.
func PauseQueueCommand(queue string) *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_QueuePause{QueuePause: &cmdpb.QueuePause{Queue: queue}}
	return c
}

// ResumeQueueCommand builds a QueueResume.
func ResumeQueueCommand(queue string) *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_QueueResume{QueueResume: &cmdpb.QueueResume{Queue: queue}}
	return c
}

// TickCommand builds a Tick; its now is the time the transitions are due at.
func TickCommand() *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_Tick{Tick: &cmdpb.Tick{}}
	return c
}

// SetConfigCommand builds a ConfigSet: of command version 1,
// CommandVersionKeyMinWindow when the limits set idempotency_min_window, or
// CommandVersionMemoryBudget when they set a memory budget, or
// CommandVersionReserveLimits when a queue sets reserve limits (propose those
// only to a cluster whose every member applies them).
func SetConfigCommand(cfg engine.Config) *cmdpb.Command {
	c := newCommand()
	if cfg.Limits.IdempotencyMinWindow != 0 {
		c.Version = CommandVersionKeyMinWindow
	}
	if HasMemoryBudget(cfg) {
		c.Version = CommandVersionMemoryBudget
	}
	if engine.HasReserveLimits(cfg) {
		c.Version = CommandVersionReserveLimits
	}
	if engine.HasExpiryFairness(cfg) {
		c.Version = CommandVersionExpiryFairness
	}
	if cfg.Limits.MaxDiskBytes != 0 {
		c.Version = CommandVersionPayloadsOffHeap
	}
	if engine.HasTags(cfg) {
		c.Version = CommandVersionQueueTags
	}
	if engine.HasCompletedRetention(cfg) {
		c.Version = CommandVersionResults
	}
	c.Op = &cmdpb.Command_ConfigSet{ConfigSet: &cmdpb.ConfigSet{Config: engine.ConfigToProto(cfg)}}
	return c
}

// HasMemoryBudget reports whether cfg sets a memory budget, globally or for
// a queue (which needs CommandVersionMemoryBudget).
func HasMemoryBudget(cfg engine.Config) bool {
	if cfg.Limits.MaxMemoryBytes != 0 {
		return true
	}
	for _, q := range cfg.Queues {
		if q.MaxMemoryBytes != nil {
			return true
		}
	}
	return false
}

// SetNodeCommand builds a NodeMetadataSet.
func SetNodeCommand(n NodeMeta) *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_NodeMetadataSet{NodeMetadataSet: &cmdpb.NodeMetadataSet{Node: nodeMetaToProto(n)}}
	return c
}

// DeleteNodeCommand builds a NodeMetadataDelete.
func DeleteNodeCommand(id string) *cmdpb.Command {
	c := newCommand()
	c.Op = &cmdpb.Command_NodeMetadataDelete{NodeMetadataDelete: &cmdpb.NodeMetadataDelete{Id: id}}
	return c
}

// unixNano encodes a time; the zero time (meaning "unset" throughout the
// engine) encodes as 0, because time.Time{}.UnixNano() is undefined.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNano decodes unixNano's output, in UTC so that no replica's local
// zone reaches the state.
func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func enqueueParamsToProto(p engine.EnqueueParams) *cmdpb.EnqueueParams {
	m := new(cmdpb.EnqueueParams)
	setEnqueueParamsProto(m, &p)
	return m
}

// setEnqueueParamsProto fills a zero message m from p.
func setEnqueueParamsProto(m *cmdpb.EnqueueParams, p *engine.EnqueueParams) {
	m.Queue = p.Queue
	m.JobType = p.JobType
	m.Payload = p.Payload
	m.Priority = p.Priority
	m.ScheduledAtUnixNano = unixNano(p.ScheduledAt)
	m.MaxAttempts = p.MaxAttempts
	m.Custom = p.Custom
	m.IdempotencyKey = p.IdempotencyKey
	if x := p.Expiry; x != nil {
		m.TtlNanos = int64(x.TTL)
		m.ExpiresAtUnixNano = unixNano(x.At)
	}
	if t := p.Trace; t != nil {
		m.Trace = &cmdpb.TraceContext{Traceparent: t.Traceparent, Tracestate: t.Tracestate}
	}
	if u := p.Unique; u != nil {
		m.Unique = &cmdpb.UniqueOptions{
			Key: u.Key, Fields: u.Fields, CoverDead: u.CoverDead,
			CompletedForNanos: int64(u.CompletedFor), Refuse: u.Refuse,
		}
	}
}

// HasAfter reports whether an item waits for others of its call, which
// takes CommandVersionDependencies.
func HasAfter(items []engine.EnqueueParams) bool {
	for i := range items {
		if len(items[i].After) > 0 {
			return true
		}
	}
	return false
}

// HasUnique reports whether an item sets unique options, which take
// CommandVersionUnique.
func HasUnique(items []engine.EnqueueParams) bool {
	for i := range items {
		if items[i].Unique != nil {
			return true
		}
	}
	return false
}

// HasTrace reports whether an item carries a trace context, which takes
// CommandVersionTraceContext.
func HasTrace(items []engine.EnqueueParams) bool {
	for i := range items {
		if items[i].Trace != nil {
			return true
		}
	}
	return false
}

// StripTrace returns items without their trace contexts (the caller's
// slice when none has one, else a copy): what a leader proposes while a
// member does not apply CommandVersionTraceContext.
func StripTrace(items []engine.EnqueueParams) []engine.EnqueueParams {
	if !HasTrace(items) {
		return items
	}
	out := make([]engine.EnqueueParams, len(items))
	for i := range items {
		out[i] = items[i]
		out[i].Trace = nil
	}
	return out
}

func enqueueParamsFromProto(p *cmdpb.EnqueueParams) engine.EnqueueParams {
	out := engine.EnqueueParams{
		Queue:          p.GetQueue(),
		JobType:        p.GetJobType(),
		Payload:        p.GetPayload(),
		ScheduledAt:    fromUnixNano(p.GetScheduledAtUnixNano()),
		MaxAttempts:    p.GetMaxAttempts(),
		Custom:         p.GetCustom(),
		IdempotencyKey: p.GetIdempotencyKey(),
	}
	if ttl, at := p.GetTtlNanos(), p.GetExpiresAtUnixNano(); ttl != 0 || at != 0 {
		out.Expiry = &engine.ExpiryOpts{TTL: time.Duration(ttl), At: fromUnixNano(at)}
	}
	// A command without params (only a corrupt or hostile entry has none)
	// becomes an empty enqueue that the engine rejects as a value.
	if p != nil && p.Priority != nil {
		prio := p.GetPriority()
		out.Priority = &prio
	}
	if t := p.GetTrace(); t != nil {
		out.Trace = &engine.TraceContext{Traceparent: t.GetTraceparent(), Tracestate: t.GetTracestate()}
	}
	if u := p.GetUnique(); u != nil {
		out.Unique = &engine.UniqueOpts{
			Key: u.GetKey(), Fields: u.GetFields(), CoverDead: u.GetCoverDead(),
			CompletedFor: time.Duration(u.GetCompletedForNanos()), Refuse: u.GetRefuse(),
		}
	}
	return out
}

func leaseRefToProto(r engine.LeaseRef) *cmdpb.LeaseRef {
	return &cmdpb.LeaseRef{JobId: uint64(r.JobID), LeaseToken: uint64(r.LeaseToken)}
}

func leaseRefFromProto(r *cmdpb.LeaseRef) engine.LeaseRef {
	return engine.LeaseRef{JobID: engine.JobID(r.GetJobId()), LeaseToken: engine.LeaseToken(r.GetLeaseToken())}
}

func jobIDsToProto(ids []engine.JobID) []uint64 {
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = uint64(id)
	}
	return out
}

func jobIDsFromProto(ids []uint64) []engine.JobID {
	out := make([]engine.JobID, len(ids))
	for i, id := range ids {
		out[i] = engine.JobID(id)
	}
	return out
}

func nodeMetaToProto(n NodeMeta) *cmdpb.NodeMetadata {
	m := &cmdpb.NodeMetadata{Id: n.ID, RaftAddr: n.RaftAddr, GrpcAddr: n.GRPCAddr, HttpAddr: n.HTTPAddr, MaxCommandVersion: n.MaxCommandVersion}
	if f := n.Facts; f.Reported {
		m.FactsReported, m.FactsLegacy = true, f.Legacy
		m.BinaryVersion, m.MinCommandVersion = f.BinaryVersion, f.MinCommandVersion
		m.MemoryLimitBytes, m.MemoryLimitFrom = f.MemoryLimitBytes, f.MemoryLimitFrom
		m.Gomaxprocs, m.StartUnixNano = f.GOMAXPROCS, f.StartUnixNano
	}
	return m
}

func nodeMetaFromProto(n *cmdpb.NodeMetadata) NodeMeta {
	m := NodeMeta{ID: n.GetId(), RaftAddr: n.GetRaftAddr(), GRPCAddr: n.GetGrpcAddr(), HTTPAddr: n.GetHttpAddr(), MaxCommandVersion: n.GetMaxCommandVersion()}
	if n.GetFactsReported() {
		m.Facts = NodeFacts{Reported: true, Legacy: n.GetFactsLegacy(),
			BinaryVersion: n.GetBinaryVersion(), MinCommandVersion: n.GetMinCommandVersion(),
			MemoryLimitBytes: n.GetMemoryLimitBytes(), MemoryLimitFrom: n.GetMemoryLimitFrom(),
			GOMAXPROCS: n.GetGomaxprocs(), StartUnixNano: n.GetStartUnixNano()}
	}
	return m
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
