package rpc_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// A scripted workload, then /metrics: the per-queue activity counters and
// the wait histogram say what happened.
func TestMetrics_QueueActivityAfterAWorkload(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	env := rpctest.Start(t, retentionConfig(), rpc.Options{Registerer: reg})
	for range 5 {
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: "emails"})
	}
	env.Clock.Advance(3 * time.Second) // every first delivery waited 3 s
	nack(t, env, reserveOne(t, env, "emails").GetCtx(), directiveDefault(), "retry")
	nack(t, env, reserveOne(t, env, "emails").GetCtx(), directiveAfter(time.Minute), "later")
	nack(t, env, reserveOne(t, env, "emails").GetCtx(), directiveDeadLetter(), "bad")
	ctx := context.Background()
	if _, err := env.Queue.Release(ctx, &seppv1.ReleaseRequest{Ctx: reserveOne(t, env, "emails").GetCtx()}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Queue.Ack(ctx, &seppv1.AckRequest{Ctx: reserveOne(t, env, "emails").GetCtx()}); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(rpc.MetricsHandler(reg))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	for _, want := range []string{
		// Reserve #1 got the job nacked with default (Ready again at once),
		// so reserve #2 may get it back: five reserves in all.
		`sepp_jobs_reserved_total{node="node-1",queue="emails"} 5`,
		`sepp_jobs_nacked_total{directive="default",node="node-1",queue="emails"} 1`,
		`sepp_jobs_nacked_total{directive="after",node="node-1",queue="emails"} 1`,
		`sepp_jobs_nacked_total{directive="dead_letter",node="node-1",queue="emails"} 1`,
		`sepp_jobs_retried_total{node="node-1",queue="emails"} 2`,
		`sepp_jobs_released_total{node="node-1",queue="emails"} 1`,
		`sepp_leases_expired_total{node="node-1",queue="emails"} 0`,
		`sepp_jobs_acked_total{node="node-1",queue="emails"} 1`,
		`sepp_job_wait_seconds_bucket{node="node-1",queue="emails",le="1"} 0`,
		`sepp_job_wait_seconds_bucket{node="node-1",queue="emails",le="5"}`,
		`sepp_job_wait_seconds_bucket{node="node-1",queue="emails",le="+Inf"}`,
		`sepp_job_wait_seconds_sum{node="node-1",queue="emails"}`,
		// The one ack ran for 0 s on the test's clock.
		`sepp_job_run_seconds_bucket{node="node-1",queue="emails",le="0.01"} 1`,
		`sepp_job_run_seconds_count{node="node-1",queue="emails"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		for _, l := range strings.Split(text, "\n") {
			if strings.Contains(l, "emails") && !strings.HasPrefix(l, "#") {
				t.Log(l)
			}
		}
	}
}
