package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// frameV2 wraps a protobuf body in the version 2 frame with a correct CRC.
func frameV2(body []byte) []byte {
	data := make([]byte, entryHeaderV2, entryHeaderV2+len(body))
	data[0] = entryFrameV2
	data = append(data, body...)
	binary.BigEndian.PutUint32(data[1:entryHeaderV2], crc32.Checksum(body, castagnoli))
	return data
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckEntry(t *testing.T) {
	enqueue := EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("p"), IdempotencyKey: "k"})
	enqueue.NowUnixNano = 1
	withVersion := func(v uint32) *cmdpb.Command {
		c := proto.Clone(enqueue).(*cmdpb.Command)
		c.Version = v
		return c
	}
	good, err := EncodeEntry([]*cmdpb.Command{enqueue, TickCommand()})
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-1] ^= 1
	// A command holding only an operation this binary does not know (field
	// 99, as a newer binary's oneof case would be).
	unknownOp := protowire.AppendTag(nil, 1, protowire.VarintType)
	unknownOp = protowire.AppendVarint(unknownOp, uint64(CommandVersion))
	unknownOp = protowire.AppendTag(unknownOp, 99, protowire.BytesType)
	unknownOp = protowire.AppendBytes(unknownOp, []byte{})
	entryOf := func(format uint32, cmds ...[]byte) []byte {
		b := protowire.AppendTag(nil, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(format))
		for _, c := range cmds {
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			b = protowire.AppendBytes(b, c)
		}
		return b
	}
	// A known op number with the wire type of a number is an unknown field to
	// protobuf, so the command has no operation.
	opAsVarint := protowire.AppendTag(nil, 1, protowire.VarintType)
	opAsVarint = protowire.AppendVarint(opAsVarint, uint64(CommandVersion))
	opAsVarint = protowire.AppendTag(opAsVarint, 24, protowire.VarintType)
	opAsVarint = protowire.AppendVarint(opAsVarint, 0)
	legacy := marshal(t, &cmdpb.Entry{FormatVersion: entryFormatV1, Commands: []*cmdpb.Command{enqueue}})
	ackBatch := AckBatchCommand([]engine.LeaseRef{{JobID: 1, LeaseToken: 2}})
	ackBatchV1 := proto.Clone(ackBatch).(*cmdpb.Command)
	ackBatchV1.Version = 1
	// A version 1 command whose last op field is an ack batch: the oneof
	// keeps the last one, so the command needs version 2.
	tickThenBatchV1 := append(marshal(t, TickCommand()), marshal(t, &cmdpb.Command{Op: ackBatch.Op})...)
	// And the other way round: a tick last makes it a version 1 command.
	batchThenTickV1 := append(marshal(t, ackBatchV1), marshal(t, &cmdpb.Command{Op: TickCommand().Op})...)
	// Version 2 commands holding JobAckBatch bodies written by hand, to
	// reach the shapes EncodeEntry never writes: lists of unequal length,
	// unpacked lists, a batch split over several fields.
	ackBatchOf := func(bodies ...[]byte) []byte {
		b := protowire.AppendTag(nil, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, CommandVersionAckBatch)
		for _, body := range bodies {
			if body == nil { // a tick between two batches
				b = append(b, marshal(t, &cmdpb.Command{Op: TickCommand().Op})...)
				continue
			}
			b = protowire.AppendTag(b, 28, protowire.BytesType)
			b = protowire.AppendBytes(b, body)
		}
		return b
	}
	packed := func(b []byte, num protowire.Number, vs ...uint64) []byte {
		var list []byte
		for _, v := range vs {
			list = protowire.AppendVarint(list, v)
		}
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendBytes(b, list)
	}
	unpacked := func(b []byte, num protowire.Number, vs ...uint64) []byte {
		for _, v := range vs {
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, v)
		}
		return b
	}
	ackEntry := func(bodies ...[]byte) []byte {
		return frameV2(entryOf(EntryFormatVersion, ackBatchOf(bodies...)))
	}
	// The retired field 1, a LeaseRef message, is an unknown field now.
	retiredRefs := protowire.AppendTag(nil, 1, protowire.BytesType)
	retiredRefs = protowire.AppendBytes(retiredRefs, marshal(t, &cmdpb.LeaseRef{JobId: 1, LeaseToken: 2}))

	tests := []struct {
		name    string
		data    []byte
		wantErr bool
	}{
		{"two commands", good, false},
		{"ack batch, version 2", frameV2(entryOf(EntryFormatVersion, marshal(t, ackBatch), marshal(t, enqueue))), false},
		{"ack batch in a version 1 command", frameV2(entryOf(EntryFormatVersion, marshal(t, ackBatchV1))), true},
		{"ack batch last in a version 1 command", frameV2(entryOf(EntryFormatVersion, tickThenBatchV1)), true},
		{"tick last in a version 1 command", frameV2(entryOf(EntryFormatVersion, batchThenTickV1)), false},
		{"ack batch in a legacy v1 entry", marshal(t, &cmdpb.Entry{FormatVersion: entryFormatV1, Commands: []*cmdpb.Command{ackBatch}}), false},
		{"empty ack batch", ackEntry([]byte{}), false},
		{"ack batch, more job ids than lease tokens", ackEntry(packed(packed(nil, 2, 1, 2, 3), 3, 1, 1)), true},
		{"ack batch, more lease tokens than job ids", ackEntry(packed(packed(nil, 2, 1), 3, 1, 1)), true},
		{"ack batch, job ids only", ackEntry(packed(nil, 2, 1)), true},
		{"ack batch, lease tokens only", ackEntry(packed(nil, 3, 1<<63)), true},
		{"ack batch of unequal lists in a legacy v1 entry", marshal(t, &cmdpb.Entry{FormatVersion: entryFormatV1, Commands: []*cmdpb.Command{
			{Version: CommandVersionAckBatch, Op: &cmdpb.Command_JobAckBatch{JobAckBatch: &cmdpb.JobAckBatch{JobIds: []uint64{1, 2}, LeaseTokens: []uint64{1}}}},
		}}), true},
		{"ack batch, unpacked lists", ackEntry(unpacked(unpacked(nil, 3, 1, 1), 2, 1, 2)), false},
		{"ack batch, packed and unpacked lists of equal sum", ackEntry(unpacked(packed(packed(nil, 2, 1), 3, 1, 1), 2, 2)), false},
		{"ack batch, packed and unpacked lists of unequal sum", ackEntry(unpacked(packed(packed(nil, 2, 1), 3, 1, 1), 3, 2)), true},
		// Protobuf merges consecutive fields of the same oneof message, so
		// the lists are their concatenations...
		{"ack batch merged from two fields", ackEntry(packed(nil, 2, 1, 2), packed(nil, 3, 1, 1)), false},
		{"ack batch merged from two fields, unequal", ackEntry(packed(nil, 2, 1, 2), packed(packed(nil, 3, 1), 2, 3)), true},
		// ... unless another operation came between: the last batch starts anew.
		{"ack batch after a tick after a batch", ackEntry(packed(nil, 2, 1, 2), nil, packed(nil, 3, 1, 1)), true},
		{"ack batch of equal lists after a tick after a batch", ackEntry(packed(nil, 2, 1), nil, packed(packed(nil, 2, 7), 3, 1)), false},
		{"ack batch of a list of another wire type (unknown)", ackEntry(protowire.AppendFixed64(protowire.AppendTag(nil, 3, protowire.Fixed64Type), 1)), false},
		{"ack batch, retired refs field (unknown, an empty batch)", ackEntry(retiredRefs), false},
		{"ack batch, truncated packed varint", ackEntry(protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), []byte{0x80})), true},
		{"ack batch, truncated body", ackEntry([]byte{0x12, 0x05, 0x01}), true},
		{"empty entry list of commands", frameV2(entryOf(EntryFormatVersion)), false},
		{"legacy v1 entry, decoded in full", legacy, false},
		{"flipped bit", flipped, true},
		{"empty", nil, true},
		{"truncated header", good[:3], true},
		{"format version 1 inside a v2 frame", frameV2(entryOf(entryFormatV1, marshal(t, enqueue))), true},
		{"format version 3", frameV2(entryOf(3, marshal(t, enqueue))), true},
		{"command version 0", frameV2(entryOf(EntryFormatVersion, marshal(t, withVersion(0)))), true},
		{"command version from the future", frameV2(entryOf(EntryFormatVersion, marshal(t, withVersion(CommandVersion+1)))), true},
		{"unknown operation", frameV2(entryOf(EntryFormatVersion, marshal(t, enqueue), unknownOp)), true},
		{"known op number as a varint", frameV2(entryOf(EntryFormatVersion, opAsVarint)), true},
		{"truncated command", frameV2(append(entryOf(EntryFormatVersion), 0x12, 0x05, 0x08)), true},
		{"bad tag", frameV2([]byte{0x00}), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckEntry(tc.data)
			if (err != nil) != tc.wantErr {
				t.Fatalf("CheckEntry: err %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrDecode) {
				t.Fatalf("error %v does not wrap ErrDecode", err)
			}
			// CheckEntry and DecodeEntry agree on every case above.
			if _, derr := DecodeEntry(tc.data); (derr != nil) != tc.wantErr {
				t.Fatalf("DecodeEntry disagrees: %v", derr)
			}
		})
	}
}

// FuzzCheckEntry: CheckEntry never panics, accepts whatever DecodeEntry
// accepts, and rejects only with errors wrapping ErrDecode. Each input is
// also checked as the body of a version 2 frame with a correct checksum,
// so that mutations reach CheckEntry's own walk of the protobuf (a mutated
// framed entry almost never keeps its CRC).
func FuzzCheckEntry(f *testing.F) {
	for _, data := range seedEntries(f) {
		f.Add(data)
	}
	// A JobAckBatch of unequal lists, so that the fuzzer starts next to
	// the one body rule CheckEntry enforces.
	unequal, err := EncodeEntry([]*cmdpb.Command{{Version: CommandVersionAckBatch, Op: &cmdpb.Command_JobAckBatch{
		JobAckBatch: &cmdpb.JobAckBatch{JobIds: []uint64{1, 2}, LeaseTokens: []uint64{3}},
	}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(unequal)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgrees(t, data)
		body := data
		if len(data) >= entryHeaderV2 && data[0] == entryFrameV2 {
			body = data[entryHeaderV2:]
		}
		checkAgrees(t, frameV2(body))
	})
}

// checkAgrees is FuzzCheckEntry's verdict on one input.
func checkAgrees(t *testing.T, data []byte) {
	t.Helper()
	cerr := CheckEntry(data)
	if cerr != nil && !errors.Is(cerr, ErrDecode) {
		t.Fatalf("check error %v does not wrap ErrDecode", cerr)
	}
	_, derr := DecodeEntry(data)
	if derr == nil && cerr != nil {
		t.Fatalf("DecodeEntry accepts what CheckEntry rejects: %v", cerr)
	}
	// A legacy entry gets the same answer from both. A frame whose
	// checksum holds does too, but for the bodies of known operations,
	// which CheckEntry skips; JobAckBatch's list lengths it does check.
	if len(data) > 0 && data[0] != entryFrameV2 && (derr == nil) != (cerr == nil) {
		t.Fatalf("legacy entry: CheckEntry %v, DecodeEntry %v", cerr, derr)
	}
	if derr != nil && strings.Contains(derr.Error(), "job ack batch has") && cerr == nil {
		t.Fatalf("CheckEntry accepts an entry DecodeEntry rejects for its ack batch: %v", derr)
	}
}

// BenchmarkVerifyLogEntry compares checking an entry of 128 enqueues of
// 100-byte jobs (what a node holds a million jobs in) with decoding it:
//
//	go test ./fsm -run '^$' -bench VerifyLogEntry -benchmem
func BenchmarkVerifyLogEntry(b *testing.B) {
	payload := make([]byte, 100)
	var cmds []*cmdpb.Command
	for i := range 128 {
		c := EnqueueCommand(engine.EnqueueParams{Queue: "bench.recovery.1796004621867132920", JobType: "bench", Payload: payload,
			IdempotencyKey: string(rune('a'+i%26)) + "0123456789abcdef0123456789abcde"})
		c.NowUnixNano = int64(i)
		cmds = append(cmds, c)
	}
	data, err := EncodeEntry(cmds)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("DecodeEntry", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			if _, err := DecodeEntry(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CheckEntry", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			if err := CheckEntry(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReplayMillion applies a log of a million 100-byte enqueues with
// idempotency keys, 128 per entry, as a restarted node replays its log
// (DecodeEntry and the engine); one op is the whole log:
//
//	go test ./fsm -run '^$' -bench ReplayMillion -benchmem -benchtime 2x
func BenchmarkReplayMillion(b *testing.B) {
	const perEntry = 128
	jobs := 1_000_000
	if testing.Short() { // CI's one-iteration check that it runs (make bench BENCHFLAGS=-short)
		jobs /= 100
	}
	payload := make([]byte, 100)
	var logs []*raft.Log
	for i := 0; i < jobs; i += perEntry {
		cmds := make([]*cmdpb.Command, 0, perEntry)
		for k := i; k < min(i+perEntry, jobs); k++ {
			c := EnqueueCommand(engine.EnqueueParams{Queue: "bench.recovery.1796004621867132920", JobType: "bench", Payload: payload,
				IdempotencyKey: fmt.Sprintf("%032x", k)})
			c.NowUnixNano = t0.UnixNano()
			cmds = append(cmds, c)
		}
		data, err := EncodeEntry(cmds)
		if err != nil {
			b.Fatal(err)
		}
		logs = append(logs, &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogCommand, Data: data})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := New(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: b.TempDir()})
		for k := 0; k < len(logs); k += 64 { // raft hands over batches of up to 64 entries
			f.ApplyBatch(logs[k:min(k+64, len(logs))])
		}
	}
}
