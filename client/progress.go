package client

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/durationpb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// MaxProgressMessageBytes is the server's bound on Progress.Message
// (GetServerInfo's limits.max_progress_message_bytes).
const MaxProgressMessageBytes = 256

// check refuses what the server would, before a call is spent on it.
func (p Progress) check() error {
	switch {
	case p.Percent < 0 || p.Percent > 100:
		return fmt.Errorf("progress.percent: must be 0..100, got %d: %w", p.Percent, ErrInvalidArgument)
	case len(p.Message) > MaxProgressMessageBytes:
		return fmt.Errorf("progress.message: is %d bytes, above the limit of %d: %w", len(p.Message), MaxProgressMessageBytes, ErrInvalidArgument)
	case !utf8.ValidString(p.Message):
		return fmt.Errorf("progress.message: must be valid UTF-8: %w", ErrInvalidArgument)
	}
	return nil
}

func (p Progress) toProto() *seppv1.Progress {
	return &seppv1.Progress{Percent: uint32(p.Percent), Message: p.Message}
}

// ReportProgress reports a running job's progress and extends its lease
// by the server's default lease, in one call and one log entry: reporting
// costs no more than extending. The answer is the new lease deadline.
//
// A lease the job no longer holds is ErrLeaseLost; progress out of bounds
// is ErrInvalidArgument naming the field; a cluster not every member of
// which applies progress yet (during a rolling upgrade) answers
// ErrUnsupported and extends nothing: extend with ExtendLease instead.
// Like ExtendLease it is retried across leader changes.
func (c *Client) ReportProgress(ctx context.Context, jc JobContext, percent int, message string) (time.Time, error) {
	return c.ExtendLeaseWithProgress(ctx, jc, 0, Progress{Percent: percent, Message: message})
}

// ExtendLeaseWithProgress is ExtendLease carrying the job's progress: the
// lease runs lease from now (0: the server's default lease) and p becomes
// the job's progress. See ReportProgress.
func (c *Client) ExtendLeaseWithProgress(ctx context.Context, jc JobContext, lease time.Duration, p Progress) (time.Time, error) {
	if err := p.check(); err != nil {
		return time.Time{}, err
	}
	m := &seppv1.ExtendLeaseRequest{Ctx: jc.toProto(), Progress: p.toProto()}
	if lease > 0 {
		m.Lease = durationpb.New(lease)
	}
	return c.extendLease(ctx, m)
}

// progressBox carries a handler's reports (Delivery.Progress) to the
// Worker goroutine that extends the delivery's lease.
type progressBox struct {
	mu      sync.Mutex
	pending *Progress     // the latest report not yet sent
	refused bool          // a refusal was reported (once per delivery)
	wake    chan struct{} // cap 1: a report is pending
}

func newProgressBox() *progressBox { return &progressBox{wake: make(chan struct{}, 1)} }

// take returns the pending report, if any, and clears it.
func (b *progressBox) take() *Progress {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pending
	b.pending = nil
	return p
}

// Progress reports the job's progress, for a handler run by a Worker: the
// report rides on the Worker's next automatic lease extension, which it
// brings forward (to at most one extension per WorkerOptions.ProgressInterval,
// by default a second), so reporting costs no log entries beyond the
// extensions; of reports made in between only the latest is sent. It never
// blocks on the network. A report out of bounds is refused here
// (ErrInvalidArgument). A report the server refuses (it keeps no progress
// yet, during a rolling upgrade or just after a leader change:
// ErrUnsupported) is dropped, the lease extended without it, and the
// refusal reported to WorkerOptions.OnError once per delivery; later
// reports are tried again.
//
// A Delivery from Client.Reserve, not run by a Worker, has no one to
// extend its lease: Progress answers ErrUnsupported; call
// Client.ReportProgress.
func (d *Delivery) Progress(percent int, message string) error {
	p := Progress{Percent: percent, Message: message}
	if err := p.check(); err != nil {
		return err
	}
	b := d.progress
	if b == nil {
		return fmt.Errorf("Delivery.Progress outside a Worker (use Client.ReportProgress): %w", ErrUnsupported)
	}
	b.mu.Lock()
	b.pending = &p
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return nil
}
