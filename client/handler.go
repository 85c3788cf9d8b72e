package client

import (
	"context"
	"fmt"
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
