package client

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// rawCapture is a gRPC codec that keeps the last bytes it decoded.
type rawCapture struct{ last []byte }

func (c *rawCapture) Name() string { return "proto" }

func (c *rawCapture) Marshal(v any) (mem.BufferSlice, error) {
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (c *rawCapture) Unmarshal(data mem.BufferSlice, v any) error {
	c.last = data.Materialize()
	return proto.Unmarshal(c.last, v.(proto.Message))
}

// The fast path is for what the server really sends. The hand-made
// deliveries of the other tests drifted from it once: the server began to
// set Job.started_at (field 150) on every delivery, the decoder refused
// every response, and the consume rate fell 21% with every test green.
// Here a real server's deliveries (first attempts, and a job with an
// expiry) must take the fast path.
func TestDecodeReserveResponse_TakesWhatTheServerSends(t *testing.T) {
	b, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := rpctest.Serve(t, b, rpc.Options{})
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	queue := seppv1.NewQueueServiceClient(conn)
	for _, req := range []*seppv1.EnqueueRequest{
		{Queue: "emails", JobType: "welcome", Payload: []byte(`{"to":"a@example.com"}`)},
		{Queue: "emails", JobType: "welcome", Payload: []byte(`{"to":"b@example.com"}`),
			ExpiresAt: timestamppb.New(time.Now().Add(time.Hour))},
	} {
		if _, err := queue.Enqueue(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	capture := &rawCapture{}
	resp, err := queue.Reserve(ctx, &seppv1.ReserveRequest{Queue: "emails", WorkerId: "w1", Max: 10, Lease: durationpb.New(time.Minute)},
		grpc.ForceCodecV2(capture))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetJobs()) != 2 {
		t.Fatalf("reserved %d jobs, want 2", len(resp.GetJobs()))
	}
	if resp.Jobs[0].GetJob().GetStartedAt() == nil || resp.Jobs[1].GetJob().GetExpiresAt() == nil {
		t.Fatalf("the server no longer sends started_at and expires_at; this test would prove nothing: %v", resp)
	}
	if !requireSameDecode(t, capture.last) {
		t.Fatal("the fast decoder refused a Reserve response exactly as the server sent it")
	}
}
