package adminui_test

import (
	"bufio"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc/adminui"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// fuzzRoutes are the UI's routes with holes for a queue name (first %s) and
// a job id (second); the last one is the fuzzed path alone.
var fuzzRoutes = []string{
	"/queues/%s/jobs/%s",
	"/queues/%s/dead-letters/%s",
	"/queues/%s/pause%.0s",
	"/queues/%s/resume%.0s",
	"/queues/%s/dead-letters/requeue%.0s",
	"/queues/%s/dead-letters/delete%.0s",
	"/queues/%s/jobs/dead-letter%.0s",
	"/queues/%s%.0s",
	"/login%.0s%.0s",
	"/logout%.0s%.0s",
	"/cluster%.0s%.0s",
	"/queues%.0s%.0s",
	"/%.0s%.0s",
	"/static/%s%.0s",
	"%s%s",
}

// The callers a fuzzed request comes from. Only fuzzOperator carries a
// valid session and CSRF token of a user who may act; every other caller
// must leave the state exactly as it was.
const (
	fuzzAnonymous    = iota // no cookie at all
	fuzzForgedCookie        // the fuzzed text as the session cookie
	fuzzViewer              // a signed-in viewer with its valid CSRF token
	fuzzOperatorCSRF        // a signed-in operator with the fuzzed CSRF token
	fuzzOperator            // a signed-in operator with its valid CSRF token
	fuzzCallers
)

// fuzzSession is a signed-in browser: its cookie and the CSRF token its
// pages carry. Sessions are signed with testKey, so they stay valid in
// every handler built with that key and clock.
type fuzzSession struct {
	cookie string
	csrf   string
}

var fuzzCSRFRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// signInFuzz signs name in through the form of h and returns the session.
func signInFuzz(t testing.TB, h http.Handler, name, pw string) fuzzSession {
	t.Helper()
	page := serve(h, httptest.NewRequest(http.MethodGet, "/login", nil))
	anon := sessionCookie(t, page)
	m := fuzzCSRFRe.FindStringSubmatch(page.Body.String())
	if m == nil {
		t.Fatalf("login page has no csrf token:\n%s", page.Body)
	}
	form := url.Values{"csrf": {m[1]}, "name": {name}, "password": {pw}}
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", anon)
	signed := sessionCookie(t, serve(h, req))
	req = httptest.NewRequest(http.MethodGet, "/queues", nil)
	req.Header.Set("Cookie", signed)
	page = serve(h, req)
	m = fuzzCSRFRe.FindStringSubmatch(page.Body.String())
	if page.Code != http.StatusOK || m == nil {
		t.Fatalf("signed in as %s, /queues answered %d without a csrf token", name, page.Code)
	}
	return fuzzSession{cookie: signed, csrf: m[1]}
}

func sessionCookie(t testing.TB, rec *httptest.ResponseRecorder) string {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == "sepp_session" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("no session cookie in the answer (%d)", rec.Code)
	return ""
}

// fuzzUI builds the UI over a fresh LocalBackend, seeded with the jobs of
// env.seed when seedT is not nil.
func fuzzUI(t testing.TB, seedT *testing.T, auth bool, users []adminui.User) (http.Handler, *rpctest.LocalBackend) { //nolint:thelper // it does call t.Helper(); seedT is only a source of temp dirs
	t.Helper()
	clock := rpctest.NewClock(t0)
	cfg := engine.DefaultConfig()
	cfg.Limits.DeadLetterRetention = 7 * 24 * time.Hour
	self := cluster.NodeInfo{ID: "sepp-1", RaftAddr: "127.0.0.1:7050", GRPCAddr: "127.0.0.1:50051", HTTPAddr: "127.0.0.1:8080"}
	b, err := rpctest.NewLocalBackend(cfg, self, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	if seedT != nil {
		(&env{t: seedT, clock: clock, backend: b}).seed()
	}
	opts := adminui.Options{Auth: auth, SessionKey: testKey, Clock: clock.Now}
	if auth {
		opts.Users = users
	}
	h, err := adminui.New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h, b
}

// FuzzHandlers sends the admin UI hostile paths, ids, page parameters,
// forms, CSRF tokens and cookies. Whatever comes in, the handler must not
// panic, must answer bad input with a 4xx (never a 5xx), and must not change
// the queue state unless the caller is a signed-in operator with the CSRF
// token of its session (with sign-in off: any caller with a valid token).
func FuzzHandlers(f *testing.F) {
	users := testUsers(f)
	seedH, _ := fuzzUI(f, nil, true, users)
	sessions := map[int]fuzzSession{
		fuzzViewer:       signInFuzz(f, seedH, viewerName, viewerPass),
		fuzzOperatorCSRF: signInFuzz(f, seedH, operatorName, operatorPass),
		fuzzOperator:     signInFuzz(f, seedH, operatorName, operatorPass),
	}

	// The seeds are the committed corpus, testdata/fuzz/FuzzHandlers
	// (written from fuzzSeeds, checked by TestFuzzHandlersCorpus).
	f.Fuzz(func(t *testing.T, route, caller uint8, post, auth bool, queue, id, query, form, csrf, forwarded string) {
		fuzzOne(t, users, sessions, fuzzInput{route, caller, post, auth, queue, id, query, form, csrf, forwarded})
	})
}

// fuzzSeeds: each route with plausible and hostile values, the source of
// the committed corpus. The jobs of env.seed: dead letters 1-4 on
// "emails", live jobs 5-7, 8 on "reports".
var fuzzSeeds = []fuzzInput{
	{route: 0, queue: "emails", id: "5", auth: true, caller: fuzzOperator},
	{route: 1, queue: "emails", id: "1", query: "tab=payload", auth: true, caller: fuzzViewer},
	{route: 1, queue: "emails", id: "18446744073709551616", auth: true, caller: fuzzOperator},
	{route: 0, queue: "emails", id: "-1", auth: true, caller: fuzzAnonymous},
	{route: 7, queue: "emails", query: "tab=dead&after=3", auth: true, caller: fuzzOperator},
	{route: 7, queue: "emails", query: "tab=%ff&after=-5&after=x", auth: true, caller: fuzzViewer},
	{route: 7, queue: "no such queue", query: "after=99999999999999999999", auth: false, caller: fuzzAnonymous},
	{route: 2, post: true, queue: "emails", form: "confirmed=yes", auth: true, caller: fuzzOperator},
	{route: 2, post: true, queue: "emails", form: "confirmed=yes", auth: true, caller: fuzzViewer},
	{route: 3, post: true, queue: "emails", form: "confirmed=yes&back=//evil.example", auth: true, caller: fuzzOperatorCSRF, csrf: "forged.token"},
	{route: 4, post: true, queue: "emails", form: "id=1&id=2&id=1&confirmed=yes", auth: true, caller: fuzzOperator},
	{route: 4, post: true, queue: "emails", form: "id=1&confirmed=yes", auth: true, caller: fuzzAnonymous},
	{route: 5, post: true, queue: "emails", form: "id=3&id=0&id=abc&confirmed=yes", auth: true, caller: fuzzOperator},
	{route: 5, post: true, queue: "emails", form: "id=3&confirmed=yes", auth: false, caller: fuzzForgedCookie, csrf: "sepp_session=eyJzaWQiOiJ4In0.AAAA"},
	{route: 6, post: true, queue: "emails", form: "id=5&reason=" + strings.Repeat("x", 600) + "&confirmed=yes", auth: true, caller: fuzzOperator},
	{route: 6, post: true, queue: "emails", form: "id=5&reason=why", auth: true, caller: fuzzOperatorCSRF, csrf: ""},
	{route: 6, post: true, queue: "reports", form: "id=8&confirmed=yes", auth: true, caller: fuzzOperator, forwarded: "sepp-2"},
	{route: 8, post: true, form: "name=olivia&password=wrong&next=https://evil.example", auth: true, caller: fuzzAnonymous},
	{route: 8, query: "next=%2F%2Fevil.example%2F", auth: true, caller: fuzzAnonymous},
	{route: 9, post: true, auth: true, caller: fuzzOperator},
	{route: 10, auth: true, caller: fuzzViewer},
	{route: 11, auth: true, caller: fuzzForgedCookie, csrf: "garbage"},
	{route: 12, auth: false, caller: fuzzAnonymous},
	{route: 13, queue: "../templates/layout.html", auth: true, caller: fuzzAnonymous},
	{route: 14, queue: "/queues/emails/dead-letters/requeue", post: true, form: "id=1&confirmed=yes", auth: false, caller: fuzzOperator},
	{route: 14, queue: "/queues/%2e%2e/%2e%2e/etc/passwd", auth: true, caller: fuzzViewer},
	{route: 14, queue: "/queues/emails/jobs/5?x=%zz", auth: true, caller: fuzzOperator},
	{route: 2, post: true, queue: "emails", form: "%zz=%zz&csrf=a&csrf=b", auth: true, caller: fuzzOperator},
}

// fuzzInput is one fuzzed request.
type fuzzInput struct {
	route, caller   uint8
	post, auth      bool
	queue, id       string
	query, form     string
	csrf, forwarded string
}

// fuzzOne serves in to a fresh UI and checks the properties of
// FuzzHandlers. It returns the status and whether the state changed; ok is
// false when net/http would have refused the request before the handler.
func fuzzOne(t *testing.T, users []adminui.User, sessions map[int]fuzzSession, in fuzzInput) (status int, changed, ok bool) {
	t.Helper()
	route, caller, post, auth := in.route, in.caller, in.post, in.auth
	queue, id, query, form, csrf, forwarded := in.queue, in.id, in.query, in.form, in.csrf, in.forwarded
	target := fmt.Sprintf(fuzzRoutes[int(route)%len(fuzzRoutes)], queue, id)
	if query != "" {
		target += "?" + query
	}
	method := http.MethodGet
	if post {
		method = http.MethodPost
	}
	who := int(caller) % fuzzCallers

	// Build the request as the server would parse it off the wire: what
	// net/http refuses never reaches the handler.
	var body strings.Builder
	body.WriteString(form)
	sess, signedIn := sessions[who]
	switch who {
	case fuzzViewer, fuzzOperator:
		fmt.Fprintf(&body, "&csrf=%s", url.QueryEscape(sess.csrf))
	case fuzzOperatorCSRF:
		fmt.Fprintf(&body, "&csrf=%s", url.QueryEscape(csrf))
	}
	var raw strings.Builder
	fmt.Fprintf(&raw, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n", method, target)
	switch {
	case signedIn:
		fmt.Fprintf(&raw, "Cookie: %s\r\n", sess.cookie)
	case who == fuzzForgedCookie:
		fmt.Fprintf(&raw, "Cookie: %s\r\n", csrf)
	}
	if forwarded != "" {
		fmt.Fprintf(&raw, "X-Sepp-Forwarded-By: %s\r\n", forwarded)
	}
	if post {
		fmt.Fprintf(&raw, "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n", body.Len())
	}
	raw.WriteString("\r\n")
	if post {
		raw.WriteString(body.String())
	}
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw.String())))
	if err != nil {
		return 0, false, false // net/http answers 400 before any handler runs
	}
	req.RemoteAddr = "192.0.2.1:40000"

	h, b := fuzzUI(t, t, auth, users)
	b.Tick() // anything time would do is done before the digest is taken
	before, _ := b.StateDigest()
	rec := serve(h, req)

	if rec.Code >= 500 {
		t.Fatalf("%s %q (caller %d, auth %v): status %d for client input:\n%s", method, target, who, auth, rec.Code, rec.Body)
	}
	// A valid CSRF token of the caller's own session, and a role that
	// may act (with sign-in off every visitor is an operator).
	validCSRF := who == fuzzViewer || who == fuzzOperator || (who == fuzzOperatorCSRF && csrf == sess.csrf)
	mayAct := validCSRF && (!auth || who != fuzzViewer)
	after, _ := b.StateDigest()
	if after != before && !mayAct {
		t.Fatalf("%s %q (caller %d, auth %v, status %d) changed the state without a valid session and CSRF token",
			method, target, who, auth, rec.Code)
	}
	return rec.Code, after != before, true
}

// TestFuzzHandlersReachesActions keeps FuzzHandlers honest: the requests it
// builds do reach the actions, so its "state unchanged" checks are not
// vacuous. An operator's valid form pauses the queue; the same form from a
// viewer, without a session, or with a forged token changes nothing.
func TestFuzzHandlersReachesActions(t *testing.T) {
	users := testUsers(t)
	h, _ := fuzzUI(t, nil, true, users)
	sessions := map[int]fuzzSession{
		fuzzViewer:       signInFuzz(t, h, viewerName, viewerPass),
		fuzzOperatorCSRF: signInFuzz(t, h, operatorName, operatorPass),
		fuzzOperator:     signInFuzz(t, h, operatorName, operatorPass),
	}
	pause := fuzzInput{route: 2, post: true, auth: true, queue: "emails", form: "confirmed=yes"}
	requeue := fuzzInput{route: 4, post: true, auth: true, queue: "emails", form: "id=1&id=2&confirmed=yes"}
	tests := []struct {
		name    string
		in      fuzzInput
		caller  uint8
		status  int
		changed bool
	}{
		{"OperatorPauses", pause, fuzzOperator, http.StatusSeeOther, true},
		{"OperatorRequeues", requeue, fuzzOperator, http.StatusSeeOther, true},
		{"OperatorWithOwnTokenTyped", fuzzInput{route: 2, post: true, auth: true, queue: "emails", form: "confirmed=yes", csrf: sessions[fuzzOperatorCSRF].csrf}, fuzzOperatorCSRF, http.StatusSeeOther, true},
		{"OperatorWithAnotherSessionsToken", fuzzInput{route: 2, post: true, auth: true, queue: "emails", form: "confirmed=yes", csrf: sessions[fuzzOperator].csrf}, fuzzOperatorCSRF, http.StatusForbidden, false},
		{"ViewerRefused", pause, fuzzViewer, http.StatusForbidden, false},
		{"AnonymousRefused", requeue, fuzzAnonymous, http.StatusForbidden, false},
		{"ForgedCookieRefused", fuzzInput{route: 4, post: true, auth: true, queue: "emails", form: "id=1&confirmed=yes", csrf: sessions[fuzzOperator].cookie}, fuzzForgedCookie, http.StatusForbidden, false},
		{"BadIDIsBadRequest", fuzzInput{route: 4, post: true, auth: true, queue: "emails", form: "id=abc&confirmed=yes"}, fuzzOperator, http.StatusBadRequest, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.caller = tt.caller
			status, changed, ok := fuzzOne(t, users, sessions, in)
			if !ok {
				t.Fatal("request refused by net/http")
			}
			if status != tt.status || changed != tt.changed {
				t.Fatalf("status %d, changed %v; want %d, %v", status, changed, tt.status, tt.changed)
			}
		})
	}
}

var updateFuzzCorpus = flag.Bool("update-fuzz-corpus", false, "rewrite testdata/fuzz/FuzzHandlers from fuzzSeeds")

// corpusFile encodes in as a go test fuzz v1 file of FuzzHandlers's
// arguments, in order.
func corpusFile(in fuzzInput) string {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	fmt.Fprintf(&b, "byte(%q)\nbyte(%q)\n", in.route, in.caller)
	fmt.Fprintf(&b, "bool(%v)\nbool(%v)\n", in.post, in.auth)
	for _, v := range []string{in.queue, in.id, in.query, in.form, in.csrf, in.forwarded} {
		fmt.Fprintf(&b, "string(%q)\n", v)
	}
	return b.String()
}

// TestFuzzHandlersCorpus keeps the committed corpus equal to fuzzSeeds; run
// with -update-fuzz-corpus to rewrite it after changing them.
func TestFuzzHandlersCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzHandlers")
	want := map[string]string{}
	for i, in := range fuzzSeeds {
		want[fmt.Sprintf("seed_%02d", i)] = corpusFile(in)
	}
	if *updateFuzzCorpus {
		// Only the seeds are rewritten: the regression_* inputs the fuzzer
		// found stay.
		old, err := filepath.Glob(filepath.Join(dir, "seed_*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range want {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, body := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != body {
			t.Fatalf("corpus file %s is stale or missing (%v); run go test ./rpc/adminui -run TestFuzzHandlersCorpus -update-fuzz-corpus", name, err)
		}
	}
}
