package sepptest_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/client/sepptest"
)

// No test may leave a goroutine behind: a server ends with its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// docs:begin worker-test

// The example test of the package documentation: a Worker runs the
// handler against a real single node started for the test.
func TestStart_WorkerAgainstARealNode(t *testing.T) {
	s := sepptest.Start(t)
	ctx := t.Context()
	id, err := sendWelcome(ctx, s.Client(), "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	handled := make(chan uint64, 1)
	w := client.NewWorker(s.Client(), client.WorkerOptions{})
	w.Handle("emails", "welcome", func(ctx context.Context, d *client.Delivery) error {
		handled <- d.Job.ID
		return welcome(ctx, d)
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if got := receive(t, handled, "the handler to run"); got != id {
		t.Fatalf("handled job %d, want %d", got, id)
	}
	waitFor(t, "the ack", func() bool {
		_, err := s.Client().GetJob(ctx, id, false)
		return errors.Is(err, client.ErrNotFound)
	})
}

// docs:end worker-test

func TestNewServer_CloseRemovesItsData(t *testing.T) {
	before := tempEntries(t)
	s, err := sepptest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client().Enqueue(t.Context(), client.NewEnqueueRequest("q", "t")); err != nil {
		t.Fatal(err)
	}
	made := newEntries(before, tempEntries(t))
	if len(made) != 1 || !strings.HasPrefix(made[0], "sepptest-") {
		t.Fatalf("NewServer made %q in the temp dir, want one sepptest- folder", made)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(os.TempDir() + "/" + made[0]); !os.IsNotExist(err) {
		t.Fatalf("data dir after Close: %v, want it gone", err)
	}
	c, err := client.New(t.Context(), []string{s.Addr()}, client.WithRetryTimeout(100*time.Millisecond))
	if err == nil {
		defer c.Close()
		if _, err := c.Enqueue(t.Context(), client.NewEnqueueRequest("q", "t")); err == nil {
			t.Fatal("an enqueue succeeded after Close")
		}
	}
}

func TestWithConfig(t *testing.T) {
	for _, tc := range []struct {
		name, toml, wantErr string
	}{
		{name: "a queue's settings apply", toml: "[[queues]]\nname = \"emails\"\ndefault_max_attempts = 7\n"},
		{name: "an unknown key is refused by name", toml: "[limits]\nmax_atempts = 7\n", wantErr: "max_atempts"},
		{name: "a bad value is refused by name", toml: "[limits]\ndefault_lease_ms = -1\n", wantErr: "default_lease_ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sepptest.NewServer(sepptest.WithConfig(tc.toml))
			if tc.wantErr != "" {
				if err == nil {
					s.Close()
					t.Fatalf("NewServer started; want an error naming %q", tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to name %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Client().Enqueue(t.Context(), client.NewEnqueueRequest("emails", "welcome")); err != nil {
				t.Fatal(err)
			}
			ds, err := s.Client().Reserve(t.Context(), "emails", client.ReserveOptions{})
			if err != nil || len(ds) != 1 {
				t.Fatalf("reserve: %d deliveries, %v", len(ds), err)
			}
			if ds[0].Ctx.MaxAttempts != 7 {
				t.Fatalf("max attempts = %d, want the queue's 7", ds[0].Ctx.MaxAttempts)
			}
		})
	}
}

// docs:begin handler-test

// The example test of RunHandler: each answer of the handler, without a
// server.
func TestRunHandler(t *testing.T) {
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		h         client.HandlerFunc
		want      string // Outcome.String()
		wantErr   error
		wantInErr string
	}{
		{name: "nil acks", h: welcome, want: "ack"},
		{name: "a plain error retries per the queue's policy", h: func(context.Context, *client.Delivery) error { return errBoom }, want: "nack default", wantErr: errBoom},
		{name: "Retry retries per the queue's policy", h: func(context.Context, *client.Delivery) error { return client.Retry(errBoom) }, want: "nack default", wantErr: errBoom},
		{name: "RetryAfter retries after its delay", h: func(context.Context, *client.Delivery) error { return client.RetryAfter(time.Minute, errBoom) }, want: "nack after(1m0s)", wantErr: errBoom},
		{name: "Permanent dead-letters", h: func(context.Context, *client.Delivery) error { return client.Permanent(errBoom) }, want: "nack dead_letter", wantErr: errBoom},
		{name: "a panic retries, as a failure", h: func(context.Context, *client.Delivery) error { panic("nil map") }, want: "nack default", wantInErr: "panic: nil map"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := sepptest.RunHandler(t, tc.h, client.Delivery{Job: client.Job{Queue: "emails", Type: "welcome", Payload: []byte("ada@example.com")}})
			if got := out.String(); got != tc.want {
				t.Fatalf("outcome = %s, want %s", got, tc.want)
			}
			if tc.wantErr != nil && !errors.Is(out.Err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", out.Err, tc.wantErr)
			}
			if tc.wantInErr != "" && (out.Err == nil || !strings.Contains(out.Err.Error(), tc.wantInErr)) {
				t.Fatalf("err = %v, want it to contain %q", out.Err, tc.wantInErr)
			}
			if !out.Ack && out.Reason != out.Err.Error() {
				t.Fatalf("reason = %q, want the error's text %q", out.Reason, out.Err.Error())
			}
		})
	}
}

// docs:end handler-test

func TestRunHandler_FillsTheDeliveryAsAFirstDelivery(t *testing.T) {
	var seen client.Delivery
	var fromCtx bool
	sepptest.RunHandler(t, func(ctx context.Context, d *client.Delivery) error {
		seen = *d
		got, ok := client.DeliveryFromContext(ctx)
		fromCtx = ok && got == d
		return nil
	}, client.Delivery{Job: client.Job{ID: 42, Queue: "emails"}})
	if !fromCtx {
		t.Fatal("the handler's context does not carry its delivery")
	}
	jc := seen.Ctx
	if jc.JobID != 42 || jc.Queue != "emails" || jc.Attempt != 1 || jc.MaxAttempts != 3 || jc.LeaseToken == 0 || jc.LeaseDeadline.IsZero() || jc.LastAttempt() {
		t.Fatalf("delivery context = %+v, want job 42 on emails, attempt 1 of 3, with a lease", jc)
	}
	if seen.Job.State != client.StateReserved || seen.Job.Attempt != 1 {
		t.Fatalf("job = %+v, want reserved, attempt 1", seen.Job)
	}
}

// RunHandler's answer is the Worker's: the same handlers run by a Worker
// against a real node leave each job where the Outcome says.
func TestRunHandler_AgreesWithTheWorker(t *testing.T) {
	s := sepptest.Start(t, sepptest.WithConfig("[storage]\ndead_letter_retention_ms = 3600000\n"))
	ctx := t.Context()
	c := s.Client()
	payloads := []string{"ada@example.com", "busy@example.com", "", "flaky"}
	handler := func(ctx context.Context, d *client.Delivery) error {
		if string(d.Job.Payload) == "flaky" {
			return errors.New("flaky")
		}
		return welcome(ctx, d)
	}
	want := map[string]client.JobState{} // by payload: where the job ends up
	ids := map[string]uint64{}
	for _, p := range payloads {
		out := sepptest.RunHandler(t, handler, client.Delivery{Job: client.Job{Queue: "emails", Payload: []byte(p)}})
		switch {
		case out.Ack:
			want[p] = client.StateUnknown // gone
		case out.Directive.IsDeadLetter():
			want[p] = client.StateDead
		case out.Directive.Delay() > 0:
			want[p] = client.StateScheduled
		default:
			want[p] = client.StateReady
		}
		res, err := c.Enqueue(ctx, client.NewEnqueueRequest("emails", "welcome").WithPayload([]byte(p)))
		if err != nil {
			t.Fatal(err)
		}
		ids[p] = res.JobID
	}
	handled := make(chan struct{}, len(payloads)*4)
	w := client.NewWorker(c, client.WorkerOptions{})
	w.Handle("emails", "welcome", func(ctx context.Context, d *client.Delivery) error {
		defer func() { handled <- struct{}{} }()
		if d.Ctx.Attempt > 1 {
			return client.RetryAfter(time.Hour, errors.New("only the first attempt is under test"))
		}
		return handler(ctx, d)
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for range payloads {
		receive(t, handled, "the first attempts")
	}
	// The flaky job comes back at once for attempt 2 and is parked.
	receive(t, handled, "the flaky job's second attempt")
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads {
		j, err := c.GetJob(ctx, ids[p], false)
		var got client.JobState
		switch {
		case errors.Is(err, client.ErrNotFound):
			got = client.StateUnknown
		case err != nil:
			t.Fatal(err)
		default:
			got = j.State
			if j.State == client.StateScheduled && p == "flaky" {
				got = client.StateReady // its first failure made it Ready again (see above)
			}
		}
		if got != want[p] {
			t.Errorf("payload %q: job ends %v, RunHandler said %v", p, got, want[p])
		}
	}
}

// receive waits for a value on ch, failing the test after 20s.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func tempEntries(t *testing.T) map[string]bool {
	t.Helper()
	es, err := os.ReadDir(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]bool, len(es))
	for _, e := range es {
		out[e.Name()] = true
	}
	return out
}

func newEntries(before, after map[string]bool) []string {
	var out []string
	for name := range after {
		if !before[name] && strings.HasPrefix(name, "sepptest-") {
			out = append(out, name)
		}
	}
	return out
}
