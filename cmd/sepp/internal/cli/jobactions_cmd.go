package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/client"
)

// jobActionCommands are `sepp jobs delete|run-now|reschedule|priority|cancel`.
func (e *env) jobActionCommands() []*cobra.Command {
	idsCommand := func(use, short, verb string, act func(ctx context.Context, c *client.Client, ids []uint64) ([]client.ActionResult, error)) *cobra.Command {
		return &cobra.Command{
			Use:   use,
			Short: short,
			Args:  cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				ids, err := parseIDs(args)
				if err != nil {
					return err
				}
				return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
					res, err := act(ctx, c, ids)
					if err != nil {
						return err
					}
					return e.actionResults(out, verb, res)
				})
			},
		}
	}
	del := idsCommand("delete JOB_ID...", "Delete Ready or Scheduled jobs for good", "deleted",
		func(ctx context.Context, c *client.Client, ids []uint64) ([]client.ActionResult, error) {
			return c.DeleteJobs(ctx, ids)
		})
	runNow := idsCommand("run-now JOB_ID...", "Make Scheduled jobs Ready now", "made ready",
		func(ctx context.Context, c *client.Client, ids []uint64) ([]client.ActionResult, error) {
			return c.RunJobsNow(ctx, ids)
		})

	var in time.Duration
	var at string
	reschedule := idsCommand("reschedule JOB_ID... (--in DURATION | --at RFC3339)", "Hold Ready or Scheduled jobs until a time", "rescheduled",
		func(ctx context.Context, c *client.Client, ids []uint64) ([]client.ActionResult, error) {
			if (in == 0) == (at == "") {
				return nil, &CodeError{Code: ExitUsage, Err: fmt.Errorf("reschedule needs exactly one of --in or --at")}
			}
			runAt := time.Now().Add(in)
			if at != "" {
				t, err := time.Parse(time.RFC3339, at)
				if err != nil {
					return nil, &CodeError{Code: ExitUsage, Err: fmt.Errorf("--at: %w", err)}
				}
				runAt = t
			}
			return c.RescheduleJobs(ctx, ids, runAt)
		})
	reschedule.Flags().DurationVar(&in, "in", 0, "run after this long from now")
	reschedule.Flags().StringVar(&at, "at", "", "run at this time (RFC 3339)")

	var prio uint32
	priority := idsCommand("priority JOB_ID... --priority N", "Give live jobs a priority (0..9); a Ready job keeps its enqueue-order place", "reprioritised",
		func(ctx context.Context, c *client.Client, ids []uint64) ([]client.ActionResult, error) {
			return c.SetJobsPriority(ctx, ids, prio)
		})
	priority.Flags().Uint32Var(&prio, "priority", 0, "the new priority, 0..9")
	_ = priority.MarkFlagRequired("priority")

	var cancelDelete bool
	var cancelReason string
	cancel := idsCommand("cancel JOB_ID... [--delete] [--reason TEXT]",
		"Cancel jobs a worker is running: revoke the lease now and dead-letter them (cause cancelled), or delete them", "cancelled",
		func(ctx context.Context, c *client.Client, ids []uint64) ([]client.ActionResult, error) {
			return c.CancelJobs(ctx, ids, client.CancelJobsOptions{Delete: cancelDelete, Reason: cancelReason})
		})
	cancel.Long = "Cancel jobs a worker is running. Each lease is revoked at once: the worker's next\n" +
		"extend, ack or nack is refused as lease-lost, and the Go Worker cancels the handler's\n" +
		"context on its next heartbeat. The job becomes a dead letter with cause cancelled\n" +
		"(requeue it from there), or is removed for good with --delete. A job no worker holds\n" +
		"is refused; delete or dead-letter it instead."
	cancel.Flags().BoolVar(&cancelDelete, "delete", false, "remove the jobs instead of dead-lettering them")
	cancel.Flags().StringVar(&cancelReason, "reason", "", "recorded as the cancelled attempt's reason (default \"cancelled by an operator\")")
	return []*cobra.Command{del, runNow, reschedule, priority, cancel}
}
