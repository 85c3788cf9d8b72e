package client

import (
	"os"
	"testing"
)

// testdata/reserve_response.binpb is a real server's Reserve answer, kept
// current by the server's module (clientcheck's
// TestReserveGolden_CoversWhatTheServerSends fails when the server sets a
// field the file lacks): the fast decoder must take it, not fall back.
func TestDecodeReserveResponse_TakesWhatTheServerSends(t *testing.T) {
	raw, err := os.ReadFile("testdata/reserve_response.binpb")
	if err != nil {
		t.Fatal(err)
	}
	if !requireSameDecode(t, raw) {
		t.Fatal("the fast decoder refused a Reserve answer exactly as the server sent it")
	}
}
