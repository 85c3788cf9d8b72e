package cluster_test

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// declaredConfig is the name queueCommandLog records declarative
// ConfigSets by.
const declaredConfig = "(declared config)"

// enqueuedTo prefixes the queue name queueCommandLog records enqueue
// commands by (their first item's queue).
const enqueuedTo = "enqueue:"

// queueCommandLog records the QueueCreate, QueueUpdate and enqueue commands
// a node's log store is given, by the queue they name.
type queueCommandLog struct {
	mu   sync.Mutex
	cmds map[string][]*cmdpb.Command
}

func (l *queueCommandLog) record(logs []*raft.Log) {
	for _, lg := range logs {
		if lg.Type != raft.LogCommand {
			continue
		}
		entry, err := fsm.DecodeEntry(lg.Data)
		if err != nil {
			continue
		}
		for _, c := range entry.GetCommands() {
			name := ""
			switch {
			case c.GetQueueCreate() != nil:
				name = c.GetQueueCreate().GetName() + c.GetQueueCreate().GetConfig().GetName()
			case c.GetQueueUpdate() != nil:
				name = c.GetQueueUpdate().GetName() + c.GetQueueUpdate().GetConfig().GetName()
			case c.GetConfigSet().GetDeclarative():
				name = declaredConfig
			case c.GetJobEnqueue() != nil:
				name = enqueuedTo + c.GetJobEnqueue().GetParams().GetQueue() + c.GetJobEnqueue().GetRequest().GetQueue()
			case c.GetJobEnqueueBatch() != nil:
				b := c.GetJobEnqueueBatch()
				if len(b.GetItems()) > 0 {
					name = enqueuedTo + b.GetItems()[0].GetQueue()
				} else if len(b.GetRequests()) > 0 {
					name = enqueuedTo + b.GetRequests()[0].GetQueue()
				}
			default:
				continue
			}
			l.mu.Lock()
			l.cmds[name] = append(l.cmds[name], c)
			l.mu.Unlock()
		}
	}
}

// of is what was recorded for queue name.
func (l *queueCommandLog) of(name string) []*cmdpb.Command {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cmds[name]
}

type recordingStore struct {
	raft.LogStore
	log *queueCommandLog
}

func (s *recordingStore) StoreLog(lg *raft.Log) error {
	s.log.record([]*raft.Log{lg})
	return s.LogStore.StoreLog(lg)
}

func (s *recordingStore) StoreLogs(logs []*raft.Log) error {
	s.log.record(logs)
	return s.LogStore.StoreLogs(logs)
}

// TestPublicQueueSettings_RollingUpgrade: while a member applies only
// command version 21, the leader writes queue creates and updates in the
// log's older form (QueueConfig), which that member reads; once every
// member applies 21 it writes the public QueueSettings. Both give every
// replica the same queue. The file's queues, declared during the upgrade,
// are in the older form too (PublicQueueSettingsConfigCommand's own test,
// in fsm, covers the public form of a declarative config).
func TestPublicQueueSettings_RollingUpgrade(t *testing.T) {
	var peers atomic.Uint32
	peers.Store(fsm.CommandVersionPublicQueueSettings - 1)
	recorded := &queueCommandLog{cmds: map[string][]*cmdpb.Command{}}
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.Engine.Queues = []engine.QueueConfig{{Name: "declared", MaxReserved: 2}}
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return peers.Load(), nil }
		cfg.LogStoreWrapper = func(s raft.LogStore) raft.LogStore { return &recordingStore{LogStore: s, log: recorded} }
	}))
	ctx := context.Background()
	leader := c.Node(c.WaitLeader())
	prio, limit := uint32(7), 3
	settings := engine.QueueConfig{DefaultPriority: &prio, MaxLength: &limit, Tags: []engine.Tag{{Key: "env", Value: "prod"}}}
	createAndUpdate := func(name string) {
		t.Helper()
		qc := settings
		qc.Name = name
		if _, err := cluster.Do(ctx, leader, engine.CreateQueueOp{Config: qc}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		if _, err := cluster.Do(ctx, leader, engine.UpdateQueueOp{Update: engine.QueueUpdate{Name: name, Inherit: []string{"max_length"}, Set: engine.QueueConfig{MaxReserved: 2}}}); err != nil {
			t.Fatalf("update %s: %v", name, err)
		}
	}
	requireForm := func(name string, public bool) {
		t.Helper()
		cmds := recorded.of(name)
		if len(cmds) == 0 {
			t.Fatalf("no queue command recorded for %s", name)
		}
		for _, cmd := range cmds {
			isPublic := cmd.GetQueueCreate().GetSettings() != nil || cmd.GetQueueUpdate().GetSettings() != nil ||
				len(cmd.GetConfigSet().GetConfig().GetQueueSettings()) > 0
			hasOld := cmd.GetQueueCreate().GetConfig() != nil || cmd.GetQueueUpdate().GetConfig() != nil ||
				len(cmd.GetConfigSet().GetConfig().GetQueues()) > 0
			if isPublic != public || hasOld == public || (cmd.GetVersion() >= fsm.CommandVersionPublicQueueSettings) != public {
				t.Fatalf("%s: command of version %d, public form %v, older form %v; want public %v", name, cmd.GetVersion(), isPublic, hasOld, public)
			}
		}
	}

	clustertest.WaitFor(t, 10*time.Second, "the file's queue", func() bool { return len(declarations(leader)) == 1 })
	requireForm(declaredConfig, false)
	createAndUpdate("during")
	requireForm("during", false)

	peers.Store(fsm.CommandVersion)
	clustertest.WaitFor(t, 20*time.Second, "every member applies 21", func() bool {
		n := 0
		for _, m := range leader.FSM().Nodes() {
			if m.AppliesCommandVersion(fsm.CommandVersionPublicQueueSettings) {
				n++
			}
		}
		return n == 3
	})
	createAndUpdate("after")
	requireForm("after", true)

	settle(t, c, leader)
	want := func(name string) engine.QueueConfig {
		return engine.QueueConfig{Name: name, DefaultPriority: &prio, MaxReserved: 2, Tags: settings.Tags}
	}
	for i := range 3 {
		for _, name := range []string{"during", "after"} {
			var got engine.QueueConfig
			_ = c.Node(i).FSM().Read(func(e *engine.Engine) error {
				for _, q := range e.Config().Queues {
					if q.Name == name {
						got = q
					}
				}
				return nil
			})
			if !reflect.DeepEqual(got, want(name)) {
				t.Fatalf("node %d, queue %s: %+v, want %+v", i, name, got, want(name))
			}
		}
	}
}
