package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/client"
)

// scheduleView is the --json shape of a schedule.
type scheduleView struct {
	Name          string            `json:"name"`
	Cron          string            `json:"cron,omitempty"`
	IntervalMs    int64             `json:"interval_ms,omitempty"`
	TimeZone      string            `json:"time_zone,omitempty"`
	Queue         string            `json:"queue"`
	JobType       string            `json:"job_type"`
	Payload       string            `json:"payload,omitempty"`
	Priority      *uint32           `json:"priority,omitempty"`
	Custom        map[string]string `json:"custom,omitempty"`
	MaxAttempts   uint32            `json:"max_attempts,omitempty"`
	Overlap       string            `json:"overlap"`
	CatchUp       string            `json:"catch_up"`
	Paused        bool              `json:"paused"`
	NextFireTimes []time.Time       `json:"next_fire_times"`
	LastFireTime  *time.Time        `json:"last_fire_time,omitempty"`
	LastJobID     uint64            `json:"last_job_id,omitempty"`
	Fired         uint64            `json:"fired"`
	Skipped       uint64            `json:"skipped"`
	CreatedAt     *time.Time        `json:"created_at,omitempty"`
	UpdatedAt     *time.Time        `json:"updated_at,omitempty"`
}

func viewSchedule(s client.Schedule) scheduleView {
	next := s.NextFireTimes
	if next == nil {
		next = []time.Time{}
	}
	return scheduleView{
		Name: s.Name, Cron: s.Cron, IntervalMs: s.Interval.Milliseconds(), TimeZone: s.TimeZone,
		Queue: s.Template.Queue, JobType: s.Template.JobType, Payload: string(s.Template.Payload),
		Priority: s.Template.Priority, Custom: s.Template.Custom, MaxAttempts: s.Template.MaxAttempts,
		Overlap: s.Overlap.String(), CatchUp: s.CatchUp.String(), Paused: s.Paused,
		NextFireTimes: next, LastFireTime: optTime(s.LastFireTime), LastJobID: s.LastJobID,
		Fired: s.Fired, Skipped: s.Skipped, CreatedAt: optTime(s.CreatedAt), UpdatedAt: optTime(s.UpdatedAt),
	}
}

// describeSpec is a schedule's spec in a few words: "cron 0 3 * * * (Europe/Berlin)", "every 30s".
func describeSpec(s client.Schedule) string {
	spec := "every " + HumanDuration(s.Interval)
	if s.Cron != "" {
		spec = "cron " + s.Cron
	}
	if s.TimeZone != "" && s.Cron != "" {
		spec += " (" + s.TimeZone + ")"
	}
	return spec
}

// scheduleFlags are the definition flags create and update share.
type scheduleFlags struct {
	cron, tz, payload, payloadFile, overlap, catchUp string
	every                                            time.Duration
	priority                                         int
	maxAttempts                                      uint32
	custom                                           []string
	paused                                           bool
}

func (sf *scheduleFlags) register(cmd *cobra.Command, create bool) {
	f := cmd.Flags()
	f.StringVar(&sf.cron, "cron", "", `cron expression: "min hour dom month dow", six fields with leading seconds, or @hourly, @daily...`)
	f.DurationVar(&sf.every, "every", 0, "fixed interval instead of --cron (at least 1s), e.g. 30s, 5m")
	f.StringVar(&sf.tz, "tz", "", "IANA time zone the cron expression is read in (e.g. Europe/Berlin); default UTC")
	f.StringVar(&sf.payload, "payload", "", "payload of each job, as a string")
	f.StringVar(&sf.payloadFile, "payload-file", "", "read the payload from this file (- for stdin)")
	f.IntVar(&sf.priority, "priority", 0, "priority 0..9 of each job; unset takes the queue's default")
	f.Uint32Var(&sf.maxAttempts, "max-attempts", 0, "deliveries allowed per job; 0 takes the queue's default")
	f.StringArrayVar(&sf.custom, "custom", nil, "custom field key=value of each job (repeatable)")
	f.StringVar(&sf.overlap, "overlap", "skip", "a tick while the previous job waits or runs: skip (no job) or allow")
	f.StringVar(&sf.catchUp, "catch-up", "once", "ticks missed during downtime: once (one job for all) or skip (none)")
	if create {
		f.BoolVar(&sf.paused, "paused", false, "create the schedule paused")
	}
}

func (sf *scheduleFlags) definition(cmd *cobra.Command, name, queue, jobType string) (client.ScheduleDefinition, error) {
	d := client.ScheduleDefinition{
		Name: name, Cron: sf.cron, Interval: sf.every, TimeZone: sf.tz, Paused: sf.paused,
		Template: client.JobTemplate{Queue: queue, JobType: jobType, MaxAttempts: sf.maxAttempts},
	}
	switch {
	case sf.cron == "" && !cmd.Flags().Changed("every"):
		return d, usageErrorf("give --cron EXPR or --every DURATION")
	case sf.cron != "" && cmd.Flags().Changed("every"):
		return d, usageErrorf("--cron and --every are exclusive")
	case sf.payload != "" && sf.payloadFile != "":
		return d, usageErrorf("--payload and --payload-file are exclusive")
	case sf.payloadFile == "-":
		b, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return d, fmt.Errorf("read payload from stdin: %w", err)
		}
		d.Template.Payload = b
	case sf.payloadFile != "":
		b, err := os.ReadFile(sf.payloadFile)
		if err != nil {
			return d, &CodeError{Code: ExitUsage, Err: fmt.Errorf("--payload-file: %w", err)}
		}
		d.Template.Payload = b
	case sf.payload != "":
		d.Template.Payload = []byte(sf.payload)
	}
	if cmd.Flags().Changed("priority") {
		if sf.priority < 0 || sf.priority > int(client.MaxPriority) {
			return d, &CodeError{Code: ExitRejected, Err: fmt.Errorf("--priority must be 0..9, got %d", sf.priority)}
		}
		p := uint32(sf.priority)
		d.Template.Priority = &p
	}
	for _, kv := range sf.custom {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return d, usageErrorf("--custom takes key=value, got %q", kv)
		}
		if d.Template.Custom == nil {
			d.Template.Custom = map[string]string{}
		}
		d.Template.Custom[k] = v
	}
	switch sf.overlap {
	case "skip":
		d.Overlap = client.OverlapSkip
	case "allow":
		d.Overlap = client.OverlapAllow
	default:
		return d, usageErrorf("--overlap: %q is not skip or allow", sf.overlap)
	}
	switch sf.catchUp {
	case "once":
		d.CatchUp = client.CatchUpOnce
	case "skip":
		d.CatchUp = client.CatchUpSkip
	default:
		return d, usageErrorf("--catch-up: %q is not once or skip", sf.catchUp)
	}
	return d, nil
}

// changes is the definition of an update and the fields it changes: those
// whose flags were given.
func (sf *scheduleFlags) changes(cmd *cobra.Command, name, queue, jobType string) (client.ScheduleDefinition, []string, error) {
	f := cmd.Flags()
	var fields []string
	for _, m := range []struct{ flag, field string }{
		{"cron", client.ScheduleFieldCron}, {"every", client.ScheduleFieldInterval}, {"tz", client.ScheduleFieldTimeZone},
		{"queue", client.ScheduleFieldTemplateQueue}, {"job-type", client.ScheduleFieldTemplateJobType},
		{"payload", client.ScheduleFieldTemplatePayload}, {"payload-file", client.ScheduleFieldTemplatePayload},
		{"priority", client.ScheduleFieldTemplatePriority}, {"max-attempts", client.ScheduleFieldTemplateMaxAttempts},
		{"custom", client.ScheduleFieldTemplateCustom}, {"overlap", client.ScheduleFieldOverlap}, {"catch-up", client.ScheduleFieldCatchUp},
	} {
		if f.Changed(m.flag) && !slices.Contains(fields, m.field) {
			fields = append(fields, m.field)
		}
	}
	if len(fields) == 0 {
		return client.ScheduleDefinition{}, nil, usageErrorf("nothing to change: give the flags of the fields to change (sepp schedules update --help)")
	}
	if f.Changed("cron") && f.Changed("every") {
		return client.ScheduleDefinition{}, nil, usageErrorf("--cron and --every are exclusive")
	}
	// definition checks the values; it wants a spec, so lend it one the
	// mask leaves out when neither flag was given.
	cron := sf.cron
	if !f.Changed("cron") && !f.Changed("every") {
		sf.cron = "@hourly"
	}
	d, err := sf.definition(cmd, name, queue, jobType)
	sf.cron = cron
	d.Cron = cron
	return d, fields, err
}

// schedulesCommand is `sepp schedules list|get|create|update|delete|pause|resume`.
func (e *env) schedulesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "schedules",
		Aliases: []string{"schedule"},
		Short:   "Periodic schedules: a cron expression or interval that enqueues a job at each tick",
		Long: `A schedule enqueues a job from its template at each tick of a cron expression
(in a time zone) or of a fixed interval. Each tick fires exactly once, across
leader failovers and restarts. See docs/schedules.md.`,
	}
	var (
		stale bool
		next  uint32
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List schedules with their next fire time",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				ss, err := c.ListSchedules(ctx, 1, stale)
				if err != nil {
					return err
				}
				if e.json {
					vs := make([]scheduleView, len(ss))
					for i, s := range ss {
						vs[i] = viewSchedule(s)
					}
					return e.printJSON(out, map[string]any{"schedules": vs})
				}
				// A table sized to its widest cell: a long spec or name keeps
				// the columns after it in line.
				rows := make([][]string, 0, len(ss))
				for _, s := range ss {
					nextAt := "-"
					if len(s.NextFireTimes) > 0 {
						nextAt = fmtTime(s.NextFireTimes[0])
					}
					rows = append(rows, []string{s.Name, describeSpec(s), s.Template.Queue, strconv.FormatBool(s.Paused), nextAt,
						fmtTime(s.LastFireTime), fmt.Sprintf("%d/%d", s.Fired, s.Skipped)})
				}
				return table(out, "NAME\tSPEC\tQUEUE\tPAUSED\tNEXT\tLAST\tFIRED/SKIPPED", rows)
			})
		},
	}
	list.Flags().BoolVar(&stale, "stale", false, "let any node answer from its own state (may lag)")
	get := &cobra.Command{
		Use:               "get NAME",
		Short:             "Show one schedule and its next fire times",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeScheduleArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				s, err := c.GetSchedule(ctx, args[0], next, stale)
				if err != nil {
					return err
				}
				return e.printSchedule(out, s)
			})
		},
	}
	get.Flags().BoolVar(&stale, "stale", false, "let any node answer from its own state (may lag)")
	get.Flags().Uint32Var(&next, "next", 5, "next fire times to show, 1..100")

	var cf scheduleFlags
	create := &cobra.Command{
		Use:   "create NAME QUEUE JOB_TYPE",
		Short: "Create a schedule that enqueues a JOB_TYPE job on QUEUE at each tick",
		Example: `  sepp schedules create nightly-report reports build --cron "0 3 * * *" --tz Europe/Berlin
  sepp schedules create heartbeat health ping --every 30s --overlap allow
  sepp schedules create digest emails send --cron "@hourly" --payload '{"kind":"digest"}' --catch-up skip`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := cf.definition(cmd, args[0], args[1], args[2])
			if err != nil {
				return err
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				s, err := c.CreateSchedule(ctx, d)
				if err != nil {
					return err
				}
				return e.printSchedule(out, s)
			})
		},
	}
	cf.register(create, true)
	var uf scheduleFlags
	var queue, jobType string
	update := &cobra.Command{
		Use:   "update NAME [--cron EXPR | --every DURATION] [--queue QUEUE] [--job-type TYPE] [flags]",
		Short: "Change some of a schedule's definition; the fields not given stay",
		Long: "Change the fields given by flags; every other field keeps its value. It stays paused or running as it was, " +
			"and no tick it fired fires again. (NAME QUEUE JOB_TYPE as three arguments still works, as --queue and --job-type.)",
		Args: cobra.MatchAll(cobra.RangeArgs(1, 3), func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				return fmt.Errorf("give NAME alone (with --queue and --job-type), or NAME QUEUE JOB_TYPE")
			}
			return nil
		}),
		ValidArgsFunction: e.completeScheduleArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 3 {
				if cmd.Flags().Changed("queue") || cmd.Flags().Changed("job-type") {
					return usageErrorf("give the queue and job type as arguments or as --queue and --job-type, not both")
				}
				queue, jobType = args[1], args[2]
				_ = cmd.Flags().Set("queue", queue)
				_ = cmd.Flags().Set("job-type", jobType)
			}
			d, fields, err := uf.changes(cmd, args[0], queue, jobType)
			if err != nil {
				return err
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				s, err := c.UpdateScheduleFields(ctx, d, fields...)
				if err != nil {
					return err
				}
				return e.printSchedule(out, s)
			})
		},
	}
	update.Flags().StringVar(&queue, "queue", "", "queue the schedule's jobs go to")
	update.Flags().StringVar(&jobType, "job-type", "", "job type of the schedule's jobs")
	uf.register(update, false)
	del := &cobra.Command{
		Use:               "delete NAME",
		Short:             "Delete a schedule (the jobs it fired stay)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: e.completeScheduleArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				if err := c.DeleteSchedule(ctx, args[0]); err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{"deleted": args[0]})
				}
				fmt.Fprintf(out, "schedule %s deleted\n", args[0])
				return nil
			})
		},
	}
	action := func(use, short string, act func(c *client.Client, ctx context.Context, name string) (client.Schedule, error)) *cobra.Command {
		return &cobra.Command{
			Use:               use + " NAME",
			Short:             short,
			Args:              cobra.ExactArgs(1),
			ValidArgsFunction: e.completeScheduleArg,
			RunE: func(cmd *cobra.Command, args []string) error {
				return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
					s, err := act(c, ctx, args[0])
					if err != nil {
						return err
					}
					return e.printSchedule(out, s)
				})
			},
		}
	}
	cmd.AddCommand(list, get, create, update, del,
		action("pause", "Stop a schedule firing until resumed", (*client.Client).PauseSchedule),
		action("resume", "Restart a paused schedule from its next tick (paused ticks are not caught up)", (*client.Client).ResumeSchedule),
	)
	return cmd
}

func (e *env) printSchedule(out io.Writer, s client.Schedule) error {
	if e.json {
		return e.printJSON(out, viewSchedule(s))
	}
	state := "active"
	if s.Paused {
		state = "paused"
	}
	fmt.Fprintf(out, "schedule %s: %s, %s\n", s.Name, describeSpec(s), state)
	fmt.Fprintf(out, "job: queue %s, type %s", s.Template.Queue, s.Template.JobType)
	if s.Template.Priority != nil {
		fmt.Fprintf(out, ", priority %d", *s.Template.Priority)
	}
	if len(s.Template.Payload) > 0 {
		fmt.Fprintf(out, ", payload %s", payloadPreview(s.Template.Payload))
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "overlap %s, catch-up %s; fired %d, skipped %d\n", s.Overlap, s.CatchUp, s.Fired, s.Skipped)
	if !s.LastFireTime.IsZero() {
		fmt.Fprintf(out, "last fire %s", fmtTime(s.LastFireTime))
		if s.LastJobID != 0 {
			fmt.Fprintf(out, " (job %d)", s.LastJobID)
		}
		fmt.Fprintln(out)
	}
	if len(s.NextFireTimes) == 0 {
		fmt.Fprintln(out, "next: -")
	}
	for i, t := range s.NextFireTimes {
		label := "next:"
		if i > 0 {
			label = "     "
		}
		fmt.Fprintf(out, "%s %s\n", label, fmtTime(t))
	}
	return nil
}

// completeScheduleArg completes a NAME argument (the first) with the
// schedules the cluster has, asked of any node.
func (e *env) completeScheduleArg(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	saved := e.timeout
	e.timeout = completionTimeout
	defer func() { e.timeout = saved }()
	c, _, err := e.connect(ctx, cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer c.Close()
	ss, err := c.ListSchedules(ctx, 1, true)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, s := range ss {
		if strings.HasPrefix(s.Name, prefix) {
			names = append(names, s.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
