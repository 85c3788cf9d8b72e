package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Clock faults.
//
// The leader stamps its time into every command, and every replica applies
// that time: a leader whose clock jumps an hour ahead would expire every
// lease and promote every scheduled job an hour early, everywhere. Two
// guards keep the stamped time honest.
//
// The stamp clock (stampClock) reads the wall clock, but checks each
// reading against the monotonic clock, which no one can set: when the wall
// clock has moved more than MaxClockSkew away from where the monotonic
// clock says it should be since the last reading it trusted, the node logs
// a clock jump and goes on from its last trusted reading plus the
// monotonic time since. A jump forward therefore never moves the stamped
// time forward, and a jump back never holds it still (the state machine
// keeps time from running backwards in any case: fsm's commandNow).
//
// Members compare clocks (watchClocks): every node asks each other member
// for its facts every clockCheckInterval, and the answer carries the
// member's wall clock. The offset is the member's clock minus the midpoint
// of the question's round trip on this node's clock (as NTP does), known
// to within half the round trip. A node whose clock a majority of the
// voters is known to disagree with by more than MaxClockSkew (the error
// counted in its favour) is skewed: it says so in its log, in /metrics
// (sepp_clock_skew_exceeded, sepp_clock_offset_seconds), in cluster status
// and in /readyz; as leader it hands leadership to a member whose clock
// agrees with the others', at once on election (before the first entry of
// its term) or within a check while it leads. While its clock is known to
// be ahead of the cluster's median, its stamps are pulled back to that
// median (never pushed forward).
//
// Raft has no way to keep a node from standing for election, so a skewed
// node may still win one; it then transfers leadership before it stamps
// anything. A node with no other member to compare with (a cluster of one,
// members without a gRPC address) has only the jump guard.

const (
	// DefaultMaxClockSkew is how far a member's clock may be off the
	// others' before it may not lead (cluster.max_clock_skew_ms). Clocks
	// kept by NTP agree within milliseconds, so a second is far outside
	// normal operation; it is also the most that time-driven transitions
	// (lease expiry, scheduled jobs, retry delays) can run early by, while
	// a leader's clock drifts within the bound. Under a second and the
	// measurement (half a round trip, which a starved host stretches to
	// hundreds of milliseconds) could not tell a skewed clock from a slow
	// answer: such an answer is not counted against the node.
	DefaultMaxClockSkew = time.Second
	// clockCheckInterval is how often every node compares its clock with
	// the other members'; samples older than clockSampleMaxAge are not
	// used.
	clockCheckInterval = time.Second
	clockSampleMaxAge  = 5 * clockCheckInterval
)

// stampClock is the leader's clock for stamped time: the wall clock,
// guarded against jumps by the monotonic clock, and pulled back when the
// members say it is ahead.
type stampClock struct {
	wall  func() time.Time
	mono  func() time.Duration // nil: no jump guard (a test's own clock)
	bound time.Duration
	// onJump, when set, is told of each jump the guard detects (wall minus
	// where the monotonic clock puts it); called with mu held.
	onJump func(jump time.Duration)

	mu         sync.Mutex
	anchorWall time.Time     // the last wall reading trusted
	anchorMono time.Duration // the monotonic reading taken with it
	anchored   bool
	bridging   bool          // the wall clock is off its anchor: time follows the monotonic clock
	ahead      time.Duration // how far the wall clock is known to be ahead of the members' median
}

func newStampClock(wall func() time.Time, mono func() time.Duration, bound time.Duration) *stampClock {
	return &stampClock{wall: wall, mono: mono, bound: bound}
}

// Now is the time to stamp.
func (c *stampClock) Now() time.Time {
	w := c.wall().Round(0) // wall time only: the guard does the monotonic part
	c.mu.Lock()
	defer c.mu.Unlock()
	t := w
	if c.mono != nil && c.bound > 0 {
		m := c.mono()
		if c.anchored {
			expected := c.anchorWall.Add(m - c.anchorMono)
			d := w.Sub(expected)
			if d.Abs() > c.bound {
				if !c.bridging && c.onJump != nil {
					c.onJump(d)
				}
				c.bridging = true
				t = expected
			} else {
				c.bridging = false
				c.anchorWall, c.anchorMono = w, m
			}
		} else {
			c.anchorWall, c.anchorMono, c.anchored = w, m, true
		}
	}
	if c.ahead > 0 {
		if pulled := w.Add(-c.ahead); pulled.Before(t) {
			t = pulled
		}
	}
	return t
}

// trustWall re-anchors the guard on the wall clock: the members agree with
// it, so a jump it made was a correction.
func (c *stampClock) trustWall() {
	if c.mono == nil {
		return
	}
	w, m := c.wall().Round(0), c.mono()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.anchorWall, c.anchorMono, c.anchored, c.bridging = w, m, true, false
}

// setAhead records how far the wall clock is known to be ahead of the
// members' median (0: not known to be ahead).
func (c *stampClock) setAhead(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ahead = max(d, 0)
}

// clockSample is one comparison of a member's clock with this node's.
type clockSample struct {
	offset time.Duration // the member's clock minus this node's
	err    time.Duration // half the round trip: the offset is within ±err
	at     time.Duration // this node's monotonic reading when it was taken
}

// disagrees reports whether the member's clock is off this node's by more
// than bound even with the measurement's error in this node's favour.
func (s clockSample) disagrees(bound time.Duration) bool { return s.offset.Abs()-s.err > bound }

// clockVerdict is what a node concludes from its samples.
type clockVerdict struct {
	skewed bool
	// disagree are the voters known to disagree with this node's clock.
	disagree []string
	// median is the median of the members' offsets (this node's own, 0,
	// included), with its error; known only with samples from enough
	// members to make a majority with this node.
	median, medianErr time.Duration
	medianKnown       bool
}

// judgeClock decides from fresh samples of the other voters (by id)
// whether this node's clock is skewed: a majority of the voters (this
// node counted among them) is known to disagree with it.
func judgeClock(voters int, samples map[string]clockSample, bound time.Duration) clockVerdict {
	var v clockVerdict
	quorum := voters/2 + 1
	type off struct{ d, err time.Duration }
	offs := []off{{0, 0}}
	for id, s := range samples {
		offs = append(offs, off{s.offset, s.err})
		if s.disagrees(bound) {
			v.disagree = append(v.disagree, id)
		}
	}
	sort.Strings(v.disagree)
	v.skewed = voters > 1 && len(v.disagree) >= quorum
	if len(offs) >= quorum {
		slices.SortFunc(offs, func(a, b off) int {
			if a.d != b.d {
				return int(min(max(a.d-b.d, -1), 1))
			}
			return int(min(max(a.err-b.err, -1), 1))
		})
		mid := offs[(len(offs)-1)/2]
		v.median, v.medianErr, v.medianKnown = mid.d, mid.err, true
	}
	return v
}

// transferTarget picks, from the samples, the voter whose clock agrees
// with the most other members' (the most samples within bound of its own,
// errors counted in its favour), and with at least enough of them to make
// a majority; "" when none does. Ties go to the smaller id.
func transferTarget(voters int, samples map[string]clockSample, bound time.Duration) string {
	quorum := voters/2 + 1
	ids := make([]string, 0, len(samples))
	for id := range samples {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	best, bestCount := "", 0
	for _, p := range ids {
		sp := samples[p]
		count := 1 // itself
		for _, q := range ids {
			if q == p {
				continue
			}
			sq := samples[q]
			if (sp.offset - sq.offset).Abs() <= bound+sp.err+sq.err {
				count++
			}
		}
		if !sp.disagrees(bound) {
			count++ // this node's own clock agrees with it
		}
		if count >= quorum && count > bestCount {
			best, bestCount = p, count
		}
	}
	return best
}

// ClockOffset is one member's clock as this node last measured it.
type ClockOffset struct {
	// Offset is the member's clock minus this node's; Error bounds the
	// measurement (half the round trip).
	Offset, Error time.Duration
	// Age is how long ago it was measured.
	Age time.Duration
}

// ClockStatus is this node's view of its clock against the members'.
type ClockStatus struct {
	MaxSkew time.Duration
	// Skewed: a majority of the voters is known to disagree with this
	// node's clock by more than MaxSkew; Reason says so in words ("" when
	// not skewed).
	Skewed bool
	Reason string
	// Offsets are the fresh measurements, by member id.
	Offsets map[string]ClockOffset
}

// clockWatch is a node's state of its clock checks.
type clockWatch struct {
	mu      sync.Mutex
	samples map[string]clockSample
	verdict clockVerdict
	reason  string
}

// ClockStatus reports this node's clock checks.
func (n *Node) ClockStatus() ClockStatus {
	n.clocks.mu.Lock()
	defer n.clocks.mu.Unlock()
	st := ClockStatus{MaxSkew: n.cfg.MaxClockSkew, Skewed: n.clocks.verdict.skewed, Reason: n.clocks.reason,
		Offsets: make(map[string]ClockOffset, len(n.clocks.samples))}
	now := n.mono()
	for id, s := range n.clocks.samples {
		if age := now - s.at; age <= clockSampleMaxAge {
			st.Offsets[id] = ClockOffset{Offset: s.offset, Error: s.err, Age: age}
		}
	}
	return st
}

// clockSkewed reports whether this node's clock is known to be off the
// cluster's.
func (n *Node) clockSkewed() (bool, string) {
	n.clocks.mu.Lock()
	defer n.clocks.mu.Unlock()
	return n.clocks.verdict.skewed, n.clocks.reason
}

// watchClocks compares this node's clock with the other members' every
// clockCheckInterval while the node runs, on every node (a follower must
// know before it is elected), and hands leadership over when this node
// leads with a skewed clock.
func (n *Node) watchClocks() {
	defer n.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.shutdownCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-n.shutdownCh:
			return
		case <-t.C:
		}
		n.checkClock(ctx)
		t.Reset(clockCheckInterval)
	}
}

// checkClock runs one round of clock comparisons and acts on the verdict.
func (n *Node) checkClock(ctx context.Context) {
	n.stamp.Now() // the jump guard reads the clock, so an idle node notices a jump too
	if n.cfg.PeerFacts == nil {
		return
	}
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return
	}
	voters := 0
	var peers []NodeInfo
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if string(s.ID) == n.self.ID {
			continue
		}
		if meta, ok := n.fsm.Node(string(s.ID)); ok && meta.GRPCAddr != "" {
			peers = append(peers, nodeInfoFromMeta(meta))
		}
	}
	type answer struct {
		id string
		s  clockSample
		ok bool
	}
	answers := make(chan answer, len(peers))
	for _, p := range peers {
		go func() {
			actx, cancel := context.WithTimeout(ctx, n.questions.AskTimeout)
			defer cancel()
			sent, m0 := n.wall(), n.mono()
			f, err := n.cfg.PeerFacts(actx, p)
			rtt := n.mono() - m0
			if err != nil || f.Clock.IsZero() {
				answers <- answer{id: p.ID}
				return
			}
			mid := sent.Add(rtt / 2)
			answers <- answer{id: p.ID, ok: true, s: clockSample{offset: f.Clock.Sub(mid), err: rtt / 2, at: n.mono()}}
		}()
	}
	n.clocks.mu.Lock()
	if n.clocks.samples == nil {
		n.clocks.samples = make(map[string]clockSample)
	}
	n.clocks.mu.Unlock()
	for range peers {
		a := <-answers
		if !a.ok {
			continue
		}
		n.clocks.mu.Lock()
		n.clocks.samples[a.id] = a.s
		n.clocks.mu.Unlock()
	}

	now := n.mono()
	fresh := make(map[string]clockSample)
	n.clocks.mu.Lock()
	for id, s := range n.clocks.samples {
		if now-s.at > clockSampleMaxAge || !slices.ContainsFunc(peers, func(p NodeInfo) bool { return p.ID == id }) {
			delete(n.clocks.samples, id)
			continue
		}
		fresh[id] = s
	}
	bound := n.cfg.MaxClockSkew
	v := judgeClock(voters, fresh, bound)
	was := n.clocks.verdict.skewed
	reason := ""
	if v.skewed {
		var parts []string
		for _, id := range v.disagree {
			s := fresh[id]
			parts = append(parts, fmt.Sprintf("%s %s (±%s)", id, fmtOffset(s.offset), s.err.Round(time.Millisecond)))
		}
		reason = fmt.Sprintf("this node's clock is off the cluster's by more than max_clock_skew (%s): members' clocks minus this node's: %s",
			bound, strings.Join(parts, ", "))
	}
	n.clocks.verdict, n.clocks.reason = v, reason
	n.clocks.mu.Unlock()
	n.metrics.setClock(v.skewed, fresh)

	// Stamps follow the members' median while this node is known to be
	// ahead of it (by more than the measurement's error).
	ahead := time.Duration(0)
	if v.medianKnown && -v.median > v.medianErr {
		ahead = -v.median - v.medianErr
	}
	n.stamp.setAhead(ahead)
	// The wall clock is trusted again (a jump was a correction) only when
	// no member measured disagrees with it: with two voters, a majority
	// cannot tell which clock jumped.
	if v.medianKnown && len(v.disagree) == 0 && ahead == 0 {
		n.stamp.trustWall()
	}

	switch {
	case v.skewed && !was:
		n.log.Warn("clock skew: this node's clock disagrees with a majority of the members; it will not lead", "reason", reason)
	case !v.skewed && was:
		n.log.Info("clock skew over: this node's clock agrees with the members' again", "max_clock_skew", bound)
	}
	if v.skewed && n.raft.State() == raft.Leader {
		n.handOverForClock(fresh, voters, reason)
	}
}

// handOverForClock transfers leadership away from this node, whose clock
// is skewed, to a member whose clock agrees with the others'. It reports
// whether the transfer went through.
func (n *Node) handOverForClock(samples map[string]clockSample, voters int, reason string) bool {
	target := transferTarget(voters, samples, n.cfg.MaxClockSkew)
	if target == "" {
		n.log.Error("clock skew: this leader's clock is off, and no member's clock agrees with enough others to hand leadership to; leading on, stamping the members' median time", "reason", reason)
		return false
	}
	var addr raft.ServerAddress
	if cf := n.raft.GetConfiguration(); cf.Error() == nil {
		for _, s := range cf.Configuration().Servers {
			if string(s.ID) == target {
				addr = s.Address
			}
		}
	}
	n.log.Warn("clock skew: handing leadership over to a member whose clock agrees with the others'", "to", target, "reason", reason)
	if err := n.raft.LeadershipTransferToServer(raft.ServerID(target), addr).Error(); err != nil {
		n.log.Error("clock skew: leadership transfer failed; trying again at the next check", "to", target, "error", err)
		return false
	}
	return true
}

// handOverIfSkewed is a new leader's first duty: a node whose clock is
// known to be off does not serve a term, it hands it over before it
// stamps anything. It reports whether it did.
func (n *Node) handOverIfSkewed() bool {
	skewed, reason := n.clockSkewed()
	if !skewed {
		return false
	}
	n.clocks.mu.Lock()
	fresh := make(map[string]clockSample, len(n.clocks.samples))
	for id, s := range n.clocks.samples {
		fresh[id] = s
	}
	n.clocks.mu.Unlock()
	voters := 0
	if cf := n.raft.GetConfiguration(); cf.Error() == nil {
		for _, s := range cf.Configuration().Servers {
			if s.Suffrage == raft.Voter {
				voters++
			}
		}
	}
	return n.handOverForClock(fresh, voters, reason)
}

func fmtOffset(d time.Duration) string {
	d = d.Round(time.Millisecond)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}
