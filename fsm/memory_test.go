package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// outcome is a result reduced to what must be equal on every replica.
func outcome(r Result) string {
	s := fmt.Sprintf("id=%d dup=%v err=%v", r.Enqueue.JobID, r.Enqueue.Duplicate, r.Err)
	for _, b := range r.Batch {
		s += fmt.Sprintf(" [%d %v]", b.Result.JobID, b.Err)
	}
	return s
}

// TestFSM_MemoryBudgetDecidedAlikeWhateverTheLocalLimit: two replicas whose
// nodes run in different memory limits — so each would propose a different
// default budget as leader — apply the same log and refuse exactly the same
// enqueues, because the budget they compare with is the one the log
// carries (the leader's ConfigSet), never their own. A leader change to the
// other node moves both to its budget at the same index. A third replica
// restored from a snapshot taken mid-way and replaying the rest decides
// alike too: replay never refuses what was accepted.
func TestFSM_MemoryBudgetDecidedAlikeWhateverTheLocalLimit(t *testing.T) {
	// What each node's own config would make of its memory limit: 64 KiB
	// and 1 MiB. The state machines are built as the server builds them,
	// from the engine defaults, whatever the node's config says.
	localBudget := map[string]int64{"small": 64 << 10, "large": 1 << 20}
	replicas := map[string]*FSM{}
	for name := range localBudget {
		replicas[name] = newTestFSM(t)
	}
	budgetConfig := func(b int64) engine.Config {
		cfg := engine.Config{Limits: engine.DefaultLimits()}
		cfg.Limits.MaxMemoryBytes = b
		cfg.Queues = []engine.QueueConfig{{Name: "capped", MaxMemoryBytes: ptr[int64](16 << 10)}}
		return cfg
	}
	job := func(q string, i int) engine.EnqueueParams {
		return engine.EnqueueParams{Queue: q, JobType: "t", Payload: bytes.Repeat([]byte{byte(i)}, 1024)}
	}
	var log [][]*cmdpb.Command
	now := t0
	add := func(cmds ...*cmdpb.Command) {
		now = now.Add(time.Millisecond)
		log = append(log, stamped(now, cmds...))
	}
	// "small" leads first and stamps its budget; later "large" takes over.
	add(SetConfigCommand(budgetConfig(localBudget["small"])))
	for i := range 30 {
		add(EnqueueCommand(job("capped", i)))
	}
	for i := range 120 {
		add(EnqueueCommand(job("q", i)))
	}
	mid := len(log)
	add(EnqueueBatchCommand([]engine.EnqueueParams{job("q", 200), job("q", 201)}))
	add(SetConfigCommand(budgetConfig(localBudget["large"])))
	for i := range 120 {
		add(EnqueueCommand(job("q", 300+i)))
	}

	results := map[string][]string{}
	var snapshotAtMid []byte
	for name, f := range replicas {
		for i, cmds := range log {
			if i == mid && name == "small" {
				snapshotAtMid = snapshotBytes(t, f)
			}
			for _, r := range applyEntry(t, f, uint64(i+1), cmds) {
				results[name] = append(results[name], outcome(r))
			}
		}
	}
	restored := newTestFSM(t)
	if err := restored.Restore(io.NopCloser(bytes.NewReader(snapshotAtMid))); err != nil {
		t.Fatal(err)
	}
	for i := mid; i < len(log); i++ {
		for _, r := range applyEntry(t, restored, uint64(i+1), log[i]) {
			results["restored"] = append(results["restored"], outcome(r))
		}
	}

	small, large := results["small"], results["large"]
	if len(small) != len(large) {
		t.Fatalf("%d results against %d", len(small), len(large))
	}
	refused, cappedRefused := 0, 0
	for i := range small {
		if small[i] != large[i] {
			t.Fatalf("command %d: %q on one replica, %q on the other", i, small[i], large[i])
		}
		if bytes.Contains([]byte(small[i]), []byte("limits.max_memory_bytes")) {
			refused++
		}
		if bytes.Contains([]byte(small[i]), []byte(`queue "capped" reached`)) {
			cappedRefused++
		}
	}
	for i, got := range results["restored"] {
		if want := small[len(small)-len(results["restored"])+i]; got != want {
			t.Fatalf("restored replica, command %d after the snapshot: %q, the others %q", i, got, want)
		}
	}
	if refused == 0 || cappedRefused == 0 {
		t.Fatalf("nothing refused (global %d, queue %d): the test proves nothing", refused, cappedRefused)
	}
	if replicas["small"].Digest() != replicas["large"].Digest() || restored.Digest() != replicas["small"].Digest() {
		t.Fatal("replicas' states differ")
	}
	var held [3]int64
	for i, f := range []*FSM{replicas["small"], replicas["large"], restored} {
		_ = f.Read(func(e *engine.Engine) error { held[i] = e.MemoryHeldTotal(); return nil })
	}
	if held[0] != held[1] || held[0] != held[2] || held[0] > localBudget["large"] {
		t.Fatalf("held bytes %v, budget %d", held, localBudget["large"])
	}
	t.Logf("%d enqueues refused by the global budget, %d by the queue's; %d bytes held", refused, cappedRefused, held[0])
}

// TestSetConfigCommand_MemoryBudgetVersion: a ConfigSet with a budget
// carries CommandVersionMemoryBudget, and the budget survives the round
// trip through the log.
func TestSetConfigCommand_MemoryBudgetVersion(t *testing.T) {
	tests := []struct {
		name string
		cfg  engine.Config
	}{
		{name: "Global", cfg: engine.Config{Limits: func() engine.Limits {
			l := engine.DefaultLimits()
			l.MaxMemoryBytes = 1 << 30
			return l
		}()}},
		{name: "PerQueue", cfg: engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "q", MaxMemoryBytes: ptr[int64](1 << 20)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := SetConfigCommand(tt.cfg)
			if cmd.GetVersion() != CommandVersionMemoryBudget {
				t.Fatalf("version %d, want %d", cmd.GetVersion(), CommandVersionMemoryBudget)
			}
			got := engine.ConfigFromProto(cmd.GetConfigSet().GetConfig())
			if got.Limits.MaxMemoryBytes != tt.cfg.Limits.MaxMemoryBytes {
				t.Fatalf("global budget %d, want %d", got.Limits.MaxMemoryBytes, tt.cfg.Limits.MaxMemoryBytes)
			}
			if len(tt.cfg.Queues) > 0 && (got.Queues[0].MaxMemoryBytes == nil || *got.Queues[0].MaxMemoryBytes != *tt.cfg.Queues[0].MaxMemoryBytes) {
				t.Fatalf("queue budget %v, want %d", got.Queues[0].MaxMemoryBytes, *tt.cfg.Queues[0].MaxMemoryBytes)
			}
			f := newTestFSM(t)
			r := applyEntry(t, f, 1, stamped(t0, cmd))
			if r[0].Err != nil {
				t.Fatal(r[0].Err)
			}
			var running engine.Config
			_ = f.Read(func(e *engine.Engine) error { running = e.Config(); return nil })
			if running.Limits.MaxMemoryBytes != tt.cfg.Limits.MaxMemoryBytes || len(running.Queues) != len(tt.cfg.Queues) {
				t.Fatalf("running config %+v after the ConfigSet", running)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
