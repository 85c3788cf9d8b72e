package rpc_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/fsm"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// TestQueueSettings_ThroughTheLog: a queue's settings, created and updated
// through the API of a three-node cluster whose members all apply command
// version 21, travel the log as the public QueueSettings and read back the
// same on every replica: what the request set, with an update's zeroed
// reserve limit, empty dead_letter_queue and tag set, and inherited keys
// dropped. (rpctest.Start's in-memory node applies the engine's values
// directly; this is the path through the state machine.)
func TestQueueSettings_ThroughTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	nodes := rpctest.ServeCluster(t, 3, nil, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		// Every member says it applies this binary's versions at once.
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersion, nil }
	}))
	leader := nodes.WaitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := make([]seppv1.AdminServiceClient, 3)
	for i, addr := range nodes.Addrs() {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		admin[i] = seppv1.NewAdminServiceClient(cc)
	}
	u32 := func(v uint32) *uint32 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	i64 := func(v int64) *int64 { return &v }
	str := func(v string) *string { return &v }
	none := seppv1.RetryBackoff_RETRY_BACKOFF_NONE
	created := &seppv1.QueueSettings{
		DefaultPriority: u32(7), DefaultMaxAttempts: u32(4), RetryDelayMs: i64(1500), RetryBackoff: &none,
		RetryDelayMaxMs: i64(60_000), MaxScheduleHorizonMs: i64(3_600_000), MaxLength: u64(1000), MaxMemoryBytes: u64(1 << 20),
		DeadLetterQueue: str("q.dead"), MaxWaitMs: i64(90_000),
		MaxReserved: u64(9), RateLimit: u64(5), RatePeriodMs: i64(2000), RateBurst: u64(3), ConcurrencyKey: str("region"), MaxPerKey: u64(2),
		Tags: &seppv1.QueueTags{Tags: map[string]string{"env": "prod", "team": "core"}},
	}
	if _, err := admin[leader].CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "q.dead"}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin[leader].CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "q", Settings: created}); err != nil {
		t.Fatal(err)
	}
	requireSettings := func(want *seppv1.QueueSettings) {
		t.Helper()
		for i := range admin {
			var got *seppv1.QueueSettings
			clustertest.WaitFor(t, 10*time.Second, "the replica's settings", func() bool {
				resp, err := admin[i].GetQueue(ctx, &seppv1.GetQueueRequest{Name: "q", AllowStale: true})
				got = resp.GetSettings()
				return err == nil && proto.Equal(got, want)
			})
		}
	}
	requireSettings(created)

	if _, err := admin[leader].UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "q", Settings: &seppv1.QueueSettings{
		DefaultPriority: u32(1), MaxReserved: u64(0), DeadLetterQueue: str(""), Tags: &seppv1.QueueTags{},
	}, Inherit: []string{"max_wait_ms"}}); err != nil {
		t.Fatal(err)
	}
	updated := proto.Clone(created).(*seppv1.QueueSettings)
	updated.DefaultPriority = u32(1)
	updated.MaxReserved, updated.DeadLetterQueue, updated.Tags, updated.MaxWaitMs = nil, nil, nil, nil
	requireSettings(updated)
}
