package history

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Report is what Check found. The slices name the offending jobs (or keys);
// OK is true when every one of them is empty.
type Report struct {
	// Counts of the record.
	Calls           int
	EnqueueOK       int // distinct jobs whose enqueue was acknowledged
	EnqueueUnknown  int // calls that ended with an unknown outcome
	EnqueueFailed   int
	EnqueueRetried  int // keys sent more than once (a retry after a failover)
	Deliveries      int
	DeliveredJobs   int
	Acked           int // jobs acked with an ok answer
	DeadLettered    int // jobs in the final dead-letter store
	UnknownReserves int
	OrderPairs      int // pairs of jobs the priority/FIFO check could compare

	// Violations.
	Lost            []uint64 // acknowledged enqueues neither acked, dead-lettered nor live
	Unresolved      []uint64 // acknowledged enqueues still live at the end
	Duplicates      []string // keys that made more than one job
	Phantoms        []string // deliveries of jobs no enqueue asked for
	DoubleLeases    []string // jobs held by two deliveries at once
	StaleAcks       []string // acks that succeeded for a lease that was no longer current
	AttemptErrors   []string // attempts skipping, repeating or over max_attempts
	OrderErrors     []string // priority/FIFO broken among jobs Ready together
	DeadRuleErrors  []string // dead letters whose cause does not fit the record
	NonLinearizable []string // jobs whose calls fit no order of the job model
}

// OK reports whether the record keeps every promise. Unresolved jobs are
// not a violation by themselves (the run may have stopped early); callers
// that drained the queue check them too.
func (r Report) OK() bool { return len(r.Problems()) == 0 }

// Problems lists every violation, one line each (at most a few examples per
// kind).
func (r Report) Problems() []string {
	var out []string
	addIDs := func(name string, ids []uint64) {
		if len(ids) > 0 {
			out = append(out, fmt.Sprintf("%s: %d job(s), e.g. %v", name, len(ids), ids[:min(len(ids), 5)]))
		}
	}
	addStrs := func(name string, s []string) {
		if len(s) > 0 {
			out = append(out, fmt.Sprintf("%s: %d, e.g. %s", name, len(s), strings.Join(s[:min(len(s), 3)], "; ")))
		}
	}
	addIDs("lost", r.Lost)
	addStrs("duplicates", r.Duplicates)
	addStrs("phantoms", r.Phantoms)
	addStrs("double leases", r.DoubleLeases)
	addStrs("stale acks", r.StaleAcks)
	addStrs("attempt errors", r.AttemptErrors)
	addStrs("priority/FIFO errors", r.OrderErrors)
	addStrs("dead-letter rule errors", r.DeadRuleErrors)
	addStrs("not linearizable", r.NonLinearizable)
	return out
}

// Err is nil when OK, else an error listing the problems.
func (r Report) Err() error {
	p := r.Problems()
	if len(p) == 0 {
		return nil
	}
	return errors.New("history check failed:\n  " + strings.Join(p, "\n  "))
}

// delivered is one delivery with the reserve call that made it.
type delivered struct {
	Delivery
	reserve *Op
}

// Check verifies ops (every call the clients made) against final (the
// server's state once the run was over and the cluster quiet).
func Check(ops []Op, final Final) Report {
	r := Report{Calls: len(ops)}
	if final.At.IsZero() {
		final.At = time.Now()
	}

	var (
		keyOps        = map[string][]*Op{}    // enqueue calls by idempotency key
		keyJobs       = map[string][]uint64{} // jobs each key is known to have made
		okEnqueue     = map[uint64][]*Op{}    // acknowledged enqueues by job
		deliveries    = map[uint64][]delivered{}
		answers       = map[uint64][]*Op{} // acks and nacks by job
		ackedOK       = map[uint64]bool{}
		ackUnknown    = map[uint64]bool{}
		maxAttempts   = map[uint64]uint32{}
		reservesByQ   = map[string][]*Op{}
		unknownResByQ = map[string][]*Op{}
	)
	addKeyJob := func(key string, id uint64) {
		if key != "" && !slices.Contains(keyJobs[key], id) {
			keyJobs[key] = append(keyJobs[key], id)
		}
	}
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case KindEnqueue:
			keyOps[op.Key] = append(keyOps[op.Key], op)
			switch op.Outcome {
			case OK:
				okEnqueue[op.JobID] = append(okEnqueue[op.JobID], op)
				addKeyJob(op.Key, op.JobID)
				if op.MaxAttempts > 0 {
					maxAttempts[op.JobID] = op.MaxAttempts
				}
			case Unknown:
				r.EnqueueUnknown++
			case Failed:
				r.EnqueueFailed++
			}
		case KindReserve:
			switch op.Outcome {
			case OK:
				reservesByQ[op.Queue] = append(reservesByQ[op.Queue], op)
				for _, d := range op.Deliveries {
					deliveries[d.JobID] = append(deliveries[d.JobID], delivered{Delivery: d, reserve: op})
					addKeyJob(d.Key, d.JobID)
					if d.MaxAttempts > 0 {
						maxAttempts[d.JobID] = d.MaxAttempts
					}
					r.Deliveries++
				}
			case Unknown:
				r.UnknownReserves++
				unknownResByQ[op.Queue] = append(unknownResByQ[op.Queue], op)
			}
		case KindAck, KindNack:
			answers[op.JobID] = append(answers[op.JobID], op)
			if op.Kind == KindAck && op.Outcome == OK {
				ackedOK[op.JobID] = true
			}
			if op.Kind == KindAck && op.Outcome == Unknown {
				ackUnknown[op.JobID] = true
			}
		}
	}
	r.EnqueueOK = len(okEnqueue)
	r.DeliveredJobs = len(deliveries)
	r.Acked = len(ackedOK)
	r.DeadLettered = len(final.Dead)
	for _, calls := range keyOps {
		if len(calls) > 1 {
			r.EnqueueRetried++
		}
	}

	// Lost and unresolved: set arithmetic over acknowledged enqueues.
	for _, id := range sortedKeys(okEnqueue) {
		_, live := final.Live[id]
		_, dead := final.Dead[id]
		switch {
		case live:
			r.Unresolved = append(r.Unresolved, id)
		case dead, ackedOK[id], ackUnknown[id]:
		default:
			r.Lost = append(r.Lost, id)
		}
	}

	// Duplicates and phantoms: keys against jobs.
	for _, key := range sortedKeys(keyJobs) {
		if ids := keyJobs[key]; len(ids) > 1 {
			r.Duplicates = append(r.Duplicates, fmt.Sprintf("key %s made jobs %v", key, ids))
		}
		if _, asked := keyOps[key]; !asked {
			r.Phantoms = append(r.Phantoms, fmt.Sprintf("job %v carries key %s no enqueue sent", keyJobs[key], key))
		}
	}

	gaps := r.UnknownReserves > 0
	for _, id := range sortedKeys(deliveries) {
		ds := deliveries[id]
		slices.SortStableFunc(ds, func(a, b delivered) int { return a.reserve.End.Compare(b.reserve.End) })
		deliveries[id] = ds
		r.checkLeases(id, ds, answers[id])
		r.checkAttempts(id, ds, maxAttempts[id], gaps)
	}
	r.checkDeadRules(final, deliveries, answers, maxAttempts)
	r.checkOrder(reservesByQ, unknownResByQ, keyOps, okEnqueue, deliveries)
	r.checkLinearizable(final, okEnqueue, keyOps, deliveries, answers, maxAttempts, gaps)
	return r
}

// heldUntil is the last instant delivery d surely still held its lease: its
// deadline, or the start of the first answer to it (an ack or nack cannot
// end the lease before it is sent).
func heldUntil(d delivered, answers []*Op) time.Time {
	until := d.Deadline
	for _, a := range answers {
		if a.Token == d.Token && a.Start.Before(until) {
			until = a.Start
		}
	}
	return until
}

func (r *Report) checkLeases(id uint64, ds []delivered, answers []*Op) {
	for i := range ds {
		for j := i + 1; j < len(ds); j++ {
			a, b := ds[i], ds[j]
			if a.Token == b.Token {
				continue
			}
			// At t both leases had been granted (each by its reserve's end)
			// and neither had ended.
			t := b.reserve.End
			if t.Before(heldUntil(a, answers)) && t.Before(heldUntil(b, answers)) {
				r.DoubleLeases = append(r.DoubleLeases, fmt.Sprintf("job %d: token %d (worker %d, attempt %d, until %s) and token %d (worker %d, attempt %d) both held at %s",
					id, a.Token, a.reserve.Client, a.Attempt, heldUntil(a, answers).Format(time.StampMicro), b.Token, b.reserve.Client, b.Attempt, t.Format(time.StampMicro)))
			}
		}
	}
	for _, ack := range answers {
		if ack.Outcome != OK {
			continue
		}
		var own *delivered
		for i := range ds {
			if ds[i].Token == ack.Token {
				own = &ds[i]
			}
		}
		if own == nil {
			r.StaleAcks = append(r.StaleAcks, fmt.Sprintf("job %d: %s of token %d succeeded, but no delivery had that token", id, ack.Kind, ack.Token))
			continue
		}
		for _, d := range ds {
			// d was surely granted after own and before the answer was sent.
			if d.Token != ack.Token && d.reserve.Start.After(own.reserve.End) && d.reserve.End.Before(ack.Start) {
				r.StaleAcks = append(r.StaleAcks, fmt.Sprintf("job %d: %s of token %d succeeded after token %d replaced it", id, ack.Kind, ack.Token, d.Token))
			}
		}
	}
}

func (r *Report) checkAttempts(id uint64, ds []delivered, maxAttempts uint32, gaps bool) {
	for i, d := range ds {
		if maxAttempts > 0 && d.Attempt > maxAttempts {
			r.AttemptErrors = append(r.AttemptErrors, fmt.Sprintf("job %d: attempt %d over max_attempts %d", id, d.Attempt, maxAttempts))
		}
		prev := uint32(0)
		if i > 0 {
			prev = ds[i-1].Attempt
		}
		if d.Attempt == prev+1 || (gaps && d.Attempt > prev) {
			continue
		}
		r.AttemptErrors = append(r.AttemptErrors, fmt.Sprintf("job %d: delivery %d has attempt %d after attempt %d", id, i+1, d.Attempt, prev))
	}
}

func (r *Report) checkDeadRules(final Final, deliveries map[uint64][]delivered, answers map[uint64][]*Op, maxAttempts map[uint64]uint32) {
	for _, id := range sortedKeys(final.Dead) {
		rec := final.Dead[id]
		ds := deliveries[id]
		switch rec.Cause {
		case "attempts_exhausted", "lease_expired":
			if m := maxAttempts[id]; m > 0 && rec.FinalAttempt != m {
				r.DeadRuleErrors = append(r.DeadRuleErrors, fmt.Sprintf("job %d: dead (%s) at attempt %d of %d", id, rec.Cause, rec.FinalAttempt, m))
			}
		case "rejected":
			asked := false
			for _, a := range answers[id] {
				asked = asked || (a.Kind == KindNack && a.DeadLetter && a.Outcome != Failed)
			}
			if !asked {
				r.DeadRuleErrors = append(r.DeadRuleErrors, fmt.Sprintf("job %d: dead (rejected) but no nack asked for it", id))
			}
		}
		if len(ds) > 0 && ds[len(ds)-1].Attempt > rec.FinalAttempt {
			r.DeadRuleErrors = append(r.DeadRuleErrors, fmt.Sprintf("job %d: dead at attempt %d but delivered at attempt %d", id, rec.FinalAttempt, ds[len(ds)-1].Attempt))
		}
	}
}

// checkOrder: a reserve that handed out job B on its first attempt must not
// have passed over a job A of the same queue that surely was Ready then and
// ranks before B (higher priority, or the same priority and enqueued
// before B's enqueue began). A was surely Ready when its acknowledged
// enqueue ended before the reserve began, and its first delivery (attempt
// 1) came from a reserve that began after this one ended, with no
// unknown-outcome reserve on the queue in between that may have taken it.
func (r *Report) checkOrder(reservesByQ, unknownResByQ map[string][]*Op, keyOps map[string][]*Op, okEnqueue map[uint64][]*Op, deliveries map[uint64][]delivered) {
	type cand struct {
		id       uint64
		prio     uint32
		readyAt  time.Time // its acknowledged enqueue ended
		firstRes *Op       // the reserve of its first delivery
		enqStart time.Time // the earliest start of an enqueue with its key
	}
	byQueue := map[string][]cand{}
	for _, id := range sortedKeys(deliveries) {
		ds := deliveries[id]
		enq := okEnqueue[id]
		if len(ds) == 0 || len(enq) == 0 || ds[0].Attempt != 1 {
			continue
		}
		c := cand{id: id, prio: ds[0].Priority, firstRes: ds[0].reserve, readyAt: enq[0].End}
		for _, e := range enq {
			if e.End.Before(c.readyAt) {
				c.readyAt = e.End
			}
		}
		c.enqStart = c.readyAt
		for _, e := range keyOps[ds[0].Key] {
			if e.Start.Before(c.enqStart) {
				c.enqStart = e.Start
			}
		}
		byQueue[ds[0].reserve.Queue] = append(byQueue[ds[0].reserve.Queue], c)
	}
	for _, q := range sortedKeys(reservesByQ) {
		cands := byQueue[q]
		candByID := map[uint64]cand{}
		for _, c := range cands {
			candByID[c.id] = c
		}
		// The jobs a reserve could have been expected to hand out first are
		// those Ready before it began (readyAt < res.Start) and first handed
		// out by a reserve that began after it ended (firstRes.Start >
		// res.End): the queue's backlog at the time, not the whole history.
		// Walking the reserves by start, a job joins once Ready before the
		// reserve's start and leaves for good once its own first reserve
		// began at or before it (no later reserve can see it waiting), so
		// each reserve looks at the backlog alone: O(n log n) plus the
		// backlog's size per reserve, instead of every pair of jobs.
		byReady := slices.Clone(cands)
		slices.SortStableFunc(byReady, func(a, b cand) int { return a.readyAt.Compare(b.readyAt) })
		reserves := slices.Clone(reservesByQ[q])
		slices.SortStableFunc(reserves, func(a, b *Op) int { return a.Start.Compare(b.Start) })
		var waiting []cand // Ready before the current reserve's start, first reserve not yet begun
		next := 0
		for _, res := range reserves {
			for next < len(byReady) && byReady[next].readyAt.Before(res.Start) {
				waiting = append(waiting, byReady[next])
				next++
			}
			kept := waiting[:0]
			for _, a := range waiting {
				if a.firstRes.Start.After(res.Start) {
					kept = append(kept, a)
				}
			}
			waiting = kept
			inBatch := map[uint64]bool{}
			for _, d := range res.Deliveries {
				inBatch[d.JobID] = true
			}
			for _, d := range res.Deliveries {
				b, ok := candByID[d.JobID]
				if !ok || b.firstRes != res {
					continue
				}
				for _, a := range waiting {
					if inBatch[a.id] || !a.firstRes.Start.After(res.End) {
						continue
					}
					ranksFirst := a.prio > b.prio || (a.prio == b.prio && a.readyAt.Before(b.enqStart))
					if unknownBetween(unknownResByQ[q], a.readyAt, res.End) {
						continue
					}
					r.OrderPairs++
					if !ranksFirst {
						continue
					}
					r.OrderErrors = append(r.OrderErrors, fmt.Sprintf("reserve by worker %d handed out job %d (priority %d) while job %d (priority %d) was Ready before it", res.Client, b.id, b.prio, a.id, a.prio))
				}
			}
		}
	}
}

func unknownBetween(ops []*Op, from, to time.Time) bool {
	for _, op := range ops {
		if op.Start.Before(to) && op.End.After(from) {
			return true
		}
	}
	return false
}

func (r *Report) checkLinearizable(final Final, okEnqueue map[uint64][]*Op, keyOps map[string][]*Op, deliveries map[uint64][]delivered, answers map[uint64][]*Op, maxAttempts map[uint64]uint32, gaps bool) {
	ids := map[uint64]bool{}
	for id := range okEnqueue {
		ids[id] = true
	}
	for id := range deliveries {
		ids[id] = true
	}
	end := final.At.UnixNano()
	for _, id := range sortedKeys(ids) {
		var pops []porcupine.Operation
		for _, e := range okEnqueue[id] {
			call := e.Start
			for _, same := range keyOps[e.Key] {
				if same.Start.Before(call) {
					call = same.Start // an earlier attempt with the key may have made the job
				}
			}
			pops = append(pops, porcupine.Operation{ClientId: e.Client, Input: jobInput{kind: KindEnqueue, outcome: OK, at: e.End.UnixNano()}, Call: call.UnixNano(), Return: e.End.UnixNano()})
		}
		for _, d := range deliveries[id] {
			pops = append(pops, porcupine.Operation{ClientId: d.reserve.Client, Input: jobInput{kind: KindReserve, outcome: OK, at: d.reserve.End.UnixNano(), token: d.Token, attempt: d.Attempt, deadline: d.Deadline.UnixNano()}, Call: d.reserve.Start.UnixNano(), Return: d.reserve.End.UnixNano()})
		}
		for _, a := range answers[id] {
			ret := a.End.UnixNano()
			if a.Outcome == Unknown {
				ret = end // it may take effect any time until the final read
			}
			pops = append(pops, porcupine.Operation{ClientId: a.Client, Input: jobInput{kind: a.Kind, outcome: a.Outcome, at: ret, token: a.Token, deadLetter: a.DeadLetter, deadLettered: a.DeadLettered}, Call: a.Start.UnixNano(), Return: ret})
		}
		_, live := final.Live[id]
		_, dead := final.Dead[id]
		pops = append(pops, porcupine.Operation{ClientId: -1, Input: jobInput{final: true, at: end, finalLive: live, finalDead: dead}, Call: end, Return: end})
		maxA := maxAttempts[id]
		if maxA == 0 {
			maxA = ^uint32(0)
		}
		res := checkJobLinearizable(pops, maxA, gaps, len(okEnqueue[id]) == 0, 5*time.Second)
		if res == porcupine.Illegal {
			r.NonLinearizable = append(r.NonLinearizable, fmt.Sprintf("job %d: %s", id, describe(pops)))
		}
	}
}

func describe(pops []porcupine.Operation) string {
	slices.SortFunc(pops, func(a, b porcupine.Operation) int { return int(min(max(a.Call-b.Call, -1), 1)) })
	var parts []string
	for _, p := range pops {
		parts = append(parts, fmt.Sprintf("w%d %s", p.ClientId, p.Input.(jobInput)))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[K interface{ ~uint64 | ~string }, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
