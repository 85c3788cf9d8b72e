package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/fsm"
)

// Members' facts.
//
// Each member reports itself (MemberFacts: binary version, the command
// versions its binary applies, its memory limit, GOMAXPROCS, start time)
// through its ClusterService.GetMemberFacts; the leader asks every other
// member (Config.PeerFacts) while it leads, and records what each answers
// in that member's replicated metadata (a NodeMetadataSet, fsm.NodeFacts),
// so every node shows every member's facts and a new leader starts from
// them. A leader records its own in the first entry of its term
// (proposer.vouch).
//
// Two things follow from the facts. A leader proposes a newer command
// (such as a JobAckBatch) only once every member's metadata says its
// binary applies it (Node.membersApply). And the memory budget it proposes
// is its configured share of the smallest memory limit among the members
// (memberMemoryBudget), so that no replica holds more than it can restart
// with; it proposes it again when the membership or a member's facts
// change.
//
// A member whose binary predates the facts call (it answers Unimplemented,
// ErrFactsUnsupported) is asked the older question instead, which health
// service names it serves (Config.PeerCommandVersion, versions.go): only
// its command version is known then (MemberFacts.Legacy). That fallback is
// to be removed after the next release. A member that cannot be asked (no
// gRPC address, unreachable) keeps what its metadata says, version 1 when
// nothing, and the leader keeps proposing the older commands.

// MemberFacts is a member's report of itself.
type MemberFacts struct {
	NodeID        string
	BinaryVersion string
	// MinCommandVersion..MaxCommandVersion are the command versions its
	// binary applies.
	MinCommandVersion uint32
	MaxCommandVersion uint32
	// MemoryLimitBytes is the smallest memory limit the member knows of (0:
	// none known); MemoryLimitFrom says which limit it is.
	MemoryLimitBytes int64
	MemoryLimitFrom  string
	GOMAXPROCS       int
	Started          time.Time
	// Clock is the member's wall clock when it answered (zero when its
	// binary does not say): the clock checks compare it (clock.go). Not
	// recorded in the replicated metadata.
	Clock time.Time
	// Legacy: the member serves no facts call (a binary older than it), so
	// only MaxCommandVersion is known, from the health-name question.
	Legacy bool
}

// ErrFactsUnsupported is what Config.PeerFacts wraps when the member's
// binary serves no facts call; the leader then asks its command version the
// older way (Config.PeerCommandVersion).
var ErrFactsUnsupported = errors.New("member serves no facts call")

// BinaryCommandVersions is the range of command versions this binary
// applies.
func BinaryCommandVersions() (lowest, highest uint32) { return 1, fsm.CommandVersion }

// SelfFacts is this node's own report: Config.Facts with its id and its
// binary's command versions.
func (n *Node) SelfFacts() MemberFacts {
	f := n.cfg.Facts
	f.NodeID = n.self.ID
	f.MinCommandVersion, f.MaxCommandVersion = BinaryCommandVersions()
	f.Legacy = false
	f.Clock = n.wall()
	return f
}

func nodeFacts(f MemberFacts) fsm.NodeFacts {
	out := fsm.NodeFacts{Reported: true, Legacy: f.Legacy, BinaryVersion: f.BinaryVersion,
		MinCommandVersion: f.MinCommandVersion, MemoryLimitBytes: f.MemoryLimitBytes,
		MemoryLimitFrom: f.MemoryLimitFrom, GOMAXPROCS: uint32(max(f.GOMAXPROCS, 0))}
	if !f.Started.IsZero() {
		out.StartUnixNano = f.Started.UnixNano()
	}
	return out
}

// factsFromMeta is a member's recorded facts; nil when none are recorded.
func factsFromMeta(m fsm.NodeMeta) *MemberFacts {
	f := m.Facts
	if !f.Reported {
		return nil
	}
	out := &MemberFacts{NodeID: m.ID, BinaryVersion: f.BinaryVersion, MinCommandVersion: f.MinCommandVersion,
		MaxCommandVersion: max(m.MaxCommandVersion, 1), MemoryLimitBytes: f.MemoryLimitBytes,
		MemoryLimitFrom: f.MemoryLimitFrom, GOMAXPROCS: int(f.GOMAXPROCS), Legacy: f.Legacy}
	if f.StartUnixNano != 0 {
		out.Started = time.Unix(0, f.StartUnixNano).UTC()
	}
	return out
}

// MemberQuestions times the leader's questions to its members about their
// facts. Only tests change them, to not wait out the production intervals.
type MemberQuestions struct {
	// AskTimeout bounds one question to one member.
	AskTimeout time.Duration
	// Retry is how soon members that could not be asked, or do not apply
	// this binary's commands yet, are asked again; Recheck how often a
	// leader that knows every member's version asks again, for new
	// members and changed facts (a member restarted in another memory
	// limit).
	Retry   time.Duration
	Recheck time.Duration
	// FirstRoundWait bounds how long a new leader waits for its first
	// round of answers before it is ready, and how long a request waits
	// for that round (membersApplyFor). A round asks each member for at
	// most AskTimeout; one that hangs is what makes a round long, and a
	// request then gets its refusal after this long.
	FirstRoundWait time.Duration
}

// DefaultMemberQuestions are the intervals sepp serve runs with.
func DefaultMemberQuestions() MemberQuestions {
	return MemberQuestions{AskTimeout: 2 * time.Second, Retry: 2 * time.Second, Recheck: 10 * time.Second, FirstRoundWait: 3 * time.Second}
}

// withDefaults fills the zero fields of q with the defaults.
func (q MemberQuestions) withDefaults() MemberQuestions {
	d := DefaultMemberQuestions()
	if q.AskTimeout <= 0 {
		q.AskTimeout = d.AskTimeout
	}
	if q.Retry <= 0 {
		q.Retry = d.Retry
	}
	if q.Recheck <= 0 {
		q.Recheck = d.Recheck
	}
	if q.FirstRoundWait <= 0 {
		q.FirstRoundWait = d.FirstRoundWait
	}
	return q
}

// learnMemberFacts runs while this node leads and its duties are done. It
// closes firstRound once its first round of questions is over (or it ends
// before one), for the requests that wait on it (membersApplyFor).
func (n *Node) learnMemberFacts(ctx context.Context, firstRound chan struct{}) {
	var once sync.Once
	firstRoundOver := func() { once.Do(func() { close(firstRound) }) }
	defer firstRoundOver()
	if !n.asksMemberFacts() {
		return
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.askFactsNow:
		}
		allKnown := n.askMemberFacts(ctx)
		firstRoundOver()
		// The config follows what is now known: one held back for an
		// older member (membersConfig) can go out once every member
		// applies it, and the memory budget follows the smallest member.
		if !n.setConfig(ctx) {
			return
		}
		if allKnown {
			t.Reset(n.questions.Recheck)
		} else {
			t.Reset(n.questions.Retry)
		}
	}
}

// askFactsSoon brings the leader's next round of questions forward: a
// member joined, and until its facts are known every feature newer than
// the oldest binary is refused (a replaced disk's node would otherwise wait
// up to MemberQuestions.Recheck to be asked).
func (n *Node) askFactsSoon() {
	select {
	case n.askFactsNow <- struct{}{}:
	default: // one is due already
	}
}

// asksMemberFacts reports whether this node can ask the members their
// facts (tests may run without).
func (n *Node) asksMemberFacts() bool {
	return n.cfg.PeerFacts != nil || n.cfg.PeerCommandVersion != nil
}

// askMemberFacts asks every other member for its facts and records those
// that differ from its metadata. It reports whether every member is now
// known to apply this binary's CommandVersion.
func (n *Node) askMemberFacts(ctx context.Context) (allKnown bool) {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	allKnown = true
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(n.cfg.NodeID) {
			continue // recorded by this term's first entry
		}
		meta, ok := n.fsm.Node(string(s.ID))
		if !ok || meta.GRPCAddr == "" {
			allKnown = false
			continue // no address to ask yet
		}
		actx, cancel := context.WithTimeout(ctx, n.questions.AskTimeout)
		facts, err := n.askFacts(actx, nodeInfoFromMeta(meta))
		cancel()
		if err != nil {
			n.log.Debug("cannot ask a member its facts", "member", s.ID, "error", err)
			allKnown = allKnown && meta.AppliesCommandVersion(fsm.CommandVersion)
			continue
		}
		want := meta
		want.MaxCommandVersion = min(max(facts.MaxCommandVersion, 1), fsm.CommandVersion)
		want.Facts = nodeFacts(facts)
		if facts.Legacy && facts.MaxCommandVersion < 2 && !meta.Facts.Reported {
			// An older binary that applies nothing newer: nothing to
			// record that its metadata does not already say.
			allKnown = false
			continue
		}
		if want != meta {
			res, err := n.prop.propose(ctx, fsm.SetNodeCommand(want))
			if err == nil {
				err = res.Err
			}
			if err != nil {
				n.log.Debug("cannot record a member's facts", "member", s.ID, "error", err)
				allKnown = allKnown && meta.AppliesCommandVersion(fsm.CommandVersion)
				continue
			}
			n.log.Info("member's facts recorded", "member", s.ID, "binary_version", facts.BinaryVersion,
				"command_version", want.MaxCommandVersion, "memory_limit_bytes", facts.MemoryLimitBytes,
				"memory_limit_from", facts.MemoryLimitFrom, "gomaxprocs", facts.GOMAXPROCS, "legacy", facts.Legacy)
		}
		allKnown = allKnown && want.AppliesCommandVersion(fsm.CommandVersion)
	}
	return allKnown
}

// askFacts asks one member for its facts: its facts call, else (a binary
// that serves none) the command version its health service names.
func (n *Node) askFacts(ctx context.Context, m NodeInfo) (MemberFacts, error) {
	if n.cfg.PeerFacts != nil {
		f, err := n.cfg.PeerFacts(ctx, m)
		if err == nil {
			f.NodeID, f.Legacy = m.ID, false
			return f, nil
		}
		if !errors.Is(err, ErrFactsUnsupported) {
			return MemberFacts{}, err
		}
	}
	if n.cfg.PeerCommandVersion == nil {
		return MemberFacts{}, fmt.Errorf("cluster: %s serves no facts call and no command version can be asked", m.ID)
	}
	v, err := n.cfg.PeerCommandVersion(ctx, m)
	if err != nil {
		return MemberFacts{}, err
	}
	return MemberFacts{NodeID: m.ID, MinCommandVersion: 1, MaxCommandVersion: v, Legacy: true}, nil
}

// memberLimit is one member's memory limit, for the memory budget.
type memberLimit struct {
	id    string
	bytes int64
	from  string // which limit of the member's it is
}

// memoryBudgetFrom is share of the smallest known limit (a limit of 0 is
// unknown and left out), and the member that set it; 0 when share is not
// above 0 or no limit is known. A tie goes to the first member (the ids
// come sorted, so every leader picks the same one).
func memoryBudgetFrom(share float64, limits []memberLimit) (budget int64, setBy memberLimit) {
	if share <= 0 {
		return 0, memberLimit{}
	}
	for _, l := range limits {
		if l.bytes > 0 && (setBy.bytes == 0 || l.bytes < setBy.bytes) {
			setBy = l
		}
	}
	if setBy.bytes == 0 {
		return 0, memberLimit{}
	}
	return int64(float64(setBy.bytes) * share), setBy
}

// memberMemoryBudget is Config.MemoryShare of the smallest memory limit
// among the servers of the raft configuration: this node's own, the others'
// from their recorded facts (a member without facts, or with no limit
// known, is left out). It logs the budget and the member that set it when
// either changes.
func (n *Node) memberMemoryBudget() int64 {
	limits := []memberLimit{{id: n.self.ID, bytes: n.cfg.Facts.MemoryLimitBytes, from: n.cfg.Facts.MemoryLimitFrom}}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			if string(s.ID) == n.self.ID {
				continue
			}
			if meta, ok := n.fsm.Node(string(s.ID)); ok && meta.Facts.Reported {
				limits = append(limits, memberLimit{id: meta.ID, bytes: meta.Facts.MemoryLimitBytes, from: meta.Facts.MemoryLimitFrom})
			}
		}
	}
	slices.SortFunc(limits, func(a, b memberLimit) int { return strings.Compare(a.id, b.id) })
	budget, by := memoryBudgetFrom(n.cfg.MemoryShare, limits)
	n.budgetMu.Lock()
	defer n.budgetMu.Unlock()
	if budget != n.budgetLogged.bytes || by.id != n.budgetLogged.id {
		n.budgetLogged = memberLimit{id: by.id, bytes: budget}
		n.log.Info("memory budget from the smallest member", "max_memory_bytes", budget,
			"member", by.id, "member_memory_limit", by.bytes, "limit_from", by.from,
			"max_memory_share", n.cfg.MemoryShare, "members_known", len(limits))
	}
	return budget
}

// Feature is a capability of this binary with the command version that
// introduced it (fsm.Features).
type Feature = fsm.Feature

// Features lists this binary's features, oldest first (GetServerInfo's
// capabilities).
func Features() []Feature { return fsm.Features() }

// ClusterCommandVersion is the highest command version every member of
// members applies, by their facts: 0 when a member has not reported yet,
// so no feature counts as usable by the whole cluster before all have.
func ClusterCommandVersion(members []Member) uint32 {
	var v uint32
	for i, m := range members {
		if m.Facts == nil {
			return 0
		}
		if i == 0 || m.Facts.MaxCommandVersion < v {
			v = m.Facts.MaxCommandVersion
		}
	}
	return v
}
