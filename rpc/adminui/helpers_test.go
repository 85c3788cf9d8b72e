package adminui_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/adminui"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// The users of the tests. Their hashes use bcrypt's minimum cost so sign-in
// stays fast under the race detector.
const (
	operatorName = "olivia"
	operatorPass = "operator-secret"
	viewerName   = "victor"
	viewerPass   = "viewer-secret"
)

var testKey = []byte("0123456789abcdef0123456789abcdef-shared-test-key")

func testUsers(t testing.TB) []adminui.User {
	t.Helper()
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	return []adminui.User{
		{Name: operatorName, PasswordHash: hash(operatorPass), Role: adminui.RoleOperator},
		{Name: viewerName, PasswordHash: hash(viewerPass), Role: adminui.RoleViewer},
	}
}

var t0 = time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)

// seeded names the jobs newEnv creates, one per interesting state.
type seeded struct {
	rejected, exhausted, leaseExpired, admin engine.JobID // dead letters on "emails"
	ready1, ready2, scheduled                engine.JobID // live jobs on "emails"
	reportsReady                             engine.JobID // on "reports"
}

type env struct {
	t       *testing.T
	clock   *rpctest.Clock
	backend *rpctest.LocalBackend
	srv     *httptest.Server
	jobs    seeded
}

// newEnv serves the UI over a LocalBackend (a real engine, no Raft) seeded
// with dead letters of every cause, ready and scheduled jobs. retention 0
// turns dead-letter retention off.
func newEnv(t *testing.T, opts adminui.Options, retention time.Duration) *env {
	t.Helper()
	clock := rpctest.NewClock(t0)
	cfg := engine.DefaultConfig()
	cfg.Limits.DeadLetterRetention = retention
	self := cluster.NodeInfo{ID: "sepp-1", RaftAddr: "127.0.0.1:7050", GRPCAddr: "127.0.0.1:50051", HTTPAddr: "127.0.0.1:8080"}
	b, err := rpctest.NewLocalBackend(cfg, self, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, clock: clock, backend: b}
	e.seed()
	if opts.Clock == nil {
		opts.Clock = clock.Now
	}
	if opts.Logger == nil {
		opts.Logger = rpctest.TestLogger(t)
	}
	h, err := adminui.New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	return e
}

func (e *env) seed() {
	t, b, ctx := e.t, e.backend, context.Background()
	t.Helper()
	enqueue := func(p engine.EnqueueParams) engine.JobID {
		t.Helper()
		res, err := rpc.Propose(ctx, b, engine.EnqueueOp{Params: p})
		if err != nil {
			t.Fatalf("seed enqueue %+v: %v", p, err)
		}
		return res.JobID
	}
	reserve := func(queue string, lease time.Duration) engine.Delivery {
		t.Helper()
		ds, err := rpc.Propose(ctx, b, engine.ReserveOp{Params: engine.ReserveParams{Queue: queue, WorkerID: "worker-7", N: 1, Lease: lease}})
		if err != nil || len(ds) != 1 {
			t.Fatalf("seed reserve: %v (%d deliveries)", err, len(ds))
		}
		return ds[0]
	}
	nack := func(d engine.Delivery, dir engine.Directive, reason string) {
		t.Helper()
		if _, err := rpc.Propose(ctx, b, engine.NackOp{Params: engine.NackParams{LeaseRef: engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}, Directive: dir, Reason: reason}}); err != nil {
			t.Fatalf("seed nack: %v", err)
		}
	}
	prio := func(p uint32) *uint32 { return &p }

	// rejected: a worker nacks with DeadLetter.
	e.jobs.rejected = enqueue(engine.EnqueueParams{Queue: "emails", JobType: "send_welcome",
		Payload: []byte(`{"to":"ada@example.com","template":"welcome","vars":{"name":"Ada"}}`),
		Custom:  map[string]string{"tenant": "acme", "trace_id": "4bf92f3577b34da6"}})
	nack(reserve("emails", 0), engine.DirectiveDeadLetter, "invalid address: mailbox does not exist")
	e.clock.Advance(time.Minute)

	// attempts_exhausted: the only attempt fails.
	e.jobs.exhausted = enqueue(engine.EnqueueParams{Queue: "emails", JobType: "send_receipt", MaxAttempts: 1,
		Payload: []byte("plain text receipt for order 1042")})
	nack(reserve("emails", 0), engine.DirectiveDefault, "SMTP 451: try again later")
	e.clock.Advance(time.Minute)

	// lease_expired: the worker vanishes on the final attempt.
	e.jobs.leaseExpired = enqueue(engine.EnqueueParams{Queue: "emails", JobType: "render_pdf", MaxAttempts: 1,
		Payload: []byte{0x25, 0x50, 0x44, 0x46, 0x00, 0xff, 0xfe, 0x01, 0x02}})
	reserve("emails", time.Second)
	e.clock.Advance(2 * time.Second)
	b.Tick()
	e.clock.Advance(time.Minute)

	// admin: dead-lettered by an operator while Ready.
	e.jobs.admin = enqueue(engine.EnqueueParams{Queue: "emails", JobType: "send_digest", Payload: []byte(`{"digest":"weekly"}`)})
	if res, err := rpc.Propose(ctx, b, engine.DeadLetterJobsOp{IDs: []engine.JobID{e.jobs.admin}, Reason: "pulled for inspection"}); err != nil || res[0].Err != nil {
		t.Fatalf("seed dead-letter: %v %v", err, res)
	}
	e.clock.Advance(time.Minute)

	e.jobs.ready1 = enqueue(engine.EnqueueParams{Queue: "emails", JobType: "send_welcome", Priority: prio(5),
		Payload: []byte(`{"to":"grace@example.com"}`)})
	e.jobs.ready2 = enqueue(engine.EnqueueParams{Queue: "emails", JobType: "send_welcome", Payload: []byte(`{"to":"linus@example.com"}`)})
	e.jobs.scheduled = enqueue(engine.EnqueueParams{Queue: "emails", JobType: "send_reminder",
		Payload: []byte(`{"to":"ada@example.com"}`), ScheduledAt: e.clock.Now().Add(2 * time.Hour)})
	e.jobs.reportsReady = enqueue(engine.EnqueueParams{Queue: "reports", JobType: "nightly", Payload: []byte(`{}`)})
	e.clock.Advance(30 * time.Second)
}

// read runs fn against the engine, consistently, failing the test on error.
func (e *env) read(fn func(eng engine.View) error) {
	e.t.Helper()
	if err := e.backend.Read(context.Background(), false, fn); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) deadLetter(id engine.JobID) (engine.DeadLetterRecord, error) {
	var rec engine.DeadLetterRecord
	err := e.backend.Read(context.Background(), false, func(eng engine.View) error {
		var err error
		rec, err = eng.GetDeadLetter(id)
		return err
	})
	return rec, err
}

func (e *env) job(id engine.JobID) (engine.Job, error) {
	var j engine.Job
	err := e.backend.Read(context.Background(), false, func(eng engine.View) error {
		var err error
		j, err = eng.GetJob(id)
		return err
	})
	return j, err
}

func (e *env) deadCount(queue string) int {
	var n int
	e.read(func(eng engine.View) error {
		recs, err := eng.ListDeadLetters(queue, engine.Page{Limit: 1000})
		n = len(recs)
		return err
	})
	return n
}

// browser is an HTTP client with a cookie jar, as a signed-in tab would be.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 20 * time.Second}}
}

type response struct {
	status int
	body   string
	url    string // after redirects
}

func (b *browser) do(req *http.Request) response {
	b.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return response{status: resp.StatusCode, body: string(body), url: resp.Request.URL.String()}
}

func (b *browser) get(path string) response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(req)
}

func (b *browser) post(path string, form url.Values) response {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf loads path and returns the CSRF token its forms carry.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	r := b.get(path)
	m := csrfRe.FindStringSubmatch(r.body)
	if m == nil {
		b.t.Fatalf("GET %s (%d): no csrf token in page:\n%s", path, r.status, r.body)
	}
	return m[1]
}

// signIn signs in through the form and fails the test unless it worked.
func (b *browser) signIn(name, pw string) {
	b.t.Helper()
	r := b.post("/login", url.Values{"csrf": {b.csrf("/login")}, "name": {name}, "password": {pw}})
	if r.status != http.StatusOK || strings.Contains(r.url, "/login") {
		b.t.Fatalf("sign in as %s: status %d at %s:\n%s", name, r.status, r.url, r.body)
	}
}

// followerBackend is a follower's view of the leader's LocalBackend: it
// reads the same (replicated) state, but refuses writes and consistent
// reads with *cluster.NotLeaderError, as a cluster.Node follower does.
type followerBackend struct {
	rpc.Backend
	self cluster.NodeInfo

	mu     sync.Mutex
	leader cluster.NodeInfo
}

func (f *followerBackend) setLeader(l cluster.NodeInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leader = l
}

func (f *followerBackend) notLeader() error {
	l := f.Leader()
	if l.ID == "" {
		return cluster.ErrNoLeader
	}
	return &cluster.NotLeaderError{Leader: l}
}

func (f *followerBackend) Self() cluster.NodeInfo { return f.self }

func (f *followerBackend) Leader() cluster.NodeInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader
}

func (f *followerBackend) Read(ctx context.Context, stale bool, fn func(e engine.View) error) error {
	if !stale {
		return f.notLeader()
	}
	return f.Backend.Read(ctx, true, fn)
}

func (f *followerBackend) Status(ctx context.Context) (cluster.Status, error) {
	st, err := f.Backend.Status(ctx)
	st.Self, st.State = f.self, "Follower"
	return st, err
}

// Propose refuses every write, as a follower does.
func (f *followerBackend) Propose(context.Context, engine.Op) (any, error) { return nil, f.notLeader() }

func isNotFound(err error) bool { return errors.Is(err, engine.ErrNotFound) }

// newServer serves h until the test ends and returns its base URL.
func newServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
