package cluster

import (
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/fsm"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// verifiedReads hands out intact entries, and reports a command entry whose
// checksum fails as missing, so that raft's replication sends the snapshot
// instead of it.
func TestVerifiedReads_CorruptEntryIsMissing(t *testing.T) {
	intact, err := fsm.EncodeEntry([]*cmdpb.Command{{Op: &cmdpb.Command_Tick{Tick: &cmdpb.Tick{}}}})
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), intact...)
	corrupt[len(corrupt)-1] ^= 0x01
	inner := raft.NewInmemStore()
	if err := inner.StoreLogs([]*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: intact},
		{Index: 2, Term: 1, Type: raft.LogCommand, Data: corrupt},
		{Index: 3, Term: 1, Type: raft.LogConfiguration, Data: []byte("not an fsm entry")},
	}); err != nil {
		t.Fatal(err)
	}
	s := &verifiedReads{LogStore: inner, path: "test", logger: hclog.NewNullLogger()}
	for _, tc := range []struct {
		index uint64
		want  error
	}{
		{1, nil},
		{2, raft.ErrLogNotFound},
		{3, nil},
		{4, raft.ErrLogNotFound}, // absent from the store: its own answer
	} {
		var l raft.Log
		if err := s.GetLog(tc.index, &l); !errors.Is(err, tc.want) {
			t.Errorf("GetLog(%d) = %v, want %v", tc.index, err, tc.want)
		}
	}
}
