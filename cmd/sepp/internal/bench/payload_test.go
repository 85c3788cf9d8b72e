package bench

import (
	"bytes"
	"compress/flate"
	"testing"
	"time"
)

func TestPayload_CarriesSeqAndTimeThenTheFiller(t *testing.T) {
	sent := time.Unix(1_800_000_000, 123)
	for _, size := range []int{0, 16, 17, 100, 256, 5000} {
		r := &runner{opts: Options{PayloadBytes: size}}
		p := r.payload(42, sent)
		if want := max(size, 16); len(p) != want {
			t.Fatalf("size %d: %d bytes, want %d", size, len(p), want)
		}
		seq, at, ok := payloadSeq(p)
		if !ok || seq != 42 || !at.Equal(sent) {
			t.Fatalf("size %d: read back %d %v %v", size, seq, at, ok)
		}
		for i := 16; i < len(p); i++ {
			if want := byte('a' + i%26); p[i] != want {
				t.Fatalf("size %d: byte %d is %q, want %q", size, i, p[i], want)
			}
		}
	}
}

// A random payload carries the same header, and its filler neither repeats
// the alphabet nor compresses: what the payload store's compression makes
// of real payloads is not flattered.
func TestPayload_RandomDoesNotCompress(t *testing.T) {
	sent := time.Unix(1_800_000_000, 123)
	r := &runner{opts: Options{RandomPayload: true}}
	for _, size := range []int{0, 16, 17, 1024, 65536, 5 << 20} {
		p := r.payloadOf(size, 42, sent)
		if want := max(size, 16); len(p) != want {
			t.Fatalf("size %d: %d bytes, want %d", size, len(p), want)
		}
		seq, at, ok := payloadSeq(p)
		if !ok || seq != 42 || !at.Equal(sent) {
			t.Fatalf("size %d: read back %d %v %v", size, seq, at, ok)
		}
	}
	a, b := r.payloadOf(4096, 1, sent), r.payloadOf(4096, 2, sent)
	if bytes.Equal(a[16:], b[16:]) {
		t.Fatal("two jobs got the same filler")
	}
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	for seq := range uint64(64) {
		if _, err := w.Write(r.payloadOf(1024, seq, sent)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() < 64*1024*95/100 {
		t.Fatalf("64 random 1 KiB payloads compress to %d bytes", buf.Len())
	}
}
