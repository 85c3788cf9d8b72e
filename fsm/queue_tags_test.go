package fsm

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// A QueueUpdate older than version 18 leaves tags alone and refuses "tags"
// in inherit, as the binaries that wrote it did, so a replica replaying an
// old log reaches the state the others reached; from 18 on it sets them.
func TestQueueTags_UpdateByVersion(t *testing.T) {
	tagged := []engine.Tag{{Key: "env", Value: "prod"}}
	for _, tt := range []struct {
		name     string
		version  uint32
		update   *cmdpb.QueueUpdate
		wantErr  string
		wantTags []engine.Tag
	}{
		{"set at 18", CommandVersionQueueTags, UpdateQueueCommand(engine.QueueUpdate{Name: "q", SetTags: true, Set: engine.QueueConfig{Tags: tagged}}).GetQueueUpdate(), "", tagged},
		{"set at 17 is ignored", CommandVersionTraceContext, UpdateQueueCommand(engine.QueueUpdate{Name: "q", SetTags: true, Set: engine.QueueConfig{Tags: tagged}}).GetQueueUpdate(), "", nil},
		{"inherit at 17 is unknown", CommandVersionTraceContext, UpdateQueueCommand(engine.QueueUpdate{Name: "q", Inherit: []string{"tags"}}).GetQueueUpdate(), `unknown setting "tags"`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newTestFSM(t)
			now := time.Unix(100, 0)
			applyCommands(t, f, now, CreateQueueCommand(engine.QueueConfig{Name: "q"}, false))
			cmd := &cmdpb.Command{Version: tt.version, Op: &cmdpb.Command_QueueUpdate{QueueUpdate: tt.update}}
			res := applyCommands(t, f, now, cmd)[0]
			if tt.wantErr != "" {
				if !errors.Is(res.Err, engine.ErrInvalidArgument) || !strings.Contains(res.Err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", res.Err, tt.wantErr)
				}
			} else if res.Err != nil {
				t.Fatal(res.Err)
			}
			var got []engine.Tag
			for _, q := range f.eng.Config().Queues {
				if q.Name == "q" {
					got = q.Tags
				}
			}
			if len(got) != len(tt.wantTags) || (len(got) > 0 && got[0] != tt.wantTags[0]) {
				t.Fatalf("tags %v, want %v", got, tt.wantTags)
			}
		})
	}
}

// applyCommands applies cmds as one entry stamped with now.
func applyCommands(t *testing.T, f *FSM, now time.Time, cmds ...*cmdpb.Command) []Result {
	t.Helper()
	data, err := EncodeEntry(stamped(now, cmds...))
	if err != nil {
		t.Fatal(err)
	}
	res, _ := f.Apply(&raft.Log{Index: f.AppliedIndex() + 1, Term: 1, Type: raft.LogCommand, Data: data}).([]Result)
	return res
}
