package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// Leader crash detection.
//
// Raft notices a dead leader only by its silence: a follower checks at
// random intervals of one to two heartbeat timeouts, so a killed leader's
// writes stop for 100-300 ms with the default timeouts before an election
// even starts. But when a leader's process dies and its host lives on, the
// host's kernel closes the process's sockets at once, and every follower
// reads the end of the leader's connections within a millisecond. A
// follower that sees an inbound raft connection end asks the kernel of the
// leader's host directly, by dialling the leader's raft address: a refused
// connection proves no process listens there any more. Only then does the
// follower call an election, without waiting out the heartbeat timeout.
//
// The election is started the way a leadership transfer starts one: the
// follower sends itself raft's TimeoutNow. A transfer's vote requests are
// granted by voters that still believe in the old leader (the other
// followers, whose heartbeat timers have not fired yet); an ordinary
// candidate's would be refused, and its pre-vote too. Raft's safety does
// not depend on who starts an election, only on votes and logs, so a wrong
// call costs one election, never data.
//
// All followers see the crash at the same moment. To avoid a split vote
// they take turns: the remaining voters sorted by ID, the first calls the
// election at once and each next one only if, crashElectionStagger later,
// there is still no new leader (the first may have a shorter log and lose).
//
// A leader that is paused, partitioned or on a dead host closes nothing;
// raft's heartbeat timeout handles those as before.
//
// A TimeoutNow election deposes whoever leads, so a wrong call is not free:
// it costs writes for as long as an election takes. It was seen to depose a
// leader elected 50 ms earlier: a planned restart hands leadership to one
// follower and then exits, and the other follower, not yet told of the new
// leader, found the old one's address refusing. So before calling, a
// follower checks, when its turn comes (crashCallVerdict):
//
//   - it is still a follower, in the term the dead leader led, and raft names
//     no other leader: any election since is someone else's, never undone;
//   - raft has had no contact from a leader (nor granted a vote) since the
//     connection ended: a dead leader sends nothing;
//   - the other voters, asked their term (a pre-vote request, which changes
//     nothing on the receiver), answer in time, enough of them that with
//     this node they are a quorum, and none is in a later term
//     (termPollVerdict). A leader elected since needed a quorum of votes, and
//     every quorum shares a live member with this node's poll, so its term
//     shows up in an answer. No answer in time means this node could not win
//     an election either; raft's heartbeat timeout takes over.

// crashElectionStagger is how long each remaining voter waits after the one
// ranked before it: long enough for an election on a busy machine (a vote
// is one round trip and one fsync), short against the heartbeat timeout.
const crashElectionStagger = 40 * time.Millisecond

// crashProbeTimeout bounds the dial to the leader's raft address. A crashed
// process on a live host refuses at once; anything slower is not a crash
// this detector can prove.
const crashProbeTimeout = 100 * time.Millisecond

// crashPollTimeout bounds the wait for the other voters' terms. A vote the
// election would need travels the same way, so a voter slower than this
// would slow the election too.
const crashPollTimeout = 100 * time.Millisecond

// tcpStreamLayer is raft's TCP stream layer (raft builds its own only
// inside a whole transport, which would leave nothing to wrap).
type tcpStreamLayer struct {
	listener  net.Listener
	advertise net.Addr
}

var errRaftAddrNotAdvertisable = errors.New("raft address is not advertisable (bind to a specific IP or set raft_advertise_addr)")

func newTCPStreamLayer(bindAddr string, advertise net.Addr) (*tcpStreamLayer, error) {
	ln, err := net.Listen("tcp", bindAddr)
	if err != nil {
		return nil, err
	}
	l := &tcpStreamLayer{listener: ln, advertise: advertise}
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok || addr.IP == nil || addr.IP.IsUnspecified() {
		_ = ln.Close()
		return nil, errRaftAddrNotAdvertisable
	}
	return l, nil
}

func (l *tcpStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

func (l *tcpStreamLayer) Accept() (net.Conn, error) { return l.listener.Accept() }

func (l *tcpStreamLayer) Close() error { return l.listener.Close() }

func (l *tcpStreamLayer) Addr() net.Addr {
	if l.advertise != nil {
		return l.advertise
	}
	return l.listener.Addr()
}

// watchedAccepts reports when a connection a stream layer accepted ends,
// which is how a follower hears of a dead leader. Over sepp serve's
// mutual-TLS stream layer too: the end of a TLS connection is the end of
// its TCP connection, and the probe's dial is refused before any handshake.
type watchedAccepts struct {
	raft.StreamLayer
	onEnd func()
}

func (l watchedAccepts) Accept() (net.Conn, error) {
	c, err := l.StreamLayer.Accept()
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, onEnd: l.onEnd}, nil
}

// watchedConn calls onEnd once, the first time a read fails for any reason
// but a deadline: the peer closed, reset, or this side closed it.
type watchedConn struct {
	net.Conn
	onEnd func()
	ended atomic.Bool
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && c.ended.CompareAndSwap(false, true) {
		c.onEnd()
	}
	return n, err
}

// processGone reports whether no process listens at addr on a host that
// answers: the dial is refused, or the connection is reset or closed before
// any byte is sent (a listener that died with the connection in its
// backlog). A timeout or an unreachable host proves nothing and reports
// false.
func processGone(addr string, timeout time.Duration) bool {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	defer c.Close()
	// A live raft transport waits for the first byte of a request and
	// sends nothing, so this read can only time out, unless the far end
	// is already gone.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	var b [1]byte
	_, err = c.Read(b[:])
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// crashWatch is a node's leader crash detector (see the top of this file).
type crashWatch struct {
	ended chan struct{} // an inbound raft connection ended; buffered 1
	// endedAt is when the first connection end not yet taken by the watcher
	// happened (UnixNano; 0: none pending).
	endedAt atomic.Int64
	now     func() time.Time
	// elections counts elections this node called for a crashed leader;
	// alive counts crash checks that found the leader alive.
	elections atomic.Uint64
	alive     atomic.Uint64
	// probe reports whether the leader at a raft address is gone; tests
	// replace it.
	probe atomic.Pointer[func(addr string) bool]
	// refused counts crash verdicts not acted on (crashCallVerdict,
	// termPollVerdict said no).
	refused atomic.Uint64
	// crashed is the leader found gone, with the term it led. Until the
	// term moves on, the node names no leader rather than a dead one, so
	// callers wait for the election (rpc's leader wait) instead of being
	// sent to an address that refuses them.
	crashed atomic.Pointer[crashedLeader]
}

type crashedLeader struct {
	id   raft.ServerID
	term uint64
}

// hides reports whether id, seen as leader in term, is known to be gone.
func (w *crashWatch) hides(id raft.ServerID, term uint64) bool {
	if w == nil {
		return false
	}
	c := w.crashed.Load()
	return c != nil && c.id == id && c.term == term
}

func newCrashWatch() *crashWatch {
	w := &crashWatch{ended: make(chan struct{}, 1), now: time.Now}
	probe := func(addr string) bool { return processGone(addr, crashProbeTimeout) }
	w.probe.Store(&probe)
	return w
}

// connectionEnded is the stream layer's callback. It never blocks: one
// pending signal stands for any number of ended connections.
func (w *crashWatch) connectionEnded() {
	w.endedAt.CompareAndSwap(0, w.now().UnixNano())
	select {
	case w.ended <- struct{}{}:
	default:
	}
}

// CrashElections is how many elections this node has called because the
// leader's process was gone (see crashwatch.go).
func (n *Node) CrashElections() uint64 {
	if n.crash == nil {
		return 0
	}
	return n.crash.elections.Load()
}

// watchLeaderCrash runs while the node does: for each ended inbound
// connection it checks the leader, and calls an election when the leader's
// process is gone and it is this node's turn.
func (n *Node) watchLeaderCrash() {
	defer n.wg.Done()
	for {
		select {
		case <-n.crash.ended:
		case <-n.shutdownCh:
			return
		}
		endedAt := time.Unix(0, n.crash.endedAt.Swap(0))
		if n.raft.State() != raft.Follower {
			continue
		}
		leaderAddr, leaderID := n.raft.LeaderWithID()
		if leaderID == "" {
			continue // an election is already under way
		}
		if !(*n.crash.probe.Load())(string(leaderAddr)) {
			n.crash.alive.Add(1)
			continue
		}
		dead := crashedLeader{id: leaderID, term: n.raft.CurrentTerm()}
		n.crash.crashed.Store(&dead)
		n.log.Warn("leader's process is gone: its raft address refuses connections", "leader", leaderID, "addr", leaderAddr, "term", dead.term)
		n.takeCrashElectionTurn(dead, endedAt)
	}
}

// takeCrashElectionTurn waits for this node's turn among the voters that
// remain, and calls an election then unless a new leader has appeared or
// raft has started one itself.
func (n *Node) takeCrashElectionTurn(dead crashedLeader, endedAt time.Time) {
	rank := n.crashElectionRank(dead.id)
	if rank < 0 {
		return // not a voter: cannot lead
	}
	if rank > 0 {
		t := time.NewTimer(time.Duration(rank) * crashElectionStagger)
		select {
		case <-t.C:
		case <-n.shutdownCh:
			t.Stop()
			return
		}
	}
	_, leader := n.raft.LeaderWithID()
	why := crashCallVerdict(dead, endedAt, crashCheck{
		state:       n.raft.State(),
		term:        n.raft.CurrentTerm(),
		leader:      leader,
		lastContact: n.raft.LastContact(),
	})
	if why == "" {
		why = n.pollTerms(dead)
	}
	if why != "" {
		n.crash.refused.Add(1)
		n.log.Info("not calling an election for the crashed leader", "crashed", dead.id, "term", dead.term, "reason", why)
		return
	}
	self := n.transport.LocalAddr()
	req := &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{
		ProtocolVersion: raft.ProtocolVersionMax,
		ID:              []byte(n.cfg.NodeID),
		Addr:            []byte(self),
	}}
	var resp raft.TimeoutNowResponse
	if err := n.transport.TimeoutNow(raft.ServerID(n.cfg.NodeID), self, req, &resp); err != nil {
		n.log.Warn("could not start an election for the crashed leader", "error", err)
		return
	}
	n.crash.elections.Add(1)
	n.log.Info("called an election for the crashed leader", "crashed", dead.id, "term", dead.term, "rank", rank)
}

// crashElectionRank is this node's place among the voters other than the
// dead leader, sorted by ID; -1 when this node is not one of them.
func (n *Node) crashElectionRank(dead raft.ServerID) int {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return -1
	}
	var ids []raft.ServerID
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter && s.ID != dead {
			ids = append(ids, s.ID)
		}
	}
	slices.Sort(ids)
	return slices.Index(ids, raft.ServerID(n.cfg.NodeID))
}

// crashCheck is what raft tells a follower when its crash-election turn
// comes.
type crashCheck struct {
	state       raft.RaftState
	term        uint64
	leader      raft.ServerID // "" once raft's heartbeat timeout blanked it
	lastContact time.Time     // raft's last contact with a leader, or vote granted
}

// crashCallVerdict says why a follower must not call an election for dead,
// whose connection ended at endedAt; "" when it may (see the top of this
// file).
func crashCallVerdict(dead crashedLeader, endedAt time.Time, now crashCheck) string {
	switch {
	case now.state != raft.Follower:
		return fmt.Sprintf("this node is %s, not a follower", now.state)
	case now.term != dead.term:
		return fmt.Sprintf("the term moved on from %d to %d: an election ran since", dead.term, now.term)
	case now.leader != "" && now.leader != dead.id:
		return fmt.Sprintf("%s leads now", now.leader)
	case now.lastContact.After(endedAt):
		return fmt.Sprintf("a leader was heard from %s after the connection ended", now.lastContact.Sub(endedAt))
	}
	return ""
}

// termPollVerdict says why the answers to a term poll forbid an election in
// a term after term; "" when they allow it. needed is how many other voters
// must answer so that, with this node, they are a quorum.
func termPollVerdict(term uint64, needed int, answers []uint64) string {
	for _, t := range answers {
		if t > term {
			return fmt.Sprintf("a voter is in term %d, after the crashed leader's %d", t, term)
		}
	}
	if len(answers) < needed {
		return fmt.Sprintf("%d of the %d other voters needed answered within %s", len(answers), needed, crashPollTimeout)
	}
	return ""
}

// pollTerms asks every voter but this node and the dead leader its term,
// with a pre-vote request for dead's term: a receiver answers with its own
// term and changes nothing (raft grants pre-votes without persisting or
// adopting anything). It returns termPollVerdict of the answers that came
// within crashPollTimeout.
func (n *Node) pollTerms(dead crashedLeader) string {
	pv, ok := n.transport.(raft.WithPreVote)
	if !ok {
		return "" // no way to ask: keep the detector's earlier behaviour
	}
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return fmt.Sprintf("no configuration: %v", f.Error())
	}
	var others []raft.Server
	voters := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		if s.ID != dead.id && s.ID != raft.ServerID(n.cfg.NodeID) {
			others = append(others, s)
		}
	}
	needed := voters/2 + 1 - 1 // a quorum, less this node
	lastTerm, _ := strconv.ParseUint(n.raft.Stats()["last_log_term"], 10, 64)
	self := n.transport.LocalAddr()
	answers := make(chan uint64, len(others))
	for _, s := range others {
		go func() {
			req := &raft.RequestPreVoteRequest{
				RPCHeader: raft.RPCHeader{
					ProtocolVersion: raft.ProtocolVersionMax,
					ID:              []byte(n.cfg.NodeID),
					Addr:            n.transport.EncodePeer(raft.ServerID(n.cfg.NodeID), self),
				},
				Term:         dead.term,
				LastLogIndex: n.raft.LastIndex(),
				LastLogTerm:  lastTerm,
			}
			var resp raft.RequestPreVoteResponse
			if err := pv.RequestPreVote(s.ID, s.Address, req, &resp); err == nil {
				answers <- resp.Term
			}
		}()
	}
	var got []uint64
	t := time.NewTimer(crashPollTimeout)
	defer t.Stop()
	for len(got) < len(others) {
		select {
		case a := <-answers:
			got = append(got, a)
			if a > dead.term {
				return termPollVerdict(dead.term, needed, got)
			}
		case <-t.C:
			return termPollVerdict(dead.term, needed, got)
		case <-n.shutdownCh:
			return "shutting down"
		}
	}
	return termPollVerdict(dead.term, needed, got)
}
