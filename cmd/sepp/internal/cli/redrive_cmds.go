package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/client"
)

// redriveView is the --json shape of a redrive task or audit record.
type redriveView struct {
	ID             uint64     `json:"id"`
	State          string     `json:"state"`
	Queue          string     `json:"queue,omitempty"`
	Cause          string     `json:"cause,omitempty"`
	JobType        string     `json:"job_type,omitempty"`
	ReasonContains string     `json:"reason_contains,omitempty"`
	FailedAfter    *time.Time `json:"failed_after,omitempty"`
	FailedBefore   *time.Time `json:"failed_before,omitempty"`
	ToQueue        string     `json:"to_queue,omitempty"`
	Fresh          bool       `json:"fresh"`
	Rate           uint32     `json:"rate"`
	Moved          uint64     `json:"moved"`
	Remaining      uint64     `json:"remaining"`
	Cursor         uint64     `json:"cursor"`
	LastError      string     `json:"last_error,omitempty"`
	CreatedBy      string     `json:"created_by,omitempty"`
	CreatedAt      *time.Time `json:"created_at,omitempty"`
	EndedAt        *time.Time `json:"ended_at,omitempty"`
	EndedBy        string     `json:"ended_by,omitempty"`
}

func viewRedrive(t client.RedriveTask) redriveView {
	s := t.Options.Selection
	v := redriveView{
		ID: t.ID, State: t.State.String(), Queue: s.Queue, JobType: s.JobType, ReasonContains: s.ReasonContains,
		FailedAfter: optTime(s.FailedAfter), FailedBefore: optTime(s.FailedBefore), ToQueue: t.Options.ToQueue,
		Fresh: t.Options.Fresh, Rate: t.Options.Rate, Moved: t.Moved, Remaining: t.Remaining, Cursor: t.Cursor,
		LastError: t.LastError, CreatedBy: t.CreatedBy, CreatedAt: optTime(t.CreatedAt), EndedAt: optTime(t.EndedAt), EndedBy: t.EndedBy,
	}
	if s.Cause != client.CauseUnknown {
		v.Cause = s.Cause.String()
	}
	return v
}

// redriveCauses are the causes --cause takes, in the order help and
// completion list them: every cause a dead letter can have.
var redriveCauses = []client.DeadLetterCause{
	client.CauseAttemptsExhausted, client.CauseRejected, client.CauseLeaseExpired,
	client.CauseAdmin, client.CauseCancelled, client.CauseExpired,
}

// causeNames is "attempts_exhausted, rejected, ... or expired".
func causeNames() string {
	names := make([]string, len(redriveCauses))
	for i, c := range redriveCauses {
		names[i] = c.String()
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func parseCause(s string) (client.DeadLetterCause, error) {
	if s == "" {
		return client.CauseUnknown, nil
	}
	for _, c := range redriveCauses {
		if c.String() == s {
			return c, nil
		}
	}
	return 0, usageErrorf("--cause: %q is not %s", s, causeNames())
}

// completeCauses completes --cause.
func completeCauses(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	names := make([]string, len(redriveCauses))
	for i, c := range redriveCauses {
		names[i] = c.String()
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

func parseOptionalTime(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usageErrorf("%s: %v", flag, err)
	}
	return t, nil
}

// redriveCommand is `sepp dead-letters redrive`.
func (e *env) redriveCommand() *cobra.Command {
	var (
		queue, cause, jobType, reason, after, before, to string
		fresh, dryRun                                    bool
		rate, sample                                     uint32
	)
	cmd := &cobra.Command{
		Use:   "redrive",
		Short: "Move the dead letters a selection matches back into a queue, at a rate",
		Long: `Start a redrive task: the dead letters matching every selection flag given
(and that failed by the start) are moved at --rate jobs per second, lowest job
id first. By default each job goes back to its own queue with its id and its
attempt counter reset; --fresh replays each as a new job (new id, attempt 1),
into --to when given. Check the count with --dry-run first. Follow the task
with "sepp redrives get ID"; pause, resume or cancel it there.`,
		Example: `  sepp dead-letters redrive --queue emails --cause attempts_exhausted --reason-contains smtp --dry-run
  sepp dead-letters redrive --queue emails --cause attempts_exhausted --reason-contains smtp --rate 50
  sepp dead-letters redrive --queue emails --fresh --to emails-replay`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := parseCause(cause)
			if err != nil {
				return err
			}
			fa, err := parseOptionalTime("--failed-after", after)
			if err != nil {
				return err
			}
			fb, err := parseOptionalTime("--failed-before", before)
			if err != nil {
				return err
			}
			if to != "" && !fresh {
				return usageErrorf("--to needs --fresh: a same-id requeue returns each job to its own queue")
			}
			o := client.RedriveOptions{
				Selection: client.RedriveSelection{Queue: queue, Cause: c, JobType: jobType, ReasonContains: reason, FailedAfter: fa, FailedBefore: fb},
				ToQueue:   to, Fresh: fresh, Rate: rate,
			}
			return e.run(cmd, func(ctx context.Context, cl *client.Client, out io.Writer) error {
				if dryRun {
					pv, err := cl.PreviewRedrive(ctx, o, sample)
					if err != nil {
						return err
					}
					if e.json {
						recs := make([]deadLetterView, len(pv.Sample))
						for i, r := range pv.Sample {
							recs[i] = viewDeadLetter(r)
						}
						return e.printJSON(out, map[string]any{"matching": pv.Matching, "sample": recs})
					}
					fmt.Fprintf(out, "%d dead letters match; nothing was moved (dry run)\n", pv.Matching)
					for _, r := range pv.Sample {
						fmt.Fprintf(out, "  job %d  queue %s  type %s  cause %s  failed %s  %s\n", r.Job.ID, r.Job.Queue, r.Job.Type, r.Cause, fmtTime(r.FailedAt), orDash(r.LastReason))
					}
					return nil
				}
				t, err := cl.StartRedrive(ctx, o)
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, viewRedrive(t))
				}
				fmt.Fprintf(out, "redrive %d started: %d dead letters to move at %d/s\n", t.ID, t.Remaining, t.Options.Rate)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&queue, "queue", "", "only records of this queue")
	f.StringVar(&cause, "cause", "", "only this cause: "+causeNames())
	_ = cmd.RegisterFlagCompletionFunc("cause", completeCauses)
	f.StringVar(&jobType, "type", "", "only this job type")
	f.StringVar(&reason, "reason-contains", "", "only records whose last reason contains this text")
	f.StringVar(&after, "failed-after", "", "only records that failed at or after this time (RFC 3339)")
	f.StringVar(&before, "failed-before", "", "only records that failed before this time (RFC 3339)")
	f.StringVar(&to, "to", "", "replay into this queue instead of each record's own (needs --fresh)")
	f.BoolVar(&fresh, "fresh", false, "replay each record as a new job (new id) instead of requeueing the job itself")
	f.Uint32Var(&rate, "rate", 100, "jobs per second, 1..10000")
	f.BoolVar(&dryRun, "dry-run", false, "count and show the matching records; move nothing")
	f.Uint32Var(&sample, "sample", 10, "with --dry-run: records to show, 0..100")
	return cmd
}

// redrivesCommand is `sepp redrives list|get|pause|resume|cancel`.
func (e *env) redrivesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "redrives",
		Short: "Follow, pause, resume and cancel redrive tasks; list their audit records",
	}
	var stale bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List running and paused redrives and the audit records of ended ones",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				ts, err := c.ListRedrives(ctx, stale)
				if err != nil {
					return err
				}
				if e.json {
					vs := make([]redriveView, len(ts))
					for i, t := range ts {
						vs[i] = viewRedrive(t)
					}
					return e.printJSON(out, map[string]any{"redrives": vs})
				}
				fmt.Fprintf(out, "%-6s %-10s %-8s %-9s %-6s %-20s %s\n", "ID", "STATE", "MOVED", "REMAINING", "RATE", "CREATED", "SELECTION")
				for _, t := range ts {
					fmt.Fprintf(out, "%-6d %-10s %-8d %-9d %-6d %-20s %s\n", t.ID, t.State, t.Moved, t.Remaining, t.Options.Rate, fmtTime(t.CreatedAt), describeSelection(t))
				}
				return nil
			})
		},
	}
	list.Flags().BoolVar(&stale, "stale", false, "let any node answer from its own state (may lag)")
	get := &cobra.Command{
		Use:   "get ID",
		Short: "Show one redrive task or audit record",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				t, err := c.GetRedrive(ctx, ids[0], stale)
				if err != nil {
					return err
				}
				return e.printRedrive(out, t)
			})
		},
	}
	get.Flags().BoolVar(&stale, "stale", false, "let any node answer from its own state (may lag)")
	action := func(use, short string, act func(c *client.Client, ctx context.Context, id uint64) (client.RedriveTask, error)) *cobra.Command {
		return &cobra.Command{
			Use:   use + " ID",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				ids, err := parseIDs(args)
				if err != nil {
					return err
				}
				return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
					t, err := act(c, ctx, ids[0])
					if err != nil {
						return err
					}
					return e.printRedrive(out, t)
				})
			},
		}
	}
	cmd.AddCommand(list, get,
		action("pause", "Stop a redrive moving records until resumed", (*client.Client).PauseRedrive),
		action("resume", "Let a paused redrive move records again", (*client.Client).ResumeRedrive),
		action("cancel", "End a redrive; what it moved stays moved", (*client.Client).CancelRedrive),
	)
	return cmd
}

func describeSelection(t client.RedriveTask) string {
	s := t.Options.Selection
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("queue", s.Queue)
	if s.Cause != client.CauseUnknown {
		add("cause", s.Cause.String())
	}
	add("type", s.JobType)
	if s.ReasonContains != "" {
		add("reason-contains", strconv.Quote(s.ReasonContains))
	}
	if !s.FailedAfter.IsZero() {
		add("failed-after", s.FailedAfter.UTC().Format(time.RFC3339))
	}
	if !s.FailedBefore.IsZero() {
		add("failed-before", s.FailedBefore.UTC().Format(time.RFC3339))
	}
	if t.Options.Fresh {
		parts = append(parts, "fresh")
	}
	add("to", t.Options.ToQueue)
	if len(parts) == 0 {
		return "all"
	}
	return strings.Join(parts, " ")
}

func (e *env) printRedrive(out io.Writer, t client.RedriveTask) error {
	if e.json {
		return e.printJSON(out, viewRedrive(t))
	}
	left := fmt.Sprintf("%d remaining", t.Remaining)
	if t.State == client.RedriveCancelled {
		// What the task left: the matching records it never moved.
		left = fmt.Sprintf("%d not moved", t.Remaining)
	}
	fmt.Fprintf(out, "redrive %d: %s, %d moved, %s, %d/s\n", t.ID, t.State, t.Moved, left, t.Options.Rate)
	fmt.Fprintf(out, "selection: %s\n", describeSelection(t))
	fmt.Fprintf(out, "created %s by %s", fmtTime(t.CreatedAt), orDash(t.CreatedBy))
	if !t.EndedAt.IsZero() {
		fmt.Fprintf(out, "; ended %s", fmtTime(t.EndedAt))
		if t.EndedBy != "" {
			fmt.Fprintf(out, " by %s", t.EndedBy)
		}
	}
	fmt.Fprintln(out)
	if t.LastError != "" {
		fmt.Fprintf(out, "last step stopped short: %s\n", t.LastError)
	}
	return nil
}
