package fsm

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

func TestEncodeEntry_FramesWithChecksum(t *testing.T) {
	data, err := EncodeEntry(stamped(t0, EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("payload")})))
	if err != nil {
		t.Fatal(err)
	}
	if data[0] != entryFrameV2 {
		t.Fatalf("first byte %#x, want the version 2 frame %#x", data[0], entryFrameV2)
	}
	if err := VerifyEntry(data); err != nil {
		t.Fatalf("intact entry: %v", err)
	}
	// Every single-byte change anywhere is caught: in the frame byte, the
	// checksum or the body.
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x40
		if _, err := DecodeEntry(bad); err == nil || !errors.Is(err, ErrDecode) {
			t.Fatalf("byte %d flipped: decode error %v, want one wrapping ErrDecode", i, err)
		}
		if i > 0 && !errors.Is(VerifyEntry(bad), ErrChecksum) {
			t.Fatalf("byte %d flipped: VerifyEntry did not report a checksum mismatch", i)
		}
	}
	// Every truncation is caught too.
	for n := 0; n < len(data); n++ {
		if _, err := DecodeEntry(data[:n]); err == nil {
			t.Fatalf("entry truncated to %d of %d bytes decoded", n, len(data))
		}
	}
}

func TestDecodeEntry_AcceptsVersion1(t *testing.T) {
	v1, err := proto.MarshalOptions{Deterministic: true}.Marshal(&cmdpb.Entry{FormatVersion: 1, Commands: stamped(t0, TickCommand())})
	if err != nil {
		t.Fatal(err)
	}
	if v1[0] == entryFrameV2 {
		t.Fatalf("a version 1 entry starts with the version 2 frame byte")
	}
	if _, err := DecodeEntry(v1); err != nil {
		t.Fatalf("version 1 entry refused: %v", err)
	}
	// A version 2 body without its frame, and a version 1 body inside a
	// frame, are both refused.
	v2, _ := EncodeEntry(stamped(t0, TickCommand()))
	if _, err := DecodeEntry(v2[entryHeaderV2:]); err == nil || !strings.Contains(err.Error(), "format version 2") {
		t.Fatalf("unframed version 2 body: %v", err)
	}
}

func TestApply_CorruptEntryPanicsNamingIndexAndChecksum(t *testing.T) {
	data, _ := EncodeEntry(stamped(t0, TickCommand()))
	data[len(data)-1] ^= 1
	f := newTestFSM(t)
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "log index 7") || !strings.Contains(msg, "checksum") {
			t.Fatalf("panic %q should name the index and the checksum", msg)
		}
	}()
	f.Apply(&raft.Log{Index: 7, Term: 1, Type: raft.LogCommand, Data: data})
}
