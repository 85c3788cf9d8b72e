package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

func (c *Client) queueService(a *attempt) seppv1.QueueServiceClient {
	return seppv1.NewQueueServiceClient(a.cc)
}

// Enqueue adds one job. Unless the request sets an idempotency key, the
// client generates one; either way the same key rides on every retry of
// this call, so a retry through a failover never adds a second job.
func (c *Client) Enqueue(ctx context.Context, req *EnqueueRequest) (EnqueueResult, error) {
	if err := req.validate(""); err != nil {
		return EnqueueResult{}, &Error{Op: "enqueue", Kinds: []error{ErrInvalidArgument}, Detail: err}
	}
	key := req.IdempotencyKey
	if key == "" {
		key = newKey()
	}
	m := req.toProto(key)
	var end func(uint64, error)
	if req.TraceContext == nil {
		var tc *TraceContext
		ctx, tc, end = c.startSend(ctx, req.Queue, req.JobType, 1)
		setTraceContext(m, tc)
	}
	var res EnqueueResult
	err := c.call(ctx, "enqueue", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := c.queueService(a).Enqueue(ctx, m, c.opts.callOptions...)
		if err != nil {
			return err
		}
		c.confirmLeader(a.addr)
		res = EnqueueResult{
			JobID:          resp.GetJobId(),
			State:          JobState(resp.GetState()),
			Duplicate:      resp.GetDuplicate() && !a.maybeApplied,
			IdempotencyKey: key,
		}
		return nil
	})
	if end != nil {
		end(res.JobID, err)
	}
	return res, err
}

// BatchResult is one item's outcome of EnqueueBatch: a result or an error.
type BatchResult struct {
	Result EnqueueResult
	Err    error
}

// EnqueueBatch adds several jobs in one call; each item succeeds or fails on
// its own and the results come back in order. Every item carries its own
// idempotency key, so retrying the whole batch after an unknown outcome adds
// no job twice. A batch over the server's max_batch_size fails whole with
// ErrInvalidArgument. The returned error is set only when the call as a
// whole failed. A batch whose jobs wait for each other (WithAfter) is a
// workflow, applied whole: every item succeeds or the call fails, naming
// the item that refused it.
func (c *Client) EnqueueBatch(ctx context.Context, reqs []*EnqueueRequest) ([]BatchResult, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	out := make([]BatchResult, len(reqs))
	jobs := make([]*seppv1.EnqueueRequest, 0, len(reqs))
	keys := make([]string, 0, len(reqs))
	// Items the client rejects never go out; idx maps wire positions back.
	idx := make([]int, 0, len(reqs))
	whole := slices.ContainsFunc(reqs, func(r *EnqueueRequest) bool { return r != nil && len(r.After) > 0 })
	for i, r := range reqs {
		if r.validate("") != nil {
			// Again, naming the item (only now: the name costs an allocation).
			err := &Error{Op: "enqueue batch", Kinds: []error{ErrInvalidArgument}, Detail: r.validate(itemName(i))}
			if whole {
				return nil, err // jobs that wait for each other go whole or not at all
			}
			out[i].Err = err
			continue
		}
		key := r.IdempotencyKey
		if key == "" {
			key = newKey()
		}
		jobs = append(jobs, r.toProto(key))
		keys = append(keys, key)
		idx = append(idx, i)
	}
	if len(idx) == 0 {
		return out, nil
	}
	var end func(uint64, error)
	if i := slices.IndexFunc(jobs, func(m *seppv1.EnqueueRequest) bool { return m.TraceContext == nil }); i >= 0 {
		// One send span for the batch; items with a trace context of
		// their own keep it.
		first := reqs[idx[i]]
		var tc *TraceContext
		ctx, tc, end = c.startSend(ctx, first.Queue, first.JobType, len(jobs))
		for _, m := range jobs {
			setTraceContext(m, tc)
		}
	}
	results, err := c.enqueueBatchWire(ctx, jobs, keys)
	if end != nil {
		end(0, err)
	}
	if err != nil {
		return nil, err
	}
	for wi, res := range results {
		i := idx[wi]
		if res.Err != nil && wi != i {
			// The server numbers items as sent; name them as the caller did.
			res.Err = renameItemField(res.Err, itemName(wi), itemName(i))
		}
		out[i] = res
	}
	return out, nil
}

func itemName(i int) string { return "jobs[" + strconv.Itoa(i) + "]" }

// enqueueBatchWire sends jobs (already in wire form, keys[i] being the
// idempotency key of jobs[i]) in one EnqueueBatch call, retried whole, and
// returns one result per job; errors name items "jobs[i]" as sent.
func (c *Client) enqueueBatchWire(ctx context.Context, jobs []*seppv1.EnqueueRequest, keys []string) ([]BatchResult, error) {
	m := &seppv1.EnqueueBatchRequest{Jobs: jobs}
	out := make([]BatchResult, len(jobs))
	err := c.call(ctx, "enqueue batch", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := c.queueService(a).EnqueueBatch(ctx, m, c.opts.callOptions...)
		if err != nil {
			return err
		}
		c.confirmLeader(a.addr)
		if got := len(resp.GetResults()); got != len(jobs) {
			return &Error{Op: "enqueue batch", Kinds: []error{ErrInternal},
				Message: fmt.Sprintf("server answered %d results for %d jobs", got, len(jobs))}
		}
		for i, r := range resp.GetResults() {
			if ie := r.GetError(); ie != nil {
				out[i] = BatchResult{Err: itemError("enqueue", ie)}
				continue
			}
			e := r.GetEnqueued()
			out[i] = BatchResult{Result: EnqueueResult{
				JobID:          e.GetJobId(),
				State:          JobState(e.GetState()),
				Duplicate:      e.GetDuplicate() && !a.maybeApplied,
				IdempotencyKey: keys[i],
			}}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReserveOptions shape one Reserve call.
type ReserveOptions struct {
	WorkerID string        // names the worker in listings and attempt history
	Max      int           // jobs wanted; 0 means 1; the server clamps to max_reserve_batch
	Lease    time.Duration // 0 takes the server's default_lease_ms
	// Wait long-polls: how long to wait for a job when none is ready; zero
	// returns at once. The server caps it at max_reserve_wait_ms.
	Wait time.Duration
	// RequestID makes a retried reserve return the first one's deliveries;
	// empty: generated per call and reused on its retries.
	RequestID string
}

// Reserve leases up to opts.Max Ready jobs of queue, highest priority first,
// FIFO within a priority. It returns no deliveries (and no error) when none
// was ready within the wait.
func (c *Client) Reserve(ctx context.Context, queue string, opts ReserveOptions) ([]Delivery, error) {
	if queue == "" {
		return nil, &Error{Op: "reserve", Kinds: []error{ErrInvalidArgument}, Detail: &FieldError{Field: "queue", Description: "queue must not be empty"}}
	}
	if opts.Max < 0 {
		return nil, &Error{Op: "reserve", Kinds: []error{ErrInvalidArgument}, Detail: &FieldError{Field: "max", Description: fmt.Sprintf("max must not be negative, got %d", opts.Max)}}
	}
	reqID := opts.RequestID
	if reqID == "" {
		reqID = newKey()
	}
	m := &seppv1.ReserveRequest{Queue: queue, WorkerId: opts.WorkerID, Max: uint32(opts.Max), RequestId: reqID}
	if opts.Lease > 0 {
		m.Lease = durationpb.New(opts.Lease)
	}
	if opts.Wait > 0 {
		m.Wait = durationpb.New(opts.Wait)
	}
	var out []Delivery
	err := c.call(ctx, "reserve", retrySafe, opts.Wait, func(ctx context.Context, a *attempt) error {
		resp, err := c.queueService(a).Reserve(ctx, m, c.opts.callOptions...)
		if err != nil {
			return err
		}
		c.confirmLeader(a.addr)
		out = make([]Delivery, 0, len(resp.GetJobs()))
		for _, rj := range resp.GetJobs() {
			out = append(out, Delivery{Ctx: jobContextFromProto(rj.GetCtx()), Job: jobFromProto(rj.GetJob())})
		}
		return nil
	})
	return out, err
}

// Ack completes a delivery: the job leaves the server. ErrLeaseLost means
// the lease was no longer this delivery's (it expired and the job went to
// another worker, or was already answered).
//
// Concurrent Acks on one Client are coalesced into AckBatch calls (each
// still waits for its own confirmed result); a lone Ack is one Ack call.
// To ack deliveries held together, AckBatch does it with one wait instead
// of a goroutine per Ack.
func (c *Client) Ack(ctx context.Context, jc JobContext) error {
	return c.acks.ack(ctx, jc)
}

// AckBatch completes several deliveries and returns one error per
// delivery, in the order given: nil when that job was acked, else what Ack
// would have returned for it alone. ErrLeaseLost means that delivery's lease
// was no longer its own; one that matches ErrUnknownOutcome may have been
// acked (an attempt's answer was lost, or ctx ended after it was sent). If
// ctx ends before a delivery was sent, its error is ctx.Err() and nothing
// was sent for it. A call that fails as a whole gives every delivery it
// carried the same error.
//
// It goes through the same coalescing as Ack: the deliveries leave in as
// few AckBatch calls as the server allows, shared with concurrent Acks, and
// the caller waits once for all of them. Prefer it to one goroutine per Ack
// when the deliveries are in hand together, as after a Reserve. Against a
// server without AckBatch it falls back to plain Acks, a few at a time.
func (c *Client) AckBatch(ctx context.Context, jcs []JobContext) []error {
	return c.acks.ackBatch(ctx, jcs)
}

// ackOne acks one delivery with a plain Ack call.
func (c *Client) ackOne(ctx context.Context, jc JobContext) error {
	m := &seppv1.AckRequest{Ctx: jc.toProto()}
	return c.call(ctx, "ack", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		_, err := c.queueService(a).Ack(ctx, m, c.opts.callOptions...)
		return err
	})
}

// Nack fails a delivery; the directive says what happens next. It returns
// true exactly when the job was dead-lettered (DeadLetter, or the failing
// attempt reached max_attempts).
func (c *Client) Nack(ctx context.Context, jc JobContext, d RetryDirective, reason string) (deadLettered bool, err error) {
	if d.kind == directiveAfter && d.delay < 0 {
		return false, &Error{Op: "nack", Kinds: []error{ErrInvalidArgument}, Detail: &FieldError{Field: "directive.after", Description: fmt.Sprintf("directive.after must not be negative, got %s", d.delay)}}
	}
	m := &seppv1.NackRequest{Ctx: jc.toProto(), Directive: d.toProto(), Reason: reason}
	err = c.call(ctx, "nack", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := c.queueService(a).Nack(ctx, m, c.opts.callOptions...)
		if err != nil {
			return err
		}
		deadLettered = resp.GetDeadLettered()
		return nil
	})
	return deadLettered, err
}

// Release hands a delivery back without burning an attempt: the job is
// Ready again at once.
func (c *Client) Release(ctx context.Context, jc JobContext) error {
	m := &seppv1.ReleaseRequest{Ctx: jc.toProto()}
	return c.call(ctx, "release", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		_, err := c.queueService(a).Release(ctx, m, c.opts.callOptions...)
		return err
	})
}

// ExtendLease pushes the delivery's lease deadline to now+lease (zero takes
// the server's default) and returns the new deadline, by the server's clock.
func (c *Client) ExtendLease(ctx context.Context, jc JobContext, lease time.Duration) (time.Time, error) {
	m := &seppv1.ExtendLeaseRequest{Ctx: jc.toProto()}
	if lease > 0 {
		m.Lease = durationpb.New(lease)
	}
	return c.extendLease(ctx, m)
}

// extendLease sends m, retried across leader changes (an extension is
// safe to repeat, progress and all).
func (c *Client) extendLease(ctx context.Context, m *seppv1.ExtendLeaseRequest) (time.Time, error) {
	var deadline time.Time
	err := c.call(ctx, "extend lease", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := c.queueService(a).ExtendLease(ctx, m, c.opts.callOptions...)
		if err != nil {
			return err
		}
		deadline = timeFrom(resp.GetLeaseDeadline())
		return nil
	})
	return deadline, err
}

// DrainOptions shape DrainDeadLetters.
type DrainOptions struct {
	Queue string // empty drains across all queues
	Max   int    // 0 means 1; the server clamps to max_reserve_batch
}

// DrainDeadLetters returns up to opts.Max dead-letter records, oldest first,
// and removes them on the server in the same transaction.
//
// It is destructive and is never retried once the request may have reached
// the server: if the answer is lost (a dropped connection, a leader change,
// a timeout) the error matches ErrUnknownOutcome and those records may be
// gone. Only a node's answer that it does not lead, which guarantees nothing
// was applied, is followed to the leader. An empty result is also what a
// server with retention off returns: DrainDeadLettersReport says which.
func (c *Client) DrainDeadLetters(ctx context.Context, opts DrainOptions) ([]DeadLetterRecord, error) {
	r, err := c.DrainDeadLettersReport(ctx, opts)
	return r.Records, err
}

// DrainReport is a drain's records and what an empty answer means.
type DrainReport struct {
	Records []DeadLetterRecord
	// RetentionEnabled is false when the server drops dead jobs instead of
	// keeping records (Records is then always empty). A server older than
	// the field reads as false too: ServerInfo's DeadLetterRetentionEnabled
	// settles it.
	RetentionEnabled bool
	// DroppedTotal counts dead jobs dropped without a record, in the queue
	// drained (or every queue).
	DroppedTotal uint64
}

// DrainDeadLettersReport is DrainDeadLetters with the server's word on
// retention and the count of dead jobs it dropped.
func (c *Client) DrainDeadLettersReport(ctx context.Context, opts DrainOptions) (DrainReport, error) {
	if opts.Max < 0 {
		return DrainReport{}, &Error{Op: "drain dead letters", Kinds: []error{ErrInvalidArgument}, Detail: &FieldError{Field: "max", Description: fmt.Sprintf("max must not be negative, got %d", opts.Max)}}
	}
	// Find a live leader first with a safe call, so the one drain attempt
	// does not go to a node that is down.
	if c.Leader() == "" {
		if _, err := c.ServerInfo(ctx); err != nil {
			return DrainReport{}, err
		}
	}
	m := &seppv1.DrainDeadLettersRequest{Max: uint32(opts.Max)}
	if opts.Queue != "" {
		m.Queue = &opts.Queue
	}
	var out DrainReport
	err := c.call(ctx, "drain dead letters", retryNotSent, 0, func(ctx context.Context, a *attempt) error {
		resp, err := c.queueService(a).DrainDeadLetters(ctx, m, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out.Records = make([]DeadLetterRecord, 0, len(resp.GetRecords()))
		for _, r := range resp.GetRecords() {
			out.Records = append(out.Records, deadLetterFromProto(r))
		}
		out.RetentionEnabled = resp.GetDeadLetterRetentionEnabled()
		out.DroppedTotal = resp.GetDroppedTotal()
		return nil
	})
	return out, err
}

// ServerInfo is a node's capabilities and limits (GetServerInfo).
type ServerInfo struct {
	Version                    string
	NodeID                     string
	LeaderID                   string
	LeaderAddr                 string
	Stale                      bool // answered from a follower's local state
	DeadLetterRetentionEnabled bool
	DeadLetterRetention        time.Duration
	MaxReserveBatch            uint32
	MaxScheduleHorizon         time.Duration
	// Limits and Queues are the server's answer as sent: every global limit
	// and default, and each configured queue's effective settings.
	Limits *seppv1.Limits
	Queues []*seppv1.QueueLimits
	// Members are every member's facts (version, command versions, memory
	// limit) as the cluster's state records them.
	Members []*seppv1.MemberFacts
	// Capabilities are the features the answering server supports, oldest
	// first; see Supports.
	Capabilities []Capability
}

// Capability is one feature of the server: a stable name, the command
// version that introduced it, and whether every member of the cluster
// applies that version, so requests using it are served now.
type Capability struct {
	Name           string
	CommandVersion uint32
	ClusterReady   bool
}

// Supports reports whether the server knows feature name and the whole
// cluster can use it now (false during a rolling upgrade that brings it).
func (s *ServerInfo) Supports(name string) bool {
	for _, c := range s.Capabilities {
		if c.Name == name {
			return c.ClusterReady
		}
	}
	return false
}

// ScheduleHorizon is the schedule horizon of queue: its override when it
// has one, else the global horizon.
func (s *ServerInfo) ScheduleHorizon(queue string) time.Duration {
	for _, q := range s.Queues {
		if q.GetName() == queue && q.GetMaxScheduleHorizonMs() > 0 {
			return time.Duration(q.GetMaxScheduleHorizonMs()) * time.Millisecond
		}
	}
	return s.MaxScheduleHorizon
}

// ServerInfo asks the leader for its capabilities and limits.
func (c *Client) ServerInfo(ctx context.Context) (*ServerInfo, error) {
	return c.serverInfo(ctx, false)
}

// ServerInfoStale asks whichever node answers first, leader or not; the
// answer may lag (Stale says so).
func (c *Client) ServerInfoStale(ctx context.Context) (*ServerInfo, error) {
	return c.serverInfo(ctx, true)
}

func (c *Client) serverInfo(ctx context.Context, stale bool) (*ServerInfo, error) {
	var out *ServerInfo
	err := c.call(ctx, "server info", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := c.queueService(a).GetServerInfo(ctx, &seppv1.GetServerInfoRequest{AllowStale: stale}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		if !resp.GetStale() {
			c.confirmLeader(a.addr)
		}
		out = &ServerInfo{
			Version:                    resp.GetVersion(),
			NodeID:                     resp.GetNodeId(),
			LeaderID:                   resp.GetLeaderId(),
			LeaderAddr:                 resp.GetLeaderGrpcAddr(),
			Stale:                      resp.GetStale(),
			DeadLetterRetentionEnabled: resp.GetDeadLetterRetentionEnabled(),
			DeadLetterRetention:        time.Duration(resp.GetDeadLetterRetentionMs()) * time.Millisecond,
			MaxReserveBatch:            resp.GetMaxReserveBatch(),
			MaxScheduleHorizon:         time.Duration(resp.GetMaxScheduleHorizonMs()) * time.Millisecond,
			Limits:                     resp.GetLimits(),
			Queues:                     resp.GetQueues(),
			Members:                    resp.GetMembers(),
		}
		for _, c := range resp.GetCapabilities() {
			out.Capabilities = append(out.Capabilities, Capability{Name: c.GetName(), CommandVersion: c.GetCommandVersion(), ClusterReady: c.GetClusterReady()})
		}
		return nil
	})
	return out, err
}

// renameItemField rewrites the "jobs[N]" prefix of a FieldError's field;
// an empty to strips it.
func renameItemField(err error, from, to string) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	fe, ok := e.Detail.(*FieldError) //nolint:errorlint // Detail is a field of its own, not a chain
	if !ok || !strings.HasPrefix(fe.Field, from) {
		return err
	}
	renamed := *fe
	rest := strings.TrimPrefix(fe.Field, from)
	if to == "" {
		renamed.Field = strings.TrimPrefix(rest, ".")
	} else {
		renamed.Field = to + rest
	}
	renamed.Description = strings.ReplaceAll(fe.Description, fe.Field, renamed.Field)
	copied := *e
	copied.Detail = &renamed
	return &copied
}
