package client

import (
	"context"
	"time"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Operator calls (AdminService and ClusterService). Reads go to the leader
// and are consistent there; set Stale in the options to let any node answer
// from its own state.

// QueueStats are a queue's counts.
type QueueStats struct {
	Name           string
	Paused         bool
	Configured     bool // named in the server config
	Scheduled      uint64
	Ready          uint64
	Reserved       uint64
	Blocked        uint64 // waiting for their parents (StateBlocked)
	Dead           uint64 // retained dead-letter records
	OldestReadyAge time.Duration
	EnqueuedTotal  uint64
	AckedTotal     uint64
	// DeadLetteredTotal counts the jobs ever dead-lettered, by cause.
	DeadLetteredTotal map[DeadLetterCause]uint64
	DroppedTotal      uint64 // dead jobs dropped because retention is off
	// Use of the queue's reserve limits (ServerInfo's Queues give the
	// limits themselves), zero when it has none: the reservations its rate
	// limit lets through now, the concurrency key values at max_per_key,
	// and the Ready jobs held back until their key frees.
	RateTokens  uint64
	KeysAtLimit uint64
	HeldByKey   uint64
	PurgedTotal uint64 // waiting jobs an operator purged
	// FairnessActiveKeys counts, with a fairness key, the key values whose
	// Ready jobs take turns now.
	FairnessActiveKeys uint64
	// Tags are the queue's key/value labels; nil when it has none.
	Tags map[string]string
}

func queueStatsFromProto(q *seppv1.QueueSummary) QueueStats {
	s := QueueStats{
		Tags:               q.GetTags(),
		Name:               q.GetName(),
		Paused:             q.GetPaused(),
		Configured:         q.GetConfigured(),
		Scheduled:          q.GetScheduled(),
		Ready:              q.GetReady(),
		Reserved:           q.GetReserved(),
		Blocked:            q.GetBlocked(),
		Dead:               q.GetDead(),
		OldestReadyAge:     q.GetOldestReadyAge().AsDuration(),
		EnqueuedTotal:      q.GetEnqueuedTotal(),
		AckedTotal:         q.GetAckedTotal(),
		DroppedTotal:       q.GetDroppedTotal(),
		PurgedTotal:        q.GetPurgedTotal(),
		RateTokens:         q.GetRateTokens(),
		KeysAtLimit:        q.GetKeysAtLimit(),
		HeldByKey:          q.GetHeldByKey(),
		DeadLetteredTotal:  make(map[DeadLetterCause]uint64),
		FairnessActiveKeys: q.GetFairnessActiveKeys(),
	}
	for _, dc := range q.GetDeadLetteredTotal() {
		s.DeadLetteredTotal[DeadLetterCause(dc.GetCause())] += dc.GetCount()
	}
	return s
}

// ListQueues lists every known queue with its counts.
func (c *Client) ListQueues(ctx context.Context, stale bool) ([]QueueStats, error) {
	return c.ListQueuesByTag(ctx, stale)
}

// ListQueuesByTag lists the queues whose tags match every term: "key=value"
// (the tag with that value) or "key" (the tag, any value). No term lists
// every queue, as ListQueues does.
func (c *Client) ListQueuesByTag(ctx context.Context, stale bool, terms ...string) ([]QueueStats, error) {
	var out []QueueStats
	err := c.call(ctx, "list queues", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).ListQueues(ctx, &seppv1.ListQueuesRequest{AllowStale: stale, Tag: terms}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = make([]QueueStats, 0, len(resp.GetQueues()))
		for _, q := range resp.GetQueues() {
			s := queueStatsFromProto(q)
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

// ListJobsOptions select a page of a queue's live jobs in one state.
type ListJobsOptions struct {
	State      JobState // StateScheduled, StateReady or StateReserved
	AfterJobID uint64   // exclusive; 0 starts at the beginning
	Limit      int      // 0 means 100; the server clamps to 1000
	Stale      bool
}

// ListJobs pages through a queue's live jobs in one state by job id. The
// second result is the AfterJobID of the next page, 0 when this is the last.
func (c *Client) ListJobs(ctx context.Context, queue string, opts ListJobsOptions) ([]Job, uint64, error) {
	var (
		out  []Job
		next uint64
	)
	m := &seppv1.ListJobsRequest{Queue: queue, State: seppv1.JobState(opts.State), AfterJobId: opts.AfterJobID, Limit: uint32(max(opts.Limit, 0)), AllowStale: opts.Stale}
	err := c.call(ctx, "list jobs", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).ListJobs(ctx, m, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = out[:0]
		for _, j := range resp.GetJobs() {
			out = append(out, jobFromProto(j))
		}
		next = resp.GetNextAfterJobId()
		return nil
	})
	return out, next, err
}

// GetJob returns one live job.
func (c *Client) GetJob(ctx context.Context, id uint64, stale bool) (*Job, error) {
	var out *Job
	err := c.call(ctx, "get job", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).GetJob(ctx, &seppv1.GetJobRequest{JobId: id, AllowStale: stale}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		j := jobFromProto(resp.GetJob())
		out = &j
		return nil
	})
	return out, err
}

// ListDeadLettersOptions select a page of retained dead letters.
type ListDeadLettersOptions struct {
	Queue      string // empty lists across all queues
	AfterJobID uint64
	Limit      int // 0 means 100; the server clamps to 1000
	Stale      bool
}

// ListDeadLetters pages through retained dead letters without consuming
// them. The second result is the AfterJobID of the next page, 0 at the end.
func (c *Client) ListDeadLetters(ctx context.Context, opts ListDeadLettersOptions) ([]DeadLetterRecord, uint64, error) {
	var (
		out  []DeadLetterRecord
		next uint64
	)
	m := &seppv1.ListDeadLettersRequest{Queue: opts.Queue, AfterJobId: opts.AfterJobID, Limit: uint32(max(opts.Limit, 0)), AllowStale: opts.Stale}
	err := c.call(ctx, "list dead letters", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).ListDeadLetters(ctx, m, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = out[:0]
		for _, r := range resp.GetRecords() {
			out = append(out, deadLetterFromProto(r))
		}
		next = resp.GetNextAfterJobId()
		return nil
	})
	return out, next, err
}

// GetDeadLetter returns one retained dead letter.
func (c *Client) GetDeadLetter(ctx context.Context, id uint64, stale bool) (*DeadLetterRecord, error) {
	var out *DeadLetterRecord
	err := c.call(ctx, "get dead letter", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).GetDeadLetter(ctx, &seppv1.GetDeadLetterRequest{JobId: id, AllowStale: stale}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		r := deadLetterFromProto(resp.GetRecord())
		out = &r
		return nil
	})
	return out, err
}

// ActionResult is an operator action's outcome for one job id.
type ActionResult struct {
	JobID uint64
	Err   error // nil on success
}

type actionFunc func(ctx context.Context, admin seppv1.AdminServiceClient) ([]*seppv1.JobActionResult, error)

func (c *Client) action(ctx context.Context, op string, ids []uint64, fn actionFunc) ([]ActionResult, error) {
	var out []ActionResult
	err := c.call(ctx, op, retrySafe, 0, func(ctx context.Context, a *attempt) error {
		results, err := fn(ctx, seppv1.NewAdminServiceClient(a.cc))
		if err != nil {
			return err
		}
		out = make([]ActionResult, 0, len(results))
		for _, r := range results {
			out = append(out, ActionResult{JobID: r.GetJobId(), Err: itemError(op, r.GetError())})
		}
		return nil
	})
	return out, err
}

// RequeueDeadLetters puts records back Ready on their queue with their
// original job id and the attempt counter reset to 1. After a retry whose
// first attempt may have applied, an id can report ErrNotFound although it
// was requeued.
func (c *Client) RequeueDeadLetters(ctx context.Context, ids []uint64) ([]ActionResult, error) {
	return c.action(ctx, "requeue dead letters", ids, func(ctx context.Context, admin seppv1.AdminServiceClient) ([]*seppv1.JobActionResult, error) {
		resp, err := admin.RequeueDeadLetters(ctx, &seppv1.RequeueDeadLettersRequest{JobIds: ids}, c.opts.callOptions...)
		return resp.GetResults(), err
	})
}

// DeleteDeadLetters removes records for good.
func (c *Client) DeleteDeadLetters(ctx context.Context, ids []uint64) ([]ActionResult, error) {
	return c.action(ctx, "delete dead letters", ids, func(ctx context.Context, admin seppv1.AdminServiceClient) ([]*seppv1.JobActionResult, error) {
		resp, err := admin.DeleteDeadLetters(ctx, &seppv1.DeleteDeadLettersRequest{JobIds: ids}, c.opts.callOptions...)
		return resp.GetResults(), err
	})
}

// DeadLetterJobs dead-letters live Ready or Scheduled jobs with cause admin;
// reason is recorded as the records' last reason.
func (c *Client) DeadLetterJobs(ctx context.Context, ids []uint64, reason string) ([]ActionResult, error) {
	return c.action(ctx, "dead-letter jobs", ids, func(ctx context.Context, admin seppv1.AdminServiceClient) ([]*seppv1.JobActionResult, error) {
		resp, err := admin.DeadLetterJobs(ctx, &seppv1.DeadLetterJobsRequest{JobIds: ids, Reason: reason}, c.opts.callOptions...)
		return resp.GetResults(), err
	})
}

// PauseQueue stops Reserve from handing out the queue's jobs; enqueues are
// still accepted.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	return c.call(ctx, "pause queue", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		_, err := seppv1.NewAdminServiceClient(a.cc).PauseQueue(ctx, &seppv1.PauseQueueRequest{Queue: queue}, c.opts.callOptions...)
		return err
	})
}

// ResumeQueue undoes PauseQueue.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	return c.call(ctx, "resume queue", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		_, err := seppv1.NewAdminServiceClient(a.cc).ResumeQueue(ctx, &seppv1.ResumeQueueRequest{Queue: queue}, c.opts.callOptions...)
		return err
	})
}

// NodeInfo is one cluster member's identity and addresses.
type NodeInfo struct {
	ID       string
	RaftAddr string
	GRPCAddr string
	HTTPAddr string
}

func nodeFromProto(m *seppv1.NodeInfo) NodeInfo {
	return NodeInfo{ID: m.GetId(), RaftAddr: m.GetRaftAddr(), GRPCAddr: m.GetGrpcAddr(), HTTPAddr: m.GetHttpAddr()}
}

// ClusterMember is one voter or non-voter of the configuration.
type ClusterMember struct {
	Node        NodeInfo
	Voter       bool
	Leader      bool
	Healthy     bool   // the leader's view
	LastContact string // as raft reports it
	// Facts are what the member last reported of itself; nil until the
	// leader has heard from it.
	Facts *MemberFacts
	// ClockOffset is the member's clock minus the answering node's, within
	// ClockError (half the round trip of the question); ClockMeasured is
	// false for the answering node itself and members it could not ask
	// recently.
	ClockOffset, ClockError time.Duration
	ClockMeasured           bool
}

// MemberFacts is a member's report of itself, as the replicated state
// records it.
type MemberFacts struct {
	BinaryVersion     string
	MinCommandVersion uint32
	MaxCommandVersion uint32
	MemoryLimitBytes  int64 // 0: none known
	MemoryLimitFrom   string
	GOMAXPROCS        int
	Started           time.Time // zero when not known
	// Legacy: a binary that serves no facts call; only MaxCommandVersion
	// is known.
	Legacy bool
}

func memberFactsFromProto(f *seppv1.MemberFacts) *MemberFacts {
	if f == nil {
		return nil
	}
	out := &MemberFacts{BinaryVersion: f.GetBinaryVersion(), MinCommandVersion: f.GetMinCommandVersion(),
		MaxCommandVersion: f.GetMaxCommandVersion(), MemoryLimitBytes: f.GetMemoryLimitBytes(),
		MemoryLimitFrom: f.GetMemoryLimitFrom(), GOMAXPROCS: int(f.GetGomaxprocs()), Legacy: f.GetLegacy()}
	if f.GetStartTime() != nil {
		out.Started = f.GetStartTime().AsTime()
	}
	return out
}

// ClusterStatus is one node's view of the cluster.
type ClusterStatus struct {
	Self         NodeInfo
	Leader       NodeInfo // zero when no leader is known
	State        string   // "Leader", "Follower", "Candidate" or "Shutdown"
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	LastLogIndex uint64
	Members      []ClusterMember
	// MaxClockSkew is how far a member's clock may be off the others'
	// (cluster.max_clock_skew_ms); ClockSkew, when set, says why the
	// answering node's clock is off the members' (it does not lead then).
	MaxClockSkew time.Duration
	ClockSkew    string
	// StateDigest and DigestIndex are set by StateDigestOf only.
	StateDigest string
	DigestIndex uint64
}

// ClusterStatus asks the leader (or, when no leader answers, whichever node
// answers) for its view of the cluster.
func (c *Client) ClusterStatus(ctx context.Context) (*ClusterStatus, error) {
	var out *ClusterStatus
	err := c.call(ctx, "cluster status", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewClusterServiceClient(a.cc).Status(ctx, &seppv1.StatusRequest{}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = clusterStatusFromProto(resp)
		return nil
	})
	if err != nil || out.State == "Leader" || out.Leader.GRPCAddr == "" || out.Leader.ID == out.Self.ID {
		return out, err
	}
	// A follower answered (Status is not a leader-only call, so nothing
	// redirected us): only the leader knows every member's health, so ask
	// it, keeping the follower's view if the leader cannot be reached.
	if lead, lerr := c.clusterStatusOf(ctx, out.Leader.GRPCAddr, false); lerr == nil && lead.State == "Leader" {
		return lead, nil
	}
	return out, nil
}

// ClusterStatusOf asks the node at addr for its own view, without following
// the leader; addr need not be one of the client's addresses.
func (c *Client) ClusterStatusOf(ctx context.Context, addr string) (*ClusterStatus, error) {
	return c.clusterStatusOf(ctx, addr, false)
}

// StateDigestOf asks the node at addr for the hash of its replicated state
// and the log index it includes. Replicas at the same index must agree;
// fault tests compare them once the cluster is quiet.
func (c *Client) StateDigestOf(ctx context.Context, addr string) (digest string, index uint64, err error) {
	st, err := c.clusterStatusOf(ctx, addr, true)
	if err != nil {
		return "", 0, err
	}
	return st.StateDigest, st.DigestIndex, nil
}

func (c *Client) clusterStatusOf(ctx context.Context, addr string, withDigest bool) (*ClusterStatus, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	cc, err := c.connLocked(addr)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if c.opts.attemptTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.attemptTimeout)
		defer cancel()
	}
	resp, err := seppv1.NewClusterServiceClient(cc).Status(ctx, &seppv1.StatusRequest{IncludeDigest: withDigest}, c.opts.callOptions...)
	if err != nil {
		return nil, fromStatus("cluster status", err)
	}
	return clusterStatusFromProto(resp), nil
}

func clusterStatusFromProto(resp *seppv1.StatusResponse) *ClusterStatus {
	s := &ClusterStatus{
		Self:         nodeFromProto(resp.GetSelf()),
		Leader:       nodeFromProto(resp.GetLeader()),
		State:        resp.GetState(),
		Term:         resp.GetTerm(),
		CommitIndex:  resp.GetCommitIndex(),
		AppliedIndex: resp.GetAppliedIndex(),
		LastLogIndex: resp.GetLastLogIndex(),
		StateDigest:  resp.GetStateDigest(),
		DigestIndex:  resp.GetDigestIndex(),
		MaxClockSkew: resp.GetMaxClockSkew().AsDuration(),
		ClockSkew:    resp.GetClockSkew(),
	}
	for _, m := range resp.GetMembers() {
		cm := ClusterMember{
			Node: nodeFromProto(m.GetNode()), Voter: m.GetVoter(), Leader: m.GetLeader(),
			Healthy: m.GetHealthy(), LastContact: m.GetLastContact(), Facts: memberFactsFromProto(m.GetFacts()),
		}
		if c := m.GetClock(); c != nil {
			cm.ClockOffset, cm.ClockError, cm.ClockMeasured = c.GetOffset().AsDuration(), c.GetError().AsDuration(), true
		}
		s.Members = append(s.Members, cm)
	}
	return s
}

// JoinNode adds a node to the cluster as a voter.
func (c *Client) JoinNode(ctx context.Context, node NodeInfo) error {
	m := &seppv1.JoinRequest{Node: &seppv1.NodeInfo{Id: node.ID, RaftAddr: node.RaftAddr, GrpcAddr: node.GRPCAddr, HttpAddr: node.HTTPAddr}}
	return c.call(ctx, "join node", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		_, err := seppv1.NewClusterServiceClient(a.cc).Join(ctx, m, c.opts.callOptions...)
		return err
	})
}

// RemoveNode takes a node out of the configuration.
func (c *Client) RemoveNode(ctx context.Context, id string) error {
	return c.call(ctx, "remove node", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		_, err := seppv1.NewClusterServiceClient(a.cc).Remove(ctx, &seppv1.RemoveRequest{NodeId: id}, c.opts.callOptions...)
		return err
	})
}

// TransferLeadership hands leadership to another voter (empty: the leader
// picks the most up-to-date one). It is not retried once it may have
// reached the leader, so it never moves leadership twice.
func (c *Client) TransferLeadership(ctx context.Context, toID string) error {
	return c.call(ctx, "transfer leadership", retryNotSent, 0, func(ctx context.Context, a *attempt) error {
		_, err := seppv1.NewClusterServiceClient(a.cc).TransferLeadership(ctx, &seppv1.TransferLeadershipRequest{ToNodeId: toID}, c.opts.callOptions...)
		if err == nil {
			c.forget(a.addr) // it no longer leads
		}
		return err
	})
}
