package rpc

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// A reserve may lease up to max_reserve_batch jobs (100) of up to
// max_payload_bytes (1 MiB) each, far more than one response of
// max_message_bytes (16 MiB) carries, and a response above the limit would
// fail on the wire after the jobs were leased: the worker would get an
// error and the jobs would wait out their leases. Which jobs a reserve
// leases is decided in the replicated state machine, where this node's
// message limit has no place, so the cut is made here instead: the answer
// keeps the longest prefix of the deliveries that fits the limit (always
// the first: config validation makes one job of the largest size fit) and
// releases the rest, which become Ready again at once with their attempt
// given back. Small jobs never reach the limit and cost nothing extra.

// releaseUnsentTimeout bounds the releases of a cut response; a release
// that fails leaves its job to come back when its lease ends.
const releaseUnsentTimeout = 5 * time.Second

// deliveryBytesBound is an upper bound on a delivery's encoded size.
func deliveryBytesBound(d *engine.Delivery, worker string) int {
	const fixed = 256 // ids, timestamps, counters, tags and lengths
	j := &d.Job
	n := fixed + len(j.Payload) + len(j.Queue)*2 + len(j.JobType) + len(worker) + len(j.WorkerID) + len(j.LastReason)
	for k, v := range j.Custom {
		n += len(k) + len(v) + 12
	}
	for _, a := range j.History {
		n += len(a.WorkerID) + len(a.Reason) + len(a.Directive) + 96 // two timestamps, a duration, the lease token
	}
	if o := j.Origin; o.Queue != "" {
		n += len(o.Queue) + len(o.LastReason) + 48
	}
	// Each parent's link, and its result if it is carried (at most a
	// quarter of the limit for a whole answer: fitResponse measures the
	// messages once the bound passes the limit).
	n += 24 * len(j.Parents)
	return n
}

// fitResponse returns how many of jobs (built from ds) fit one message of
// limit bytes, at least one.
func fitResponse(ds []engine.Delivery, jobs []*seppv1.ReservedJob, worker string, limit int) int {
	total := 0
	for i := range ds {
		total += deliveryBytesBound(&ds[i], worker)
	}
	if total <= limit {
		return len(jobs)
	}
	size := 0
	for i, j := range jobs {
		// ReserveResponse.jobs is field 1: a tag and a length per job.
		size += protowire.SizeTag(1) + protowire.SizeBytes(proto.Size(j))
		if size > limit && i > 0 {
			return i
		}
	}
	return len(jobs)
}

// reserveResponse builds a Reserve's answer, cut to the message limit.
func (s *queueService) reserveResponse(ctx context.Context, ds []engine.Delivery, worker string) *seppv1.ReserveResponse {
	jobs := deliveriesToProto(ds, worker)
	s.addParentResults(ctx, ds, jobs)
	if keep := fitResponse(ds, jobs, worker, s.opts.MaxMessageBytes); keep < len(jobs) {
		s.releaseUnsent(ctx, ds[keep:])
		jobs = jobs[:keep]
	}
	return &seppv1.ReserveResponse{Jobs: jobs}
}

// addParentResults gives the deliveries of jobs with completed parents
// their parents' results (parentresults.go), read from this node's state
// after the reserve applied: the parents completed before their child was
// released, so the leader that reserved holds their records. A read that
// fails leaves them out, and the worker reads them with GetJob.
func (s *queueService) addParentResults(ctx context.Context, ds []engine.Delivery, jobs []*seppv1.ReservedJob) {
	var withParents []*seppv1.Job
	for i := range ds {
		if hasCompletedParent(&ds[i].Job) {
			withParents = append(withParents, jobs[i].GetJob())
		}
	}
	if len(withParents) == 0 {
		return
	}
	if err := s.b.Read(ctx, true, func(e engine.View) error {
		fillParentResults(e, withParents, parentResultsBudget(s.opts.MaxMessageBytes))
		return nil
	}); err != nil {
		s.log.Debug("the parents' results were left out of a reserve's answer", "error", err)
	}
}

// releaseUnsent gives back deliveries that did not fit the response. The
// releases run together, so they share log entries, and outlive the
// caller's context: the worker may be gone, but the jobs should not wait
// out their leases for that.
func (s *queueService) releaseUnsent(ctx context.Context, ds []engine.Delivery) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseUnsentTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i := range ds {
		ref := engine.LeaseRef{JobID: ds[i].Job.ID, LeaseToken: ds[i].LeaseToken}
		wg.Go(func() {
			if _, err := Propose(rctx, s.b, engine.ReleaseOp{Ref: ref}); err != nil {
				s.log.Warn("a reserved job that did not fit the response was not released; it returns when its lease ends",
					"job_id", uint64(ref.JobID), "error", err)
			}
		})
	}
	wg.Wait()
	s.log.Debug("reserve response cut to max_message_bytes", "released", len(ds), "limit", s.opts.MaxMessageBytes)
}

// drainMax bounds a drain's Max so that the records it takes fit one
// response, judged by the records at the head of this node's applied
// dead-letter list. Only half the message limit is used: a concurrent
// drain or delete may take some of those records first, and the drain
// then takes later ones, which may be larger.
func (s *queueService) drainMax(ctx context.Context, p engine.DrainParams) int {
	var recs []engine.DeadLetterRecord
	if err := s.b.Read(ctx, true, func(e engine.View) error {
		recs = e.PeekDeadLetters(p)
		return nil
	}); err != nil {
		return p.Max // the drain itself will fail or succeed properly
	}
	budget := s.opts.MaxMessageBytes / 2
	size := 0
	for i, r := range recs {
		size += protowire.SizeTag(1) + protowire.SizeBytes(proto.Size(deadLetterToProto(r)))
		if size > budget && i > 0 {
			return i
		}
	}
	return p.Max
}
