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

	"github.com/sepp-io/sepp/client"
)

// Error classes: the first words of every failure a command prints, after
// the one "sepp:" prefix main adds. They say what went wrong in terms an
// operator acts on; the exit code (cli.go) says the same to a script.
const (
	ClassUsage          = "usage"
	ClassUnreachable    = "unreachable"       // no node answered: refused, no route, no such host
	ClassUnavailable    = "unavailable"       // a node answered, but no leader within --timeout
	ClassTLS            = "TLS/certificate"   // the handshake failed: CA, client certificate, name
	ClassPermission     = "permission denied" // a token or role the server refused
	ClassNotFound       = "not found"
	ClassLeaseLost      = "lease lost"
	ClassWrongState     = "wrong state"
	ClassInvalid        = "invalid"        // the server rejected a field; the message names it and the limit
	ClassRejected       = "rejected"       // a server limit refused it (a full queue, the memory budget)
	ClassAlreadyExists  = "already exists" // a queue of that name, or a unique job's key held by another job
	ClassUnknownOutcome = "unknown outcome"
	ClassError          = "error"
)

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
	case errors.Is(err, client.ErrPermissionDenied), errors.Is(err, client.ErrUnauthenticated):
		return ClassPermission, ExitError
	case errors.Is(err, client.ErrNotFound):
		return ClassNotFound, ExitNotFound
	case errors.Is(err, client.ErrLeaseLost):
		return ClassLeaseLost, ExitLeaseLost
	case errors.Is(err, client.ErrWrongState):
		return ClassWrongState, ExitLeaseLost
	case errors.Is(err, client.ErrInvalidArgument):
		return ClassInvalid, ExitRejected
	case errors.Is(err, client.ErrResourceExhausted):
		return ClassRejected, ExitRejected
	case errors.Is(err, client.ErrAlreadyExists):
		return ClassAlreadyExists, ExitRejected
	case strings.Contains(msg, "connection error: desc = "):
		return ClassUnreachable, ExitUnavailable
	case errors.Is(err, client.ErrUnavailable), errors.Is(err, client.ErrUnknownOutcome), errors.Is(err, context.DeadlineExceeded):
		return ClassUnavailable, ExitUnavailable
	default:
		return ClassError, ExitError
	}
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
