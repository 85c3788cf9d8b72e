package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/client"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

func (e *env) enqueueCommand() *cobra.Command {
	var (
		payload, payloadFile, scheduledAt, key string
		expiresAt                              string
		priority                               int
		delay, ttl                             time.Duration
		maxAttempts                            uint32
		custom                                 []string
		unique                                 uniqueFlags
	)
	cmd := &cobra.Command{
		Use:   "enqueue QUEUE JOB_TYPE",
		Short: "Add one job to a queue",
		Long: `Add one job to a queue and print its id.

The payload comes from --payload, or from --payload-file (- reads stdin).
--scheduled-at takes an absolute RFC 3339 time, --delay a time from now
(10m, 1h30m; computed from the local clock). Without --idempotency-key a random key is generated, so the
client's retries through a failover never add the job twice.

--unique makes the job unique in its queue: while another job holding the
same key waits, is scheduled or is reserved, the enqueue returns that job
(--unique-conflict refuse fails instead, exit code 6). The key is
--unique-key, or derived from the job type, the payload and the
--unique-field custom fields. --unique-cover-dead also holds it while the
dead-letter record is kept, --unique-completed-for for that long after
the ack.

--ttl (a time from the server's accepting the job) or --expires-at (an
absolute RFC 3339 time) gives the job a deadline: not reserved by then, it
is dead-lettered with the cause expired. A retried job keeps its first
deadline; a reserved job is never expired.`,
		Example: `  sepp enqueue emails welcome --payload '{"user":42}' --priority 9
  sepp enqueue reports daily_rollup --scheduled-at 2030-01-02T03:04:05Z --json
  sepp enqueue reports daily_rollup --delay 10m
  sepp enqueue reports rebuild --payload '{"tenant":"acme"}' --unique --unique-completed-for 10m
  sepp enqueue emails digest --ttl 15m --custom tenant=acme`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: e.completeQueueArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.NewEnqueueRequest(args[0], args[1])
			switch {
			case payload != "" && payloadFile != "":
				return usageErrorf("--payload and --payload-file are exclusive")
			case payloadFile == "-":
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("read payload from stdin: %w", err)
				}
				req.WithPayload(b)
			case payloadFile != "":
				b, err := os.ReadFile(payloadFile)
				if err != nil {
					return &CodeError{Code: ExitUsage, Err: fmt.Errorf("--payload-file: %w", err)}
				}
				req.WithPayload(b)
			case payload != "":
				req.WithPayload([]byte(payload))
			}
			if cmd.Flags().Changed("priority") {
				if priority < 0 || priority > int(client.MaxPriority) {
					return &CodeError{Code: ExitRejected, Err: fmt.Errorf("--priority must be 0..9, got %d", priority)}
				}
				req.WithPriority(client.Priority(priority))
			}
			if cmd.Flags().Changed("delay") {
				if scheduledAt != "" {
					return usageErrorf("--delay and --scheduled-at are exclusive")
				}
				if delay < 0 {
					return usageErrorf("--delay must not be negative, got %s", delay)
				}
				req.WithScheduledAt(time.Now().Add(delay))
			}
			if scheduledAt != "" {
				t, err := time.Parse(time.RFC3339Nano, scheduledAt)
				if err != nil {
					return usageErrorf("--scheduled-at must be an RFC 3339 time like 2030-01-02T03:04:05Z: %v", err)
				}
				req.WithScheduledAt(t)
			}
			if cmd.Flags().Changed("ttl") {
				if ttl < time.Millisecond {
					return usageErrorf("--ttl must be at least 1ms, got %s", ttl)
				}
				req.WithTTL(ttl)
			}
			if expiresAt != "" {
				t, err := time.Parse(time.RFC3339Nano, expiresAt)
				if err != nil {
					return usageErrorf("--expires-at must be an RFC 3339 time like 2030-01-02T03:04:05Z: %v", err)
				}
				req.WithExpiresAt(t)
			}
			req.WithMaxAttempts(maxAttempts)
			for _, kv := range custom {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usageErrorf("--custom takes key=value, got %q", kv)
				}
				req.WithCustom(k, v)
			}
			req.WithIdempotencyKey(key)
			if err := unique.apply(cmd, req); err != nil {
				return err
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				res, err := c.Enqueue(ctx, req)
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{
						"job_id": res.JobID, "state": res.State.String(), "duplicate": res.Duplicate, "idempotency_key": res.IdempotencyKey,
					})
				}
				if res.Duplicate && req.Unique != nil {
					fmt.Fprintf(out, "duplicate: job %d (%s) holds this unique key or idempotency key\n", res.JobID, res.State)
					return nil
				}
				if res.Duplicate {
					fmt.Fprintf(out, "duplicate: job %d (%s) already has this idempotency key\n", res.JobID, res.State)
					return nil
				}
				fmt.Fprintf(out, "enqueued job %d (%s)\n", res.JobID, res.State)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&payload, "payload", "", "payload as a string")
	f.StringVar(&payloadFile, "payload-file", "", "read the payload from this file (- for stdin)")
	f.IntVar(&priority, "priority", 0, "priority 0 (lowest) to 9 (highest); unset takes the queue's default")
	f.StringVar(&scheduledAt, "scheduled-at", "", "earliest run time, RFC 3339 (e.g. 2030-01-02T03:04:05Z)")
	f.DurationVar(&delay, "delay", 0, "run no sooner than this long from now (e.g. 10m); exclusive with --scheduled-at")
	f.DurationVar(&ttl, "ttl", 0, "dead-letter the job (cause expired) unless reserved within this long (e.g. 15m)")
	f.StringVar(&expiresAt, "expires-at", "", "dead-letter the job (cause expired) unless reserved by this RFC 3339 time")
	f.Uint32Var(&maxAttempts, "max-attempts", 0, "deliveries allowed; 0 takes the queue's default")
	f.StringArrayVar(&custom, "custom", nil, "custom field key=value (repeatable)")
	f.StringVar(&key, "idempotency-key", "", "idempotency key; default a random one")
	unique.register(f)
	return cmd
}

func (e *env) reserveCommand() *cobra.Command {
	var (
		max         int
		lease, wait time.Duration
		workerID    string
	)
	cmd := &cobra.Command{
		Use:   "reserve QUEUE",
		Short: "Lease jobs from a queue (for scripting)",
		Long: `Lease up to --max Ready jobs from a queue and print them with the job id
and lease token that ack and nack take. Prints nothing (or [] with --json)
when no job was ready within --wait; that is not an error.`,
		Example: `  sepp reserve emails --max 10 --lease 1m --json
  sepp reserve emails --wait 20s`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeQueueArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if max < 0 {
				return usageErrorf("--max must not be negative, got %d", max)
			}
			if wait >= e.timeout {
				return usageErrorf("--wait (%s) must be shorter than --timeout (%s)", wait, e.timeout)
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				ds, err := c.Reserve(ctx, args[0], client.ReserveOptions{WorkerID: workerID, Max: max, Lease: lease, Wait: wait})
				if err != nil {
					return err
				}
				if e.json {
					views := make([]deliveryView, 0, len(ds))
					for _, d := range ds {
						views = append(views, viewDelivery(d))
					}
					return e.printJSON(out, views)
				}
				if len(ds) == 0 {
					fmt.Fprintln(out, "no jobs ready")
					return nil
				}
				rows := make([][]string, 0, len(ds))
				for _, d := range ds {
					rows = append(rows, []string{
						strconv.FormatUint(d.Ctx.JobID, 10), strconv.FormatUint(d.Ctx.LeaseToken, 10),
						fmt.Sprintf("%d/%d", d.Ctx.Attempt, d.Ctx.MaxAttempts), d.Job.Type,
						strconv.Itoa(int(d.Job.Priority)), fmtTime(d.Ctx.LeaseDeadline), payloadPreview(d.Job.Payload),
					})
				}
				return table(out, "JOB\tLEASE_TOKEN\tATTEMPT\tTYPE\tPRIORITY\tLEASE_DEADLINE\tPAYLOAD", rows)
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&max, "max", 1, "jobs wanted (the server clamps to max_reserve_batch)")
	f.DurationVar(&lease, "lease", 0, "lease duration; 0 takes the server's default")
	f.DurationVar(&wait, "wait", 0, "long-poll: wait this long for a job when none is ready")
	f.StringVar(&workerID, "worker-id", "sepp-cli", "worker id shown in listings and attempt history")
	return cmd
}

func parseLeaseArgs(args []string) (client.JobContext, error) {
	id, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil {
		return client.JobContext{}, usageErrorf("JOB_ID must be a number, got %q", args[0])
	}
	token, err := strconv.ParseUint(args[1], 10, 64)
	if err != nil {
		return client.JobContext{}, usageErrorf("LEASE_TOKEN must be a number, got %q", args[1])
	}
	return client.JobContext{JobID: id, LeaseToken: token}, nil
}

func (e *env) ackCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "ack JOB_ID LEASE_TOKEN",
		Short: "Complete a reserved job (for scripting)",
		Long: `Complete a delivery: the job leaves the server. Exits 4 when the lease is
no longer held (it expired and the job went back to the queue, or the
delivery was already answered).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			jc, err := parseLeaseArgs(args)
			if err != nil {
				return err
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				if err := c.Ack(ctx, jc); err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{"job_id": jc.JobID, "acked": true})
				}
				fmt.Fprintf(out, "acked job %d\n", jc.JobID)
				return nil
			})
		},
	}
}

func (e *env) nackCommand() *cobra.Command {
	var (
		reason     string
		retryAfter time.Duration
		deadLetter bool
	)
	cmd := &cobra.Command{
		Use:   "nack JOB_ID LEASE_TOKEN",
		Short: "Fail a reserved job (for scripting)",
		Long: `Fail a delivery. Without a directive flag the queue's retry policy decides;
--retry-after retries once the delay has passed; --dead-letter skips the
remaining attempts. Prints whether the job was dead-lettered.`,
		Example: `  sepp nack 42 7 --reason "smtp timeout" --retry-after 1m
  sepp nack 42 7 --dead-letter --reason "bad address"`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			jc, err := parseLeaseArgs(args)
			if err != nil {
				return err
			}
			directive := client.DefaultRetry()
			switch {
			case deadLetter && cmd.Flags().Changed("retry-after"):
				return usageErrorf("--dead-letter and --retry-after are exclusive")
			case deadLetter:
				directive = client.DeadLetter()
			case cmd.Flags().Changed("retry-after"):
				if retryAfter < 0 {
					return usageErrorf("--retry-after must not be negative, got %s", retryAfter)
				}
				directive = client.After(retryAfter)
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				dead, err := c.Nack(ctx, jc, directive, reason)
				if err != nil {
					return err
				}
				// A dead job leaves a record only where retention is on;
				// say so rather than let "dead-lettered" suggest one.
				// The nack has applied: a failed question leaves kept unknown
				// (nil) rather than failing the command.
				var kept *bool
				if dead {
					if info, err := c.ServerInfoStale(ctx); err == nil {
						kept = &info.DeadLetterRetentionEnabled
					}
				}
				if e.json {
					return e.printJSON(out, map[string]any{"job_id": jc.JobID, "dead_lettered": dead, "record_kept": kept})
				}
				switch {
				case dead && kept == nil:
					fmt.Fprintf(out, "nacked job %d: dead-lettered\n", jc.JobID)
				case dead && *kept:
					fmt.Fprintf(out, "nacked job %d: dead-lettered (sepp dead-letters get %d)\n", jc.JobID, jc.JobID)
				case dead:
					fmt.Fprintf(out, "nacked job %d: dead-lettered and dropped: dead-letter retention is off ([storage] dead_letter_retention_ms = 0), no record is kept\n", jc.JobID)
				default:
					fmt.Fprintf(out, "nacked job %d: will be retried (%s)\n", jc.JobID, directive)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&reason, "reason", "", "why the job failed (kept as its last reason)")
	f.DurationVar(&retryAfter, "retry-after", 0, "retry once this delay has passed")
	f.BoolVar(&deadLetter, "dead-letter", false, "dead-letter the job now (cause rejected)")
	return cmd
}

func (e *env) infoCommand() *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show the server's version, leader, capabilities and limits",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				var (
					info *client.ServerInfo
					err  error
				)
				if stale {
					info, err = c.ServerInfoStale(ctx)
				} else {
					info, err = c.ServerInfo(ctx)
				}
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{
						"version": info.Version, "node_id": info.NodeID, "leader_id": info.LeaderID,
						"leader_grpc_addr": info.LeaderAddr, "stale": info.Stale,
						"dead_letter_retention_enabled": info.DeadLetterRetentionEnabled,
						"dead_letter_retention_ms":      info.DeadLetterRetention.Milliseconds(),
						"max_reserve_batch":             info.MaxReserveBatch,
						"max_schedule_horizon_ms":       info.MaxScheduleHorizon.Milliseconds(),
						"limits":                        protoView(info.Limits),
						"queues":                        queueLimitViews(info.Queues),
						"members":                       memberViews(info.Members),
						"capabilities":                  capabilityViews(info.Capabilities),
					})
				}
				rows := [][]string{
					{"version", info.Version},
					{"node", info.NodeID},
					{"leader", fmt.Sprintf("%s (%s)", orDash(info.LeaderID), orDash(info.LeaderAddr))},
					{"stale", strconv.FormatBool(info.Stale)},
					{"dead_letter_retention_enabled", strconv.FormatBool(info.DeadLetterRetentionEnabled)},
					{"dead_letter_retention", HumanDuration(info.DeadLetterRetention)},
					{"max_reserve_batch", strconv.FormatUint(uint64(info.MaxReserveBatch), 10)},
					{"max_schedule_horizon", HumanDuration(info.MaxScheduleHorizon)},
				}
				// Every limit, in the order the API declares them.
				for _, kv := range limitRows(info.Limits) {
					rows = append(rows, []string{"limits." + kv[0], kv[1]})
				}
				for _, q := range info.Queues {
					line := fmt.Sprintf("default_priority=%d default_max_attempts=%d max_schedule_horizon=%s",
						q.GetDefaultPriority(), q.GetDefaultMaxAttempts(), HumanDuration(time.Duration(q.GetMaxScheduleHorizonMs())*time.Millisecond))
					if limits := reserveLimitsText(q); limits != "" {
						line += " " + limits
					}
					rows = append(rows, []string{"queue " + q.GetName(), line})
				}
				for _, m := range info.Members {
					rows = append(rows, []string{"member " + m.GetNodeId(), memberText(m)})
				}
				for _, c := range info.Capabilities {
					ready := "cluster-wide"
					if !c.ClusterReady {
						ready = "not every member yet"
					}
					rows = append(rows, []string{"capability " + c.Name, fmt.Sprintf("command version %d, %s", c.CommandVersion, ready)})
				}
				return table(out, "FIELD\tVALUE", rows)
			})
		},
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "let any node answer from its own state (may lag)")
	return cmd
}

// limitRows are every field of the server's limits, name and value, in
// declaration order (zero values included: 0 is a setting too).
func limitRows(l *seppv1.Limits) [][2]string {
	if l == nil {
		return nil
	}
	r := l.ProtoReflect()
	fields := r.Descriptor().Fields()
	out := make([][2]string, 0, fields.Len())
	for i := range fields.Len() {
		fd := fields.Get(i)
		v := r.Get(fd)
		text := v.String()
		if fd.Enum() != nil {
			if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
				text = string(ev.Name())
			}
		}
		out = append(out, [2]string{string(fd.Name()), text})
	}
	return out
}

// memberText is one member's facts on a line.
func memberText(m *seppv1.MemberFacts) string {
	if m.GetLegacy() {
		return fmt.Sprintf("older binary, command versions up to %d", m.GetMaxCommandVersion())
	}
	s := fmt.Sprintf("version %s, command versions %d..%d, GOMAXPROCS %d", orDash(m.GetBinaryVersion()), m.GetMinCommandVersion(), m.GetMaxCommandVersion(), m.GetGomaxprocs())
	if m.GetMemoryLimitBytes() > 0 {
		s += fmt.Sprintf(", memory limit %d bytes (%s)", m.GetMemoryLimitBytes(), m.GetMemoryLimitFrom())
	}
	return s
}

func memberViews(ms []*seppv1.MemberFacts) []map[string]any {
	out := make([]map[string]any, 0, len(ms))
	for _, m := range ms {
		out = append(out, protoView(m))
	}
	return out
}

func capabilityViews(cs []client.Capability) []map[string]any {
	out := make([]map[string]any, 0, len(cs))
	for _, c := range cs {
		out = append(out, map[string]any{"name": c.Name, "command_version": c.CommandVersion, "cluster_ready": c.ClusterReady})
	}
	return out
}

func queueLimitViews(qs []*seppv1.QueueLimits) []map[string]any {
	out := make([]map[string]any, 0, len(qs))
	for _, q := range qs {
		out = append(out, protoView(q))
	}
	return out
}
