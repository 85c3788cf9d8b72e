package rpc

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Conversions between engine values and the wire. A zero time is an unset
// timestamp, never 1970 or year 1.

func timestampOrNil(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func jobStateToProto(s engine.State) seppv1.JobState {
	switch s {
	case engine.StateScheduled:
		return seppv1.JobState_JOB_STATE_SCHEDULED
	case engine.StateReady:
		return seppv1.JobState_JOB_STATE_READY
	case engine.StateReserved:
		return seppv1.JobState_JOB_STATE_RESERVED
	case engine.StateDead:
		return seppv1.JobState_JOB_STATE_DEAD
	case engine.StateCompleted:
		return seppv1.JobState_JOB_STATE_COMPLETED
	case engine.StateBlocked:
		return seppv1.JobState_JOB_STATE_BLOCKED
	}
	return seppv1.JobState_JOB_STATE_UNSPECIFIED
}

func jobStateFromProto(s seppv1.JobState) engine.State {
	switch s {
	case seppv1.JobState_JOB_STATE_SCHEDULED:
		return engine.StateScheduled
	case seppv1.JobState_JOB_STATE_READY:
		return engine.StateReady
	case seppv1.JobState_JOB_STATE_RESERVED:
		return engine.StateReserved
	case seppv1.JobState_JOB_STATE_DEAD:
		return engine.StateDead
	case seppv1.JobState_JOB_STATE_COMPLETED:
		return engine.StateCompleted
	case seppv1.JobState_JOB_STATE_BLOCKED:
		return engine.StateBlocked
	}
	return engine.StateUnknown
}

func causeToProto(c engine.Cause) seppv1.DeadLetterCause {
	switch c {
	case engine.CauseAttemptsExhausted:
		return seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED
	case engine.CauseRejected:
		return seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_REJECTED
	case engine.CauseLeaseExpired:
		return seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_LEASE_EXPIRED
	case engine.CauseAdmin:
		return seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_ADMIN
	case engine.CauseCancelled:
		return seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_CANCELLED
	case engine.CauseExpired:
		return seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_EXPIRED
	}
	return seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_UNSPECIFIED
}

// causeLabel is the spec's name of a cause, used as a metric label.
func causeLabel(c engine.Cause) string {
	switch c {
	case engine.CauseAttemptsExhausted:
		return "attempts_exhausted"
	case engine.CauseRejected:
		return "rejected"
	case engine.CauseLeaseExpired:
		return "lease_expired"
	case engine.CauseAdmin:
		return "admin"
	case engine.CauseCancelled:
		return "cancelled"
	case engine.CauseExpired:
		return "expired"
	}
	return "unknown"
}

func jobToProto(j engine.Job) *seppv1.Job {
	out := &seppv1.Job{}
	fillJob(out, j, nil)
	return out
}

// timestamps hands out timestamps from one allocation (nil: one each).
type timestamps struct{ slab []timestamppb.Timestamp }

func (ts *timestamps) of(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	if ts == nil || len(ts.slab) == cap(ts.slab) {
		return timestamppb.New(t)
	}
	ts.slab = ts.slab[:len(ts.slab)+1]
	out := &ts.slab[len(ts.slab)-1]
	out.Seconds, out.Nanos = t.Unix(), int32(t.Nanosecond())
	return out
}

func fillJob(out *seppv1.Job, j engine.Job, ts *timestamps) {
	out.Id = uint64(j.ID)
	out.Queue = j.Queue
	out.JobType = j.JobType
	out.Payload = j.Payload
	out.Priority = j.Priority
	out.State = jobStateToProto(j.State)
	out.EnqueuedAt = ts.of(j.EnqueuedAt)
	out.ScheduledAt = ts.of(j.ScheduledAt)
	out.NextAttemptAt = ts.of(j.NextAttemptAt)
	out.Attempt = j.Attempt
	out.MaxAttempts = j.MaxAttempts
	out.Custom = j.Custom
	out.WorkerId = j.WorkerID
	out.LeaseDeadline = ts.of(j.LeaseDeadline)
	out.LastReason = j.LastReason
	out.StartedAt = ts.of(j.StartedAt)

	if j.ExpiresAtNanos != 0 {
		out.ExpiresAt = ts.of(j.ExpiresAt())
	}
	for _, a := range j.History {
		pa := &seppv1.JobAttempt{
			Attempt:    a.Attempt,
			WorkerId:   a.WorkerID,
			EndedAt:    timestampOrNil(a.At),
			Outcome:    a.Outcome,
			Reason:     a.Reason,
			StartedAt:  timestampOrNil(a.StartedAt),
			LeaseToken: uint64(a.LeaseToken),
			Directive:  a.Directive,
		}
		if !a.StartedAt.IsZero() {
			pa.Duration = durationpb.New(a.Duration)
		}
		out.History = append(out.History, pa)
	}
	out.Progress = apiconv.ProgressToProto(j.Progress)
	if len(j.Parents) > 0 {
		out.Parents = make([]*seppv1.JobParent, len(j.Parents))
		for i, p := range j.Parents {
			out.Parents[i] = &seppv1.JobParent{JobId: uint64(p.ID), State: jobStateToProto(p.State), Cause: causeToProto(p.Cause), Ended: p.Ended}
		}
		policy := engine.ParentFailureCancel
		if j.RunsAfterParentFailure {
			policy = engine.ParentFailureRun
		}
		out.OnParentFailure = apiconv.ParentFailurePolicy(policy)
	}
	if len(j.WaitingChildren) > 0 {
		out.WaitingChildren = make([]uint64, len(j.WaitingChildren))
		for i, id := range j.WaitingChildren {
			out.WaitingChildren[i] = uint64(id)
		}
		out.WaitingChildrenTotal = uint32(j.WaitingChildrenTotal)
	}
	if t := j.Trace; t != nil {
		out.TraceContext = &seppv1.TraceContext{Traceparent: t.Traceparent, Tracestate: t.Tracestate}
	}
	if o := j.Origin; o.Queue != "" {
		out.Origin = &seppv1.JobOrigin{
			Queue: o.Queue, JobId: uint64(o.JobID), Cause: causeToProto(o.Cause),
			FailedAt: timestampOrNil(o.FailedAt), LastReason: o.LastReason, FinalAttempt: o.FinalAttempt,
		}
	}
	if c := j.Completed; c != nil {
		out.Result = c.Result
		out.CompletedAt = timestampOrNil(c.CompletedAt)
		if !j.StartedAt.IsZero() {
			out.RunTime = durationpb.New(c.CompletedAt.Sub(j.StartedAt))
		}
	}
}

// deliveriesToProto converts a reserve's deliveries with a few allocations
// for the whole batch rather than several per job.
func deliveriesToProto(ds []engine.Delivery, workerID string) []*seppv1.ReservedJob {
	out := make([]*seppv1.ReservedJob, len(ds))
	reserved := make([]seppv1.ReservedJob, len(ds))
	ctxs := make([]seppv1.JobContext, len(ds))
	jobs := make([]seppv1.Job, len(ds))
	// Up to seven timestamps a delivery: the context's lease deadline and
	// the job's enqueued, scheduled, next-attempt, lease deadline, started
	// and expiry times. A slab too small falls back to one allocation each.
	ts := &timestamps{slab: make([]timestamppb.Timestamp, 0, 7*len(ds))}
	for i, d := range ds {
		c := &ctxs[i]
		c.JobId = uint64(d.Job.ID)
		c.LeaseToken = uint64(d.LeaseToken)
		c.Attempt = d.Attempt
		c.MaxAttempts = d.MaxAttempts
		c.LeaseDeadline = ts.of(d.LeaseDeadline)
		c.Queue = d.Job.Queue
		c.WorkerId = workerID
		fillJob(&jobs[i], d.Job, ts)
		reserved[i].Ctx, reserved[i].Job = c, &jobs[i]
		out[i] = &reserved[i]
	}
	return out
}

func deadLetterToProto(r engine.DeadLetterRecord) *seppv1.DeadLetterRecord {
	return &seppv1.DeadLetterRecord{
		Job:          jobToProto(r.Job),
		Cause:        causeToProto(r.Cause),
		FailedAt:     timestampOrNil(r.FailedAt),
		FinalAttempt: r.FinalAttempt,
		LastReason:   r.LastReason,
	}
}

func deadLettersToProto(rs []engine.DeadLetterRecord) []*seppv1.DeadLetterRecord {
	out := make([]*seppv1.DeadLetterRecord, len(rs))
	for i, r := range rs {
		out[i] = deadLetterToProto(r)
	}
	return out
}

// itemErrorFor turns one item's error into the ItemError of a batch result,
// through the same table as a whole-call error.
func itemErrorFor(err error) *seppv1.ItemError {
	sp := statusFor(err).Proto()
	return &seppv1.ItemError{Code: sp.GetCode(), Message: sp.GetMessage(), Details: sp.GetDetails()}
}

func itemResultsToProto(rs []engine.ItemResult) []*seppv1.JobActionResult {
	out := make([]*seppv1.JobActionResult, len(rs))
	for i, r := range rs {
		out[i] = &seppv1.JobActionResult{JobId: uint64(r.JobID)}
		if r.Err != nil {
			out[i].Error = itemErrorFor(r.Err)
		}
	}
	return out
}

func queueStatsToProto(q engine.QueueStats) *seppv1.QueueSummary {
	out := &seppv1.QueueSummary{
		Tags:           engine.TagsMap(q.Tags),
		Name:           q.Name,
		Paused:         q.Paused,
		Configured:     q.Configured,
		Scheduled:      uint64(q.Scheduled),
		Ready:          uint64(q.Ready),
		Reserved:       uint64(q.Reserved),
		Blocked:        uint64(q.Blocked),
		Dead:           uint64(q.Dead),
		OldestReadyAge: durationpb.New(q.OldestReadyAge),
		EnqueuedTotal:  q.Enqueued,
		AckedTotal:     q.Acked,
		DroppedTotal:   q.Dropped,
		RateTokens:     uint64(max(q.Limits.RateTokens, 0)),
		KeysAtLimit:    uint64(q.Limits.KeysAtLimit),
		HeldByKey:      uint64(q.Limits.Parked),
		PurgedTotal:    q.Purged,
	}
	out.FairnessActiveKeys = uint64(q.Fairness.ActiveKeys)
	// Fixed cause order: the map's iteration order must not reach the wire.
	for _, c := range engine.Causes() {
		if n := q.DeadLettered[c]; n > 0 {
			out.DeadLetteredTotal = append(out.DeadLetteredTotal, &seppv1.DeadLetterCount{Cause: causeToProto(c), Count: n})
		}
	}
	return out
}

func nodeInfoToProto(n cluster.NodeInfo) *seppv1.NodeInfo {
	if n == (cluster.NodeInfo{}) {
		return nil
	}
	return &seppv1.NodeInfo{Id: n.ID, RaftAddr: n.RaftAddr, GrpcAddr: n.GRPCAddr, HttpAddr: n.HTTPAddr}
}

// memberFactsToProto is nil for nil (facts not known yet).
func memberFactsToProto(f *cluster.MemberFacts) *seppv1.MemberFacts {
	if f == nil {
		return nil
	}
	return &seppv1.MemberFacts{
		NodeId:            f.NodeID,
		BinaryVersion:     f.BinaryVersion,
		MinCommandVersion: f.MinCommandVersion,
		MaxCommandVersion: f.MaxCommandVersion,
		MemoryLimitBytes:  f.MemoryLimitBytes,
		MemoryLimitFrom:   f.MemoryLimitFrom,
		Gomaxprocs:        uint32(max(f.GOMAXPROCS, 0)),
		StartTime:         timestampOrNil(f.Started),
		Legacy:            f.Legacy,
	}
}

func clusterStatusToProto(st cluster.Status) *seppv1.StatusResponse {
	out := &seppv1.StatusResponse{
		Self:         nodeInfoToProto(st.Self),
		Leader:       nodeInfoToProto(st.Leader),
		State:        st.State,
		Term:         st.Term,
		CommitIndex:  st.CommitIndex,
		AppliedIndex: st.AppliedIndex,
		LastLogIndex: st.LastLogIndex,
		ClockSkew:    st.ClockSkew,
	}
	if st.MaxClockSkew > 0 {
		out.MaxClockSkew = durationpb.New(st.MaxClockSkew)
	}
	for _, m := range st.Members {
		pm := &seppv1.ClusterMember{
			Node:        nodeInfoToProto(m.NodeInfo),
			Voter:       m.Voter,
			Leader:      m.Leader,
			Healthy:     m.Healthy,
			LastContact: m.LastContact,
			Facts:       memberFactsToProto(m.Facts),
		}
		if m.Clock != nil {
			pm.Clock = &seppv1.ClockOffset{Offset: durationpb.New(m.Clock.Offset), Error: durationpb.New(m.Clock.Error)}
		}
		out.Members = append(out.Members, pm)
	}
	return out
}

func limitsToProto(l engine.Limits, o Options) *seppv1.Limits {
	return &seppv1.Limits{
		MinPriority:             0,
		MaxPriority:             9,
		DefaultPriority:         l.DefaultPriority,
		DefaultMaxAttempts:      l.DefaultMaxAttempts,
		MaxAttemptsCeiling:      l.MaxAttemptsCeiling,
		RetryDelayMs:            l.RetryDelay.Milliseconds(),
		RetryBackoff:            apiconv.Backoff(l.RetryBackoff),
		RetryDelayMaxMs:         l.RetryDelayMax.Milliseconds(),
		MaxScheduleHorizonMs:    l.MaxScheduleHorizon.Milliseconds(),
		MaxReserveBatch:         uint32(max(l.MaxReserveBatch, 0)),
		DefaultLeaseMs:          l.DefaultLease.Milliseconds(),
		MaxLeaseMs:              l.MaxLease.Milliseconds(),
		MaxReserveWaitMs:        o.MaxReserveWait.Milliseconds(),
		MaxPayloadBytes:         apiconv.Uint64OrZero(l.MaxPayloadBytes),
		MaxResultBytes:          apiconv.Uint64OrZero(o.MaxResultBytes),
		MaxProgressMessageBytes: engine.MaxProgressMessageBytes,
		MaxBatchSize:            uint32(max(l.MaxBatchSize, 0)),
		MaxCustomFields:         uint32(max(l.MaxCustomFields, 0)),
		MaxCustomFieldBytes:     apiconv.Uint64OrZero(l.MaxCustomFieldBytes),
		MaxJobTypeBytes:         apiconv.Uint64OrZero(l.MaxJobTypeBytes),
		MaxQueueNameBytes:       engine.MaxQueueNameBytes,
		MaxMessageBytes:         apiconv.Uint64OrZero(o.MaxMessageBytes),
		IdempotencyWindowMs:     l.IdempotencyWindow.Milliseconds(),
		MaxQueueLength:          apiconv.Uint64OrZero(l.MaxQueueLength),
		Strict:                  l.Strict,
		MaxMemoryBytes:          uint64(max(l.MaxMemoryBytes, 0)),
		MaxDiskBytes:            uint64(max(l.MaxDiskBytes, 0)),
	}
}

// queueLimitsToProto resolves a queue's overrides over the global limits.
func queueLimitsToProto(q engine.QueueConfig, l engine.Limits) *seppv1.QueueLimits {
	out := &seppv1.QueueLimits{
		Name:                 q.Name,
		DefaultPriority:      l.DefaultPriority,
		DefaultMaxAttempts:   l.DefaultMaxAttempts,
		RetryDelayMs:         l.RetryDelay.Milliseconds(),
		RetryBackoff:         apiconv.Backoff(l.RetryBackoff),
		RetryDelayMaxMs:      l.RetryDelayMax.Milliseconds(),
		MaxScheduleHorizonMs: l.MaxScheduleHorizon.Milliseconds(),
		MaxLength:            apiconv.Uint64OrZero(l.MaxQueueLength),
		DeadLetterQueue:      q.DeadLetterQueue,
	}
	if q.DefaultPriority != nil {
		out.DefaultPriority = *q.DefaultPriority
	}
	if q.DefaultMaxAttempts != nil {
		out.DefaultMaxAttempts = min(*q.DefaultMaxAttempts, l.MaxAttemptsCeiling)
	}
	if q.RetryDelay != nil {
		out.RetryDelayMs = q.RetryDelay.Milliseconds()
	}
	if q.RetryBackoff != nil {
		out.RetryBackoff = apiconv.Backoff(*q.RetryBackoff)
	}
	if q.RetryDelayMax != nil {
		out.RetryDelayMaxMs = q.RetryDelayMax.Milliseconds()
	}
	if q.MaxScheduleHorizon != nil {
		out.MaxScheduleHorizonMs = q.MaxScheduleHorizon.Milliseconds()
	}
	if q.MaxLength != nil {
		out.MaxLength = apiconv.Uint64OrZero(*q.MaxLength)
	}
	if q.MaxMemoryBytes != nil {
		out.MaxMemoryBytes = uint64(max(*q.MaxMemoryBytes, 0))
	}
	out.MaxReserved = uint64(max(q.MaxReserved, 0))
	out.MaxPerKey = uint64(max(q.MaxPerKey, 0))
	out.ConcurrencyKey = q.ConcurrencyKey
	out.MaxWaitMs = q.MaxWait.Milliseconds()
	out.FairnessKey = q.FairnessKey
	out.CompletedRetentionMs = q.CompletedRetention.Milliseconds()
	if q.RateLimit > 0 {
		out.RateLimit = uint64(q.RateLimit)
		out.RatePeriodMs = q.RatePeriod.Milliseconds()
		if out.RatePeriodMs == 0 {
			out.RatePeriodMs = 1000
		}
		out.RateBurst = uint64(q.RateBurst)
		if out.RateBurst == 0 {
			out.RateBurst = out.RateLimit
		}
	}
	return out
}
