package adminui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

const (
	sessionCookie = "sepp_session"
	flashCookie   = "sepp_flash"
	// forwardedHeader marks an action a follower forwarded; the value is the
	// follower's node id. A node never forwards a request that carries it.
	forwardedHeader = "X-Sepp-Forwarded-By"
	csrfField       = "csrf"
	maxFormBytes    = 1 << 20
)

// Domain-separation labels: one key signs three kinds of token, and none may
// pass for another.
const (
	labelSession = "sepp-admin-session\x00"
	labelCSRF    = "sepp-admin-csrf\x00"
	labelFlash   = "sepp-admin-flash\x00"
)

// session is the signed content of the session cookie. Every visitor has
// one, signed in or not, so that even the sign-in form and (with auth off)
// every action carries a CSRF token bound to it.
type session struct {
	ID      string `json:"sid"`
	User    string `json:"u,omitempty"` // empty until signed in
	Expires int64  `json:"exp"`         // unix seconds
}

// request is what the middleware learned about the caller.
type request struct {
	sess      session
	sessionOK bool // the request brought a valid session cookie
	signedIn  bool // auth on: a configured user; auth off: always true
	user      string
	role      Role
	csrf      string
	// forwardedBy is the follower's node id on an action forwarded to us.
	forwardedBy string
	flash       *flash
}

func (q *request) canAct() bool { return q.role == RoleOperator }

// sign returns payload.signature, both base64url.
func (h *handler) sign(label string, payload []byte) string {
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(h.mac(label, p))
}

func (h *handler) mac(label, data string) []byte {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(label))
	m.Write([]byte(data))
	return m.Sum(nil)
}

// verify returns the payload of a token made by sign with the same label.
func (h *handler) verify(label, token string) ([]byte, bool) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok {
		return nil, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, h.mac(label, p)) {
		return nil, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return nil, false
	}
	return payload, true
}

func (h *handler) csrfToken(s session) string {
	return base64.RawURLEncoding.EncodeToString(h.mac(labelCSRF, s.ID))
}

func (h *handler) validCSRF(s session, token string) bool {
	want := h.csrfToken(s)
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1
}

func newSessionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms (Go 1.24+ panics
		// rather than return an error); keep the signature honest anyway.
		panic("adminui: crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// readSession returns the caller's session when its cookie is present,
// correctly signed, unexpired and not signed out.
func (h *handler) readSession(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	payload, ok := h.verify(labelSession, c.Value)
	if !ok {
		return session{}, false
	}
	var s session
	if err := json.Unmarshal(payload, &s); err != nil || s.ID == "" {
		return session{}, false
	}
	now := h.clock()
	if now.Unix() >= s.Expires || h.revoked.has(s.ID, now) {
		return session{}, false
	}
	return s, true
}

func (h *handler) newSession(user string) session {
	return session{ID: newSessionID(), User: user, Expires: h.clock().Add(h.ttl).Unix()}
}

func (h *handler) setSession(w http.ResponseWriter, s session) {
	payload, _ := json.Marshal(s) // a struct of strings and an int: cannot fail
	http.SetCookie(w, &http.Cookie{
		Name:  sessionCookie,
		Value: h.sign(labelSession, payload),
		Path:  "/",
		// MaxAge, not Expires: the browser's clock is not ours (and in
		// tests ours is a fake); the signed expiry inside is what counts.
		MaxAge:   int(h.ttl / time.Second),
		HttpOnly: true,
		Secure:   h.secure,
		SameSite: http.SameSiteStrictMode,
	})
}

func (h *handler) clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: h.secure, SameSite: http.SameSiteStrictMode,
	})
}

// identify reads or starts the caller's session and works out who they are.
func (h *handler) identify(w http.ResponseWriter, r *http.Request) *request {
	q := &request{forwardedBy: r.Header.Get(forwardedHeader)}
	s, ok := h.readSession(r)
	q.sessionOK = ok
	if !ok {
		s = h.newSession("")
		if q.forwardedBy == "" {
			h.setSession(w, s)
		}
	}
	q.sess = s
	q.csrf = h.csrfToken(s)
	switch {
	case !h.auth:
		q.signedIn, q.role = true, RoleOperator
	case s.User != "":
		// The role comes from the running config, not the cookie: a user
		// removed from the config is signed out, a demoted one demoted.
		if u, known := h.users[s.User]; known {
			q.signedIn, q.user, q.role = true, u.Name, u.Role
		}
	}
	if q.forwardedBy == "" && r.Method == http.MethodGet {
		q.flash = h.takeFlash(w, r)
	}
	return q
}

// checkPassword reports whether name and pw match a configured user. It
// compares the name against every user in constant time and always runs one
// bcrypt comparison, so the time taken does not tell whether the user exists.
func (h *handler) checkPassword(name, pw string) (User, bool) {
	var match User
	found := 0
	for _, u := range h.users {
		if subtle.ConstantTimeCompare([]byte(u.Name), []byte(name)) == 1 {
			match, found = u, 1
		}
	}
	hash := h.dummyHash
	if found == 1 {
		hash = []byte(match.PasswordHash)
	}
	if len(pw) > maxPasswordBytes {
		pw = "" // never equal to a hash made by HashPassword; keeps bcrypt happy
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(pw))
	if err != nil || found == 0 {
		return User{}, false
	}
	return match, true
}

// safeNext returns next when it is a path on this site, else "/".
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}

func (h *handler) loginPage(w http.ResponseWriter, r *http.Request, q *request) {
	if q.signedIn {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	h.render(w, r, q, http.StatusOK, "login", "Sign in", "", loginView{Next: safeNext(r.URL.Query().Get("next"))})
}

type loginView struct {
	Next  string
	Name  string
	Error string
}

func (h *handler) login(w http.ResponseWriter, r *http.Request, q *request) {
	next := safeNext(r.PostForm.Get("next"))
	if !h.auth {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	name := r.PostForm.Get("name")
	u, ok := h.checkPassword(name, r.PostForm.Get("password"))
	if !ok {
		h.log.Warn("admin sign-in refused", "user", name, "remote", r.RemoteAddr)
		h.render(w, r, q, http.StatusUnauthorized, "login", "Sign in", "",
			loginView{Next: next, Name: name, Error: "Wrong name or password."})
		return
	}
	// A fresh session id on sign-in: a session id planted before sign-in
	// (session fixation) is worthless afterwards.
	h.revoked.add(q.sess.ID, time.Unix(q.sess.Expires, 0))
	h.setSession(w, h.newSession(u.Name))
	h.log.Info("admin signed in", "user", u.Name, "role", u.Role, "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *handler) logout(w http.ResponseWriter, r *http.Request, q *request) {
	h.revoked.add(q.sess.ID, time.Unix(q.sess.Expires, 0))
	h.clearCookie(w, sessionCookie)
	if q.user != "" {
		h.log.Info("admin signed out", "user", q.user)
	}
	target := "/login"
	if !h.auth {
		target = "/"
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// revocations remembers signed-out session ids on this node until they
// would have expired anyway. Sessions are stateless signed cookies, so this
// is what makes signing out final (on this node; another node sharing the
// key honours the cookie until it expires, and the browser has dropped it).
type revocations struct {
	mu  sync.Mutex
	ids map[string]time.Time
}

func newRevocations() *revocations { return &revocations{ids: make(map[string]time.Time)} }

func (v *revocations) add(id string, expires time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.ids[id] = expires
}

func (v *revocations) has(id string, now time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for k, exp := range v.ids { // prune: the set stays as small as the sign-outs of one TTL
		if !now.Before(exp) {
			delete(v.ids, k)
		}
	}
	_, ok := v.ids[id]
	return ok
}

// flash is a one-shot result message shown on the page after an action.
type flash struct {
	Kind string `json:"k"` // "ok", "partial" or "error"
	Text string `json:"t"`
}

func (h *handler) setFlash(w http.ResponseWriter, f flash) {
	payload, _ := json.Marshal(f)
	http.SetCookie(w, &http.Cookie{
		Name: flashCookie, Value: h.sign(labelFlash, payload), Path: "/", MaxAge: 60,
		HttpOnly: true, Secure: h.secure, SameSite: http.SameSiteStrictMode,
	})
}

func (h *handler) takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	h.clearCookie(w, flashCookie)
	payload, ok := h.verify(labelFlash, c.Value)
	if !ok {
		return nil
	}
	var f flash
	if json.Unmarshal(payload, &f) != nil || f.Text == "" {
		return nil
	}
	return &f
}
