package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/client"
)

// Exit codes of the operator commands. Scripts may rely on them.
const (
	ExitOK          = 0 // success
	ExitError       = 1 // any other error
	ExitUsage       = 2 // bad command line: unknown flag, wrong arguments
	ExitNotFound    = 3 // no such job, dead letter or queue
	ExitLeaseLost   = 4 // lease lost or the job is in the wrong state (failed precondition)
	ExitUnavailable = 5 // no leader reachable in time, or the outcome is unknown
	ExitRejected    = 6 // the server rejected the input (invalid field, too far ahead, queue full, unique key held)
)

const exitCodesHelp = `Exit codes:
  0  success
  1  error not listed below (TLS/certificate, unauthenticated, permission
     denied, unsupported by the server, server error, canceled)
  2  usage error (unknown flag, wrong arguments)
  3  not found (job, dead letter or queue)
  4  lease lost or job in the wrong state (failed precondition)
  5  unreachable or unavailable (no leader reached within --timeout), or
     unknown outcome (a write that may have applied)
  6  input rejected by the server (invalid field, scheduled too far), a limit
     reached (queue full, memory budget) or already exists (queue name,
     unique key)`

// CodeError is a command failure with the exit code main should use.
type CodeError struct {
	Code int
	Err  error
}

func (e *CodeError) Error() string { return e.Err.Error() }
func (e *CodeError) Unwrap() error { return e.Err }

// ExitCode is read by main (through an interface) to pick the exit status.
func (e *CodeError) ExitCode() int { return e.Code }

func usageErrorf(format string, args ...any) error {
	return &CodeError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// exitCodeFor maps a client error onto the documented exit codes
// (errors_cli.go classifies it).
func exitCodeFor(err error) int {
	if err == nil {
		return ExitOK
	}
	_, code := classify(err, true)
	return code
}

// env is the state the global flags fill in, shared by every command.
type env struct {
	addrs       []string
	contextName string
	json        bool
	// jsonLines prints --json output compact, one value a line (--watch).
	jsonLines bool
	timeout   time.Duration
	sec       securityFlags
}

// Commands returns the operator subcommands for the sepp root command. Each
// carries the global flags --addr, --json and --timeout, and the security
// flags --token, --ca, --cert, --key, --server-name and --tls (security.go).
func Commands() []*cobra.Command {
	e := &env{}
	cmds := []*cobra.Command{
		e.enqueueCommand(),
		e.reserveCommand(),
		e.ackCommand(),
		e.nackCommand(),
		e.queuesCommand(),
		e.jobsCommand(),
		e.deadLettersCommand(),
		e.redrivesCommand(),
		e.schedulesCommand(),
		e.pauseCommand(),
		e.resumeCommand(),
		e.clusterCommand(),
		e.infoCommand(),
		e.contextCommand(),
	}
	for _, c := range cmds {
		pf := c.PersistentFlags()
		pf.StringSliceVar(&e.addrs, "addr", nil, "node gRPC addresses, comma-separated or repeated; the client finds the leader (default $"+EnvAddr+", the current context, or "+defaultAddr+")")
		pf.StringVar(&e.contextName, "context", "", "use this saved context (sepp context ls) instead of the current one")
		_ = c.RegisterFlagCompletionFunc("context", completeContextNames)
		pf.BoolVar(&e.json, "json", false, "print JSON for scripts instead of tables")
		pf.DurationVar(&e.timeout, "timeout", 30*time.Second, "give up after this long, retries through a failover included")
		e.sec.register(pf)
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &CodeError{Code: ExitUsage, Err: err} })
		decorate(c)
	}
	markReadOnly(cmds)
	return cmds
}

// decorate adds the exit-code table to the help of c and its children,
// wraps argument validation errors as usage errors, and makes group
// commands reject unknown subcommands.
func decorate(c *cobra.Command) {
	if c.Long == "" {
		c.Long = c.Short
	}
	c.Long += "\n\n" + exitCodesHelp
	c.SilenceUsage = true
	if args := c.Args; args != nil {
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				return &CodeError{Code: ExitUsage, Err: err}
			}
			return nil
		}
	}
	if c.HasSubCommands() && c.RunE == nil && c.Run == nil {
		c.Args = func(cmd *cobra.Command, a []string) error {
			if len(a) > 0 {
				return usageErrorf("unknown command %q for %q", a[0], cmd.CommandPath())
			}
			return nil
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error {
			_ = cmd.Help()
			return usageErrorf("%s needs a subcommand", cmd.CommandPath())
		}
	}
	for _, sub := range c.Commands() {
		decorate(sub)
	}
}

// run is the body every command shares: a context bounded by --timeout, a
// client, and exit-code mapping of whatever fn returns.
func (e *env) run(cmd *cobra.Command, fn func(ctx context.Context, c *client.Client, out io.Writer) error) error {
	if e.timeout <= 0 {
		return usageErrorf("--timeout must be positive, got %s", e.timeout)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), e.timeout)
	defer cancel()
	c, finish, err := e.connect(ctx, cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	return finish(fn(ctx, c, cmd.OutOrStdout()))
}

// connect makes the client for cmd from the resolved flags, variables and
// context, and returns with it the function that classifies the command's
// failure (errors_cli.go).
func (e *env) connect(ctx context.Context, cmd *cobra.Command) (*client.Client, func(error) error, error) {
	addrs, sec, err := e.resolve(cmd)
	if err != nil {
		return nil, nil, err
	}
	secOpts, tlsCfg, err := sec.clientOptionsTLS(addrs)
	if err != nil {
		return nil, nil, &CodeError{Code: ExitUsage, Err: err}
	}
	c, err := client.New(ctx, addrs, append([]client.Option{client.WithRetryTimeout(e.timeout)}, secOpts...)...)
	if err != nil {
		return nil, nil, &CodeError{Code: ExitUsage, Err: err}
	}
	write := cmd.Annotations[annotReadOnly] == ""
	finish := func(err error) error {
		return diagnoseTLS(cmd.Context(), fail(err, write), addrs, tlsCfg)
	}
	return c, finish, nil
}

func (e *env) printJSON(out io.Writer, v any) error {
	if e.jsonLines {
		return printJSONLine(out, v)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func table(out io.Writer, header string, rows [][]string) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// actionResults prints a per-id action's results and returns an error with
// the most specific exit code when any id failed.
func (e *env) actionResults(out io.Writer, verb string, results []client.ActionResult) error {
	type item struct {
		JobID uint64 `json:"job_id"`
		OK    bool   `json:"ok"`
		Error string `json:"error,omitempty"`
	}
	var (
		items  []item
		failed []error
	)
	for _, r := range results {
		it := item{JobID: r.JobID, OK: r.Err == nil}
		if r.Err != nil {
			it.Error = r.Err.Error()
			failed = append(failed, r.Err)
		}
		items = append(items, it)
	}
	if e.json {
		if err := e.printJSON(out, items); err != nil {
			return err
		}
	} else {
		// Failures are the returned error's to report (main prints it on
		// stderr); printing them here as well would say each one twice.
		for _, it := range items {
			if it.OK {
				fmt.Fprintf(out, "%s job %d\n", verb, it.JobID)
			}
		}
	}
	if len(failed) == 0 {
		return nil
	}
	code := exitCodeFor(failed[0])
	for _, f := range failed[1:] {
		if exitCodeFor(f) != code {
			code = ExitError
		}
	}
	return &CodeError{Code: code, Err: fmt.Errorf("%d of %d jobs failed: %w", len(failed), len(results), errors.Join(failed...))}
}
