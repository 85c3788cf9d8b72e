package cluster

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// Leader crash detection.
//
// Raft notices a dead leader only by its silence: a follower checks at
// random intervals of one to two heartbeat timeouts, so a killed leader's
// writes would stop for 0.5-1.5 s with the default timeouts before an
// election even starts. But when a leader's process dies and its host lives on, the
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
// A TimeoutNow election deposes whoever leads in an older term, so a wrong
// call is not free. It was seen to depose a leader elected 50 ms earlier: a
// planned restart hands leadership to one follower and exits; the other
// follower had already voted for the new leader (its term moved on) but not
// yet heard from it, so raft still named the old leader, whose address now
// refused. The follower called an election in a term above the new
// leader's, which stepped down. So a follower calls only while it is a
// follower, still in the term in which it learned of the dead leader (the
// observer records it, metrics.go), with no other leader named
// (crashCallVerdict). That is enough: its candidacy's term is then the dead
// leader's plus one, and any leader elected since holds at least that term.
// If equal, that leader and every voter that elected it have voted in the
// term already and refuse, and a leader does not step down for a vote
// request of its own term; the follower loses and follows it. Only a term
// above a leader's deposes it, and that needs this node to have moved on,
// which the verdict refuses.

// crashElectionStagger is how long each remaining voter waits after the one
// ranked before it: long enough for an election on a busy machine (a vote
// is one round trip and one fsync), short against the heartbeat timeout.
const crashElectionStagger = 40 * time.Millisecond

// crashProbeTimeout bounds the dial to the leader's raft address. A crashed
// process on a live host refuses at once; anything slower is not a crash
// this detector can prove.
const crashProbeTimeout = 100 * time.Millisecond

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
	// elections counts elections this node called for a crashed leader;
	// alive counts crash checks that found the leader alive.
	elections atomic.Uint64
	alive     atomic.Uint64
	// probe reports whether the leader at a raft address is gone; tests
	// replace it.
	probe atomic.Pointer[func(addr string) bool]
	// refused counts crash verdicts not acted on (crashCallVerdict said no).
	refused atomic.Uint64
	// seen is the leader this node last learned of, with the term it was
	// learned in (set by the node's observer).
	seen atomic.Pointer[crashedLeader]
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
	w := &crashWatch{ended: make(chan struct{}, 1)}
	probe := func(addr string) bool { return processGone(addr, crashProbeTimeout) }
	w.probe.Store(&probe)
	return w
}

// connectionEnded is the stream layer's callback. It never blocks: one
// pending signal stands for any number of ended connections.
func (w *crashWatch) connectionEnded() {
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
		dead := n.crash.deadLeader(leaderID, n.raft.CurrentTerm())
		n.crash.crashed.Store(&dead)
		n.log.Warn("leader's process is gone: its raft address refuses connections", "leader", leaderID, "addr", leaderAddr, "term", dead.term)
		n.takeCrashElectionTurn(dead)
	}
}

// takeCrashElectionTurn waits for this node's turn among the voters that
// remain, and calls an election then unless a new leader has appeared or
// raft has started one itself.
func (n *Node) takeCrashElectionTurn(dead crashedLeader) {
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
	why := crashCallVerdict(dead, crashCheck{
		state:  n.raft.State(),
		term:   n.raft.CurrentTerm(),
		leader: leader,
	})
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
	state  raft.RaftState
	term   uint64
	leader raft.ServerID // "" once raft's heartbeat timeout blanked it
}

// crashCallVerdict says why a follower must not call an election for dead
// (the leader found gone, with the term this node learned of it in); ""
// when it may (see the top of this file).
func crashCallVerdict(dead crashedLeader, now crashCheck) string {
	switch {
	case now.state != raft.Follower:
		return fmt.Sprintf("this node is %s, not a follower", now.state)
	case now.term != dead.term:
		return fmt.Sprintf("the term moved on from %d to %d: an election ran since", dead.term, now.term)
	case now.leader != "" && now.leader != dead.id:
		return fmt.Sprintf("%s leads now", now.leader)
	}
	return ""
}

// deadLeader is leader id found gone, with the term this node learned of
// it in: not the current term, which moves on when this node votes in an
// election it has not yet heard the result of. current stands in when the
// observer has not seen id (a leader named before it was registered).
func (w *crashWatch) deadLeader(id raft.ServerID, current uint64) crashedLeader {
	if seen := w.seen.Load(); seen != nil && seen.id == id {
		return *seen
	}
	return crashedLeader{id: id, term: current}
}

// sawLeader records the leader raft names, with the term it named it in.
func (w *crashWatch) sawLeader(id raft.ServerID, term uint64) {
	if w != nil && id != "" {
		w.seen.Store(&crashedLeader{id: id, term: term})
	}
}
