package adminui

import (
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/crypto/bcrypt"

	"github.com/sepp-io/sepp/rpc"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Role is what a signed-in user may do.
type Role string

// The roles of the admin UI. A viewer sees every page; an operator can also
// requeue, delete and dead-letter jobs and pause or resume queues.
const (
	RoleViewer   Role = "viewer"
	RoleOperator Role = "operator"
)

// User is one sign-in from the config ([[admin.users]]).
type User struct {
	Name         string
	PasswordHash string // bcrypt, as made by HashPassword
	Role         Role
}

// Options configure the UI. The zero value serves without sign-in, with a
// random session key, the wall clock and a null logger.
type Options struct {
	// Auth turns sign-in on. Off, every visitor is an operator: the caller
	// must then keep the listener on loopback unless told otherwise.
	Auth  bool
	Users []User

	// SessionKey signs session cookies, CSRF tokens and flash messages; at
	// least 32 bytes. Empty means a random key made at start: sessions then
	// end when the node restarts, and only this node accepts them, so a
	// follower cannot forward an action to the leader on the user's behalf
	// (it tells the user to act on the leader's UI). Give every node of a
	// cluster the same key to make one sign-in valid on every node.
	SessionKey []byte
	// SessionTTL is how long a sign-in lasts; 0 means 12 hours.
	SessionTTL time.Duration
	// SecureCookies sets the Secure attribute; turn it on when the UI is
	// served over TLS.
	SecureCookies bool

	// ForwardScheme is how a follower reaches the leader's admin UI, "http"
	// (the default) or "https"; ForwardClient makes those requests (nil: a
	// client with a 15 second timeout).
	ForwardScheme string
	ForwardClient *http.Client

	Logger hclog.Logger
	// Rates is the node's rate ring, sampled in the background by its
	// Run; nil makes a ring of the default size that is sampled only when
	// a page is loaded (charts then start with the first visit).
	Rates *RateRing

	// Version and StartedAt are shown on the node page.
	Version   string
	StartedAt time.Time

	// Clock is the time source for sessions, ages and rates; nil means
	// time.Now.
	Clock func() time.Time
}

const (
	minSessionKeyBytes = 32
	defaultSessionTTL  = 12 * time.Hour
	maxPasswordBytes   = 72 // bcrypt ignores anything past 72 bytes
)

// ErrOptions is wrapped by every error New returns for bad Options.
var ErrOptions = errors.New("adminui: invalid options")

func optionError(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrOptions, field, fmt.Sprintf(format, args...))
}

// HashPassword returns the bcrypt hash of pw for the config's
// admin.users[].password_hash (the `sepp hash-password` command).
func HashPassword(pw string) (string, error) {
	if pw == "" {
		return "", errors.New("password: must not be empty")
	}
	if len(pw) > maxPasswordBytes {
		return "", fmt.Errorf("password: at most %d bytes (bcrypt ignores the rest), got %d", maxPasswordBytes, len(pw))
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// New returns the admin UI over b. It checks opts and fails with an error
// naming the field at fault.
func New(b rpc.Backend, opts Options) (http.Handler, error) {
	if b == nil {
		return nil, optionError("backend", "must not be nil")
	}
	h := &handler{
		backend: b,
		auth:    opts.Auth,
		users:   make(map[string]User, len(opts.Users)),
		ttl:     opts.SessionTTL,
		secure:  opts.SecureCookies,
		log:     opts.Logger,
		clock:   opts.Clock,
		scheme:  opts.ForwardScheme,
		client:  opts.ForwardClient,
		ring:    opts.Rates,
		version: opts.Version,
		started: opts.StartedAt,
		revoked: newRevocations(),
	}
	if h.ring == nil {
		h.ring = NewRateRing(0, 0)
	}
	if h.log == nil {
		h.log = hclog.NewNullLogger()
	}
	if h.clock == nil {
		h.clock = time.Now
	}
	if h.ttl == 0 {
		h.ttl = defaultSessionTTL
	}
	if h.ttl < 0 {
		return nil, optionError("session_ttl", "must not be negative, got %s", h.ttl)
	}
	switch h.scheme {
	case "":
		h.scheme = "http"
	case "http", "https":
	default:
		return nil, optionError("forward_scheme", "must be \"http\" or \"https\", got %q", h.scheme)
	}
	if h.client == nil {
		h.client = &http.Client{Timeout: 15 * time.Second}
	}
	for i, u := range opts.Users {
		field := fmt.Sprintf("users[%d]", i)
		if u.Name == "" {
			return nil, optionError(field+".name", "must be set")
		}
		if _, dup := h.users[u.Name]; dup {
			return nil, optionError(field+".name", "%q appears twice", u.Name)
		}
		if u.Role != RoleViewer && u.Role != RoleOperator {
			return nil, optionError(field+".role", "must be %q or %q, got %q", RoleViewer, RoleOperator, u.Role)
		}
		if _, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil {
			return nil, optionError(field+".password_hash", "not a bcrypt hash (make one with `sepp hash-password`): %v", err)
		}
		h.users[u.Name] = u
	}
	if opts.Auth && len(h.users) == 0 {
		return nil, optionError("users", "auth is on but no user is configured: nobody could sign in")
	}
	switch {
	case len(opts.SessionKey) == 0:
		h.key = make([]byte, minSessionKeyBytes)
		if _, err := rand.Read(h.key); err != nil {
			return nil, fmt.Errorf("adminui: make session key: %w", err)
		}
	case len(opts.SessionKey) < minSessionKeyBytes:
		return nil, optionError("session_key", "at least %d bytes, got %d", minSessionKeyBytes, len(opts.SessionKey))
	default:
		h.key = append([]byte(nil), opts.SessionKey...)
	}
	if opts.Auth {
		// Signing in as an unknown user still runs one bcrypt comparison,
		// against this hash of the users' highest cost, so the answer takes
		// as long as for a known user.
		cost := bcrypt.MinCost
		for _, u := range h.users {
			c, _ := bcrypt.Cost([]byte(u.PasswordHash)) // checked above
			cost = max(cost, c)
		}
		dummy, err := bcrypt.GenerateFromPassword([]byte("sepp-no-such-user"), cost)
		if err != nil {
			return nil, fmt.Errorf("adminui: make timing hash: %w", err)
		}
		h.dummyHash = dummy
	}
	tpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	h.tpl = tpl
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("adminui: static assets: %w", err)
	}
	files := http.FileServerFS(static)
	// http.FileServerFS answers 500 for a name fs.FS cannot hold (invalid
	// UTF-8, "..", empty elements); for a visitor that is simply no such file.
	h.static = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name != "" && !fs.ValidPath(name) {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
	return h.routes(), nil
}
