package clientcheck_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
)

func TestClient_EnqueueReserveAck(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)

	req := client.NewEnqueueRequest("emails", "welcome").
		WithPayload([]byte(`{"user":42}`)).
		WithPriority(client.MaxPriority).
		WithMaxAttempts(5).
		WithCustom("tenant", "acme")
	res, err := c.Enqueue(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicate || res.State != client.StateReady || res.IdempotencyKey == "" {
		t.Fatalf("enqueue result = %+v, want ready, not duplicate, with a generated key", res)
	}
	job, err := c.GetJob(ctx, res.JobID, false)
	if err != nil {
		t.Fatal(err)
	}
	if job.Priority != client.P9 || job.MaxAttempts != 5 || job.Custom["tenant"] != "acme" || string(job.Payload) != `{"user":42}` {
		t.Fatalf("job = %+v", job)
	}

	ds, err := c.Reserve(ctx, "emails", client.ReserveOptions{WorkerID: "w1", Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Ctx.JobID != res.JobID || ds[0].Ctx.Attempt != 1 || ds[0].Ctx.MaxAttempts != 5 { // spec: ATT-6
		t.Fatalf("deliveries = %+v", ds)
	}
	if ds[0].Ctx.LastAttempt() {
		t.Fatal("attempt 1 of 5 reported as the last attempt")
	}
	if err := c.Ack(ctx, ds[0].Ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetJob(ctx, res.JobID, false); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("GetJob after ack: err = %v, want ErrNotFound", err)
	}
	if err := c.Ack(ctx, ds[0].Ctx); !errors.Is(err, client.ErrLeaseLost) {
		t.Fatalf("second ack: err = %v, want ErrLeaseLost", err)
	}
}

// spec: PRI-6
func TestPriorityConstants(t *testing.T) {
	if client.MinPriority != client.P0 || client.MaxPriority != client.P9 || client.P9 != 9 || client.P0 != 0 {
		t.Fatalf("MIN=%d MAX=%d P0=%d P9=%d", client.MinPriority, client.MaxPriority, client.P0, client.P9)
	}
}

func TestClient_FollowsNotLeaderHint(t *testing.T) {
	leader := startNode(t, "leader", nil)
	follower := startNode(t, "follower", nil)
	follower.backend.SetLeader(cluster.NodeInfo{ID: "leader", GRPCAddr: leader.addr})

	c := newClient(t, []string{follower.addr})
	res, err := c.Enqueue(testContext(t), client.NewEnqueueRequest("q", "t"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Leader(); got != leader.addr {
		t.Fatalf("client leader = %q, want %q", got, leader.addr)
	}
	if follower.backend.count("Enqueue") != 1 || leader.backend.count("Enqueue") != 1 {
		t.Fatalf("enqueue calls: follower %d, leader %d; want 1 and 1", follower.backend.count("Enqueue"), leader.backend.count("Enqueue"))
	}
	var found bool
	leader.backend.Engine(func(e *engine.Engine) {
		_, err := e.GetJob(engine.JobID(res.JobID))
		found = err == nil
	})
	if !found {
		t.Fatalf("job %d is not on the leader", res.JobID)
	}
}

func TestClient_NoLeaderKnownTriesOtherNodes(t *testing.T) {
	electing := startNode(t, "electing", nil)
	electing.backend.SetLeader(cluster.NodeInfo{}) // knows no leader
	leader := startNode(t, "leader", nil)

	c := newClient(t, []string{electing.addr, leader.addr})
	if _, err := c.Enqueue(testContext(t), client.NewEnqueueRequest("q", "t")); err != nil {
		t.Fatal(err)
	}
	if c.Leader() != leader.addr {
		t.Fatalf("client leader = %q, want %q", c.Leader(), leader.addr)
	}
}

func TestClient_UnreachableGivesUpAfterRetryBudget(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now

	c := newClient(t, []string{addr}, client.WithRetryTimeout(200*time.Millisecond))
	_, err = c.Enqueue(testContext(t), client.NewEnqueueRequest("q", "t"))
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	// Every dial was refused: the request never reached a server, so the
	// outcome is known (nothing applied). notsent_test.go covers more calls.
	if errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("err = %v, want no ErrUnknownOutcome: nothing was sent", err)
	}
}

func TestClient_RetryAfterUnknownOutcomeDoesNotDuplicate(t *testing.T) {
	tests := []struct {
		name    string
		op      string
		enqueue func(ctx context.Context, c *client.Client) (client.EnqueueResult, error)
	}{
		{"Enqueue", "Enqueue", func(ctx context.Context, c *client.Client) (client.EnqueueResult, error) {
			return c.Enqueue(ctx, client.NewEnqueueRequest("q", "t"))
		}},
		{"EnqueueBatch", "EnqueueBatch", func(ctx context.Context, c *client.Client) (client.EnqueueResult, error) {
			rs, err := c.EnqueueBatch(ctx, []*client.EnqueueRequest{client.NewEnqueueRequest("q", "t")})
			if err != nil {
				return client.EnqueueResult{}, err
			}
			return rs[0].Result, rs[0].Err
		}},
		{"Producer", "EnqueueBatch", func(ctx context.Context, c *client.Client) (client.EnqueueResult, error) {
			p := c.NewProducer(client.ProducerOptions{})
			defer p.Close(ctx)
			return p.Enqueue(ctx, client.NewEnqueueRequest("q", "t"))
		}},
		{"CallerKey", "Enqueue", func(ctx context.Context, c *client.Client) (client.EnqueueResult, error) {
			return c.Enqueue(ctx, client.NewEnqueueRequest("q", "t").WithIdempotencyKey("order-17"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := startNode(t, "n1", nil)
			var once sync.Once
			n.backend.setAfter(func(op string) error {
				var err error
				if op == tt.op {
					once.Do(func() { err = fmt.Errorf("leadership lost after append: %w", cluster.ErrUnknownOutcome) })
				}
				return err
			})
			c := newClient(t, []string{n.addr})
			res, err := tt.enqueue(testContext(t), c)
			if err != nil {
				t.Fatal(err)
			}
			if res.Duplicate {
				t.Fatalf("result = %+v: a retry of the caller's own enqueue reported a duplicate", res)
			}
			if got := n.backend.count(tt.op); got != 2 {
				t.Fatalf("%s calls = %d, want 2 (the lost answer and the retry)", tt.op, got)
			}
			if st := queueStats(t, c, "q"); st.Ready != 1 || st.EnqueuedTotal != 1 {
				t.Fatalf("queue holds %d ready jobs (%d enqueued), want exactly 1", st.Ready, st.EnqueuedTotal)
			}
		})
	}
}

func TestClient_CallerKeyRepeatReportsDuplicate(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	first, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t").WithIdempotencyKey("k1"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t").WithIdempotencyKey("k1"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || !second.Duplicate || second.JobID != first.JobID {
		t.Fatalf("first %+v, second %+v: want the second to be a duplicate of the first", first, second)
	}
}

func TestClient_ReserveRetryReturnsSameDelivery(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	for range 2 {
		if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t")); err != nil {
			t.Fatal(err)
		}
	}
	var once sync.Once
	n.backend.setAfter(func(op string) error {
		var err error
		if op == "Reserve" {
			once.Do(func() { err = cluster.ErrUnknownOutcome })
		}
		return err
	})
	ds, err := c.Reserve(ctx, "q", client.ReserveOptions{Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || n.backend.count("Reserve") != 2 {
		t.Fatalf("got %d deliveries after %d reserve calls, want 1 after 2", len(ds), n.backend.count("Reserve"))
	}
	if st := queueStats(t, c, "q"); st.Reserved != 1 || st.Ready != 1 {
		t.Fatalf("reserved %d, ready %d: the retried reserve leased a second job", st.Reserved, st.Ready)
	}
}

// spec: DLQ-9
func TestClient_DrainIsNeverRetriedAfterItMayHaveApplied(t *testing.T) {
	n := startNode(t, "n1", withRetention)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	deadLetterOne(t, c, "q")

	n.backend.setAfter(func(op string) error {
		if op == "DrainDeadLetters" {
			return cluster.ErrUnknownOutcome
		}
		return nil
	})
	recs, err := c.DrainDeadLetters(ctx, client.DrainOptions{Queue: "q", Max: 10})
	if !errors.Is(err, client.ErrUnknownOutcome) {
		t.Fatalf("drain: records %v, err %v; want ErrUnknownOutcome", recs, err)
	}
	if got := n.backend.count("DrainDeadLetters"); got != 1 {
		t.Fatalf("drain calls = %d, want exactly 1", got)
	}
	// The lost answer took the record with it, as the spec warns.
	if st := queueStats(t, c, "q"); st.Dead != 0 {
		t.Fatalf("dead = %d after the lost drain, want 0", st.Dead)
	}
}

func TestClient_DrainFollowsNotLeader(t *testing.T) {
	leader := startNode(t, "leader", withRetention)
	follower := startNode(t, "follower", withRetention)
	follower.backend.SetLeader(cluster.NodeInfo{ID: "leader", GRPCAddr: leader.addr})
	lc := newClient(t, []string{leader.addr})
	deadLetterOne(t, lc, "q")

	c := newClient(t, []string{follower.addr})
	recs, err := c.DrainDeadLetters(testContext(t), client.DrainOptions{Queue: "q", Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Cause != client.CauseRejected || recs[0].LastReason != "bad input" || recs[0].FinalAttempt != 1 {
		t.Fatalf("records = %+v", recs)
	}
}

// deadLetterOne enqueues a job on queue and rejects it.
func deadLetterOne(t *testing.T, c *client.Client, queue string) client.EnqueueResult {
	t.Helper()
	ctx := testContext(t)
	res, err := c.Enqueue(ctx, client.NewEnqueueRequest(queue, "t").WithPayload([]byte("p")).WithPriority(client.P7).WithCustom("k", "v"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := c.Reserve(ctx, queue, client.ReserveOptions{})
	if err != nil || len(ds) != 1 {
		t.Fatalf("reserve: %v, %d deliveries", err, len(ds))
	}
	dead, err := c.Nack(ctx, ds[0].Ctx, client.DeadLetter(), "bad input")
	if err != nil || !dead {
		t.Fatalf("nack: dead %v, err %v", dead, err)
	}
	return res
}

// spec: DLQ-10
func TestDeadLetterRecord_ToEnqueueRequestMakesAFreshJob(t *testing.T) {
	n := startNode(t, "n1", withRetention)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	orig := deadLetterOne(t, c, "q")

	recs, err := c.DrainDeadLetters(ctx, client.DrainOptions{Queue: "q", Max: 10})
	if err != nil || len(recs) != 1 {
		t.Fatalf("drain: %v, %d records", err, len(recs))
	}
	res, err := c.Enqueue(ctx, recs[0].ToEnqueueRequest())
	if err != nil {
		t.Fatal(err)
	}
	if res.JobID == orig.JobID {
		t.Fatalf("replay kept job id %d, want a new one", res.JobID)
	}
	job, err := c.GetJob(ctx, res.JobID, false)
	if err != nil {
		t.Fatal(err)
	}
	if job.Attempt != 0 || job.Queue != "q" || string(job.Payload) != "p" || job.Priority != client.P7 || job.Custom["k"] != "v" {
		t.Fatalf("replayed job = %+v", job)
	}
	ds, err := c.Reserve(ctx, "q", client.ReserveOptions{})
	if err != nil || len(ds) != 1 || ds[0].Ctx.Attempt != 1 {
		t.Fatalf("reserve replay: %v %+v, want attempt 1", err, ds)
	}
}

func TestClient_TypedErrors(t *testing.T) {
	n := startNode(t, "n1", func(cfg *engine.Config) {
		cfg.Limits.MaxPayloadBytes = 8
		one := 1
		cfg.Queues = []engine.QueueConfig{{Name: "tiny", MaxLength: &one}}
	})
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("tiny", "t")); err != nil {
		t.Fatal(err)
	}
	far := time.Now().Add(31 * 24 * time.Hour).Truncate(time.Millisecond)

	tests := []struct {
		name  string
		call  func() error
		is    []error
		field string
	}{
		{"PriorityAboveNine", func() error { // spec: PRI-2
			_, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t").WithPriority(10))
			return err
		}, []error{client.ErrInvalidArgument}, "priority"},
		{"PayloadTooLarge", func() error {
			_, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t").WithPayload(make([]byte, 9)))
			return err
		}, []error{client.ErrInvalidArgument}, "payload"},
		{"ScheduledTooFar", func() error { // spec: SCH-5
			_, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t").WithScheduledAt(far))
			return err
		}, []error{client.ErrScheduledTooFar, client.ErrInvalidArgument}, ""},
		{"QueueFull", func() error {
			_, err := c.Enqueue(ctx, client.NewEnqueueRequest("tiny", "t"))
			return err
		}, []error{client.ErrQueueFull, client.ErrResourceExhausted}, ""},
		{"JobNotFound", func() error {
			_, err := c.GetJob(ctx, 9999, false)
			return err
		}, []error{client.ErrNotFound}, ""},
		{"LeaseLost", func() error {
			return c.Ack(ctx, client.JobContext{JobID: 1, LeaseToken: 12345})
		}, []error{client.ErrLeaseLost}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil {
				t.Fatal("err = nil")
			}
			for _, want := range tt.is {
				if !errors.Is(err, want) {
					t.Errorf("err = %v; does not match %v", err, want)
				}
			}
			if tt.field != "" {
				var fe *client.FieldError
				if !errors.As(err, &fe) || fe.Field != tt.field {
					t.Errorf("err = %v; want a *FieldError for %q", err, tt.field)
				}
			}
		})
	}

	t.Run("ScheduledTooFarCarriesHorizonAndRequest", func(t *testing.T) {
		_, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t").WithScheduledAt(far))
		var tooFar *client.ScheduledTooFarError
		if !errors.As(err, &tooFar) {
			t.Fatalf("err = %v, want *ScheduledTooFarError", err)
		}
		if tooFar.Horizon != 30*24*time.Hour || !tooFar.Requested.Equal(far) || tooFar.Latest.IsZero() {
			t.Fatalf("detail = %+v, want horizon 720h and requested %s", tooFar, far)
		}
	})
}

func TestServerInfo_AdvertisesLimits(t *testing.T) {
	n := startNode(t, "n1", withRetention)
	c := newClient(t, []string{n.addr})
	info, err := c.ServerInfo(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	// spec: INF-1
	if !info.DeadLetterRetentionEnabled || info.MaxReserveBatch != 100 || info.ScheduleHorizon("any") != 30*24*time.Hour {
		t.Fatalf("info = %+v", info)
	}
}

func TestProducer_CoalescesConcurrentEnqueues(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	p := c.NewProducer(client.ProducerOptions{MaxBatch: 64, MaxInFlight: 1})

	const jobs = 300
	pending := make([]*client.PendingEnqueue, jobs)
	for i := range pending {
		pending[i] = p.EnqueueAsync(ctx, client.NewEnqueueRequest("q", "t").WithPayload([]byte(fmt.Sprint(i))))
	}
	ids := make(map[uint64]bool)
	for i, pe := range pending {
		res, err := pe.Wait(ctx)
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		if ids[res.JobID] {
			t.Fatalf("job id %d handed out twice", res.JobID)
		}
		ids[res.JobID] = true
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := n.backend.count("EnqueueBatch"); calls >= jobs || calls < jobs/64 {
		t.Fatalf("%d jobs went out in %d batch calls; want between %d and %d", jobs, calls, jobs/64, jobs-1)
	}
	if st := queueStats(t, c, "q"); st.Ready != jobs {
		t.Fatalf("ready = %d, want %d", st.Ready, jobs)
	}
	if _, err := p.Enqueue(ctx, client.NewEnqueueRequest("q", "t")); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("enqueue after close: err = %v, want ErrClosed", err)
	}
}

// A batch that has to wait for a send slot keeps taking jobs while it
// waits, up to MaxBatch (256 by default), however short the linger.
func TestProducer_BatchFillsWhileWaitingForASlot(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	n.backend.setBefore(func(ctx context.Context, op string) error {
		if op != "EnqueueBatch" {
			return nil
		}
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	p := c.NewProducer(client.ProducerOptions{MaxInFlight: 1, Linger: time.Nanosecond})
	pending := []*client.PendingEnqueue{p.EnqueueAsync(ctx, client.NewEnqueueRequest("q", "t"))}
	<-entered // the first job's call holds the only slot
	// A full batch waiting for the slot and a full queue behind it: with a
	// batch that stopped filling after its linger, these would not fit and
	// the enqueues would wait until ctx ends.
	for range 2 * 256 {
		pending = append(pending, p.EnqueueAsync(ctx, client.NewEnqueueRequest("q", "t")))
	}
	close(release)
	for i, pe := range pending {
		if _, err := pe.Wait(ctx); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := n.backend.largestEnqueueBatch(); got != 256 {
		t.Fatalf("largest EnqueueBatch call carried %d jobs, want the default cap of 256", got)
	}
}

// A batch's linger ends once no job has come for LingerIdle: a caller that
// hands over a few jobs and waits for them does not wait out the whole
// Linger (an hour here, so without the rule the test would run into its
// context's deadline). A negative LingerIdle keeps the whole linger.
func TestProducer_LingerEndsWhenJobsStopComing(t *testing.T) {
	for _, tc := range []struct {
		name        string
		linger      time.Duration
		lingerIdle  time.Duration
		jobs        int
		wantAtLeast time.Duration // the batch cannot leave sooner
	}{
		{"idle for 1ms (a timer) ends an hour's linger", time.Hour, time.Millisecond, 3, 0},
		{"idle for 100µs (waited by yielding) ends an hour's linger", time.Hour, 100 * time.Microsecond, 3, 0},
		{"the default idle gap ends an hour's linger", time.Hour, 0, 3, 0},
		{"a negative idle gap waits the whole linger", 200 * time.Millisecond, -1, 1, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, "n1", nil)
			c := newClient(t, []string{n.addr})
			ctx := testContext(t)
			p := c.NewProducer(client.ProducerOptions{Linger: tc.linger, LingerIdle: tc.lingerIdle})
			defer p.Close(ctx)
			start := time.Now()
			pending := make([]*client.PendingEnqueue, tc.jobs)
			for i := range pending {
				pending[i] = p.EnqueueAsync(ctx, client.NewEnqueueRequest("q", "t"))
			}
			for i, pe := range pending {
				if _, err := pe.Wait(ctx); err != nil {
					t.Fatalf("job %d: %v", i, err)
				}
			}
			if took := time.Since(start); took < tc.wantAtLeast {
				t.Fatalf("the batch left after %v, before its linger of %v", took, tc.wantAtLeast)
			}
			if calls := n.backend.count("EnqueueBatch"); calls < 1 || calls > tc.jobs {
				t.Fatalf("%d jobs went out in %d calls", tc.jobs, calls)
			}
		})
	}
}

func TestProducer_ItemErrorsArePerItem(t *testing.T) {
	n := startNode(t, "n1", func(cfg *engine.Config) { cfg.Limits.MaxPayloadBytes = 4 })
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	p := c.NewProducer(client.ProducerOptions{Linger: 50 * time.Millisecond})
	defer p.Close(ctx)
	good := p.EnqueueAsync(ctx, client.NewEnqueueRequest("q", "t").WithPayload([]byte("ok")))
	bad := p.EnqueueAsync(ctx, client.NewEnqueueRequest("q", "t").WithPayload([]byte("too long")))
	if _, err := good.Wait(ctx); err != nil {
		t.Fatalf("good item: %v", err)
	}
	_, err := bad.Wait(ctx)
	var fe *client.FieldError
	if !errors.As(err, &fe) || fe.Field != "payload" || !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("bad item: err = %v, want a payload FieldError", err)
	}
}

func TestClient_NewRejectsNoAddresses(t *testing.T) {
	_, err := client.New(context.Background(), []string{" ", ""})
	var fe *client.FieldError
	if !errors.As(err, &fe) || fe.Field != "addrs" {
		t.Fatalf("err = %v, want a FieldError for addrs", err)
	}
}
