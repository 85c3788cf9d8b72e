package adminui_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/adminui"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

func ids(js ...engine.JobID) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = fmt.Sprint(uint64(j))
	}
	return out
}

// spec: DLQ-12
func TestRequeueKeepsIDAndResetsAttempt(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	b := newBrowser(t, e.srv.URL)
	b.signIn(operatorName, operatorPass)
	csrf := b.csrf("/queues/emails?tab=dead")

	// Without confirmation the server only asks.
	ask := b.post("/queues/emails/dead-letters/requeue", url.Values{"csrf": {csrf}, "id": ids(e.jobs.rejected, e.jobs.exhausted)})
	mustContain(t, "confirmation", ask.body, "Requeue 2 records?", "keeping its job id, with its attempt counter reset to 1", "send_welcome · rejected")
	if _, err := e.deadLetter(e.jobs.rejected); err != nil {
		t.Fatalf("asking for confirmation changed state: %v", err)
	}

	done := b.post("/queues/emails/dead-letters/requeue", url.Values{"csrf": {csrf}, "confirmed": {"yes"},
		"id": ids(e.jobs.rejected, e.jobs.exhausted), "back": {"/queues/emails?tab=dead"}})
	if done.status != http.StatusOK || !strings.HasSuffix(done.url, "/queues/emails?tab=dead") {
		t.Fatalf("requeue: status %d at %s", done.status, done.url)
	}
	want := fmt.Sprintf("Requeued 2 jobs #%d, #%d: back in Ready with the same id, attempt counter reset.", e.jobs.rejected, e.jobs.exhausted)
	mustContain(t, "result", done.body, `class="flash ok"`, want)
	mustNotContain(t, "dead tab after requeue", done.body, fmt.Sprintf(`data-job="%d"`, e.jobs.rejected))

	for _, id := range []engine.JobID{e.jobs.rejected, e.jobs.exhausted} {
		if _, err := e.deadLetter(id); !isNotFound(err) {
			t.Errorf("record %d after requeue: %v, want not found", id, err)
		}
		j, err := e.job(id)
		if err != nil || j.State != engine.StateReady || j.Attempt != 0 {
			t.Errorf("job %d after requeue: state %v attempt %d err %v; want Ready with no attempt made", id, j.State, j.Attempt, err)
		}
	}
	// The next delivery of the same job id is attempt 1 again. The
	// highest-priority job goes first; take the requeued one from the batch.
	ds, err := rpc.Propose(t.Context(), e.backend, engine.ReserveOp{Params: engine.ReserveParams{Queue: "emails", WorkerID: "w", N: 10}})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, d := range ds {
		if d.Job.ID == e.jobs.rejected || d.Job.ID == e.jobs.exhausted {
			found++
			if d.Attempt != 1 {
				t.Errorf("requeued job %d delivered as attempt %d, want 1", d.Job.ID, d.Attempt)
			}
		}
	}
	if found != 2 {
		t.Errorf("reserve returned %d of the 2 requeued jobs", found)
	}

	// Requeueing again: the records are gone, and the message says so.
	again := b.post("/queues/emails/dead-letters/requeue", url.Values{"csrf": {csrf}, "confirmed": {"yes"}, "id": ids(e.jobs.rejected)})
	mustContain(t, "second requeue", again.body, `class="flash error"`, fmt.Sprintf("Not requeued: #%d (not found", e.jobs.rejected))
}

// spec: DLQ-13
func TestDeleteRemovesForGood(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	b := newBrowser(t, e.srv.URL)
	b.signIn(operatorName, operatorPass)
	csrf := b.csrf("/queues/emails?tab=dead")

	ask := b.post("/queues/emails/dead-letters/delete", url.Values{"csrf": {csrf}, "id": ids(e.jobs.leaseExpired)})
	mustContain(t, "confirmation", ask.body, "Delete for good 1 record?", "gone for good")
	done := b.post("/queues/emails/dead-letters/delete", url.Values{"csrf": {csrf}, "confirmed": {"yes"}, "id": ids(e.jobs.leaseExpired)})
	mustContain(t, "result", done.body, fmt.Sprintf("Deleted 1 record #%d: gone for good.", e.jobs.leaseExpired))

	if _, err := e.deadLetter(e.jobs.leaseExpired); !isNotFound(err) {
		t.Errorf("record after delete: %v, want not found", err)
	}
	if _, err := e.job(e.jobs.leaseExpired); !isNotFound(err) {
		t.Errorf("job after delete: %v, want not found", err)
	}
	if n := e.deadCount("emails"); n != 3 {
		t.Errorf("%d records left, want 3", n)
	}
	if r := b.get(fmt.Sprintf("/queues/emails/dead-letters/%d", e.jobs.leaseExpired)); r.status != http.StatusNotFound {
		t.Errorf("record page after delete: %d, want 404", r.status)
	}
}

// spec: DLQ-14
func TestDeadLetterLiveJobRecordsAdminCause(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	b := newBrowser(t, e.srv.URL)
	b.signIn(operatorName, operatorPass)
	csrf := b.csrf("/queues/emails?tab=ready")

	// Reserve the ready jobs' neighbour so a reserved one can be refused.
	ds, err := rpc.Propose(t.Context(), e.backend, engine.ReserveOp{Params: engine.ReserveParams{Queue: "reports", WorkerID: "w", N: 1}})
	if err != nil || len(ds) != 1 {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		queue string
		id    engine.JobID
		ok    bool
		msg   string
	}{
		{"Ready", "emails", e.jobs.ready1, true, "recorded with cause admin"},
		{"Scheduled", "emails", e.jobs.scheduled, true, "recorded with cause admin"},
		{"Reserved is refused", "reports", e.jobs.reportsReady, false, "is reserved by a worker"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ask := b.post("/queues/"+tc.queue+"/jobs/dead-letter", url.Values{"csrf": {csrf}, "id": ids(tc.id)})
			mustContain(t, "confirmation", ask.body, "Dead-letter 1 job?", `name="reason"`)
			done := b.post("/queues/"+tc.queue+"/jobs/dead-letter", url.Values{"csrf": {csrf}, "confirmed": {"yes"}, "id": ids(tc.id), "reason": {"known-bad payload"}})
			mustContain(t, "result", done.body, tc.msg)
			rec, err := e.deadLetter(tc.id)
			if !tc.ok {
				if !isNotFound(err) {
					t.Errorf("refused job has a record: %v", err)
				}
				return
			}
			if err != nil || rec.Cause != engine.CauseAdmin || rec.LastReason != "known-bad payload" {
				t.Errorf("record: %+v, %v; want cause admin with the reason", rec, err)
			}
		})
	}
}

func TestPauseAndResume(t *testing.T) {
	e := newEnv(t, adminui.Options{}, week)
	b := newBrowser(t, e.srv.URL)
	csrf := b.csrf("/queues")
	paused := func() bool {
		var p bool
		e.read(func(eng engine.View) error {
			st, err := eng.QueueStats(e.clock.Now(), "emails")
			p = st.Paused
			return err
		})
		return p
	}
	r := b.post("/queues/emails/pause", url.Values{"csrf": {csrf}, "back": {"/queues"}})
	mustContain(t, "pause", r.body, "Paused queue emails", `<span class="badge paused">paused</span>`, `data-action="resume"`)
	if !paused() {
		t.Fatal("queue not paused")
	}
	r = b.post("/queues/emails/resume", url.Values{"csrf": {csrf}, "back": {"/queues"}})
	mustContain(t, "resume", r.body, "Resumed queue emails")
	if paused() {
		t.Fatal("queue still paused")
	}
}

// actionCases is every state-changing POST of the UI, confirmed.
func actionCases(e *env) []struct {
	name, path string
	form       url.Values
} {
	return []struct {
		name, path string
		form       url.Values
	}{
		{"requeue", "/queues/emails/dead-letters/requeue", url.Values{"confirmed": {"yes"}, "id": ids(e.jobs.rejected)}},
		{"requeue unconfirmed", "/queues/emails/dead-letters/requeue", url.Values{"id": ids(e.jobs.rejected)}},
		{"delete", "/queues/emails/dead-letters/delete", url.Values{"confirmed": {"yes"}, "id": ids(e.jobs.exhausted)}},
		{"delete unconfirmed", "/queues/emails/dead-letters/delete", url.Values{"id": ids(e.jobs.exhausted)}},
		{"dead-letter", "/queues/emails/jobs/dead-letter", url.Values{"confirmed": {"yes"}, "id": ids(e.jobs.ready1)}},
		{"dead-letter unconfirmed", "/queues/emails/jobs/dead-letter", url.Values{"id": ids(e.jobs.ready1)}},
		{"pause", "/queues/emails/pause", url.Values{}},
		{"resume", "/queues/reports/resume", url.Values{}},
	}
}

// digest is the engine's state hash: equal means nothing changed.
func (e *env) digest() [32]byte {
	var d [32]byte
	e.read(func(eng engine.View) error { d = eng.Digest(); return nil })
	return d
}

// spec: DLQ-15
func TestViewerCanLookButNotAct(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	viewer := newBrowser(t, e.srv.URL)
	viewer.signIn(viewerName, viewerPass)

	// The viewer sees the Dead letters tab and the records, without buttons.
	dead := viewer.get("/queues/emails?tab=dead")
	mustContain(t, "viewer dead tab", dead.body, `cause-rejected">rejected`, "invalid address", `badge role-viewer">viewer`)
	rec := viewer.get(fmt.Sprintf("/queues/emails/dead-letters/%d", e.jobs.rejected))
	mustContain(t, "viewer record", rec.body, "ada@example.com", "Why it died")
	for path, page := range map[string]string{"dead tab": dead.body, "record": rec.body,
		"queues": viewer.get("/queues").body, "ready tab": viewer.get("/queues/emails").body} {
		mustNotContain(t, "viewer "+path, page, `id="requeue-selected"`, `id="delete-selected"`, `id="dead-letter-selected"`,
			`id="requeue-one"`, `id="delete-one"`, `data-action="pause"`, `name="id"`)
	}

	// The server refuses every action, with a valid CSRF token, and changes nothing.
	csrf := viewer.csrf("/queues")
	before := e.digest()
	for _, tc := range actionCases(e) {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set("csrf", csrf)
			r := viewer.post(tc.path, tc.form)
			if r.status != http.StatusForbidden {
				t.Fatalf("viewer POST %s: status %d, want 403", tc.path, r.status)
			}
			mustContain(t, "refusal", r.body, "Your role is viewer")
		})
	}
	if e.digest() != before {
		t.Fatal("a refused viewer action changed the engine's state")
	}

	// The same requests from an operator succeed.
	operator := newBrowser(t, e.srv.URL)
	operator.signIn(operatorName, operatorPass)
	csrf = operator.csrf("/queues")
	if _, err := rpc.Propose(t.Context(), e.backend, engine.PauseQueueOp{Queue: "reports"}); err != nil { // so "resume" has work to do
		t.Fatal(err)
	}
	for _, tc := range actionCases(e) {
		tc.form.Set("csrf", csrf)
		r := operator.post(tc.path, tc.form)
		if r.status != http.StatusOK || strings.Contains(r.body, `class="flash error"`) {
			t.Errorf("operator POST %s (%s): status %d\n%s", tc.path, tc.name, r.status, r.body)
		}
	}
	if _, err := e.deadLetter(e.jobs.exhausted); !isNotFound(err) {
		t.Errorf("operator delete did not happen: %v", err)
	}
	if rec, err := e.deadLetter(e.jobs.ready1); err != nil || rec.Cause != engine.CauseAdmin {
		t.Errorf("operator dead-letter did not happen: %v", err)
	}
}

func TestCSRFRequired(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	operator := newBrowser(t, e.srv.URL)
	operator.signIn(operatorName, operatorPass)
	other := newBrowser(t, e.srv.URL)
	other.signIn(operatorName, operatorPass)
	otherToken := other.csrf("/queues") // valid, but for another session

	before := e.digest()
	for _, tc := range actionCases(e) {
		for _, token := range []struct{ name, value string }{
			{"missing", ""}, {"wrong", "bm90LWEtdG9rZW4"}, {"another session's", otherToken},
		} {
			t.Run(tc.name+"/"+token.name, func(t *testing.T) {
				form := url.Values{}
				for k, v := range tc.form {
					form[k] = v
				}
				if token.value != "" {
					form.Set("csrf", token.value)
				}
				r := operator.post(tc.path, form)
				if r.status != http.StatusForbidden {
					t.Fatalf("POST %s with %s token: status %d, want 403", tc.path, token.name, r.status)
				}
				mustContain(t, "refusal", r.body, "security token is missing or out of date")
			})
		}
	}
	// Signing out needs the token too.
	if r := operator.post("/logout", url.Values{}); r.status != http.StatusForbidden {
		t.Errorf("logout without token: %d, want 403", r.status)
	}
	if e.digest() != before {
		t.Fatal("a request without a valid CSRF token changed the engine's state")
	}
}

func TestSignIn(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)

	t.Run("SignedOutIsSentToSignIn", func(t *testing.T) {
		b := newBrowser(t, e.srv.URL)
		r := b.get("/queues/emails?tab=dead")
		if !strings.Contains(r.url, "/login?next=") {
			t.Fatalf("ended at %s, want the sign-in page", r.url)
		}
		mustNotContain(t, "sign-in page", r.body, "invalid address")
		csrf := csrfRe.FindStringSubmatch(r.body)[1]
		if p := b.post("/queues/emails/pause", url.Values{"csrf": {csrf}}); p.status != http.StatusUnauthorized {
			t.Errorf("signed-out POST: %d, want 401", p.status)
		}
	})

	for _, tc := range []struct{ name, user, pw string }{
		{"WrongPassword", operatorName, "operator-secreT"},
		{"UnknownUser", "mallory", operatorPass},
		{"EmptyPassword", viewerName, ""},
		{"OverlongPassword", operatorName, strings.Repeat("x", 100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBrowser(t, e.srv.URL)
			r := b.post("/login", url.Values{"csrf": {b.csrf("/login")}, "name": {tc.user}, "password": {tc.pw}})
			if r.status != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", r.status)
			}
			mustContain(t, "refusal", r.body, "Wrong name or password.")
			if p := b.get("/queues"); !strings.Contains(p.url, "/login") {
				t.Fatalf("refused sign-in still reached %s", p.url)
			}
		})
	}

	t.Run("SignInNeedsCSRF", func(t *testing.T) {
		b := newBrowser(t, e.srv.URL)
		b.get("/login")
		if r := b.post("/login", url.Values{"name": {operatorName}, "password": {operatorPass}}); r.status != http.StatusForbidden {
			t.Fatalf("status %d, want 403", r.status)
		}
	})

	t.Run("SignInGoesToNextAndSignOutEnds", func(t *testing.T) {
		b := newBrowser(t, e.srv.URL)
		r := b.get("/queues/emails?tab=dead")
		csrf := csrfRe.FindStringSubmatch(r.body)[1]
		r = b.post("/login", url.Values{"csrf": {csrf}, "name": {operatorName}, "password": {operatorPass}, "next": {"/queues/emails?tab=dead"}})
		if !strings.HasSuffix(r.url, "/queues/emails?tab=dead") {
			t.Fatalf("after sign-in at %s", r.url)
		}
		mustContain(t, "signed in", r.body, operatorName, `badge role-operator">operator`, `id="sign-out"`)

		// Keep the signed-in cookie, sign out, then replay the old cookie.
		u, _ := url.Parse(e.srv.URL)
		old := b.c.Jar.Cookies(u)
		out := b.post("/logout", url.Values{"csrf": {csrfRe.FindStringSubmatch(r.body)[1]}})
		if !strings.Contains(out.url, "/login") {
			t.Fatalf("after sign-out at %s", out.url)
		}
		replay := newBrowser(t, e.srv.URL)
		replay.c.Jar.SetCookies(u, old)
		if p := replay.get("/queues"); !strings.Contains(p.url, "/login") {
			t.Fatalf("the signed-out session still works: reached %s", p.url)
		}
	})

	t.Run("OpenRedirectRefused", func(t *testing.T) {
		b := newBrowser(t, e.srv.URL)
		b.c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/login", nil)
		b.do(req)
		csrf := b.csrf("/login")
		r := b.post("/login", url.Values{"csrf": {csrf}, "name": {operatorName}, "password": {operatorPass}, "next": {"//evil.example/x"}})
		if r.status != http.StatusSeeOther {
			t.Fatalf("status %d", r.status)
		}
		resp, err := b.c.PostForm(e.srv.URL+"/login", url.Values{"csrf": {csrf}, "name": {operatorName}, "password": {operatorPass}, "next": {"https://evil.example/"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); loc != "/" && loc != "" {
			t.Fatalf("redirected to %q", loc)
		}
	})
}

func TestSessionCookieAttributes(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	resp, err := http.Get(e.srv.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var found bool
	for _, c := range resp.Cookies() {
		if c.Name != "sepp_session" {
			continue
		}
		found = true
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
			t.Errorf("session cookie: HttpOnly=%v SameSite=%v Path=%q; want HttpOnly, Strict, /", c.HttpOnly, c.SameSite, c.Path)
		}
	}
	if !found {
		t.Fatal("no session cookie set")
	}
	// A tampered cookie is not a session: the visitor must sign in.
	b := newBrowser(t, e.srv.URL)
	b.signIn(operatorName, operatorPass)
	u, _ := url.Parse(e.srv.URL)
	cs := b.c.Jar.Cookies(u)
	for _, c := range cs {
		if c.Name == "sepp_session" {
			payload, sig, _ := strings.Cut(c.Value, ".")
			c.Value = payload + "x." + sig
		}
	}
	tampered := newBrowser(t, e.srv.URL)
	tampered.c.Jar.SetCookies(u, cs)
	if r := tampered.get("/queues"); !strings.Contains(r.url, "/login") {
		t.Fatalf("tampered cookie reached %s", r.url)
	}
}

func TestSessionExpires(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t), SessionTTL: 1 << 30}, week)
	b := newBrowser(t, e.srv.URL)
	b.signIn(viewerName, viewerPass)
	e.clock.Advance(1 << 31)
	if r := b.get("/queues"); !strings.Contains(r.url, "/login") {
		t.Fatalf("expired session reached %s", r.url)
	}
}

func TestAuthOffEveryoneIsOperatorButCSRFHolds(t *testing.T) {
	e := newEnv(t, adminui.Options{}, week)
	b := newBrowser(t, e.srv.URL)
	page := b.get("/queues/emails?tab=dead")
	mustContain(t, "auth off", page.body, "auth off", `id="requeue-selected"`)
	mustNotContain(t, "auth off", page.body, `id="sign-out"`)
	if r := b.post("/queues/emails/pause", url.Values{}); r.status != http.StatusForbidden {
		t.Fatalf("POST without token: %d, want 403", r.status)
	}
	r := b.post("/queues/emails/pause", url.Values{"csrf": {b.csrf("/queues")}})
	mustContain(t, "pause", r.body, "Paused queue emails")
}

func TestBadActionInput(t *testing.T) {
	e := newEnv(t, adminui.Options{}, week)
	b := newBrowser(t, e.srv.URL)
	csrf := b.csrf("/queues")
	tests := []struct {
		name string
		path string
		form url.Values
		want string
	}{
		{"NoSelection", "/queues/emails/dead-letters/requeue", url.Values{}, "id: select at least one job"},
		{"NotANumber", "/queues/emails/dead-letters/delete", url.Values{"id": {"12x"}}, "job id: must be a positive whole number, got &#34;12x&#34;"},
		{"TooMany", "/queues/emails/dead-letters/delete", url.Values{"id": func() []string {
			var s []string
			for i := 1; i <= 1001; i++ {
				s = append(s, fmt.Sprint(i))
			}
			return s
		}()}, "id: at most 1000 jobs per action, got 1001"},
		{"LongReason", "/queues/emails/jobs/dead-letter", url.Values{"id": ids(e.jobs.ready1), "reason": {strings.Repeat("r", 1025)}}, "reason: at most 1024 bytes"},
	}
	before := e.digest()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set("csrf", csrf)
			tc.form.Set("confirmed", "yes")
			r := b.post(tc.path, tc.form)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", r.status)
			}
			mustContain(t, tc.name, r.body, tc.want)
		})
	}
	if e.digest() != before {
		t.Fatal("bad input changed state")
	}
}

func TestFollower(t *testing.T) {
	leaderEnv := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t), SessionKey: testKey}, week)
	leaderInfo := leaderEnv.backend.Self()
	leaderInfo.HTTPAddr = strings.TrimPrefix(leaderEnv.srv.URL, "http://")
	follower := &followerBackend{Backend: leaderEnv.backend, leader: leaderInfo,
		self: cluster.NodeInfo{ID: "sepp-2", RaftAddr: "127.0.0.1:7051", GRPCAddr: "127.0.0.1:50052", HTTPAddr: "127.0.0.1:8081"}}

	serve := func(key []byte) *browser {
		h, err := adminui.New(follower, adminui.Options{Auth: true, Users: testUsers(t), SessionKey: key,
			Clock: leaderEnv.clock.Now, Logger: rpctest.TestLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		srv := newServer(t, h)
		b := newBrowser(t, srv)
		b.signIn(operatorName, operatorPass)
		return b
	}

	t.Run("ServesStalePagesAndForwardsActions", func(t *testing.T) {
		b := serve(testKey)
		page := b.get("/queues/emails?tab=dead")
		mustContain(t, "follower page", page.body, "This node (sepp-2) is a follower", "Actions are sent on to the leader, sepp-1",
			`<span class="badge follower">follower</span>`, "invalid address")
		r := b.post("/queues/emails/dead-letters/requeue", url.Values{"csrf": {b.csrf("/queues")}, "confirmed": {"yes"}, "id": ids(leaderEnv.jobs.rejected)})
		mustContain(t, "forwarded result", r.body, `class="flash ok"`, "Forwarded to the leader sepp-1: Requeued 1 job")
		if j, err := leaderEnv.job(leaderEnv.jobs.rejected); err != nil || j.State != engine.StateReady {
			t.Fatalf("after forwarded requeue: %v %v", j.State, err)
		}
		c := b.get("/cluster")
		mustContain(t, "follower cluster page", c.body, "Health is the leader's view", "unknown here")
	})

	t.Run("ViewerRefusedOnFollowerToo", func(t *testing.T) {
		b := serve(testKey)
		v := newBrowser(t, strings.TrimSuffix(b.base, "/"))
		v.signIn(viewerName, viewerPass)
		before := leaderEnv.digest()
		r := v.post("/queues/emails/pause", url.Values{"csrf": {v.csrf("/queues")}})
		if r.status != http.StatusForbidden {
			t.Fatalf("viewer on follower: %d, want 403", r.status)
		}
		if leaderEnv.digest() != before {
			t.Fatal("state changed")
		}
	})

	t.Run("DifferentKeysIsExplained", func(t *testing.T) {
		b := serve([]byte("another-key-another-key-another-key!!"))
		before := leaderEnv.digest()
		r := b.post("/queues/emails/pause", url.Values{"csrf": {b.csrf("/queues")}})
		mustContain(t, "refused forward", r.body, `class="flash error"`, "did not accept this node&#39;s sign-in", "same admin session key")
		if leaderEnv.digest() != before {
			t.Fatal("state changed")
		}
	})

	t.Run("NoLeaderKnown", func(t *testing.T) {
		b := serve(testKey)
		follower.setLeader(cluster.NodeInfo{})
		defer follower.setLeader(leaderInfo)
		r := b.post("/queues/emails/pause", url.Values{"csrf": {b.csrf("/queues")}})
		mustContain(t, "no leader", r.body, `class="flash error"`, "no leader right now")
	})
}

func TestBackendErrorsAreExplained(t *testing.T) {
	e := newEnv(t, adminui.Options{}, week)
	b := newBrowser(t, e.srv.URL)
	csrf := b.csrf("/queues")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{cluster.ErrNoLeader, "no leader right now"},
		{fmt.Errorf("propose: %w", cluster.ErrUnknownOutcome), "outcome is unknown"},
		{errors.New("disk on fire"), "The action failed: disk on fire"},
	} {
		e.backend.FailWith(func(op string) error {
			if op == "PauseQueue" {
				return tc.err
			}
			return nil
		})
		r := b.post("/queues/emails/pause", url.Values{"csrf": {csrf}})
		mustContain(t, tc.err.Error(), r.body, `class="flash error"`, tc.want)
	}
	e.backend.FailWith(nil)
}
