package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/client"
)

func parseIDs(args []string) ([]uint64, error) {
	ids := make([]uint64, 0, len(args))
	for _, a := range args {
		id, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return nil, usageErrorf("job ids must be numbers, got %q", a)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (e *env) queuesCommand() *cobra.Command {
	var (
		stale bool
		tags  []string
		watch watchFlags
	)
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "List queues with their counts",
		Long: `List queues with their counts. --tag lists only the queues with every tag
given (key=value, or key for any value). --watch prints the list again every
--interval until Ctrl-C (or --count times); with --json, one JSON array per line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.runWatched(cmd, watch, func(ctx context.Context, c *client.Client, out io.Writer) error {
				qs, err := c.ListQueuesByTag(ctx, stale, tags...)
				if err != nil {
					return err
				}
				if e.json {
					type view struct {
						Name              string            `json:"name"`
						Paused            bool              `json:"paused"`
						Configured        bool              `json:"configured"`
						Scheduled         uint64            `json:"scheduled"`
						Ready             uint64            `json:"ready"`
						Reserved          uint64            `json:"reserved"`
						Blocked           uint64            `json:"blocked"`
						Dead              uint64            `json:"dead"`
						OldestReadyAgeMS  int64             `json:"oldest_ready_age_ms"`
						EnqueuedTotal     uint64            `json:"enqueued_total"`
						AckedTotal        uint64            `json:"acked_total"`
						DeadLetteredTotal map[string]uint64 `json:"dead_lettered_total"`
						DroppedTotal      uint64            `json:"dropped_total"`
						RateTokens        uint64            `json:"rate_tokens"`
						KeysAtLimit       uint64            `json:"keys_at_limit"`
						HeldByKey         uint64            `json:"held_by_key"`
						PurgedTotal       uint64            `json:"purged_total"`
						// FairnessActiveKeys: the fairness key values whose
						// Ready jobs take turns now.
						FairnessActiveKeys uint64            `json:"fairness_active_keys"`
						Tags               map[string]string `json:"tags"`
					}
					views := make([]view, 0, len(qs))
					for _, q := range qs {
						dl := make(map[string]uint64, len(q.DeadLetteredTotal))
						for cause, n := range q.DeadLetteredTotal {
							dl[cause.String()] = n
						}
						views = append(views, view{q.Name, q.Paused, q.Configured, q.Scheduled, q.Ready, q.Reserved, q.Blocked, q.Dead,
							q.OldestReadyAge.Milliseconds(), q.EnqueuedTotal, q.AckedTotal, dl, q.DroppedTotal,
							q.RateTokens, q.KeysAtLimit, q.HeldByKey, q.PurgedTotal, q.FairnessActiveKeys, q.Tags})
					}
					return e.printJSON(out, views)
				}
				rows := make([][]string, 0, len(qs))
				for _, q := range qs {
					var dead uint64
					for _, n := range q.DeadLetteredTotal {
						dead += n
					}
					rows = append(rows, []string{q.Name, strconv.FormatBool(q.Paused),
						strconv.FormatUint(q.Scheduled, 10), strconv.FormatUint(q.Ready, 10), strconv.FormatUint(q.Reserved, 10),
						strconv.FormatUint(q.Blocked, 10), strconv.FormatUint(q.Dead, 10), HumanDuration(q.OldestReadyAge), strconv.FormatUint(q.EnqueuedTotal, 10),
						strconv.FormatUint(q.AckedTotal, 10), strconv.FormatUint(dead, 10), orDash(tagsText(q.Tags))})
				}
				return table(out, "QUEUE\tPAUSED\tSCHEDULED\tREADY\tRESERVED\tBLOCKED\tDEAD\tOLDEST_READY\tENQUEUED\tACKED\tDEAD_LETTERED\tTAGS", rows)
			})
		},
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "let any node answer from its own state (may lag)")
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "only the queues with this tag: key=value, or key for any value (repeat: every one must match)")
	cmd.AddCommand(e.queueSubcommands()...)
	watch.register(cmd)
	return cmd
}

func jobRows(jobs []client.Job) [][]string {
	rows := make([][]string, 0, len(jobs))
	for _, j := range jobs {
		rows = append(rows, []string{strconv.FormatUint(j.ID, 10), j.State.String(), j.Type, strconv.Itoa(int(j.Priority)),
			fmt.Sprintf("%d/%d", j.Attempt, j.MaxAttempts), fmtTime(j.EnqueuedAt), fmtTime(j.ScheduledAt), payloadPreview(j.Payload)})
	}
	return rows
}

const jobHeader = "JOB\tSTATE\tTYPE\tPRIORITY\tATTEMPT\tENQUEUED\tSCHEDULED\tPAYLOAD"

func (e *env) jobsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "jobs", Short: "Inspect and act on live jobs"}

	var (
		state        string
		after        uint64
		limit        int
		stale        bool
		getStale     bool
		getRaw       bool
		reason       string
		listAllPages bool
	)
	list := &cobra.Command{
		Use:   "list QUEUE",
		Short: "List a queue's jobs in one state, by job id",
		Long: `List a queue's jobs in one state (ready, scheduled, reserved, blocked or
completed), by job id. Prints the next page's --after when there is one;
--all follows every page.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeQueueArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := client.ParseJobState(state)
			if err != nil || st == client.StateDead {
				return usageErrorf("--state must be ready, scheduled, reserved, blocked or completed (dead jobs: sepp dead-letters list), got %q", state)
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				var all []client.Job
				next := after
				for {
					jobs, n, err := c.ListJobs(ctx, args[0], client.ListJobsOptions{State: st, AfterJobID: next, Limit: limit, Stale: stale})
					if err != nil {
						return err
					}
					all = append(all, jobs...)
					next = n
					if !listAllPages || next == 0 {
						break
					}
				}
				return printPage(e, out, "jobs", all, viewJob, jobHeader, jobRows, next)
			})
		},
	}
	list.Flags().StringVar(&state, "state", "ready", "ready, scheduled, reserved, blocked or completed")
	_ = list.RegisterFlagCompletionFunc("state", completeLiveStates)
	list.Flags().Uint64Var(&after, "after", 0, "start after this job id")
	list.Flags().IntVar(&limit, "limit", 100, "page size (the server clamps to 1000)")
	list.Flags().BoolVar(&listAllPages, "all", false, "follow every page")
	list.Flags().BoolVar(&stale, "stale", false, "let any node answer from its own state (may lag)")

	get := &cobra.Command{
		Use:   "get JOB_ID",
		Short: "Show one live job",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				j, err := c.GetJob(ctx, ids[0], getStale)
				if err != nil {
					return err
				}
				if getRaw {
					if e.json {
						return usageErrorf("--raw and --json are exclusive")
					}
					_, err := out.Write(j.Payload)
					return err
				}
				if e.json {
					return e.printJSON(out, viewJob(*j))
				}
				return printJobDetail(out, *j)
			})
		},
	}
	get.Flags().BoolVar(&getStale, "stale", false, "let any node answer from its own state (may lag)")
	get.Flags().BoolVar(&getRaw, "raw", false, "print only the payload's bytes, unescaped (for files and pipes)")

	deadLetter := &cobra.Command{
		Use:   "dead-letter JOB_ID...",
		Short: "Dead-letter live Ready or Scheduled jobs (cause admin)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				res, err := c.DeadLetterJobs(ctx, ids, reason)
				if err != nil {
					return err
				}
				return e.actionResults(out, "dead-lettered", res)
			})
		},
	}
	deadLetter.Flags().StringVar(&reason, "reason", "", "recorded as the records' last reason")

	cmd.AddCommand(list, get, deadLetter)
	cmd.AddCommand(e.jobActionCommands()...)
	return cmd
}

// waitingChildrenText is the ids of the jobs still waiting for a job, on
// one line, and how many the server left out (it lists the first 100).
func waitingChildrenText(ids []uint64, total int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(id, 10)
	}
	text := strings.Join(parts, " ")
	if more := total - len(ids); more > 0 {
		text += fmt.Sprintf(" and %d more", more)
	}
	return text
}

func printJobDetail(out io.Writer, j client.Job) error {
	rows := [][]string{
		{"id", strconv.FormatUint(j.ID, 10)},
		{"queue", j.Queue},
		{"type", j.Type},
		{"state", j.State.String()},
		{"priority", strconv.Itoa(int(j.Priority))},
		{"attempt", fmt.Sprintf("%d/%d", j.Attempt, j.MaxAttempts)},
		{"enqueued_at", fmtTime(j.EnqueuedAt)},
		{"scheduled_at", fmtTime(j.ScheduledAt)},
		{"next_attempt_at", fmtTime(j.NextAttemptAt)},
		{"worker", orDash(j.WorkerID)},
		{"lease_deadline", fmtTime(j.LeaseDeadline)},
		{"last_reason", orDash(j.LastReason)},
		{"payload", payloadPreview(j.Payload)},
	}
	for i, p := range j.Parents {
		outcome := p.State.String()
		switch {
		case p.Ended && p.State == client.StateDead:
			outcome = "dead (" + p.Cause.String() + ")"
		case p.Ended && p.State == client.StateUnknown:
			outcome = "removed"
		case !p.Ended:
			outcome += ", not ended"
		}
		rows = append(rows, []string{fmt.Sprintf("parent.%d", i), fmt.Sprintf("%d %s", p.JobID, outcome)})
	}
	if len(j.Parents) > 0 {
		policy := "cancel"
		if j.OnParentFailure == client.ParentFailureRun {
			policy = "run"
		}
		rows = append(rows, []string{"on_parent_failure", policy})
	}
	if len(j.WaitingChildren) > 0 {
		rows = append(rows, []string{"waiting_children", waitingChildrenText(j.WaitingChildren, j.WaitingChildrenTotal)})
	}
	keys := make([]string, 0, len(j.Custom))
	for k := range j.Custom {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		rows = append(rows, []string{"custom." + k, j.Custom[k]})
	}
	if o := j.Origin; o != nil {
		rows = append(rows,
			[]string{"origin.queue", o.Queue},
			[]string{"origin.job_id", strconv.FormatUint(o.JobID, 10)},
			[]string{"origin.cause", o.Cause.String()},
			[]string{"origin.failed_at", fmtTime(o.FailedAt)},
			[]string{"origin.final_attempt", strconv.FormatUint(uint64(o.FinalAttempt), 10)},
			[]string{"origin.last_reason", orDash(o.LastReason)})
	}
	if !j.StartedAt.IsZero() {
		rows = append(rows, []string{"started_at", fmtTime(j.StartedAt)})
	}
	if !j.ExpiresAt.IsZero() {
		rows = append(rows, []string{"expires_at", fmtTime(j.ExpiresAt)})
	}
	if p := j.Progress; p != nil {
		rows = append(rows, []string{"progress", strings.TrimSpace(fmt.Sprintf("%d%% %s", p.Percent, p.Message))})
	}
	if !j.CompletedAt.IsZero() {
		rows = append(rows, []string{"completed_at", fmtTime(j.CompletedAt)}, []string{"run_time", j.RunTime.String()})
	}
	if j.Result != nil {
		rows = append(rows, []string{"result", payloadPreview(j.Result)})
	}
	if err := table(out, "FIELD\tVALUE", rows); err != nil {
		return err
	}
	if len(j.History) == 0 {
		return nil
	}
	fmt.Fprintln(out)
	return table(out, attemptHeader, attemptRows(j.History))
}

const attemptHeader = "ATTEMPT\tSTARTED\tENDED\tDURATION\tWORKER\tLEASE\tOUTCOME\tREASON"

// attemptRows is the attempt history table: one row per ended attempt,
// oldest first; a nack's outcome names its directive.
func attemptRows(h []client.JobAttempt) [][]string {
	rows := make([][]string, 0, len(h))
	for _, a := range h {
		outcome := a.Outcome
		if a.Directive != "" {
			outcome += " (" + a.Directive + ")"
		}
		dur, lease := "-", "-"
		if !a.StartedAt.IsZero() {
			dur = a.Duration.String()
		}
		if a.LeaseToken != 0 {
			lease = strconv.FormatUint(a.LeaseToken, 10)
		}
		rows = append(rows, []string{strconv.FormatUint(uint64(a.Attempt), 10), fmtTime(a.StartedAt), fmtTime(a.EndedAt), dur,
			orDash(a.WorkerID), lease, outcome, orDash(strings.ReplaceAll(a.Reason, "\n", " "))})
	}
	return rows
}

func deadLetterRows(rs []client.DeadLetterRecord) [][]string {
	rows := make([][]string, 0, len(rs))
	for _, r := range rs {
		rows = append(rows, []string{strconv.FormatUint(r.Job.ID, 10), r.Job.Queue, r.Job.Type, r.Cause.String(),
			strconv.FormatUint(uint64(r.FinalAttempt), 10), fmtTime(r.FailedAt), orDash(strings.ReplaceAll(r.LastReason, "\n", " "))})
	}
	return rows
}

const deadLetterHeader = "JOB\tQUEUE\tTYPE\tCAUSE\tFINAL_ATTEMPT\tFAILED_AT\tLAST_REASON"

func (e *env) deadLettersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "dead-letters",
		Aliases: []string{"dlq"},
		Short:   "Inspect, drain, requeue and delete dead-letter records",
	}
	var (
		queue    string
		after    uint64
		limit    int
		stale    bool
		getStale bool
		getRaw   bool
		drainMax int
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List retained dead letters without consuming them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				rs, next, err := c.ListDeadLetters(ctx, client.ListDeadLettersOptions{Queue: queue, AfterJobID: after, Limit: limit, Stale: stale})
				if err != nil {
					return err
				}
				if err := printPage(e, out, "records", rs, viewDeadLetter, deadLetterHeader, deadLetterRows, next); err != nil {
					return err
				}
				if len(rs) == 0 && after == 0 {
					return e.explainNoDeadLetters(ctx, c, cmd.ErrOrStderr(), out, queue, false, 0, false)
				}
				return nil
			})
		},
	}
	list.Flags().StringVar(&queue, "queue", "", "only this queue (default all)")
	_ = list.RegisterFlagCompletionFunc("queue", e.completeQueueFlag)
	list.Flags().Uint64Var(&after, "after", 0, "start after this job id")
	list.Flags().IntVar(&limit, "limit", 100, "page size (the server clamps to 1000)")
	list.Flags().BoolVar(&stale, "stale", false, "let any node answer from its own state (may lag)")

	get := &cobra.Command{
		Use:   "get JOB_ID",
		Short: "Show one dead letter",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				r, err := c.GetDeadLetter(ctx, ids[0], getStale)
				if err != nil {
					return err
				}
				if getRaw {
					if e.json {
						return usageErrorf("--raw and --json are exclusive")
					}
					_, err := out.Write(r.Job.Payload)
					return err
				}
				if e.json {
					return e.printJSON(out, viewDeadLetter(*r))
				}
				fmt.Fprintf(out, "cause %s, final attempt %d, failed at %s, last reason: %s\n", r.Cause, r.FinalAttempt, fmtTime(r.FailedAt), orDash(r.LastReason))
				return printJobDetail(out, r.Job)
			})
		},
	}
	get.Flags().BoolVar(&getStale, "stale", false, "let any node answer from its own state (may lag)")
	get.Flags().BoolVar(&getRaw, "raw", false, "print only the payload's bytes, unescaped (for files and pipes)")

	var drainQueue string
	drain := &cobra.Command{
		Use:   "drain",
		Short: "Remove and print dead letters, oldest first (destructive)",
		Long: `Remove up to --max dead letters, oldest first, and print them. The records
are gone from the server once this returns: save the output (--json) before
acting on it. A drain is never retried once it may have reached the server;
if its answer is lost, the command exits 5 and those records may be gone.`,
		Example: `  sepp dead-letters drain --queue emails --max 100 --json > drained.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if drainMax < 0 {
				return usageErrorf("--max must not be negative, got %d", drainMax)
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				rep, err := c.DrainDeadLettersReport(ctx, client.DrainOptions{Queue: drainQueue, Max: drainMax})
				if err != nil {
					return err
				}
				rs := rep.Records
				if e.json {
					views := make([]deadLetterView, 0, len(rs))
					for _, r := range rs {
						views = append(views, viewDeadLetter(r))
					}
					return e.printJSON(out, views)
				}
				if len(rs) == 0 {
					return e.explainNoDeadLetters(ctx, c, cmd.ErrOrStderr(), out, drainQueue, rep.RetentionEnabled, rep.DroppedTotal, true)
				}
				return table(out, deadLetterHeader, deadLetterRows(rs))
			})
		},
	}
	drain.Flags().StringVar(&drainQueue, "queue", "", "only this queue (default all)")
	_ = drain.RegisterFlagCompletionFunc("queue", e.completeQueueFlag)
	drain.Flags().IntVar(&drainMax, "max", 1, "records to drain (the server clamps to max_reserve_batch)")

	requeue := &cobra.Command{
		Use:   "requeue JOB_ID...",
		Short: "Put dead letters back Ready with their job id, attempt reset to 1",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				res, err := c.RequeueDeadLetters(ctx, ids)
				if err != nil {
					return err
				}
				return e.actionResults(out, "requeued", res)
			})
		},
	}
	del := &cobra.Command{
		Use:   "delete JOB_ID...",
		Short: "Remove dead letters for good",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				res, err := c.DeleteDeadLetters(ctx, ids)
				if err != nil {
					return err
				}
				return e.actionResults(out, "deleted", res)
			})
		},
	}
	cmd.AddCommand(list, get, drain, requeue, del, e.redriveCommand())
	return cmd
}

func (e *env) pauseCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "pause QUEUE",
		Short:             "Stop handing out a queue's jobs (enqueues are still accepted)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeQueueArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				if err := c.PauseQueue(ctx, args[0]); err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{"queue": args[0], "paused": true})
				}
				fmt.Fprintf(out, "paused queue %s\n", args[0])
				return nil
			})
		},
	}
}

func (e *env) resumeCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "resume QUEUE",
		Short:             "Resume handing out a paused queue's jobs",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeQueueArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				if err := c.ResumeQueue(ctx, args[0]); err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{"queue": args[0], "paused": false})
				}
				fmt.Fprintf(out, "resumed queue %s\n", args[0])
				return nil
			})
		},
	}
}

func (e *env) clusterCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Inspect and change cluster membership"}
	var node string
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the cluster's members, leader and indexes",
		Long:  "Show the cluster as the leader sees it, or as the node at --node sees it.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				var (
					s   *client.ClusterStatus
					err error
				)
				if node != "" {
					s, err = c.ClusterStatusOf(ctx, node)
				} else {
					s, err = c.ClusterStatus(ctx)
				}
				if err != nil {
					return err
				}
				if e.json {
					type member struct {
						ID          string `json:"id"`
						RaftAddr    string `json:"raft_addr"`
						GRPCAddr    string `json:"grpc_addr"`
						HTTPAddr    string `json:"http_addr"`
						Voter       bool   `json:"voter"`
						Leader      bool   `json:"leader"`
						Healthy     bool   `json:"healthy"`
						LastContact string `json:"last_contact,omitempty"`
						Facts       *facts `json:"facts,omitempty"`
						// The member's clock minus the answering node's, and
						// the measurement's error, in milliseconds.
						ClockOffsetMS *float64 `json:"clock_offset_ms,omitempty"`
						ClockErrorMS  *float64 `json:"clock_error_ms,omitempty"`
					}
					ms := make([]member, 0, len(s.Members))
					for _, m := range s.Members {
						mm := member{ID: m.Node.ID, RaftAddr: m.Node.RaftAddr, GRPCAddr: m.Node.GRPCAddr, HTTPAddr: m.Node.HTTPAddr, Voter: m.Voter,
							Leader: m.Leader, Healthy: m.Healthy, LastContact: m.LastContact, Facts: factsJSON(m.Facts)}
						if m.ClockMeasured {
							off, er := msFloat(m.ClockOffset), msFloat(m.ClockError)
							mm.ClockOffsetMS, mm.ClockErrorMS = &off, &er
						}
						ms = append(ms, mm)
					}
					return e.printJSON(out, map[string]any{
						"self": s.Self.ID, "leader": s.Leader.ID, "leader_grpc_addr": s.Leader.GRPCAddr, "state": s.State, "term": s.Term,
						"commit_index": s.CommitIndex, "applied_index": s.AppliedIndex, "last_log_index": s.LastLogIndex, "members": ms,
						"max_clock_skew_ms": msFloat(s.MaxClockSkew), "clock_skew": s.ClockSkew,
					})
				}
				fmt.Fprintf(out, "node %s is %s; leader %s; term %d; commit %d, applied %d, last log %d\n",
					s.Self.ID, s.State, orDash(s.Leader.ID), s.Term, s.CommitIndex, s.AppliedIndex, s.LastLogIndex)
				if s.ClockSkew != "" {
					fmt.Fprintf(out, "CLOCK SKEW: %s\n", s.ClockSkew)
				}
				rows := make([][]string, 0, len(s.Members))
				for _, m := range s.Members {
					role := "nonvoter"
					if m.Leader {
						role = "leader"
					} else if m.Voter {
						role = "voter"
					}
					version, cmds, memory, procs := factsColumns(m.Facts)
					clock := "-"
					if m.ClockMeasured {
						clock = fmt.Sprintf("%+dms±%d", m.ClockOffset.Milliseconds(), m.ClockError.Milliseconds())
					}
					rows = append(rows, []string{m.Node.ID, role, strconv.FormatBool(m.Healthy), orDash(m.LastContact), m.Node.GRPCAddr, m.Node.RaftAddr, version, cmds, memory, procs, clock})
				}
				return table(out, "NODE\tROLE\tHEALTHY\tLAST_CONTACT\tGRPC\tRAFT\tVERSION\tCOMMANDS\tMEMORY\tPROCS\tCLOCK", rows)
			})
		},
	}
	status.Flags().StringVar(&node, "node", "", "ask this node (host:port) for its own view instead of the leader")

	var raftAddr, grpcAddr, httpAddr string
	join := &cobra.Command{
		Use:   "join NODE_ID",
		Short: "Add a node to the cluster as a voter",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if raftAddr == "" {
				return usageErrorf("--raft-addr is required")
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				if err := c.JoinNode(ctx, client.NodeInfo{ID: args[0], RaftAddr: raftAddr, GRPCAddr: grpcAddr, HTTPAddr: httpAddr}); err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{"joined": args[0]})
				}
				fmt.Fprintf(out, "joined node %s\n", args[0])
				return nil
			})
		},
	}
	join.Flags().StringVar(&raftAddr, "raft-addr", "", "the node's Raft address (required)")
	join.Flags().StringVar(&grpcAddr, "grpc-addr", "", "the node's gRPC address")
	join.Flags().StringVar(&httpAddr, "http-addr", "", "the node's HTTP address")

	remove := &cobra.Command{
		Use:   "remove NODE_ID",
		Short: "Take a node out of the cluster configuration",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				if err := c.RemoveNode(ctx, args[0]); err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{"removed": args[0]})
				}
				fmt.Fprintf(out, "removed node %s\n", args[0])
				return nil
			})
		},
	}
	transfer := &cobra.Command{
		Use:   "transfer [NODE_ID]",
		Short: "Hand leadership to another voter (default: the most up-to-date)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			to := ""
			if len(args) == 1 {
				to = args[0]
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				if err := c.TransferLeadership(ctx, to); err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{"transferred_to": to})
				}
				fmt.Fprintf(out, "leadership transferred to %s\n", orDash(to))
				return nil
			})
		},
	}
	cmd.AddCommand(status, join, remove, transfer)
	return cmd
}

// printPage prints one page of a listing: JSON under key with the next
// page's cursor, or a table followed by the --after that continues it.
func printPage[T, V any](e *env, out io.Writer, key string, items []T, view func(T) V, header string, rows func([]T) [][]string, next uint64) error {
	if e.json {
		views := make([]V, 0, len(items))
		for _, it := range items {
			views = append(views, view(it))
		}
		return e.printJSON(out, map[string]any{key: views, "next_after_job_id": next})
	}
	if err := table(out, header, rows(items)); err != nil {
		return err
	}
	if next != 0 {
		fmt.Fprintf(out, "more: --after %d\n", next)
	}
	return nil
}
