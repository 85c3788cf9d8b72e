package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/fsm"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// A log entry of a command version above this binary's is a downgrade past
// a command version, not corruption: the start is refused with
// ErrNewerData, naming the log, the index and both versions (issue 36).
func TestVerifyLog_RefusesANewerBinarysEntryAsADowngrade(t *testing.T) {
	for _, tc := range []struct {
		name      string
		version   uint32
		wantNewer bool
	}{
		{name: "this binary's newest version", version: fsm.CommandVersion},
		{name: "one version newer", version: fsm.CommandVersion + 1, wantNewer: true},
		{name: "far newer", version: fsm.CommandVersion + 40, wantNewer: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := raft.NewInmemStore()
			data, err := fsm.EncodeEntry([]*cmdpb.Command{{Version: tc.version, Op: &cmdpb.Command_Tick{Tick: &cmdpb.Tick{}}}})
			if err != nil {
				t.Fatal(err)
			}
			if err := store.StoreLog(&raft.Log{Index: 1, Term: 3, Type: raft.LogCommand, Data: data}); err != nil {
				t.Fatal(err)
			}
			err = verifyLog(store, "data/wal", 0)
			if !tc.wantNewer {
				if err != nil {
					t.Fatalf("verifyLog = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrNewerData) || errors.Is(err, ErrCorruptData) {
				t.Fatalf("verifyLog = %v, want ErrNewerData and not ErrCorruptData", err)
			}
			for _, want := range []string{"newer sepp", "data/wal", "log index 1", "downgrade"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("verifyLog = %q, want it to say %q", err, want)
				}
			}
		})
	}
}
