package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/fsm"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// The proposer turns concurrent callers' commands into few log entries
// (group commit). One goroutine forms entries: it waits for a free in-flight
// slot, takes the first queued command, then every command already queued
// behind it up to the entry limits, stamps them with one leader time and
// hands the entry to raft. A second goroutine waits for the entries' futures
// in log order and fans each command's result back to its caller. While all
// slots are taken, commands pile up in the queue, so the busier the node the
// larger the entries: one caller gets one-command entries and no added
// latency; hundreds of callers share each fsync.

// Proposal states: a caller that gives up may only withdraw a command that
// the proposer has not taken yet.
const (
	proposalPending int32 = iota
	proposalTaken
	proposalWithdrawn
)

type proposal struct {
	cmd   *cmdpb.Command
	size  int
	state atomic.Int32
	done  chan proposalOutcome // buffered: the collector never blocks
	// answered, when set (a parked reserve), is closed once done holds
	// the outcome, for a caller that selects on it among other events.
	answered chan struct{}
}

// answer hands the proposal its outcome.
func (pr *proposal) answer(out proposalOutcome) {
	pr.done <- out
	if pr.answered != nil {
		close(pr.answered)
	}
}

type proposalOutcome struct {
	res fsm.Result
	err error
}

type inflightEntry struct {
	future   raft.ApplyFuture
	batch    []*proposal
	proposed time.Time // when it went to raft, for observeCommit
}

// applier is the part of *raft.Raft the proposer uses (a fake in tests).
type applier interface {
	Apply(cmd []byte, timeout time.Duration) raft.ApplyFuture
}

type proposer struct {
	raft         applier
	clock        func() time.Time
	maxCmds      int
	maxBytes     int // group commit stops adding commands to an entry here
	maxCmdBytes  int // one command larger than this is refused
	applyTimeout time.Duration
	notLeader    func() error // the error for "rejected: not the leader"
	// observeCommit, when set, is told how long each entry took from
	// raft.Apply to its applied result (metrics.go).
	observeCommit func(time.Duration)
	selfID        string      // this node's id, for vouch
	selfFacts     MemberFacts // this node's, for vouch

	queue    chan *proposal
	slots    chan struct{}
	inflight chan inflightEntry
	stop     chan struct{} // closed by close: take no more commands
	stopped  chan struct{} // closed once every taken command has an outcome
	once     sync.Once
	wg       sync.WaitGroup

	// entries counts log entries proposed, for the benchmark's
	// entries-per-1000-operations figure.
	entries  atomic.Uint64
	commands atomic.Uint64

	// parked holds waiting reserves until an entry enqueues into their
	// queue (handoff.go); handedJobs counts the jobs those that rode along
	// were handed.
	parked     parkedReserves
	handedJobs atomic.Uint64
}

func newProposer(r applier, cfg *Config, clock func() time.Time, notLeader func() error, observeCommit func(time.Duration)) *proposer {
	p := &proposer{
		raft:          r,
		observeCommit: observeCommit,
		clock:         clock,
		maxCmds:       cfg.MaxCommandsPerEntry,
		maxBytes:      cfg.MaxEntryBytes,
		maxCmdBytes:   max(cfg.MaxCommandBytes, cfg.MaxEntryBytes),
		applyTimeout:  cfg.ApplyEnqueueTimeout,
		notLeader:     notLeader,
		selfID:        cfg.NodeID,
		selfFacts:     cfg.Facts,
		queue:         make(chan *proposal, 4*cfg.MaxCommandsPerEntry*cfg.MaxEntriesInFlight),
		slots:         make(chan struct{}, cfg.MaxEntriesInFlight),
		inflight:      make(chan inflightEntry, cfg.MaxEntriesInFlight),
		stop:          make(chan struct{}),
		stopped:       make(chan struct{}),
	}
	p.selfFacts.MinCommandVersion, p.selfFacts.MaxCommandVersion = BinaryCommandVersions()
	p.wg.Add(2)
	go p.formEntries()
	go p.collect()
	return p
}

// propose submits cmd and waits for its outcome. Errors:
//   - ctx ended before the command was taken: ctx's error, nothing proposed;
//   - the proposer is closed before taking it: ErrShutdown;
//   - raft rejected the entry before appending it: *NotLeaderError or
//     ErrNoLeader (safe to retry);
//   - anything after the entry may have been appended (leadership lost,
//     shutdown, ctx ended while waiting): ErrUnknownOutcome.
func (p *proposer) propose(ctx context.Context, cmd *cmdpb.Command) (fsm.Result, error) {
	pr, err := p.enqueue(ctx, cmd)
	if err != nil {
		return fsm.Result{}, err
	}
	return p.await(ctx, pr)
}

// proposeAll submits cmds together, so that they normally share one log
// entry, and waits for all of them. The first error wins.
func (p *proposer) proposeAll(ctx context.Context, cmds ...*cmdpb.Command) ([]fsm.Result, error) {
	prs := make([]*proposal, 0, len(cmds))
	var firstErr error
	for _, cmd := range cmds {
		pr, err := p.enqueue(ctx, cmd)
		if err != nil {
			firstErr = err
			break
		}
		prs = append(prs, pr)
	}
	results := make([]fsm.Result, len(prs))
	for i, pr := range prs {
		res, err := p.await(ctx, pr)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		results[i] = res
	}
	return results, firstErr
}

// enqueue hands cmd to the entry-forming goroutine.
func (p *proposer) enqueue(ctx context.Context, cmd *cmdpb.Command) (*proposal, error) {
	p.vouch(cmd)
	pr := &proposal{cmd: cmd, size: proto.Size(cmd), done: make(chan proposalOutcome, 1)}
	// A command above the group-commit target is fine: formEntries gives
	// it an entry of its own. Only one larger than any request the node
	// accepts is refused, as a bug of the caller.
	if pr.size > p.maxCmdBytes {
		return nil, fmt.Errorf("cluster: command of %d bytes exceeds max_command_bytes (%d): %w", pr.size, p.maxCmdBytes, errCommandTooLarge)
	}
	select {
	case <-p.stop:
		return nil, ErrShutdown
	default:
	}
	select {
	case p.queue <- pr:
		return pr, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("cluster: not proposed: %w", ctx.Err())
	case <-p.stop:
		return nil, ErrShutdown
	}
}

// vouch sets, in this node's own metadata, the highest command version its
// binary applies (fsm.CommandVersion) and its facts (facts.go), which the leader reads before it
// proposes a newer command (Node.membersApply). Only a node can say what its
// binary applies, so metadata written on another member's behalf (Join,
// static peers) is left as it is, without a version; this node writes its
// own when it leads (the first entry of its term) or is joined by id.
func (p *proposer) vouch(cmd *cmdpb.Command) {
	if node := cmd.GetNodeMetadataSet().GetNode(); node != nil && node.GetId() == p.selfID {
		node.MaxCommandVersion = fsm.CommandVersion
		f := nodeFacts(p.selfFacts)
		node.FactsReported, node.FactsLegacy = true, false
		node.BinaryVersion, node.MinCommandVersion = f.BinaryVersion, f.MinCommandVersion
		node.MemoryLimitBytes, node.MemoryLimitFrom = f.MemoryLimitBytes, f.MemoryLimitFrom
		node.Gomaxprocs, node.StartUnixNano = f.GOMAXPROCS, f.StartUnixNano
	}
}

// await waits for an enqueued proposal's outcome.
func (p *proposer) await(ctx context.Context, pr *proposal) (fsm.Result, error) {
	select {
	case out := <-pr.done:
		return out.res, out.err
	case <-ctx.Done():
		if pr.state.CompareAndSwap(proposalPending, proposalWithdrawn) {
			return fsm.Result{}, fmt.Errorf("cluster: not proposed: %w", ctx.Err())
		}
		return fsm.Result{}, fmt.Errorf("%w: %w while waiting for commit", ErrUnknownOutcome, ctx.Err())
	case <-p.stopped:
		if pr.state.CompareAndSwap(proposalPending, proposalWithdrawn) {
			return fsm.Result{}, ErrShutdown
		}
		// Taken: the collector has sent its outcome before closing stopped.
		out := <-pr.done
		return out.res, out.err
	}
}

// errCommandTooLarge is wrapped with the sizes. The gRPC layer's message
// limit, under max_command_bytes, keeps every request's command below it.
var errCommandTooLarge = errors.New("command too large")

// take claims a queued proposal for an entry; false if its caller withdrew.
func take(pr *proposal) bool { return pr.state.CompareAndSwap(proposalPending, proposalTaken) }

func (p *proposer) formEntries() {
	defer p.wg.Done()
	defer close(p.inflight)
	var carry *proposal // taken, but did not fit the previous entry
	for {
		select {
		case p.slots <- struct{}{}:
		case <-p.stop:
			p.finish(carry)
			return
		}
		batch := make([]*proposal, 0, 8)
		size := 0
		if carry != nil {
			batch, size, carry = append(batch, carry), carry.size, nil
		} else {
			select {
			case pr := <-p.queue:
				if take(pr) {
					batch, size = append(batch, pr), pr.size
				}
			case <-p.stop:
				<-p.slots
				p.finish(nil)
				return
			}
		}
	drain:
		for len(batch) < p.maxCmds {
			select {
			case pr := <-p.queue:
				if !take(pr) {
					continue
				}
				if size+pr.size > p.maxBytes && len(batch) > 0 {
					carry = pr
					break drain
				}
				batch, size = append(batch, pr), size+pr.size
			default:
				break drain
			}
		}
		if len(batch) == 0 {
			<-p.slots
			continue
		}
		p.submit(batch)
	}
}

// submit stamps the batch with one leader time, encodes it and hands it to
// raft; the collector waits for the outcome.
func (p *proposer) submit(batch []*proposal) {
	now := p.clock().UnixNano()
	batch = p.attachParked(batch, now)
	cmds := make([]*cmdpb.Command, len(batch))
	for i, pr := range batch {
		pr.cmd.NowUnixNano = now
		cmds[i] = pr.cmd
	}
	data, err := fsm.EncodeEntry(cmds)
	if err != nil {
		<-p.slots
		for _, pr := range batch {
			pr.answer(proposalOutcome{err: err})
		}
		return
	}
	p.entries.Add(1)
	p.commands.Add(uint64(len(batch)))
	proposed := time.Now()
	p.inflight <- inflightEntry{future: p.raft.Apply(data, p.applyTimeout), batch: batch, proposed: proposed}
}

// finish answers a proposal taken but never submitted, and every one still
// queued, with ErrShutdown: none of them reached raft.
func (p *proposer) finish(carry *proposal) {
	p.closeParked()
	if carry != nil {
		carry.answer(proposalOutcome{err: ErrShutdown})
	}
	for {
		select {
		case pr := <-p.queue:
			if take(pr) {
				pr.answer(proposalOutcome{err: ErrShutdown})
			}
		default:
			return
		}
	}
}

func (p *proposer) collect() {
	defer p.wg.Done()
	for e := range p.inflight {
		err := e.future.Error()
		<-p.slots
		if err == nil && p.observeCommit != nil {
			p.observeCommit(time.Since(e.proposed))
		}
		if err != nil {
			err = p.classify(err)
			for _, pr := range e.batch {
				pr.answer(proposalOutcome{err: err})
			}
			continue
		}
		results, ok := e.future.Response().([]fsm.Result)
		if !ok || len(results) != len(e.batch) {
			err := fmt.Errorf("%w: state machine answered %T for an entry of %d commands", ErrUnknownOutcome, e.future.Response(), len(e.batch))
			for _, pr := range e.batch {
				pr.answer(proposalOutcome{err: err})
			}
			continue
		}
		for i, pr := range e.batch {
			if pr.answered != nil { // a parked reserve that rode along
				p.handedJobs.Add(uint64(len(results[i].Deliveries)))
			}
			pr.answer(proposalOutcome{res: results[i]})
		}
	}
}

// classify maps a raft future error to the node's honest outcome.
func (p *proposer) classify(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		// Raft refuses entries it is not leading for before appending them.
		return p.notLeader()
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w, not proposed", ErrHandingOver)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: raft apply queue full, not proposed", ErrNoLeader)
	case errors.Is(err, raft.ErrSentBeforeLocalAppendFailed):
		// The leader's own log write failed (for lack of space or
		// otherwise) after the entry went out to the followers: the leader
		// appends in parallel with replication (third_party/hashicorp/raft/
		// SEPP-PATCH.md), so the followers may hold it and a later leader
		// may commit it. The cause is kept as text only, so that a full
		// disk here does not read as a definite "nothing applied".
		return fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	case errors.Is(err, ErrDiskFull):
		// The leader's log write failed for lack of space before the entry
		// was replicated (a single-voter cluster): the entry is in no log
		// (diskfull.go), so it was not applied and never will be.
		return err
	default:
		// ErrLeadershipLost, ErrRaftShutdown, ErrAbortedByRestore: the entry
		// may be in some log and may yet commit.
		return fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	}
}

// stopTaking makes the proposer refuse new commands and answer the queued
// ones with ErrShutdown. Entries already handed to raft still resolve.
func (p *proposer) stopTaking() {
	p.once.Do(func() { close(p.stop) })
}

// wait returns once every taken command has an outcome. Call it after
// stopTaking and after raft.Shutdown, which resolves in-flight futures.
func (p *proposer) wait() {
	p.wg.Wait()
	select {
	case <-p.stopped:
	default:
		close(p.stopped)
	}
}
