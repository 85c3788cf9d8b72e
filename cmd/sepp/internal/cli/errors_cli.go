package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"

	"github.com/sepp-io/sepp/client"
)

// Error classes: the first words of every failure a command prints, after
// the one "sepp:" prefix main adds. They say what went wrong in terms an
// operator acts on; the exit code (cli.go) says the same to a script.
const (
	ClassUsage           = "usage"
	ClassUnreachable     = "unreachable"       // no node answered: refused, no route, no such host
	ClassUnavailable     = "unavailable"       // a node answered, but no leader within --timeout
	ClassTLS             = "TLS/certificate"   // the handshake failed: CA, client certificate, name
	ClassPermission      = "permission denied" // the caller is known but its role may not do this
	ClassUnauthenticated = "unauthenticated"   // no token, or one the server does not accept
	ClassNotFound        = "not found"
	ClassLeaseLost       = "lease lost"
	ClassWrongState      = "wrong state"
	ClassInvalid         = "invalid"        // the server rejected a field; the message names it and the limit
	ClassLimit           = "limit reached"  // a server limit refused it (a full queue, the memory budget, a rate)
	ClassAlreadyExists   = "already exists" // a queue of that name, or a unique job's key held by another job
	ClassUnknownOutcome  = "unknown outcome"
	ClassCanceled        = "canceled"
	ClassUnsupported     = "unsupported" // the server does not implement the call (an older version)
	ClassServerError     = "server error"
	ClassError           = "error"
)

// codeClass is the class and exit code of one gRPC status code.
type codeClass struct {
	class string
	exit  int
}

// codeClasses is the one table from a gRPC status code to what the CLI
// prints and the exit code it returns (docs/api-and-cli.md lists it). A
// FailedPrecondition is a lost lease or a wrong state, as the client tells
// them apart (classify); Aborted is an unknown outcome only for a write.
var codeClasses = map[codes.Code]codeClass{
	codes.Canceled:           {ClassCanceled, ExitError},
	codes.Unknown:            {ClassServerError, ExitError},
	codes.InvalidArgument:    {ClassInvalid, ExitRejected},
	codes.DeadlineExceeded:   {ClassUnavailable, ExitUnavailable},
	codes.NotFound:           {ClassNotFound, ExitNotFound},
	codes.AlreadyExists:      {ClassAlreadyExists, ExitRejected},
	codes.PermissionDenied:   {ClassPermission, ExitError},
	codes.ResourceExhausted:  {ClassLimit, ExitRejected},
	codes.FailedPrecondition: {ClassWrongState, ExitLeaseLost},
	codes.Aborted:            {ClassUnavailable, ExitUnavailable},
	codes.OutOfRange:         {ClassInvalid, ExitRejected},
	codes.Unimplemented:      {ClassUnsupported, ExitError},
	codes.Internal:           {ClassServerError, ExitError},
	codes.Unavailable:        {ClassUnavailable, ExitUnavailable},
	codes.DataLoss:           {ClassServerError, ExitError},
	codes.Unauthenticated:    {ClassUnauthenticated, ExitError},
}

// sentinelCodes gives a client error without a server status (the client
// refused the call itself, or a context ended) the code it stands for, so
// it is labelled by the same table. Order matters: the first match wins,
// and a detail such as a *client.FieldError also matches
// client.ErrInvalidArgument, so the more specific kinds come first.
var sentinelCodes = []struct {
	err  error
	code codes.Code
}{
	{client.ErrAlreadyExists, codes.AlreadyExists},
	{client.ErrResourceExhausted, codes.ResourceExhausted},
	{client.ErrUnauthenticated, codes.Unauthenticated},
	{client.ErrPermissionDenied, codes.PermissionDenied},
	{client.ErrNotFound, codes.NotFound},
	{client.ErrLeaseLost, codes.FailedPrecondition},
	{client.ErrWrongState, codes.FailedPrecondition},
	{client.ErrInvalidArgument, codes.InvalidArgument},
	{client.ErrUnavailable, codes.Unavailable},
	{client.ErrUnknownOutcome, codes.Unavailable},
	{context.DeadlineExceeded, codes.DeadlineExceeded},
	{context.Canceled, codes.Canceled},
	{client.ErrInternal, codes.Internal},
}

// annotReadOnly marks a command that changes nothing on the server. A read
// that failed has no "unknown outcome": whatever happened, nothing applied,
// so its failure is reported by its cause (unreachable, TLS, ...).
const annotReadOnly = "sepp.io/read-only"

// Failure is a classified command failure: main prints "sepp: " and its
// Error, and exits with ExitCode.
type Failure struct {
	Class string
	Code  int
	Err   error
}

func (f *Failure) Error() string { return f.Class + ": " + describe(f.Err) }
func (f *Failure) Unwrap() error { return f.Err }

// ExitCode is read by main (through an interface) to pick the exit status.
func (f *Failure) ExitCode() int { return f.Code }

// classify picks the class and exit code of err. write says whether the
// command may change server state: only then can an outcome be unknown.
func classify(err error, write bool) (class string, code int) {
	var ce *CodeError
	var f *Failure
	msg := err.Error()
	switch {
	case errors.As(err, &f):
		return f.Class, f.Code
	case errors.As(err, &ce):
		if ce.Code == ExitUsage {
			return ClassUsage, ExitUsage
		}
		c, _ := classify(ce.Err, write)
		return c, ce.Code
	case errors.Is(err, client.ErrUnknownOutcome) && write:
		return ClassUnknownOutcome, ExitUnavailable
	case isTLSFailure(msg):
		return ClassTLS, ExitError
	case strings.Contains(msg, "connection error: desc = "):
		return ClassUnreachable, ExitUnavailable
	}
	c, ok := statusCode(err)
	if !ok {
		return ClassError, ExitError
	}
	if c == codes.FailedPrecondition && errors.Is(err, client.ErrLeaseLost) {
		return ClassLeaseLost, ExitLeaseLost
	}
	cc := codeClasses[c]
	return cc.class, cc.exit
}

// statusCode is the gRPC code err carries: the server's status when there is
// one, else the code its client sentinel stands for.
func statusCode(err error) (codes.Code, bool) {
	var ce *client.Error
	if errors.As(err, &ce) && ce.Code != codes.OK {
		if _, ok := codeClasses[ce.Code]; ok {
			return ce.Code, true
		}
	}
	for _, s := range sentinelCodes {
		if errors.Is(err, s.err) {
			return s.code, true
		}
	}
	return codes.OK, false
}

// isTLSFailure recognises a failed TLS handshake. gRPC hands it over as a
// status message, not a typed error, so the crypto/tls and crypto/x509
// wording is what there is to go by.
func isTLSFailure(msg string) bool {
	for _, s := range []string{"authentication handshake failed", "x509: ", "tls: ", "first record does not look like a TLS handshake"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// describe is err's message without the client's own "sepp: " prefixes
// (main prints one) and with grpc-go's transport wrapping reduced to the
// cause, e.g. "dial tcp 127.0.0.1:5: connect: connection refused".
func describe(err error) string {
	msg := strings.ReplaceAll(err.Error(), "sepp: ", "")
	for _, wrap := range []string{"rpc error: code = Unavailable desc = connection error: desc = ", "connection error: desc = "} {
		i := strings.Index(msg, wrap)
		if i < 0 {
			continue
		}
		rest := msg[i+len(wrap):]
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			if inner, err := strconv.Unquote(q); err == nil {
				rest = inner + rest[len(q):]
			}
		}
		msg = msg[:i] + rest
		break
	}
	for _, noise := range []string{"transport: Error while dialing: ", "transport: authentication handshake failed: ", "transport: "} {
		msg = strings.ReplaceAll(msg, noise, "")
	}
	return msg
}

// fail classifies err for a command; nil stays nil. A read-only command's
// "outcome unknown" is reported by its cause, without the claim that an
// attempt may have taken effect.
func fail(err error, write bool) error {
	if err == nil {
		return nil
	}
	var f *Failure
	if errors.As(err, &f) {
		return err
	}
	if !write {
		err = withoutUnknownOutcome(err)
	}
	class, code := classify(err, write)
	return &Failure{Class: class, Code: code, Err: err}
}

// withoutUnknownOutcome unwraps the client's unknown-outcome error to the
// last failure it carries.
func withoutUnknownOutcome(err error) error {
	for range 4 {
		multi, ok := err.(interface{ Unwrap() []error })
		if !ok || !errors.Is(err, client.ErrUnknownOutcome) {
			return err
		}
		var last error
		for _, e := range multi.Unwrap() {
			if e != client.ErrUnknownOutcome { //nolint:errorlint // skips the sentinel itself, not the errors that wrap it
				last = e
			}
		}
		if last == nil {
			return err
		}
		err = last
	}
	return err
}

// readOnlyCommands change nothing on the server (paths below the root).
// Any other command is taken to write, so that its failure can say that the
// outcome is unknown when the client reports it may have applied.
var readOnlyCommands = []string{
	"queues", "jobs list", "jobs get", "dead-letters list", "dead-letters get", "info", "cluster status",
}

// markReadOnly sets annotReadOnly on the readOnlyCommands among cmds.
func markReadOnly(cmds []*cobra.Command) {
	for _, path := range readOnlyCommands {
		names := strings.Fields(path)
		for _, c := range cmds {
			if c.Name() != names[0] {
				continue
			}
			for _, n := range names[1:] {
				var next *cobra.Command
				for _, sub := range c.Commands() {
					if sub.Name() == n {
						next = sub
					}
				}
				c = next
				if c == nil {
					break
				}
			}
			if c != nil {
				if c.Annotations == nil {
					c.Annotations = map[string]string{}
				}
				c.Annotations[annotReadOnly] = "true"
			}
		}
	}
}

// diagnoseTLS looks closer at a TLS connection that failed as unreachable or
// unavailable. Under TLS 1.3 a server that refuses the client certificate
// (or its absence) says so in an alert after the client's side of the
// handshake is done, and gRPC, already writing, reports only a broken pipe.
// A fresh handshake that then reads for the alert tells the operator what
// the server said ("tls: certificate required"). Other failures pass
// through unchanged.
func diagnoseTLS(ctx context.Context, err error, addrs []string, cfg *tls.Config) error {
	var f *Failure
	if cfg == nil || !errors.As(err, &f) || (f.Class != ClassUnreachable && f.Class != ClassUnavailable) {
		return err
	}
	for _, addr := range addrs {
		if alert := tlsAlert(ctx, addr, cfg); alert != nil {
			return &Failure{Class: ClassTLS, Code: ExitError, Err: fmt.Errorf("%s refused the TLS session: %w (check --cert/--key and --ca)", addr, alert)}
		}
	}
	return err
}

// tlsAlert dials addr, completes a handshake and waits briefly for the
// server's verdict; it returns the TLS or certificate error, if any.
func tlsAlert(ctx context.Context, addr string, cfg *tls.Config) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if isTLSFailure(err.Error()) {
			return err
		}
		return nil
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetReadDeadline(deadline)
	var b [1]byte
	if _, err := conn.Read(b[:]); err != nil && isTLSFailure(err.Error()) {
		return err
	}
	return nil
}
