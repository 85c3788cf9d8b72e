package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Token is one configured credential.
type Token struct {
	// Name identifies the token in logs and metrics (never the token).
	Name string
	// SHA256 is the hash of the token.
	SHA256 [sha256.Size]byte
	// Roles are what it may do.
	Roles []Role
}

// Options configure New.
type Options struct {
	// Logger receives refusals at debug level (method, peer, token name;
	// never the token). nil discards.
	Logger hclog.Logger
	// Registerer receives the decision counter; nil registers none.
	Registerer prometheus.Registerer
}

// Authorizer checks bearer tokens against the configured ones.
type Authorizer struct {
	tokens    []Token
	log       hclog.Logger
	decisions *prometheus.CounterVec
}

// Results of a decision, the "result" label of sepp_auth_decisions_total.
const (
	resultAllowed         = "allowed"
	resultUnauthenticated = "unauthenticated"
	resultDenied          = "permission_denied"
	resultOpen            = "open"
)

// New returns an Authorizer over tokens; it fails on a token without a
// name, a duplicated name or hash, or a token without roles.
func New(tokens []Token, opts Options) (*Authorizer, error) {
	names := map[string]bool{}
	hashes := map[[sha256.Size]byte]bool{}
	for i, t := range tokens {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("auth: token %d has no name", i)
		case names[t.Name]:
			return nil, fmt.Errorf("auth: token name %q appears twice", t.Name)
		case hashes[t.SHA256]:
			return nil, fmt.Errorf("auth: token %q has the same hash as another token", t.Name)
		case len(t.Roles) == 0:
			return nil, fmt.Errorf("auth: token %q has no roles", t.Name)
		}
		names[t.Name], hashes[t.SHA256] = true, true
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	a := &Authorizer{
		tokens: append([]Token(nil), tokens...),
		log:    log,
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sepp_auth_decisions_total",
			Help: "Authorization decisions on gRPC calls, by method, result (allowed, unauthenticated, permission_denied, open) and token name.",
		}, []string{"method", "result", "token"}),
	}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(a.decisions); err != nil {
			return nil, fmt.Errorf("auth: register metrics: %w", err)
		}
	}
	return a, nil
}

// errMalformed is a present but unusable authorization header.
var errMalformed = errors.New(`the authorization metadata must be "Bearer <token>"`)

// bearer extracts the token of the call, or "" when there is none.
func bearer(ctx context.Context) (string, error) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return "", nil
	}
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return "", nil
	}
	if len(vals) > 1 {
		return "", errMalformed
	}
	scheme, tok, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(tok) == "" {
		return "", errMalformed
	}
	return strings.TrimSpace(tok), nil
}

// lookup finds the token whose hash matches. It compares with every
// configured hash, in constant time each, and does not stop at a match, so
// the time taken says nothing about which token (if any) matched.
func (a *Authorizer) lookup(token string) *Token {
	sum := sha256.Sum256([]byte(token))
	var found *Token
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], a.tokens[i].SHA256[:]) == 1 {
			found = &a.tokens[i]
		}
	}
	return found
}

// Authorize decides one call of method with ctx's metadata: nil when
// allowed, else a status error (Unauthenticated or PermissionDenied).
func (a *Authorizer) Authorize(ctx context.Context, method string) error {
	_, err := a.authorize(ctx, method)
	return err
}

// authorize is Authorize that also names the token of an allowed call of an
// operator or admin method (the actions an audit record names), else "".
func (a *Authorizer) authorize(ctx context.Context, method string) (string, error) {
	if isOpen(method) {
		a.decisions.WithLabelValues(method, resultOpen, "").Inc()
		return "", nil
	}
	tok, err := bearer(ctx)
	if err != nil {
		a.refuse(method, resultUnauthenticated, "")
		return "", status.Error(codes.Unauthenticated, err.Error())
	}
	if tok == "" {
		a.refuse(method, resultUnauthenticated, "")
		return "", status.Error(codes.Unauthenticated, `this server requires a bearer token: send "authorization: Bearer <token>" (the CLI: --token or SEPP_TOKEN)`)
	}
	t := a.lookup(tok)
	if t == nil {
		a.refuse(method, resultUnauthenticated, "")
		return "", status.Error(codes.Unauthenticated, "unknown token")
	}
	need, known := MethodRoles[method]
	if !known {
		a.refuse(method, resultDenied, t.Name)
		return "", status.Errorf(codes.PermissionDenied, "no role may call %s", method)
	}
	for _, r := range t.Roles {
		if r == need {
			a.decisions.WithLabelValues(method, resultAllowed, t.Name).Inc()
			if need == RoleOperator || need == RoleAdmin {
				return t.Name, nil
			}
			return "", nil
		}
	}
	a.refuse(method, resultDenied, t.Name)
	return "", status.Errorf(codes.PermissionDenied, "token %q lacks role %q needed for %s", t.Name, need, method)
}

func (a *Authorizer) refuse(method, result, name string) {
	a.decisions.WithLabelValues(method, result, name).Inc()
	a.log.Debug("call refused", "method", method, "result", result, "token_name", name)
}

// UnaryInterceptor authorizes unary calls.
func (a *Authorizer) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		name, err := a.authorize(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		if name != "" {
			ctx = withCaller(ctx, name)
		}
		return handler(ctx, req)
	}
}

// StreamInterceptor authorizes streaming calls.
func (a *Authorizer) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := a.Authorize(ss.Context(), info.FullMethod); err != nil {
			return err
		}
		return handler(srv, ss)
	}
}
