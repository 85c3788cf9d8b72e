package bench

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"
)

// Command is `sepp bench`.
func Command() *cobra.Command {
	o := Defaults()
	var addrs, scenarios, cpuProfile string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput, latency, failover and recovery of a sepp cluster",
		Long: `bench drives a sepp cluster through the Go client and prints every figure as a
"name: value unit" line (or JSON with --json).

With no --addr it starts its own local three-node cluster of real sepp processes on
loopback with the default config (fsync on); the failover, recovery and backlog
scenarios need that, since they kill, transfer and restart nodes.

Scenarios: produce (pipelined enqueues), latency (one enqueue at a time), consume
(reserve in batches, a confirmed ack per job, the batch acked with one AckBatch), mixed (producers and workers at once,
each worker reserving its next batch while the last one's acks are confirmed,
then end-to-end latency at a fixed offered rate), failover (SIGKILL of the leader,
then a planned transfer, while a producer enqueues every 5 ms: longest gap, lost,
duplicates; then SIGSTOP of the leader: time until another node leads), recovery (resident memory with a million waiting jobs; restart time).
"all" (the default) is those six. backlog runs only when named, alone or with others
(--scenarios backlog): it fills --backlog-jobs jobs of --payload bytes into one queue
and reports each node's resident memory per waiting job above the node at rest, its
data folder's growth per job (the data folder holds the Raft log, the snapshots and the
payload store), the payload bytes the jobs hold; the produce, consume and mixed rates at
that backlog (--backlog-rate-jobs each; mixed for --mixed-duration) against the mean of
the same at an empty queue before the fill and after the drain (_rate_ratio), after an
untimed warm-up; a follower's restart (to serving, ready and caught up); its snapshot
of the backlog (capture, persist, size: for it the follower is restarted with
cluster.snapshot_threshold = 1 and trailing_logs = 0, then with the default config
again, from that snapshot: restore time and restart); that follower made the leader
and another one's disk replaced (killed, removed, its data deleted, started empty and
joined) under a mixed load, so that it can only catch up by installing the snapshot:
the install's size, time and rate against the disk's sequential write rate, and the
load's completed rate during the install against just before (_leader_rate_ratio);
then it drains the queue. With --recovery-clean it first waits out the earlier scenarios' idempotency
keys too. --payload-random makes payloads incompressible.

Exit code 1 when any scenario lost or duplicated an acknowledged job.`,
		Example: "  sepp bench\n  sepp bench --scenarios produce,consume --produce 20000\n  sepp bench --scenarios backlog --backlog-jobs 200000 --payload 1024\n  sepp bench --addr localhost:50051 --scenarios latency --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if addrs != "" {
				o.Addrs = strings.Split(addrs, ",")
			}
			o.Scenarios = ParseScenarios(scenarios)
			o.Out = cmd.OutOrStdout()
			o.Progress = cmd.ErrOrStderr()
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return fmt.Errorf("--cpu-profile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("--cpu-profile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			_, err := Run(ctx, o)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&addrs, "addr", "", "comma-separated gRPC addresses of a running cluster (default: start a local one)")
	f.StringVar(&scenarios, "scenarios", "all", "comma-separated: produce,latency,consume,mixed,failover,recovery,backlog (all: every one but backlog)")
	f.StringVar(&o.Binary, "binary", "", "sepp binary for the local cluster (default: this one)")
	f.StringVar(&o.Dir, "dir", "", "folder for the local cluster's configs, data and logs, kept afterwards (default: a temporary folder, removed)")
	f.IntVar(&o.PayloadBytes, "payload", o.PayloadBytes, "payload bytes per job")
	f.BoolVar(&o.RandomPayload, "payload-random", o.RandomPayload, "fill payloads with random bytes (the default filler, the alphabet over and over, compresses 13-21x in the payload store)")
	f.IntVar(&o.Produce, "produce", o.Produce, "jobs in the produce (and consume) scenario")
	f.IntVar(&o.Window, "window", o.Window, "outstanding enqueues in the produce scenario")
	f.IntVar(&o.ProducerBatch, "producer-batch", o.ProducerBatch, "jobs per EnqueueBatch call of the client's producer (0: the client's default)")
	f.DurationVar(&o.ProducerLinger, "producer-linger", o.ProducerLinger, "how long the first job of a producer batch waits for company (0: the client's default)")
	f.IntVar(&o.Latency, "latency-count", o.Latency, "sync enqueues in the latency scenario")
	f.DurationVar(&o.IdleGap, "idle-gap", o.IdleGap, "spacing of the sync enqueues and fsyncs of the _after_idle figures (0: skip them)")
	f.IntVar(&o.ConsumeBatch, "consume-batch", o.ConsumeBatch, "jobs per reserve in the consume scenario")
	f.IntVar(&o.Consumers, "consumers", o.Consumers, "concurrent reserve loops in the consume scenario (each acks a batch with one AckBatch call, a confirmed result per job, while it reserves the next)")
	f.DurationVar(&o.MixedDuration, "mixed-duration", o.MixedDuration, "length of the mixed scenario")
	f.IntVar(&o.MixedProducers, "mixed-producers", o.MixedProducers, "producers in the mixed scenario")
	f.IntVar(&o.MixedWorkers, "mixed-workers", o.MixedWorkers, "workers in the mixed scenario")
	f.IntVar(&o.MixedRate, "e2e-rate", o.MixedRate, "offered jobs/s for the end-to-end latency figure")
	f.DurationVar(&o.MixedRateFor, "e2e-duration", o.MixedRateFor, "how long to offer that rate")
	f.DurationVar(&o.FailoverInterval, "failover-interval", o.FailoverInterval, "time between enqueues of the failover producer")
	f.DurationVar(&o.FailoverBefore, "failover-before", o.FailoverBefore, "enqueueing before the fault")
	f.DurationVar(&o.FailoverAfter, "failover-after", o.FailoverAfter, "enqueueing after the fault")
	f.IntVar(&o.RecoveryJobs, "recovery-jobs", o.RecoveryJobs, "waiting jobs for the recovery scenario")
	f.BoolVar(&o.RecoveryClean, "recovery-clean", o.RecoveryClean, "before filling the recovery queue, wait until the earlier scenarios' idempotency keys have expired (up to 2 min with the default config), so the memory figures count only the recovery scenario's jobs (the backlog scenario waits too)")
	f.IntVar(&o.BacklogJobs, "backlog-jobs", o.BacklogJobs, "waiting jobs of --payload bytes for the backlog scenario")
	f.IntVar(&o.BacklogRateJobs, "backlog-rate-jobs", o.BacklogRateJobs, "jobs the backlog scenario enqueues, then consumes, to time the rates at an empty queue and at the backlog (0: a tenth of --backlog-jobs, at most 100000)")
	f.BoolVar(&o.BacklogAfterWindow, "backlog-after-window", o.BacklogAfterWindow, "in the backlog scenario, wait until the backlog's idempotency keys are forgotten (limits.idempotency_window, 2 min by default) and report the memory per job again (backlog_after_window_*)")
	f.BoolVar(&o.JSON, "json", false, "print the figures as JSON")
	f.StringVar(&cpuProfile, "cpu-profile", "", "write a pprof CPU profile of the bench's own process (the client side) to this file")
	return cmd
}
