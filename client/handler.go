package client

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// HandlerFunc processes one delivery. Return nil to ack the job, an error
// to nack it: a plain error or Retry(err) retries per the queue's policy,
// RetryAfter(d, err) retries once d has passed, Permanent(err) dead-letters
// the job at once. The context is cancelled when the lease is lost (its
// cause is then ErrLeaseLost: another worker may get the job, so stop and
// return) or when a Worker's Stop runs out of time.
type HandlerFunc func(ctx context.Context, d *Delivery) error

// HandlerErrorKind is what a failed handler asks for.
type HandlerErrorKind uint8

// The handler error kinds and the nack directive each maps onto.
const (
	KindRetry      HandlerErrorKind = iota // DefaultRetry(): the queue's retry policy
	KindRetryAfter                         // After(Delay)
	KindPermanent                          // DeadLetter(): no more attempts
)

func (k HandlerErrorKind) String() string {
	switch k {
	case KindRetryAfter:
		return "retry-after"
	case KindPermanent:
		return "permanent"
	default:
		return "retry"
	}
}

// HandlerError tells a Worker how to nack a failed job.
type HandlerError struct {
	Kind  HandlerErrorKind
	Delay time.Duration // with KindRetryAfter
	Err   error
}

func (e *HandlerError) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Kind == KindRetryAfter {
		return fmt.Sprintf("%s (retry after %s)", msg, e.Delay)
	}
	return msg
}

func (e *HandlerError) Unwrap() error { return e.Err }

// Directive is the nack directive the error maps onto.
func (e *HandlerError) Directive() RetryDirective {
	switch e.Kind {
	case KindRetryAfter:
		return After(e.Delay)
	case KindPermanent:
		return DeadLetter()
	default:
		return DefaultRetry()
	}
}

// Retry fails the job for another attempt per the queue's retry policy
// (what a plain error does too).
func Retry(err error) error { return &HandlerError{Kind: KindRetry, Err: err} }

// RetryAfter fails the job for another attempt once d has passed.
func RetryAfter(d time.Duration, err error) error {
	return &HandlerError{Kind: KindRetryAfter, Delay: d, Err: err}
}

// Permanent fails the job for good: it is dead-lettered with cause rejected.
func Permanent(err error) error { return &HandlerError{Kind: KindPermanent, Err: err} }

type deliveryKey struct{}

// DeliveryFromContext returns the delivery a handler's context belongs to.
func DeliveryFromContext(ctx context.Context) (*Delivery, bool) {
	d, ok := ctx.Value(deliveryKey{}).(*Delivery)
	return d, ok
}

// Outcome is how a Worker answers a delivery once its handler has returned:
// an ack, or a nack with a directive and a reason. RunHandler returns it,
// so a test can check what a handler chooses without a server (see the
// sepptest package).
type Outcome struct {
	// Ack is true when the handler returned nil: the Worker acks the job.
	Ack bool
	// Directive is the nack's directive when Ack is false: DefaultRetry
	// for a plain error, a panic or Retry, After(d) for RetryAfter(d, err),
	// DeadLetter for Permanent.
	Directive RetryDirective
	// Reason is the text the nack carries (the error's message); a Worker
	// cuts it to WorkerOptions.MaxReasonBytes.
	Reason string
	// Err is what the handler returned; a recovered panic is an error
	// whose message starts with "panic: ".
	Err error
}

// String names the answer, e.g. "ack", "nack default", "nack after(1m0s)".
func (o Outcome) String() string {
	if o.Ack {
		return "ack"
	}
	return "nack " + o.Directive.String()
}

// RunHandler runs h on d as a Worker does, in the calling goroutine: d is
// in the handler's context (DeliveryFromContext), a panic is recovered as a
// failure, and the returned error is mapped to an ack or a nack directive
// by the Worker's own rule. It answers nothing to any server: the Worker
// sends the Outcome; a test inspects it.
func RunHandler(ctx context.Context, h HandlerFunc, d *Delivery) Outcome {
	err := invokeHandler(context.WithValue(ctx, deliveryKey{}, d), h, d)
	return outcomeOf(err)
}

// invokeHandler calls h, turning a panic into a *panicError.
func invokeHandler(ctx context.Context, h HandlerFunc, d *Delivery) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: debug.Stack()}
		}
	}()
	return h(ctx, d)
}

// outcomeOf maps a handler's result to the Worker's answer.
func outcomeOf(err error) Outcome {
	if err == nil {
		return Outcome{Ack: true}
	}
	directive := DefaultRetry()
	var he *HandlerError
	if errors.As(err, &he) {
		directive = he.Directive()
	}
	return Outcome{Directive: directive, Reason: err.Error(), Err: err}
}
