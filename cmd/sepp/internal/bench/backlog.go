package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sepp-io/sepp/client"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// backlog (issue #35, a backlog far larger than memory): what a node pays
// for each waiting job once payloads live on disk, and what a large
// backlog does to the rates, to a snapshot and to a restart.
//
//  0. A warm-up, untimed: k jobs enqueued and consumed, so that the rates
//     of step 1 are not those of a node's first seconds (its payload
//     store's first memtables, memory touched for the first time, at half
//     the later rate). Then the mixed run (producers and workers at once)
//     on a fresh queue, before the earlier keys are waited out.
//  1. The rates of an empty queue: BacklogRateJobs (k) jobs enqueued into
//     a fresh queue, then reserved and acked.
//  2. Each node's resident memory and data folder at rest.
//  3. BacklogJobs (n) jobs of PayloadBytes filled into one queue; then
//     each node's resident memory and data folder again, per job.
//  4. The rates at that backlog: k more jobs enqueued into the queue, k
//     reserved and acked from its head, then the mixed run on it.
//  5. A follower restarted: to serving, ready and caught up (its state
//     rebuilt from its log, over the payload store it kept).
//  6. The same follower restarted with a snapshot threshold of one entry
//     and no trailing log, so it snapshots the backlog once caught up and
//     keeps no entry from before the snapshot: the snapshot's capture
//     and persist times and size; then restarted with its own config
//     again, now from that snapshot: restore time, to serving, ready and
//     caught up.
//  6b. That follower made the leader (its log now starts after its
//     snapshot) and another follower's disk replaced under a mixed load:
//     killed, removed from the configuration, its data deleted, started
//     empty and joined again, so that only an install of the snapshot
//     brings it up to date. The install's size, time and rate against
//     the disk's sequential write rate; the load's completed rate during
//     the install against the same load just before.
//  7. The queue drained, and steps 1 and the mixed run again on fresh
//     queues. Each rate at
//     the backlog is reported against the mean of step 1's two: before
//     the fill and after the drain, around it in time, so that a machine
//     that slows or speeds up over the run moves both sides alike.

// backlogRateJobs is how many jobs the rate steps enqueue and consume:
// asked when positive, else a tenth of the backlog, between 1 and 100,000.
func backlogRateJobs(backlog, asked int) int {
	if asked > 0 {
		return asked
	}
	return max(1, min(backlog/10, 100_000))
}

// perJob spreads the growth from before to after over n jobs (negative
// when it shrank); 0 when n is not positive.
func perJob(before, after float64, n int) float64 {
	if n <= 0 {
		return 0
	}
	return (after - before) / float64(n)
}

// rateRatio is a rate at the backlog against the same rate at an empty
// queue (the mean of the two measured); false when that is unknown.
func rateRatio(atBacklog, empty float64) (float64, bool) {
	if empty <= 0 {
		return 0, false
	}
	return atBacklog / empty, true
}

// snapshotWaitSlack is how long past twice its check interval the backlog
// scenario waits for the follower's snapshot to be written.
const snapshotWaitSlack = 10 * time.Minute

// nodeState is what the backlog scenario reads of every local node at one
// moment, by index.
type nodeState struct {
	rss, anon, data []int64
	metrics         []nodeMetrics
	ok              []bool // metrics read
}

func (r *runner) readNodeState(ctx context.Context) nodeState {
	s := nodeState{rss: r.nodesRSS(), anon: r.nodesAnon(), data: r.nodesDataBytes()}
	for i, n := range r.cluster.Nodes {
		m, err := r.readNodeMetrics(ctx, i)
		if err != nil {
			r.note("/metrics of %s: %v", n.ID, err)
		}
		s.metrics = append(s.metrics, m)
		s.ok = append(s.ok, err == nil)
	}
	return s
}

func (r *runner) backlog(ctx context.Context) error {
	if r.cluster == nil {
		r.note("backlog skipped: it needs the local cluster bench starts itself (run without --addr)")
		return nil
	}
	n := r.opts.BacklogJobs
	k := backlogRateJobs(n, r.opts.BacklogRateJobs)
	warm := queueName("backlog-warm-up")
	if _, err := r.enqueueWindowed(ctx, "backlog warm-up", warm, 0, k); err != nil {
		return err
	}
	if _, err := r.drainQueue(ctx, warm); err != nil {
		return err
	}
	emptyMixed, err := r.backlogMixedEmpty(ctx, "backlog_empty_mixed")
	if err != nil {
		return err
	}
	if r.opts.RecoveryClean {
		if err := r.awaitNoKeys(ctx); err != nil {
			return err
		}
	}
	if err := r.awaitKeyRoom(ctx, n+4*k); err != nil {
		return err
	}

	empty, err := r.backlogRates(ctx, "backlog_empty", queueName("backlog-empty"), 0, k)
	if err != nil {
		return err
	}

	r.settle(ctx)
	idle := r.readNodeState(ctx)
	for i, node := range r.cluster.Nodes {
		if idle.rss[i] > 0 {
			r.add("backlog_idle_rss_"+node.ID, mib(idle.rss[i]), "MiB")
		}
		if idle.data[i] >= 0 {
			r.add("backlog_idle_data_dir_"+node.ID, mib(idle.data[i]), "MiB")
		}
	}

	queue := queueName("backlog")
	// The fill's rate counts its enqueues alone: the wait for the empty
	// queue's keys to expire (limits.max_idempotency_keys) comes first,
	// and fill's own wait then returns at once.
	if err := r.awaitKeyRoom(ctx, n); err != nil {
		return err
	}
	r.progress(fmt.Sprintf("filling %s with %d jobs of %d bytes", queue, n, max(r.opts.PayloadBytes, 16)))
	start := time.Now()
	if err := r.fill(ctx, queue, n, r.opts.PayloadBytes); err != nil {
		return err
	}
	r.add("backlog_jobs", float64(n), "jobs")
	r.add("backlog_payload", float64(max(r.opts.PayloadBytes, 16)), "bytes")
	r.add("backlog_fill_rate", float64(n)/time.Since(start).Seconds(), "jobs/s")
	// Every node applies the whole backlog before its memory is read.
	r.settle(ctx)
	full := r.readNodeState(ctx)
	r.addBacklogState(ctx, idle, full, n)

	at, err := r.backlogRates(ctx, "backlog", queue, uint64(n), k)
	if err != nil {
		return err
	}
	atMixed, err := r.mixedOn(ctx, "backlog_mixed", queue)
	if err != nil {
		return err
	}

	follower, err := r.followerIndex(ctx)
	if err != nil {
		return err
	}
	rt, err := r.restartNode(ctx, follower)
	if err != nil {
		return err
	}
	r.addRestart("backlog", rt)
	if err := r.backlogSnapshot(ctx, follower, rt.caughtUp); err != nil {
		return err
	}
	if err := r.backlogInstall(ctx, follower); err != nil {
		return err
	}
	if r.opts.BacklogAfterWindow {
		if err := r.backlogAfterWindow(ctx, idle, n); err != nil {
			return err
		}
	}

	r.settle(ctx)
	r.progress("draining " + queue)
	// k were added and k taken from the head; the mixed run added and
	// took its own counts.
	left := int64(n) + atMixed.enq - atMixed.acked
	drained, elapsed, err := r.reserveAndAck(ctx, "draining", queue, left, false)
	if err != nil {
		return err
	}
	r.add("backlog_drain_rate", float64(drained)/elapsed.Seconds(), "jobs/s")
	drainedMetrics := make([]nodeMetrics, len(r.cluster.Nodes))
	for i, node := range r.cluster.Nodes {
		m, err := r.readNodeMetrics(ctx, i)
		if err != nil {
			continue
		}
		drainedMetrics[i] = m
		if m.known[payloadStoreMetric] {
			r.add("backlog_payload_store_drained_"+node.ID, m.payloadStore/(1<<20), "MiB")
		}
		// What the store's compactions still have to do once the
		// backlog is gone: the empty queue's figures after the drain
		// run beside them.
		if m.known[storeTombstonesMetric] {
			r.add("backlog_store_tombstones_drained_"+node.ID, m.storeTombstones, "tombstones")
		}
		if m.known[storeDebtMetric] {
			r.add("backlog_store_compaction_debt_drained_"+node.ID, m.storeDebt/(1<<20), "MiB")
		}
	}
	if drained != left {
		r.note("backlog: drained %d jobs, want the %d left of the backlog", drained, left)
		return fmt.Errorf("backlog: %d jobs drained, %d expected: %w", drained, left, ErrIntegrity)
	}

	after, err := r.backlogRates(ctx, "backlog_empty_after", queueName("backlog-empty"), 0, k)
	if err != nil {
		return err
	}
	afterMixed, err := r.backlogMixedEmpty(ctx, "backlog_empty_after_mixed")
	if err != nil {
		return err
	}
	// The store's compaction time during the runs after the drain.
	for i, node := range r.cluster.Nodes {
		if m, err := r.readNodeMetrics(ctx, i); err == nil && m.known[storeCompactionsSeconds] && drainedMetrics[i].known[storeCompactionsSeconds] {
			r.add("backlog_store_compaction_after_drain_"+node.ID, (m.storeCompactionSeconds-drainedMetrics[i].storeCompactionSeconds)*1000, "ms")
		}
	}
	for _, c := range []struct {
		name                   string
		atBacklog, base, after float64
	}{
		{"produce", at.produce, empty.produce, after.produce},
		{"consume", at.consume, empty.consume, after.consume},
		{"mixed", atMixed.completed, emptyMixed.completed, afterMixed.completed},
	} {
		if ratio, ok := rateRatio(c.atBacklog, (c.base+c.after)/2); ok {
			r.add("backlog_"+c.name+"_rate_ratio", ratio, "x")
		}
	}
	return nil
}

// backlogMixedEmpty is the mixed run on a fresh queue, reported under
// prefix, and the queue drained after it.
func (r *runner) backlogMixedEmpty(ctx context.Context, prefix string) (mixedRun, error) {
	queue := queueName("backlog-mixed")
	run, err := r.mixedOn(ctx, prefix, queue)
	if err != nil {
		return run, err
	}
	_, err = r.drainQueue(ctx, queue)
	return run, err
}

// addBacklogState reports each node's memory and disk with the backlog of
// n jobs (full) against at rest (idle), per job.
func (r *runner) addBacklogState(ctx context.Context, idle, full nodeState, n int) {
	var leaderMetrics, leaderIdle *nodeMetrics
	if leader, err := r.leaderIndex(ctx); err == nil && idle.ok[leader] && full.ok[leader] {
		leaderIdle, leaderMetrics = &idle.metrics[leader], &full.metrics[leader]
	}
	for i, node := range r.cluster.Nodes {
		id := node.ID
		if idle.rss[i] > 0 && full.rss[i] > 0 {
			r.add("backlog_rss_"+id, mib(full.rss[i]), "MiB")
			r.add("backlog_rss_per_job_"+id, perJob(float64(idle.rss[i]), float64(full.rss[i]), n), "bytes")
		}
		if idle.anon[i] > 0 && full.anon[i] > 0 {
			r.add("backlog_anon_per_job_"+id, perJob(float64(idle.anon[i]), float64(full.anon[i]), n), "bytes")
		}
		if idle.data[i] >= 0 && full.data[i] >= 0 {
			r.add("backlog_data_dir_"+id, mib(full.data[i]), "MiB")
			r.add("backlog_disk_per_job_"+id, perJob(float64(idle.data[i]), float64(full.data[i]), n), "bytes")
		}
		if fm := full.metrics[i]; full.ok[i] && fm.known[payloadStoreMetric] {
			r.add("backlog_payload_store_"+id, fm.payloadStore/(1<<20), "MiB")
		}
	}
	if leaderMetrics != nil {
		if leaderMetrics.known[payloadHeldMetric] {
			r.add("backlog_payload_held", leaderMetrics.payloadHeld/(1<<20), "MiB")
		}
		if leaderMetrics.known[memoryHeldMetric] && leaderIdle.known[memoryHeldMetric] {
			r.add("backlog_memory_held_per_job", perJob(leaderIdle.memoryHeld, leaderMetrics.memoryHeld, n), "bytes")
		}
	}
	// The nodes remember the idempotency key of every job enqueued in the
	// last limits.idempotency_window: the memory above holds the backlog's
	// keys too, which a backlog older than the window no longer has.
	if k, err := r.readRememberedKeys(ctx); err == nil && k.known {
		r.add("backlog_remembered_keys", float64(k.keys), "keys")
	}
}

// rates is what backlogRates measured, in jobs/s.
type rates struct{ produce, consume float64 }

// backlogRates enqueues k jobs (numbered from first) into queue and then
// reserves and acks k from its head, reporting prefix_produce_rate and
// prefix_consume_rate with the CPU per job and the timings of each.
func (r *runner) backlogRates(ctx context.Context, prefix, queue string, first uint64, k int) (rates, error) {
	var out rates
	label := strings.ReplaceAll(prefix, "_", " ")
	t0 := r.sampleTimings(ctx)
	cpu0 := r.sampleCPU()
	elapsed, err := r.enqueueWindowed(ctx, label+" produce", queue, first, k)
	cpu1 := r.sampleCPU()
	t1 := r.sampleTimings(ctx)
	if err != nil {
		return out, err
	}
	out.produce = float64(k) / elapsed.Seconds()
	r.add(prefix+"_produce_rate", out.produce, "jobs/s")
	r.addCPUPerJob(prefix+"_produce", cpu0, cpu1, int64(k))
	r.addTimingFigures(prefix+"_produce", t0, t1, int64(k), seppv1.QueueService_EnqueueBatch_FullMethodName)

	r.settle(ctx)
	t0 = r.sampleTimings(ctx)
	cpu0 = r.sampleCPU()
	acked, elapsed, err := r.reserveAndAck(ctx, label+" consume", queue, int64(k), true)
	cpu1 = r.sampleCPU()
	t1 = r.sampleTimings(ctx)
	if err != nil {
		return out, err
	}
	if acked != int64(k) {
		return out, fmt.Errorf("%s: %d of %d jobs consumed", queue, acked, k)
	}
	out.consume = float64(k) / elapsed.Seconds()
	r.add(prefix+"_consume_rate", out.consume, "jobs/s")
	r.addCPUPerJob(prefix+"_consume", cpu0, cpu1, int64(k))
	r.addTimingFigures(prefix+"_consume", t0, t1, int64(k), seppv1.QueueService_Reserve_FullMethodName, seppv1.QueueService_AckBatch_FullMethodName)
	r.settle(ctx)
	return out, nil
}

// backlogSnapshot makes local node i snapshot the backlog and reports how
// long that took and how large it is, then restarts the node from it. The
// default config snapshots after 65,536 log entries, far more than a
// backlog's fill writes (a few hundred jobs share an entry), and no call
// asks for a snapshot: the node is restarted with cluster.snapshot_threshold
// = 1 and a check interval past its last restart's time to catch up
// (caughtUp), so it snapshots once it has the whole backlog again; then
// with its config back, so it restarts from that snapshot.
func (r *runner) backlogSnapshot(ctx context.Context, i int, caughtUp time.Duration) error {
	node := r.cluster.Nodes[i]
	// The check fires between interval and twice that after the start.
	interval := max(5*time.Second, caughtUp*3/2).Round(time.Second)
	st, err := r.cli.ClusterStatusOf(ctx, node.GRPCAddr)
	if err != nil {
		return err
	}
	r.note("backlog: %s's log holds %d entries, the default config snapshots every 65536: it is restarted with cluster.snapshot_threshold = 1, trailing_logs = 0 and snapshot_interval_ms = %d for the snapshot figures (and for the install that follows), then with the default again",
		node.ID, st.LastLogIndex, interval.Milliseconds())
	if err := r.cluster.SetNodeTOML(i, fmt.Sprintf("[cluster]\nsnapshot_threshold = 1\nsnapshot_interval_ms = %d\ntrailing_logs = 0\n", interval.Milliseconds())); err != nil {
		return err
	}
	restored := false
	restore := func() error {
		if restored {
			return nil
		}
		restored = true
		return r.cluster.SetNodeTOML(i, "")
	}
	defer func() { _ = restore() }()
	if _, err := r.restartNode(ctx, i); err != nil {
		return err
	}
	if m, err := r.readNodeMetrics(ctx, i); err == nil && m.snapshotPersist.count > 0 {
		r.note("backlog: %s snapshotted before it had caught up: the snapshot figures may be of part of the backlog", node.ID)
	}
	r.progress(fmt.Sprintf("waiting for %s to snapshot (it checks every %s to %s)", node.ID, interval, 2*interval))
	wctx, cancel := context.WithTimeout(ctx, 2*interval+snapshotWaitSlack)
	defer cancel()
	var m nodeMetrics
	for m.snapshotPersist.count == 0 {
		select {
		case <-wctx.Done():
			return fmt.Errorf("%s took no snapshot within %s: %w", node.ID, 2*interval+snapshotWaitSlack, wctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
		m, err = r.readNodeMetrics(wctx, i)
		if err != nil {
			m = nodeMetrics{}
		}
	}
	if m.snapshotPersist.count > 1 {
		r.note("backlog: %s took %d snapshots before it was read; the times are their means", node.ID, m.snapshotPersist.count)
	}
	if v, ok := meanMS(histogramTotals{}, m.snapshotCapture); ok {
		r.add("backlog_snapshot_capture", v, "ms")
	}
	if v, ok := meanMS(histogramTotals{}, m.snapshotPersist); ok {
		r.add("backlog_snapshot_persist", v, "ms")
	}
	if b, err := newestSnapshotBytes(filepath.Join(node.DataDir(), "snapshots")); err == nil {
		r.add("backlog_snapshot_size", mib(b), "MiB")
	} else {
		r.note("backlog: snapshot size: %v", err)
	}
	if err := restore(); err != nil {
		return err
	}
	rt, err := r.restartNode(ctx, i)
	if err != nil {
		return err
	}
	if m, err := r.readNodeMetrics(ctx, i); err == nil {
		if v, ok := meanMS(histogramTotals{}, m.restore); ok {
			r.add("backlog_snapshot_restore", v, "ms")
		}
	}
	r.addRestart("backlog_from_snapshot", rt)
	return nil
}

// newestSnapshotBytes is the size of the newest complete snapshot in a
// raft snapshot folder (one folder per snapshot; one still being written
// ends in .tmp).
func newestSnapshotBytes(dir string) (int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var newest string
	var newestAt time.Time
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if newest == "" || info.ModTime().After(newestAt) {
			newest, newestAt = e.Name(), info.ModTime()
		}
	}
	if newest == "" {
		return 0, fmt.Errorf("no snapshot in %s", dir)
	}
	return dirBytes(filepath.Join(dir, newest))
}

// backlogAfterWindow waits until the nodes remember no idempotency key,
// the backlog's included, and reports each node's resident memory per
// waiting job above its idle reading, and the memory budget's count per
// job: what a backlog older than limits.idempotency_window costs.
func (r *runner) backlogAfterWindow(ctx context.Context, idle nodeState, n int) error {
	err := r.awaitKeysEvery(ctx, r.keyPollInterval(),
		func(k rememberedKeys) bool { return !k.known || k.keys == 0 },
		func(k rememberedKeys) string {
			return fmt.Sprintf("waiting for the backlog's %d idempotency keys to be forgotten (limits.idempotency_window)", k.keys)
		})
	if err != nil {
		return err
	}
	r.settle(ctx)
	now := r.readNodeState(ctx)
	for i, node := range r.cluster.Nodes {
		if idle.rss[i] > 0 && now.rss[i] > 0 {
			r.add("backlog_after_window_rss_per_job_"+node.ID, perJob(float64(idle.rss[i]), float64(now.rss[i]), n), "bytes")
		}
		if idle.anon[i] > 0 && now.anon[i] > 0 {
			r.add("backlog_after_window_anon_per_job_"+node.ID, perJob(float64(idle.anon[i]), float64(now.anon[i]), n), "bytes")
		}
	}
	if leader, err := r.leaderIndex(ctx); err == nil && idle.ok[leader] && now.ok[leader] &&
		idle.metrics[leader].known[memoryHeldMetric] && now.metrics[leader].known[memoryHeldMetric] {
		r.add("backlog_after_window_memory_held_per_job", perJob(idle.metrics[leader].memoryHeld, now.metrics[leader].memoryHeld, n), "bytes")
	}
	return nil
}

// transferWait bounds a leadership transfer the backlog scenario asks for.
const transferWait = 30 * time.Second

// backlogInstall replaces the disk of a follower while sender, which holds
// a snapshot of the backlog and a log that starts after it (backlogSnapshot
// leaves it so), leads under a mixed load: the follower, started empty and
// joined again, can only be brought up to date by that snapshot (an
// install). It reports the install's size and time against the disk's
// sequential write rate, and the mixed load's completed rate during the
// install against the same load's rate just before the disk was replaced.
func (r *runner) backlogInstall(ctx context.Context, sender int) error {
	nodes := r.cluster.Nodes
	if rate, err := diskWriteRate(r.cluster.Dir(), diskWriteProbeBytes); err == nil {
		r.add("disk_write_rate", mib(int64(rate)), "MiB/s")
	} else {
		r.note("backlog: disk write rate: %v", err)
	}
	if err := r.leadFrom(ctx, sender); err != nil {
		return err
	}
	wiped := (sender + 1) % len(nodes)
	node := nodes[wiped]

	queue := queueName("backlog-install")
	runCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	load := r.startMixedLoad(ctx, runCtx, "backlog_install", queue)
	marks, err := r.timeInstall(ctx, wiped, func() installMark {
		return installMark{acked: load.acked.Load(), at: time.Now(), cpu: r.nodesCPU()}
	})
	stopLoad()
	if werr := load.wait(); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if _, err := r.drainQueue(ctx, queue); err != nil {
		return err
	}

	m, err := r.readNodeMetrics(ctx, wiped)
	if err != nil {
		return err
	}
	if m.restore.count == 0 {
		r.note("backlog: %s caught up from %s's log, with no snapshot installed: no install figures", node.ID, nodes[sender].ID)
		return nil
	}
	took := marks[3].at.Sub(marks[2].at)
	r.add("backlog_install_to_caught_up", ms(took), "ms")
	if v, ok := meanMS(histogramTotals{}, m.restore); ok {
		r.add("backlog_install_restore", v, "ms")
	}
	if b, err := newestSnapshotBytes(filepath.Join(node.DataDir(), "snapshots")); err == nil {
		r.add("backlog_install_size", mib(b), "MiB")
		r.add("backlog_install_rate", mib(b)/took.Seconds(), "MiB/s")
		// The transfer alone, from the leader's first byte until the
		// snapshot is in the follower's store: the rate to hold beside
		// disk_write_rate.
		if v, ok := meanMS(histogramTotals{}, m.snapshotReceive); ok && v > 0 {
			r.add("backlog_install_receive", v, "ms")
			r.add("backlog_install_receive_rate", mib(b)/(v/1000), "MiB/s")
		}
	} else {
		r.note("backlog: installed snapshot's size: %v", err)
	}
	before := float64(marks[1].acked-marks[0].acked) / marks[1].at.Sub(marks[0].at).Seconds()
	during := float64(marks[3].acked-marks[2].acked) / took.Seconds()
	r.add("backlog_install_leader_completed_rate_before", before, "jobs/s")
	r.add("backlog_install_leader_completed_rate", during, "jobs/s")
	if ratio, ok := rateRatio(during, before); ok {
		r.add("backlog_install_leader_rate_ratio", ratio, "x")
	}
	// Where the cores went, before and during: on a machine that runs
	// every node, the installing follower's work is CPU the leader lacks.
	third := 3 - sender - wiped
	for _, role := range []struct {
		name string
		i    int
	}{{"leader", sender}, {"installing", wiped}, {"other", third}} {
		if role.i < 0 || role.i >= len(nodes) {
			continue
		}
		if v, ok := coresBetween(marks[0], marks[1], role.i); ok {
			r.add("backlog_install_cpu_"+role.name+"_before", v, "cores")
		}
		if v, ok := coresBetween(marks[2], marks[3], role.i); ok {
			r.add("backlog_install_cpu_"+role.name, v, "cores")
		}
	}
	// The leader's own CPU per completed job: unchanged, the install costs
	// the leader nothing of its own, and a lower rate is the cores it
	// shared.
	perJob := func(a, b installMark) (float64, bool) {
		jobs := b.acked - a.acked
		if jobs <= 0 || sender >= len(a.cpu) || a.cpu[sender] <= 0 || b.cpu[sender] <= 0 {
			return 0, false
		}
		return float64((b.cpu[sender] - a.cpu[sender]).Microseconds()) / float64(jobs), true
	}
	if v, ok := perJob(marks[0], marks[1]); ok {
		r.add("backlog_install_leader_cpu_per_job_before", v, "us")
	}
	if v, ok := perJob(marks[2], marks[3]); ok {
		r.add("backlog_install_leader_cpu_per_job", v, "us")
	}
	return nil
}

// installMark is the load's acked count and each local node's CPU time
// at a moment.
type installMark struct {
	acked int64
	at    time.Time
	cpu   []time.Duration // per node; 0 where unknown
}

// coresBetween is the cores node i used on average between two marks.
func coresBetween(a, b installMark, i int) (float64, bool) {
	if i >= len(a.cpu) || i >= len(b.cpu) || a.cpu[i] <= 0 || b.cpu[i] <= 0 || !b.at.After(a.at) {
		return 0, false
	}
	return (b.cpu[i] - a.cpu[i]).Seconds() / b.at.Sub(a.at).Seconds(), true
}

// timeInstall marks the load (mark) before and after --mixed-duration of
// it, then replaces local node wiped's disk and marks it again from the
// join to when the node has applied what was committed at the join.
func (r *runner) timeInstall(ctx context.Context, wiped int, mark func() installMark) ([4]installMark, error) {
	var marks [4]installMark
	node := r.cluster.Nodes[wiped]
	marks[0] = mark()
	select {
	case <-ctx.Done():
		return marks, ctx.Err()
	case <-time.After(r.opts.MixedDuration):
	}
	marks[1] = mark()
	r.progress(fmt.Sprintf("replacing %s's disk: kill, remove, delete its data, start empty, join", node.ID))
	if err := r.wipeAndJoin(ctx, wiped); err != nil {
		return marks, err
	}
	st, err := r.cli.ClusterStatus(ctx)
	if err != nil {
		return marks, err
	}
	marks[2] = mark()
	r.progress(fmt.Sprintf("waiting for %s to install the snapshot and catch up to %d", node.ID, st.CommitIndex))
	wctx, cancel := context.WithTimeout(ctx, restartTimeout)
	defer cancel()
	if err := r.waitApplied(wctx, wiped, st.CommitIndex); err != nil {
		return marks, err
	}
	marks[3] = mark()
	return marks, nil
}

// leadFrom makes local node i the leader, by a transfer when another
// leads, and waits until the cluster says so.
func (r *runner) leadFrom(ctx context.Context, i int) error {
	id := r.cluster.Nodes[i].ID
	wctx, cancel := context.WithTimeout(ctx, transferWait)
	defer cancel()
	for {
		leader, err := r.leaderIndex(wctx)
		if err == nil && leader == i {
			return nil
		}
		if err == nil {
			r.progress("transferring leadership to " + id)
			if err := r.cli.TransferLeadership(wctx, id); err != nil {
				r.note("backlog: transfer to %s: %v", id, err)
			}
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("%s did not take the lead within %s: %w", id, transferWait, wctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// wipeAndJoin replaces local node i's disk as an operator would: the node
// killed, removed from the configuration, its data folder deleted, started
// empty (cluster.bootstrap = false, so that it waits to be added) and
// joined again.
func (r *runner) wipeAndJoin(ctx context.Context, i int) error {
	node := r.cluster.Nodes[i]
	if err := r.cluster.Kill(i); err != nil {
		return err
	}
	if err := r.cli.RemoveNode(ctx, node.ID); err != nil {
		return fmt.Errorf("remove %s: %w", node.ID, err)
	}
	if err := os.RemoveAll(node.DataDir()); err != nil {
		return err
	}
	if err := r.cluster.SetNodeTOML(i, "[cluster]\nbootstrap = false\n"); err != nil {
		return err
	}
	if err := r.cluster.StartNode(i); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, restartTimeout)
	defer cancel()
	if err := r.cluster.WaitServing(wctx); err != nil {
		return err
	}
	info := client.NodeInfo{ID: node.ID, RaftAddr: node.RaftAddr, GRPCAddr: node.GRPCAddr, HTTPAddr: node.HTTPAddr}
	if err := r.cli.JoinNode(ctx, info); err != nil {
		return fmt.Errorf("join %s: %w", node.ID, err)
	}
	return nil
}
