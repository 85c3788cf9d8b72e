package engine_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// readerKinds feed a snapshot to Restore the ways callers do: with its
// length known (bytes.Reader, the fsm's io.LimitedReader) or not.
var readerKinds = []struct {
	name      string
	sizeKnown bool
	wrap      func([]byte) io.Reader
}{
	{"BytesReader", true, func(b []byte) io.Reader { return bytes.NewReader(b) }},
	{"LimitedReader", true, func(b []byte) io.Reader { return io.LimitReader(bytes.NewReader(b), int64(len(b))) }},
	{"PlainReader", false, func(b []byte) io.Reader { return struct{ io.Reader }{bytes.NewReader(b)} }},
}

// withCRC returns data with its trailer recomputed, so a mutation gets past
// the checksum to the decoder.
func withCRC(data []byte) []byte {
	binary.LittleEndian.PutUint32(data[len(data)-4:], crc32.ChecksumIEEE(data[:len(data)-4]))
	return data
}

// A snapshot whose declared payload length is absurd (a GiB in a stream of
// a few hundred bytes) is refused as soon as the length is read when the
// input's size is known, before any read or allocation for it, and is
// refused anyway when it is not.
func TestRestoreRefusesLengthsBeyondInput(t *testing.T) {
	t.Parallel()
	const marker = "PAYLOAD-MARKER-0123"
	clock := et.NewClock()
	e := et.New(t)
	et.MustEnqueue(t, e, clock.Now(), engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte(marker)})
	good := snapshotBytes(t, e)
	at := bytes.Index(good, []byte(marker))
	if at < 1 || good[at-1] != byte(len(marker)) {
		t.Fatalf("payload length prefix not found before the marker at %d", at)
	}
	var bad []byte
	bad = append(bad, good[:at-1]...)
	bad = binary.AppendUvarint(bad, 1<<30-1) // within maxDecodeBytes, far beyond the input
	bad = append(bad, good[at:]...)
	bad = withCRC(bad)

	for _, k := range readerKinds {
		t.Run(k.name, func(t *testing.T) {
			err := engine.New(engine.DefaultConfig()).Restore(k.wrap(bad))
			if !errors.Is(err, engine.ErrCorruptSnapshot) {
				t.Fatalf("Restore of a snapshot declaring a 1 GiB payload: %v, want ErrCorruptSnapshot", err)
			}
			if early := strings.Contains(err.Error(), "bytes left in the input"); early != k.sizeKnown {
				t.Fatalf("refused early (by the bytes left) = %v, want %v: %v", early, k.sizeKnown, err)
			}
		})
	}
}

// The bound never refuses a valid snapshot, whose last item ends exactly at
// the trailer: every reader kind restores the same state.
func TestRestoreBoundKeepsValidSnapshots(t *testing.T) {
	t.Parallel()
	for _, src := range []*engine.Engine{engine.New(engine.DefaultConfig()), richEngine(t)} {
		data := snapshotBytes(t, src)
		for _, k := range readerKinds {
			got := engine.New(engine.DefaultConfig())
			if err := got.Restore(k.wrap(data)); err != nil {
				t.Fatalf("%s: restore of a valid snapshot: %v", k.name, err)
			}
			if got.Digest() != src.Digest() {
				t.Fatalf("%s: restored digest differs from the original", k.name)
			}
		}
	}
}
