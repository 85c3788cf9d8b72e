package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/client/otelsepp"
	"github.com/sepp-io/sepp/config"
)

// otlpReceiver is an OTLP/gRPC trace collector in the test: it keeps every
// span a node exports.
type otlpReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []tracedSpan
}

// tracedSpan is one span as the test compares and prints it.
type tracedSpan struct {
	who, name, trace, span, parent, service, status string
}

func (r *otlpReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, tracedSpan{
					who: "server", name: s.GetName(), service: service,
					trace: hex.EncodeToString(s.GetTraceId()), span: hex.EncodeToString(s.GetSpanId()), parent: hex.EncodeToString(s.GetParentSpanId()),
					status: strings.TrimPrefix(s.GetStatus().GetCode().String(), "STATUS_CODE_"),
				})
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *otlpReceiver) received() []tracedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]tracedSpan(nil), r.spans...)
}

func startReceiver(t *testing.T) (*otlpReceiver, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{}
	gs := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(gs, r)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return r, lis.Addr().String()
}

func sdkSpans(who string, exp *tracetest.InMemoryExporter) []tracedSpan {
	var out []tracedSpan
	for _, s := range exp.GetSpans() {
		out = append(out, tracedSpan{
			who: who, name: s.Name, trace: s.SpanContext.TraceID().String(), span: s.SpanContext.SpanID().String(),
			parent: parentID(s.Parent.SpanID().String()), status: strings.ToUpper(s.Status.Code.String()),
		})
	}
	return out
}

func parentID(id string) string {
	if id == "0000000000000000" {
		return ""
	}
	return id
}

// TestTracing_ProducerThroughServerToWorker is one trace from a Go producer
// through a node, run as `sepp serve` runs it with [tracing] exporting
// OTLP to a collector in the test, to a Go worker: the producer's and the
// worker's spans are recorded in memory by their own providers (two
// processes, in effect), the server's arrive over OTLP. Every span shares
// the trace of the producer's root span: the producer's send is its child,
// and the server's enqueue, reserve and ack and the worker's process are
// children of the send, whose context the job carried. -v prints them.
func TestTracing_ProducerThroughServerToWorker(t *testing.T) {
	recv, recvAddr := startReceiver(t)
	cfg := config.Default()
	cfg.Server.GRPCAddr = freeAddr(t)
	cfg.Server.HTTPAddr = freeAddr(t)
	cfg.Server.RaftAddr = freeAddr(t)
	cfg.Server.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Server.LogLevel = "warn"
	// docs:begin server-config
	cfg.Tracing.OTLPEndpoint = "http://" + recvAddr // [tracing] otlp_endpoint
	cfg.Tracing.ServiceName = "sepp-test"           // [tracing] service_name
	// docs:end server-config
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s of its context ending")
		}
	}
	t.Cleanup(stop)
	cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer ccancel()
	// Traced calls start once the node is ready: a call during its first
	// election is answered (and traced) once per attempt of the client.
	waitReady(t, cfg.Server.HTTPAddr)

	// The producer: its own provider, recording in memory.
	producerExp := tracetest.NewInMemoryExporter()
	producerTP := sdktrace.NewTracerProvider(sdktrace.WithSyncer(producerExp))
	// docs:begin go-producer
	producer, err := client.New(cctx, []string{cfg.Server.GRPCAddr},
		client.WithTracing(otelsepp.New(otelsepp.WithTracerProvider(producerTP))))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	// The job carries the context of the client's "send emails" span, a
	// child of the caller's span.
	rctx, root := producerTP.Tracer("shop").Start(cctx, "checkout")
	res, err := producer.Enqueue(rctx, client.NewEnqueueRequest("emails", "welcome").WithPayload([]byte(`{"to":"ada"}`)))
	root.End()
	// docs:end go-producer
	if err != nil {
		t.Fatal(err)
	}

	// The worker: another client, another provider.
	workerExp := tracetest.NewInMemoryExporter()
	workerTP := sdktrace.NewTracerProvider(sdktrace.WithSyncer(workerExp))
	// docs:begin go-worker
	worker, err := client.New(cctx, []string{cfg.Server.GRPCAddr},
		client.WithTracing(otelsepp.New(otelsepp.WithTracerProvider(workerTP))))
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	handled := make(chan uint64, 1)
	w := client.NewWorker(worker, client.WorkerOptions{Concurrency: 1})
	// The handler runs under the "process emails" span, a child of the
	// producer's send span: its context carries it to the handler's spans.
	w.Handle("emails", "welcome", func(_ context.Context, d *client.Delivery) error {
		handled <- d.Ctx.JobID
		return nil
	})
	// docs:end go-worker
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-handled:
		if id != res.JobID {
			t.Fatalf("handled job %d, enqueued %d", id, res.JobID)
		}
	case <-cctx.Done():
		t.Fatal("the worker got no job")
	}
	if err := w.Stop(cctx); err != nil {
		t.Fatal(err)
	}
	// The server's spans: its batcher exports within a second; stopping
	// the node flushes what is left.
	deadline := time.Now().Add(20 * time.Second)
	for len(recv.received()) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()

	spans := append(append(sdkSpans("producer", producerExp), recv.received()...), sdkSpans("worker", workerExp)...)
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s %-15s %-32s %-16s %-16s %s\n", "process", "span", "trace id", "span id", "parent id", "status")
	for _, s := range spans {
		fmt.Fprintf(&b, "%-9s %-15s %-32s %-16s %-16s %s\n", s.who, s.name, s.trace, s.span, s.parent, s.status)
	}
	t.Logf("job %d, one trace:\n%s", res.JobID, b.String())

	byName := map[string][]tracedSpan{}
	traces := map[string]bool{}
	for _, s := range spans {
		byName[s.who+" "+s.name] = append(byName[s.who+" "+s.name], s)
		traces[s.trace] = true
	}
	var names []string
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	want := []string{"producer checkout", "producer send emails", "server ack emails", "server enqueue emails", "server reserve emails", "worker process emails"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("spans %v, want one each of %v", names, want)
	}
	for _, n := range names {
		if len(byName[n]) != 1 {
			t.Fatalf("%d spans %q, want 1", len(byName[n]), n)
		}
	}
	if len(traces) != 1 {
		t.Fatalf("%d traces, want one", len(traces))
	}
	rootSpan, send := byName["producer checkout"][0], byName["producer send emails"][0]
	if rootSpan.parent != "" || send.parent != rootSpan.span {
		t.Fatalf("send's parent %q, want the root %q (whose parent is %q)", send.parent, rootSpan.span, rootSpan.parent)
	}
	for _, n := range []string{"server enqueue emails", "server reserve emails", "server ack emails", "worker process emails"} {
		if s := byName[n][0]; s.parent != send.span {
			t.Errorf("%s: parent %q, want the producer's send span %q", n, s.parent, send.span)
		}
	}
	for _, s := range recv.received() {
		if s.service != "sepp-test" {
			t.Errorf("server span %s exported as service %q, want sepp-test", s.name, s.service)
		}
	}
}

// waitReady polls the node's /readyz until it answers 200.
func waitReady(t *testing.T, httpAddr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the node did not get ready within 30s")
}
