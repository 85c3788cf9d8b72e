package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// chunked frames parts as format 6's engine chunks, without the empty one.
func chunked(parts ...string) []byte {
	var b []byte
	for _, p := range parts {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p))) //nolint:gosec // test data
		b = append(b, p...)
	}
	return b
}

// TestEngineChunks reads format 6's engine part: the chunks' bytes in
// order up to the empty chunk, and nothing after it; a stream that ends
// before the empty chunk, or inside a chunk, and a chunk above
// maxEngineChunkBytes are errors.
func TestEngineChunks(t *testing.T) {
	end := []byte{0, 0, 0, 0}
	for _, tc := range []struct {
		name    string
		stream  []byte
		want    string
		wantErr string // "" when the section reads whole
	}{
		{"Chunks", append(chunked("abc", "d", "efgh"), end...), "abcdefgh", ""},
		{"Empty", end, "", ""},
		{"StopsAtTheEmptyChunk", append(append(chunked("ab"), end...), "after"...), "ab", ""},
		{"NoEmptyChunk", chunked("abc"), "abc", io.ErrUnexpectedEOF.Error()},
		{"CutInAChunk", chunked("abcdef")[:6], "ab", io.ErrUnexpectedEOF.Error()},
		{"CutInALength", append(chunked("ab"), 0, 0), "ab", io.ErrUnexpectedEOF.Error()},
		{"ChunkTooLong", binary.BigEndian.AppendUint32(nil, maxEngineChunkBytes+1), "", "exceeds the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bytes.NewReader(tc.stream)
			c := &engineChunks{r: r}
			got, err := io.ReadAll(iotest{c})
			if string(got) != tc.want {
				t.Errorf("read %q, want %q", got, tc.want)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				if tc.name == "StopsAtTheEmptyChunk" && r.Len() != len("after") {
					t.Errorf("%d bytes left after the section, want the %d after it", r.Len(), len("after"))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("read error %v, want one saying %q", err, tc.wantErr)
			}
			if ferr := c.finish(); ferr == nil {
				t.Error("finish after a failed read says nothing")
			}
		})
	}
}

// iotest reads through c a few bytes at a time, so that reads end inside
// chunks as well as at their ends.
type iotest struct{ c *engineChunks }

func (r iotest) Read(p []byte) (int, error) { return r.c.Read(p[:min(len(p), 3)]) }

// A chunkWriter behind a buffer writes what engineChunks reads back, in
// chunks of the buffer's size; it never writes an empty chunk, which would
// end the section early.
func TestChunkWriter_RoundTrip(t *testing.T) {
	var out bytes.Buffer
	w := chunkWriter{w: &out}
	for _, p := range []string{"", "hello, ", "", "world"} {
		if n, err := w.Write([]byte(p)); err != nil || n != len(p) {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	out.Write([]byte{0, 0, 0, 0})
	if want := append(chunked("hello, ", "world"), 0, 0, 0, 0); !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("wrote % x, want % x", out.Bytes(), want)
	}
	got, err := io.ReadAll(&engineChunks{r: &out})
	if err != nil || string(got) != "hello, world" {
		t.Fatalf("read back %q, %v", got, err)
	}
	if err := (&engineChunks{r: bytes.NewReader(nil), err: errors.New("x")}).finish(); err == nil {
		t.Fatal("a failed section finishes without error")
	}
}

// FuzzEngineChunks: on any stream, engineChunks reads exactly what a plain
// walk of the framing gives (the chunks' bytes to the empty one), and says
// the section is whole exactly when the walk finds the empty chunk with
// every chunk complete and within maxEngineChunkBytes.
//
//	go test -run '^$' -fuzz FuzzEngineChunks -fuzztime 30s ./fsm/
func FuzzEngineChunks(f *testing.F) {
	f.Add(append(chunked("abc", "de"), 0, 0, 0, 0))
	f.Add(chunked("abc"))
	f.Add([]byte{0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var want []byte
		whole := false
		for rest := data; ; {
			if len(rest) < 4 {
				break
			}
			n := binary.BigEndian.Uint32(rest)
			rest = rest[4:]
			if n == 0 {
				whole = true
				break
			}
			if n > maxEngineChunkBytes {
				break
			}
			take := min(int(n), len(rest))
			want = append(want, rest[:take]...)
			if take < int(n) {
				break
			}
			rest = rest[take:]
		}
		got, err := io.ReadAll(&engineChunks{r: bytes.NewReader(data)})
		if !bytes.Equal(got, want) {
			t.Fatalf("read %d bytes, the framing holds %d", len(got), len(want))
		}
		if (err == nil) != whole {
			t.Fatalf("read error %v, the framing whole: %v", err, whole)
		}
	})
}

// A format 6 snapshot persisted a second time fails, and its sink is
// cancelled: the captured part is written once, and the temporary file
// (empty) must never stand in for it.
func TestFSM_StreamedSnapshotPersistsOnce(t *testing.T) {
	base := t.TempDir()
	rec := newResultsRecorder(t, 5)
	node := openCheckpointFSM(t, filepath.Join(base, "payloads"), filepath.Join(base, "snapshot-checkpoints"))
	defer closeFSM(t, node)
	rec.run(node, 2)
	joinStoreFilesMembers(rec, node, CommandVersionSnapshotEngineStreamed)
	rec.run(node, 50)
	snap, err := node.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var first memSink
	if err := snap.Persist(&first); err != nil {
		t.Fatalf("persist: %v", err)
	}
	if got := snapshotFormat(t, first.Bytes()); got != snapshotFormatEngineStreamed {
		t.Fatalf("format %d, want %d", got, snapshotFormatEngineStreamed)
	}
	var second memSink
	if err := snap.Persist(&second); err == nil || !second.cancelled {
		t.Fatalf("a second persist = %v, cancelled %v; want an error and the sink cancelled", err, second.cancelled)
	}
}
