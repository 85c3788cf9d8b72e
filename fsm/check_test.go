package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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
	unknownOp = protowire.AppendVarint(unknownOp, CommandVersion)
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
	opAsVarint = protowire.AppendVarint(opAsVarint, CommandVersion)
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
// accepts, and rejects only with errors wrapping ErrDecode.
func FuzzCheckEntry(f *testing.F) {
	for _, data := range seedEntries(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cerr := CheckEntry(data)
		if cerr != nil && !errors.Is(cerr, ErrDecode) {
			t.Fatalf("check error %v does not wrap ErrDecode", cerr)
		}
		if _, derr := DecodeEntry(data); derr == nil && cerr != nil {
			t.Fatalf("DecodeEntry accepts what CheckEntry rejects: %v", cerr)
		}
		// A frame whose checksum holds gets the same answer from both, but
		// for the bodies of known operations, which CheckEntry skips.
		if len(data) > 0 && data[0] != entryFrameV2 {
			if _, derr := DecodeEntry(data); (derr == nil) != (cerr == nil) {
				t.Fatalf("legacy entry: CheckEntry %v, DecodeEntry %v", cerr, derr)
			}
		}
	})
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
	const jobs, perEntry = 1_000_000, 128
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
