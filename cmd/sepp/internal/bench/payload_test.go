package bench

import (
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
