package adminui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
)

// handler serves every page and action. It keeps no state of the queues:
// each page reads the engine afresh through the Backend.
type handler struct {
	backend   rpc.Backend
	auth      bool
	users     map[string]User
	key       []byte
	dummyHash []byte
	ttl       time.Duration
	secure    bool
	log       hclog.Logger
	clock     func() time.Time
	scheme    string
	client    *http.Client
	ring      *RateRing
	version   string
	started   time.Time
	revoked   *revocations
	tpl       map[string]*template.Template
	static    http.Handler
}

// access is what a route demands of the caller.
type access int

const (
	accessPublic  access = iota // anyone (the sign-in form)
	accessView                  // a signed-in user of any role
	accessOperate               // a signed-in operator
)

type routeFunc func(http.ResponseWriter, *http.Request, *request)

func (h *handler) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", h.static))
	mux.HandleFunc("GET /login", h.with(accessPublic, h.loginPage))
	mux.HandleFunc("POST /login", h.with(accessPublic, h.login))
	mux.HandleFunc("POST /logout", h.with(accessView, h.logout))
	mux.HandleFunc("GET /{$}", h.with(accessView, func(w http.ResponseWriter, r *http.Request, _ *request) {
		http.Redirect(w, r, "/queues", http.StatusSeeOther)
	}))
	mux.HandleFunc("GET /cluster", h.with(accessView, h.clusterPage))
	mux.HandleFunc("GET /node", h.with(accessView, h.nodePage))
	mux.HandleFunc("GET /redrive", h.with(accessView, h.redrivePage))
	mux.HandleFunc("POST /redrive/start", h.with(accessOperate, h.redriveStart))
	mux.HandleFunc("POST /redrive/{id}/{verb}", h.with(accessOperate, h.redriveState))
	mux.HandleFunc("GET /queues", h.with(accessView, h.queuesPage))
	mux.HandleFunc("GET /queues/{queue}", h.with(accessView, h.queuePage))
	mux.HandleFunc("GET /queues/{queue}/jobs/{id}", h.with(accessView, h.jobPage))
	mux.HandleFunc("GET /queues/{queue}/dead-letters/{id}", h.with(accessView, h.deadLetterPage))
	mux.HandleFunc("POST /queues/{queue}/pause", h.with(accessOperate, h.pause))
	mux.HandleFunc("POST /queues/{queue}/resume", h.with(accessOperate, h.resume))
	mux.HandleFunc("POST /queues/create", h.with(accessOperate, h.createQueue))
	mux.HandleFunc("POST /queues/{queue}/limits", h.with(accessOperate, h.setReserveLimits))
	mux.HandleFunc("POST /queues/{queue}/tags", h.with(accessOperate, h.setTags))
	mux.HandleFunc("POST /queues/{queue}/purge", h.with(accessOperate, h.purgeQueue))
	mux.HandleFunc("POST /queues/{queue}/delete", h.with(accessOperate, h.deleteQueue))
	mux.HandleFunc("POST /queues/{queue}/dead-letters/requeue", h.with(accessOperate, h.requeue))
	mux.HandleFunc("POST /queues/{queue}/dead-letters/delete", h.with(accessOperate, h.delete))
	mux.HandleFunc("POST /queues/{queue}/jobs/dead-letter", h.with(accessOperate, h.deadLetter))
	mux.HandleFunc("POST /queues/{queue}/jobs/act", h.with(accessOperate, h.jobsAct))
	mux.HandleFunc("POST /queues/{queue}/dead-letters/act-all", h.with(accessOperate, h.deadActAll))
	h.scheduleRoutes(mux) // schedules.go
	mux.HandleFunc("/", h.with(accessView, func(w http.ResponseWriter, r *http.Request, q *request) {
		h.fail(w, r, q, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
	}))
	return securityHeaders(mux)
}

// securityHeaders forbid framing, sniffing and any script or style not
// served by this handler, and keep pages out of shared caches.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// with wraps a route in the checks every request passes, in this order:
// session, CSRF token on a POST, sign-in, role. The server enforces the
// roles here; hiding buttons in the page is only a courtesy.
func (h *handler) with(level access, fn routeFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		q := h.identify(w, r)
		if q.forwardedBy != "" && !q.sessionOK {
			h.fail(w, r, q, http.StatusUnauthorized, "This node does not accept the forwarded session: the nodes sign sessions with different keys.")
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil {
				h.fail(w, r, q, http.StatusBadRequest, "The form could not be read: "+err.Error())
				return
			}
			if !h.validCSRF(q.sess, r.PostForm.Get(csrfField)) {
				h.fail(w, r, q, http.StatusForbidden, "The form's security token is missing or out of date (the session changed or expired). Reload the page and try again.")
				return
			}
		}
		if level >= accessView && !q.signedIn {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			h.fail(w, r, q, http.StatusUnauthorized, "Sign in first.")
			return
		}
		if level >= accessOperate && !q.canAct() {
			h.log.Warn("admin action refused: viewer", "user", q.user, "path", r.URL.Path)
			h.fail(w, r, q, http.StatusForbidden, "Your role is viewer: you can look at everything but not change anything. Requeue, delete, dead-letter, pause and resume, and creating, purging and deleting queues need the operator role.")
			return
		}
		fn(w, r, q)
	}
}

// page is what the layout template needs, around a page's own data.
type page struct {
	Title     string
	Nav       string // "queues" or "cluster": the highlighted tab
	Self      cluster.NodeInfo
	Leader    cluster.NodeInfo
	IsLeader  bool
	Stale     bool // the data was read from this follower's own state
	LeaderURL string
	Auth      bool
	SignedIn  bool
	User      string
	Role      Role
	CanAct    bool
	CSRF      string
	Flash     *flash
	Now       time.Time
	Data      any
}

func (h *handler) newPage(r *http.Request, q *request, title, nav string, data any) page {
	self, leader := h.backend.Self(), h.backend.Leader()
	p := page{
		Title: title, Nav: nav, Self: self, Leader: leader,
		IsLeader: self.ID != "" && self.ID == leader.ID,
		Auth:     h.auth, SignedIn: q.signedIn, User: q.user, Role: q.role,
		CanAct: q.canAct(), CSRF: q.csrf, Flash: q.flash, Now: h.clock(), Data: data,
	}
	if leader.HTTPAddr != "" && !p.IsLeader {
		p.LeaderURL = h.scheme + "://" + leader.HTTPAddr + r.URL.RequestURI()
	}
	return p
}

// render executes a page into a buffer first, so a template error becomes a
// clean 500 instead of half a page.
func (h *handler) render(w http.ResponseWriter, r *http.Request, q *request, status int, name, title, nav string, data any) {
	h.renderPage(w, status, name, h.newPage(r, q, title, nav, data))
}

func (h *handler) renderPage(w http.ResponseWriter, status int, name string, p page) {
	t, ok := h.tpl[name]
	if !ok {
		h.log.Error("admin ui: no such template", "template", name)
		http.Error(w, "internal error: missing template", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		h.log.Error("admin ui: render failed", "template", name, "error", err)
		http.Error(w, "internal error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

type errorView struct {
	Status  int
	Message string
}

// fail answers with an error page, or with JSON to a forwarding follower.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, q *request, status int, msg string) {
	if q.forwardedBy != "" {
		writeJSON(w, status, flash{Kind: "error", Text: msg})
		return
	}
	h.render(w, r, q, status, "error", http.StatusText(status), "", errorView{Status: status, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// read runs fn against the engine: consistently when this node leads, else
// against the state this follower has applied (stale is then true and the
// page says so). fn may run twice and must start from scratch each time.
func (h *handler) read(ctx context.Context, fn func(e engine.View) error) (stale bool, err error) {
	err = h.backend.Read(ctx, false, fn)
	if errors.Is(err, cluster.ErrNotLeader) || errors.Is(err, cluster.ErrNoLeader) {
		return true, h.backend.Read(ctx, true, fn)
	}
	return false, err
}

// readFailed turns a read error into an error page.
func (h *handler) readFailed(w http.ResponseWriter, r *http.Request, q *request, err error) {
	if errors.Is(err, engine.ErrNotFound) {
		h.fail(w, r, q, http.StatusNotFound, "Not found: "+err.Error()+".")
		return
	}
	// A malformed name or id in the URL is the visitor's mistake, not the node's.
	if errors.Is(err, engine.ErrInvalidArgument) {
		h.fail(w, r, q, http.StatusBadRequest, "Bad request: "+err.Error()+".")
		return
	}
	h.log.Error("admin ui: read failed", "path", r.URL.Path, "error", err)
	h.fail(w, r, q, http.StatusServiceUnavailable, "This node could not read its state: "+err.Error()+".")
}
