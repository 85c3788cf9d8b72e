package rpc_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// A queue's reserve limits are runtime settings through the AdminService:
// CreateQueue and UpdateQueue set them, GetQueue shows the queue's own
// beside the effective ones, 0 drops one as inherit does, and a value out
// of bounds is InvalidArgument naming the field and the bound, changing
// nothing.
func TestQueueReserveLimits_SetThroughTheAPI(t *testing.T) {
	env := start(t, nil)
	ctx := ctxT(t)

	created, err := env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "q", Settings: &seppv1.QueueSettings{
		MaxReserved: u64(2), RateLimit: u64(10), RatePeriodMs: i64(60_000),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if e := created.GetEffective(); e.GetMaxReserved() != 2 || e.GetRateLimit() != 10 || e.GetRatePeriodMs() != 60_000 || e.GetRateBurst() != 10 {
		t.Fatalf("effective after create: %v", e)
	}
	upd, err := env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "q", Settings: &seppv1.QueueSettings{
		MaxReserved: u64(5), ConcurrencyKey: str("customer"), MaxPerKey: u64(1), RateBurst: u64(3),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if e := upd.GetEffective(); e.GetMaxReserved() != 5 || e.GetRateLimit() != 10 || e.GetRateBurst() != 3 || e.GetConcurrencyKey() != "customer" || e.GetMaxPerKey() != 1 {
		t.Fatalf("effective after update: %v", e)
	}
	got, err := env.Admin.GetQueue(ctx, &seppv1.GetQueueRequest{Name: "q"})
	if err != nil {
		t.Fatal(err)
	}
	want := &seppv1.QueueSettings{MaxReserved: u64(5), RateLimit: u64(10), RatePeriodMs: i64(60_000), RateBurst: u64(3), ConcurrencyKey: str("customer"), MaxPerKey: u64(1)}
	if !proto.Equal(got.GetSettings(), want) {
		t.Fatalf("GetQueue settings %v, want %v", got.GetSettings(), want)
	}

	tests := []struct {
		name         string
		settings     *seppv1.QueueSettings
		inherit      []string
		field, limit string
	}{
		{"MaxReservedAbove", &seppv1.QueueSettings{MaxReserved: u64(1_000_001)}, nil, "settings.max_reserved", "1000000"},
		{"RateLimitAbove", &seppv1.QueueSettings{RateLimit: u64(2_000_000)}, nil, "settings.rate_limit", "1000000"},
		{"RateBurstAbove", &seppv1.QueueSettings{RateBurst: u64(1 << 40)}, nil, "settings.rate_burst", "1000000"},
		{"MaxPerKeyAbove", &seppv1.QueueSettings{MaxPerKey: u64(1_000_001)}, nil, "settings.max_per_key", "1000000"},
		{"RatePeriodAbove", &seppv1.QueueSettings{RatePeriodMs: i64(3_600_001)}, nil, "settings.rate_period_ms", "3600000"},
		{"RatePeriodNegative", &seppv1.QueueSettings{RatePeriodMs: i64(-1)}, nil, "settings.rate_period_ms", "3600000"},
		{"ConcurrencyKeyTooLong", &seppv1.QueueSettings{ConcurrencyKey: str(strings.Repeat("k", 257))}, nil, "settings.concurrency_key", "256"},
		// Combinations are the engine's checks, naming the queue's key.
		{"PerKeyWithoutKey", &seppv1.QueueSettings{MaxPerKey: u64(2)}, []string{"concurrency_key"}, `queues["q"].concurrency_key`, "max_per_key"},
		{"BurstWithoutRate", nil, []string{"rate_limit"}, `queues["q"].rate_limit`, "rate_burst"},
		{"PerKeyOnAFairQueue", &seppv1.QueueSettings{FairnessKey: str("tenant")}, nil, `queues["q"].fairness_key`, "max_per_key"},
		{"UnknownInherit", nil, []string{"max_reserve"}, "inherit", "max_reserved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "q", Settings: tt.settings, Inherit: tt.inherit})
			requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), tt.field, tt.limit)
			after, err := env.Admin.GetQueue(ctx, &seppv1.GetQueueRequest{Name: "q"})
			if err != nil || !proto.Equal(after.GetSettings(), want) {
				t.Fatalf("a refused update changed the settings: %v (%v)", after.GetSettings(), err)
			}
		})
	}
	_, err = env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "big", Settings: &seppv1.QueueSettings{MaxReserved: u64(1_000_001)}})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "settings.max_reserved", "1000000")

	// 0 and "" drop a limit, as inherit does.
	upd, err = env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "q",
		Settings: &seppv1.QueueSettings{MaxReserved: u64(0), ConcurrencyKey: str(""), MaxPerKey: u64(0)},
		Inherit:  []string{"rate_limit", "rate_period_ms", "rate_burst"}})
	if err != nil {
		t.Fatal(err)
	}
	if e := upd.GetEffective(); e.GetMaxReserved() != 0 || e.GetRateLimit() != 0 || e.GetRatePeriodMs() != 0 || e.GetConcurrencyKey() != "" || e.GetMaxPerKey() != 0 {
		t.Fatalf("effective after dropping every limit: %v", e)
	}
	if got, err := env.Admin.GetQueue(ctx, &seppv1.GetQueueRequest{Name: "q"}); err != nil || !proto.Equal(got.GetSettings(), &seppv1.QueueSettings{}) {
		t.Fatalf("settings after dropping every limit: %v (%v)", got.GetSettings(), err)
	}
}

// A reserve waiting at max_reserved gets its job the moment an operator
// raises the limit: the update is a replicated write like an ack.
func TestQueueReserveLimits_RaisingLetsAWaitingReserveThrough(t *testing.T) {
	env := start(t, nil)
	ctx := ctxT(t)
	if _, err := env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "q", Settings: &seppv1.QueueSettings{MaxReserved: u64(1)}}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
	second := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()
	if got := reserve(t, env, &seppv1.ReserveRequest{Queue: "q", Max: 5, WorkerId: "w"}); len(got) != 1 {
		t.Fatalf("reserve under max_reserved 1: %d jobs", len(got))
	}
	waiting := waitingSignal(env)
	res := reserveAsync(ctx, env, &seppv1.ReserveRequest{Queue: "q", Max: 5, WorkerId: "w", Wait: durationpb.New(time.Minute)})
	awaitSignal(t, waiting, "the reserve to wait")
	select {
	case r := <-res:
		t.Fatalf("the waiting reserve returned past the limit: %v, %v", r.resp, r.err)
	default:
	}
	if _, err := env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "q", Settings: &seppv1.QueueSettings{MaxReserved: u64(2)}}); err != nil {
		t.Fatal(err)
	}
	r := awaitReserve(t, res)
	if r.err != nil || len(r.resp.GetJobs()) != 1 || r.resp.GetJobs()[0].GetCtx().GetJobId() != second {
		t.Fatalf("long-poll after the raise = %v, %v; want job %d", r.resp, r.err, second)
	}
}

// On a three-node cluster, a limit set at runtime through the API holds
// the next reservation back at once, without a restart; it overrides the
// file's [[queues]] value and keeps doing so on a node that got it only
// through a snapshot, once that node leads (whose leader duties propose
// the same file again).
func TestQueueReserveLimits_RuntimeAcrossSnapshotAndLeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	const n = 3
	nodes := serveLimitsCluster(t, n)
	li := nodes.WaitLeader()
	leader := nodes.Node(li)
	clustertest.WaitFor(t, 20*time.Second, "the leader to turn on the file rule of version 15", func() bool {
		var on bool
		_ = leader.FSM().Read(func(e *engine.Engine) error {
			on = e.DeclaredReserveLimits() && engine.HasReserveLimits(e.Config())
			return nil
		})
		return on
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lq, la := dialAPI(t, nodes.Addrs()[li])

	// The follower that will get the runtime limit only by a snapshot is
	// down while it is set.
	f := (li + 1) % n
	nodes.Kill(f)
	var ids []uint64
	for i := range 4 {
		r, err := lq.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: "declared", JobType: "t", Payload: []byte{byte(i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.GetJobId())
	}
	upd, err := la.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "declared", Settings: &seppv1.QueueSettings{MaxReserved: u64(1)}})
	if err != nil || upd.GetEffective().GetMaxReserved() != 1 {
		t.Fatalf("update: %v, %v", upd, err)
	}
	// At once: one job, not the file's three.
	// A long lease: the job must stay reserved through the restart and
	// the transfer on a loaded machine.
	first, err := lq.Reserve(ctx, &seppv1.ReserveRequest{Queue: "declared", WorkerId: "w", Max: 4, Lease: durationpb.New(time.Hour)})
	if err != nil || len(first.GetJobs()) != 1 || first.GetJobs()[0].GetCtx().GetJobId() != ids[0] {
		t.Fatalf("reserve under the runtime max_reserved 1: %v, %v", first, err)
	}
	more, err := lq.Reserve(ctx, &seppv1.ReserveRequest{Queue: "declared", WorkerId: "w", Max: 4})
	if err != nil || len(more.GetJobs()) != 0 {
		t.Fatalf("a second reserve went past the limit: %v, %v", more, err)
	}
	for i := range 20 { // entries past TrailingLogs, so f needs the snapshot
		if _, err := lq.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: "other", JobType: "t", Payload: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := leader.Snapshot(); err != nil {
		t.Fatal(err)
	}
	nodes.Restart(f)
	nodes.RequireSameDigest()
	clustertest.WaitFor(t, 10*time.Second, "the follower to install the leader's snapshot", func() bool {
		got, _ := strconv.ParseUint(nodes.Node(f).RaftStats()["last_snapshot_index"], 10, 64)
		want, _ := strconv.ParseUint(leader.RaftStats()["last_snapshot_index"], 10, 64)
		return want > 0 && got >= want
	})

	// f leads; its API serves the cluster with the limit from the snapshot.
	if err := leader.TransferLeadership(ctx, nodes.Node(f).Self().ID); err != nil {
		t.Fatal(err)
	}
	clustertest.WaitFor(t, 10*time.Second, "n"+strconv.Itoa(f)+" to lead", func() bool { return nodes.Node(f).IsLeader() })
	fq, fa := dialAPI(t, serveAgain(t, nodes.Node(f)))
	clustertest.WaitFor(t, 10*time.Second, "the new leader to answer", func() bool {
		_, err := fa.GetQueue(ctx, &seppv1.GetQueueRequest{Name: "declared"})
		return err == nil
	})
	got, err := fa.GetQueue(ctx, &seppv1.GetQueueRequest{Name: "declared"})
	if err != nil || got.GetEffective().GetMaxReserved() != 1 || got.GetSummary().GetReserved() != 1 {
		t.Fatalf("GetQueue on the new leader: %v, %v", got, err)
	}
	more, err = fq.Reserve(ctx, &seppv1.ReserveRequest{Queue: "declared", WorkerId: "w", Max: 4})
	if err != nil || len(more.GetJobs()) != 0 {
		t.Fatalf("the new leader handed out %v past the runtime limit (%v)", more.GetJobs(), err)
	}
	if _, err := fq.Ack(ctx, &seppv1.AckRequest{Ctx: first.GetJobs()[0].GetCtx()}); err != nil {
		t.Fatal(err)
	}
	next, err := fq.Reserve(ctx, &seppv1.ReserveRequest{Queue: "declared", WorkerId: "w", Max: 4})
	if err != nil || len(next.GetJobs()) != 1 || next.GetJobs()[0].GetCtx().GetJobId() != ids[1] {
		t.Fatalf("after the ack the new leader handed out %v (%v), want job %d alone", next.GetJobs(), err, ids[1])
	}
	nodes.RequireSameDigest()
}

// serveLimitsCluster is a served cluster whose file declares the queue
// "declared" with max_reserved 3, whose members say they apply this
// binary's commands, and which snapshots only when told.
func serveLimitsCluster(t *testing.T, n int) *rpctest.ServedCluster {
	t.Helper()
	return rpctest.ServeCluster(t, n, func(int) rpc.Options { return rpc.Options{MaxReserveWait: time.Second} },
		clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
			cfg.Engine.Queues = append(cfg.Engine.Queues, engine.QueueConfig{Name: "declared", MaxReserved: 3})
			cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersion, nil }
			cfg.TrailingLogs = 4
			cfg.SnapshotThreshold = 1 << 30
		}))
}

// serveAgain serves a restarted node's API on a new loopback listener.
func serveAgain(t *testing.T, node *cluster.Node) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewGRPCServer(node, rpc.Options{MaxReserveWait: time.Second})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func dialAPI(t *testing.T, addr string) (seppv1.QueueServiceClient, seppv1.AdminServiceClient) {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return seppv1.NewQueueServiceClient(cc), seppv1.NewAdminServiceClient(cc)
}
