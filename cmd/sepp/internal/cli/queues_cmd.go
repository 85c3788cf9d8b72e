package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sepp-io/sepp/client"
)

// queueSubcommands are `sepp queues create|get|update|delete|purge`: queues
// as managed objects, kept in the replicated state.
func (e *env) queueSubcommands() []*cobra.Command {
	return []*cobra.Command{e.queueCreateCommand(), e.queueGetCommand(), e.queueUpdateCommand(), e.queueDeleteCommand(), e.queuePurgeCommand()}
}

// settingsFlags registers the flags of a queue's settings; read reports
// the ones given on the command line (an unset flag stays nil).
type settingsFlags struct {
	priority, attempts        uint32
	retryDelay, retryDelayMax time.Duration
	horizon                   time.Duration
	backoff, deadLetterQueue  string
	maxLength, maxMemoryBytes uint64
	maxWait                   time.Duration
	fairnessKey               string
	completedRetention        time.Duration
	maxReserved, rateLimit    uint64
	rateBurst, maxPerKey      uint64
	ratePeriod                time.Duration
	concurrencyKey            string
	tags                      map[string]string
}

func (f *settingsFlags) register(fs *pflag.FlagSet) {
	fs.Uint32Var(&f.priority, "default-priority", 0, "priority 0..9 of jobs enqueued without one")
	fs.Uint32Var(&f.attempts, "default-max-attempts", 0, "attempts of jobs enqueued without max_attempts")
	fs.DurationVar(&f.retryDelay, "retry-delay", 0, "base delay before a failed job is retried (whole milliseconds)")
	fs.StringVar(&f.backoff, "retry-backoff", "", "none or exponential")
	fs.DurationVar(&f.retryDelayMax, "retry-delay-max", 0, "cap of the exponential backoff")
	fs.DurationVar(&f.horizon, "max-schedule-horizon", 0, "how far ahead scheduled_at may lie")
	fs.Uint64Var(&f.maxLength, "max-length", 0, "live jobs the queue holds at most (0: unbounded)")
	fs.Uint64Var(&f.maxMemoryBytes, "max-memory-bytes", 0, "the queue's own budget of held bytes (0: none)")
	fs.StringVar(&f.deadLetterQueue, "dead-letter-queue", "", "queue that receives a copy of every job that dies here (\"\" on update: none)")
	fs.DurationVar(&f.maxWait, "max-wait", 0, "dead-letter (cause expired) a job not reserved this long after it became due (drop: --inherit max_wait_ms)")
	fs.DurationVar(&f.completedRetention, "completed-retention", 0, "keep acked jobs with their results this long, 1ms..720h (drop: --inherit completed_retention_ms)")
	fs.StringVar(&f.fairnessKey, "fairness-key", "", "custom field whose values take turns within a priority level, e.g. tenant (drop: --inherit fairness_key)")
	fs.Uint64Var(&f.maxReserved, "max-reserved", 0, "jobs of the queue reserved at once across all workers (0: no limit)")
	fs.Uint64Var(&f.rateLimit, "rate-limit", 0, "reservations per --rate-period (0: no limit)")
	fs.DurationVar(&f.ratePeriod, "rate-period", 0, "the rate limit's period, 1ms..1h in whole milliseconds (0: 1s)")
	fs.Uint64Var(&f.rateBurst, "rate-burst", 0, "reservations at once after a quiet spell (0: the rate limit)")
	fs.StringVar(&f.concurrencyKey, "concurrency-key", "", "custom field whose values --max-per-key limits, e.g. customer (\"\": none)")
	fs.Uint64Var(&f.maxPerKey, "max-per-key", 0, "jobs reserved at once per value of --concurrency-key (0: no limit)")
	fs.StringToStringVar(&f.tags, "tags", nil, "the queue's tags, e.g. team=payments,env=prod; on update they replace the set (--tags \"\" or --inherit tags: none)")
}

func (f *settingsFlags) read(fs *pflag.FlagSet) client.QueueSettings {
	var s client.QueueSettings
	set := fs.Changed
	if set("default-priority") {
		s.DefaultPriority = &f.priority
	}
	if set("default-max-attempts") {
		s.DefaultMaxAttempts = &f.attempts
	}
	if set("retry-delay") {
		s.RetryDelay = &f.retryDelay
	}
	if set("retry-backoff") {
		s.RetryBackoff = &f.backoff
	}
	if set("retry-delay-max") {
		s.RetryDelayMax = &f.retryDelayMax
	}
	if set("max-schedule-horizon") {
		s.MaxScheduleHorizon = &f.horizon
	}
	if set("max-length") {
		s.MaxLength = &f.maxLength
	}
	if set("max-memory-bytes") {
		s.MaxMemoryBytes = &f.maxMemoryBytes
	}
	if set("dead-letter-queue") {
		s.DeadLetterQueue = &f.deadLetterQueue
	}
	if set("max-wait") {
		s.MaxWait = &f.maxWait
	}
	if set("fairness-key") {
		s.FairnessKey = &f.fairnessKey
	}
	if set("completed-retention") {
		s.CompletedRetention = &f.completedRetention
	}
	if set("max-reserved") {
		s.MaxReserved = &f.maxReserved
	}
	if set("rate-limit") {
		s.RateLimit = &f.rateLimit
	}
	if set("rate-period") {
		s.RatePeriod = &f.ratePeriod
	}
	if set("rate-burst") {
		s.RateBurst = &f.rateBurst
	}
	if set("concurrency-key") {
		s.ConcurrencyKey = &f.concurrencyKey
	}
	if set("max-per-key") {
		s.MaxPerKey = &f.maxPerKey
	}
	if set("tags") {
		// Non-nil even when empty: an empty --tags replaces the set with none.
		s.Tags = make(map[string]string, len(f.tags))
		maps.Copy(s.Tags, f.tags)
	}
	return s
}

// settingsView is a queue's settings as JSON: unset ones are left out.
type settingsView struct {
	DefaultPriority    *uint32           `json:"default_priority,omitempty"`
	DefaultMaxAttempts *uint32           `json:"default_max_attempts,omitempty"`
	RetryDelayMS       *int64            `json:"retry_delay_ms,omitempty"`
	RetryBackoff       *string           `json:"retry_backoff,omitempty"`
	RetryDelayMaxMS    *int64            `json:"retry_delay_max_ms,omitempty"`
	MaxScheduleHorizon *int64            `json:"max_schedule_horizon_ms,omitempty"`
	MaxLength          *uint64           `json:"max_length,omitempty"`
	MaxMemoryBytes     *uint64           `json:"max_memory_bytes,omitempty"`
	DeadLetterQueue    *string           `json:"dead_letter_queue,omitempty"`
	MaxWaitMS          *int64            `json:"max_wait_ms,omitempty"`
	FairnessKey        *string           `json:"fairness_key,omitempty"`
	CompletedRetention *int64            `json:"completed_retention_ms,omitempty"`
	MaxReserved        *uint64           `json:"max_reserved,omitempty"`
	RateLimit          *uint64           `json:"rate_limit,omitempty"`
	RatePeriodMS       *int64            `json:"rate_period_ms,omitempty"`
	RateBurst          *uint64           `json:"rate_burst,omitempty"`
	ConcurrencyKey     *string           `json:"concurrency_key,omitempty"`
	MaxPerKey          *uint64           `json:"max_per_key,omitempty"`
	Tags               map[string]string `json:"tags,omitempty"`
}

func viewSettings(s client.QueueSettings) settingsView {
	ms := func(d *time.Duration) *int64 {
		if d == nil {
			return nil
		}
		v := d.Milliseconds()
		return &v
	}
	v := settingsView{DefaultPriority: s.DefaultPriority, DefaultMaxAttempts: s.DefaultMaxAttempts, RetryDelayMS: ms(s.RetryDelay),
		RetryBackoff: s.RetryBackoff, RetryDelayMaxMS: ms(s.RetryDelayMax), MaxScheduleHorizon: ms(s.MaxScheduleHorizon),
		MaxLength: s.MaxLength, MaxMemoryBytes: s.MaxMemoryBytes, DeadLetterQueue: s.DeadLetterQueue, Tags: s.Tags}
	// Shown only when set (the effective settings hold 0 and "" for none).
	if s.MaxWait != nil && *s.MaxWait != 0 {
		v.MaxWaitMS = ms(s.MaxWait)
	}
	if s.FairnessKey != nil && *s.FairnessKey != "" {
		v.FairnessKey = s.FairnessKey
	}
	if s.CompletedRetention != nil && *s.CompletedRetention != 0 {
		v.CompletedRetention = ms(s.CompletedRetention)
	}
	nonZero := func(p *uint64) *uint64 {
		if p == nil || *p == 0 {
			return nil
		}
		return p
	}
	v.MaxReserved, v.RateLimit, v.RateBurst, v.MaxPerKey = nonZero(s.MaxReserved), nonZero(s.RateLimit), nonZero(s.RateBurst), nonZero(s.MaxPerKey)
	if s.RatePeriod != nil && *s.RatePeriod != 0 {
		v.RatePeriodMS = ms(s.RatePeriod)
	}
	if s.ConcurrencyKey != nil && *s.ConcurrencyKey != "" {
		v.ConcurrencyKey = s.ConcurrencyKey
	}
	return v
}

// tagsText is a queue's tags as the CLI prints them: key=value, by key,
// comma-separated (the form --tags takes).
func tagsText(tags map[string]string) string {
	parts := make([]string, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		parts = append(parts, k+"="+tags[k])
	}
	return strings.Join(parts, ",")
}

// optionalRows are the settings a table lists only when the queue sets
// them (0 and "" are none, and none has a global value to show).
var optionalRows = []string{"max_reserved", "rate_limit", "rate_period", "rate_burst", "concurrency_key", "max_per_key", "max_wait", "fairness_key", "completed_retention"}

// settingValue is a setting as a table shows it; "-" when unset.
func settingValue(p any) string {
	switch v := p.(type) {
	case *uint32:
		if v != nil {
			return strconv.FormatUint(uint64(*v), 10)
		}
	case *uint64:
		if v != nil {
			return strconv.FormatUint(*v, 10)
		}
	case *time.Duration:
		if v != nil {
			return v.String()
		}
	case *string:
		if v != nil && *v != "" {
			return *v
		}
	}
	return "-"
}

// settingRows are a queue's settings by name, in the order tables list
// them. The reserve limits, expiry and fairness (optionalRows) are set only
// when the queue runs them: 0 and "" mean none.
func settingRows(s client.QueueSettings) [][2]string {
	nonZero := func(p *uint64) string {
		if p == nil || *p == 0 {
			return "-"
		}
		return settingValue(p)
	}
	nonZeroDur := func(p *time.Duration) string {
		if p == nil || *p == 0 {
			return "-"
		}
		return settingValue(p)
	}
	rows := [][2]string{
		{"default_priority", settingValue(s.DefaultPriority)},
		{"default_max_attempts", settingValue(s.DefaultMaxAttempts)},
		{"retry_delay", settingValue(s.RetryDelay)},
		{"retry_backoff", settingValue(s.RetryBackoff)},
		{"retry_delay_max", settingValue(s.RetryDelayMax)},
		{"max_schedule_horizon", settingValue(s.MaxScheduleHorizon)},
		{"max_length", settingValue(s.MaxLength)},
		{"max_memory_bytes", settingValue(s.MaxMemoryBytes)},
		{"dead_letter_queue", settingValue(s.DeadLetterQueue)},
		{"max_reserved", nonZero(s.MaxReserved)},
		{"rate_limit", nonZero(s.RateLimit)},
		{"rate_period", nonZeroDur(s.RatePeriod)},
		{"rate_burst", nonZero(s.RateBurst)},
		{"concurrency_key", settingValue(s.ConcurrencyKey)},
		{"max_per_key", nonZero(s.MaxPerKey)},
		{"max_wait", nonZeroDur(s.MaxWait)},
		{"fairness_key", settingValue(s.FairnessKey)},
		{"completed_retention", nonZeroDur(s.CompletedRetention)},
	}
	return rows
}

// printSettings prints the effective settings, one per line (the reserve
// limits, expiry and fairness only when the queue runs them).
func printSettings(out io.Writer, s client.QueueSettings) error {
	var rows [][]string
	for _, r := range settingRows(s) {
		if slices.Contains(optionalRows, r[0]) && r[1] == "-" {
			continue
		}
		rows = append(rows, []string{r[0], r[1]})
	}
	return table(out, "SETTING\tVALUE", rows)
}

// printQueueSettings prints, per setting, the queue's own value ("-": it
// inherits the global one) beside the effective value the server applies.
func printQueueSettings(out io.Writer, own, eff client.QueueSettings) error {
	ownRows, effRows := settingRows(own), settingRows(eff)
	var rows [][]string
	for i, r := range effRows {
		if slices.Contains(optionalRows, r[0]) && r[1] == "-" && ownRows[i][1] == "-" {
			continue
		}
		rows = append(rows, []string{r[0], ownRows[i][1], r[1]})
	}
	return table(out, "SETTING\tQUEUE\tEFFECTIVE", rows)
}

func (e *env) queueCreateCommand() *cobra.Command {
	var f settingsFlags
	var paused bool
	cmd := &cobra.Command{
		Use:   "create QUEUE",
		Short: "Create a queue with its settings (kept in the cluster's state)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s := f.read(cmd.Flags())
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				eff, err := c.CreateQueue(ctx, args[0], s, paused)
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{"queue": args[0], "paused": paused, "effective": viewSettings(eff)})
				}
				fmt.Fprintf(out, "created queue %s\n", args[0])
				return printSettings(out, eff)
			})
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVar(&paused, "paused", false, "create it paused: it accepts jobs but hands none out until resumed")
	return cmd
}

func (e *env) queueGetCommand() *cobra.Command {
	var stale bool
	cmd := &cobra.Command{
		Use:   "get QUEUE",
		Short: "Show a queue's counts, its own settings and the effective ones",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				q, err := c.GetQueue(ctx, args[0], stale)
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{
						"queue": args[0], "paused": q.Stats.Paused, "configured": q.Stats.Configured,
						"scheduled": q.Stats.Scheduled, "ready": q.Stats.Ready, "reserved": q.Stats.Reserved, "dead": q.Stats.Dead,
						"blocked": q.Stats.Blocked, "purged_total": q.Stats.PurgedTotal,
						"settings": viewSettings(q.Settings), "effective": viewSettings(q.Effective),
					})
				}
				fmt.Fprintf(out, "queue %s: paused %v, configured %v; scheduled %d, ready %d, reserved %d, blocked %d, dead %d\n",
					args[0], q.Stats.Paused, q.Stats.Configured, q.Stats.Scheduled, q.Stats.Ready, q.Stats.Reserved, q.Stats.Blocked, q.Stats.Dead)
				if len(q.Stats.Tags) > 0 {
					fmt.Fprintf(out, "tags: %s\n", tagsText(q.Stats.Tags))
				}
				fmt.Fprintln(out, `QUEUE is the queue's own setting ("-": it inherits the global one); EFFECTIVE is what the server applies.`)
				return printQueueSettings(out, q.Settings, q.Effective)
			})
		},
	}
	cmd.Flags().BoolVar(&stale, "stale", false, "let any node answer from its own state (may lag)")
	return cmd
}

func (e *env) queueUpdateCommand() *cobra.Command {
	var f settingsFlags
	var inherit []string
	var paused bool
	cmd := &cobra.Command{
		Use:   "update QUEUE",
		Short: "Change some of a queue's settings; the others stay",
		Long: "Change some of a queue's settings; the others stay. --inherit drops settings " +
			"(default_priority, default_max_attempts, retry_delay_ms, retry_backoff, retry_delay_max_ms, " +
			"max_schedule_horizon_ms, max_length, max_memory_bytes, dead_letter_queue, max_reserved, rate_limit, " +
			"rate_period_ms, rate_burst, concurrency_key, max_per_key, max_wait_ms, fairness_key, tags, completed_retention_ms) so the queue takes " +
			"the global value again; a reserve limit has none, so it is dropped (as with --max-reserved 0).\n\n" +
			"The reserve limits take effect at once, on every node: for example\n" +
			"  sepp queues update invoices --max-reserved 20 --rate-limit 5 --rate-period 1s\n" +
			"  sepp queues update invoices --concurrency-key customer --max-per-key 1\n" +
			"  sepp queues update invoices --inherit rate_limit,rate_period_ms,rate_burst",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u := client.QueueUpdate{Settings: f.read(cmd.Flags()), Inherit: inherit}
			if cmd.Flags().Changed("paused") {
				u.Paused = &paused
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				eff, err := c.UpdateQueue(ctx, args[0], u)
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{"queue": args[0], "effective": viewSettings(eff)})
				}
				fmt.Fprintf(out, "updated queue %s\n", args[0])
				return printSettings(out, eff)
			})
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().StringSliceVar(&inherit, "inherit", nil, "settings to drop so the queue inherits the global value, comma-separated")
	cmd.Flags().BoolVar(&paused, "paused", false, "pause (true) or resume (false) the queue")
	return cmd
}

func (e *env) queueDeleteCommand() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "delete QUEUE",
		Short: "Delete a queue (refused while it holds jobs unless --force)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				res, err := c.DeleteQueue(ctx, args[0], force)
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{"queue": args[0], "jobs_removed": res.Jobs, "dead_letters_removed": res.DeadLetters})
				}
				fmt.Fprintf(out, "deleted queue %s (%d jobs and %d dead letters removed)\n", args[0], res.Jobs, res.DeadLetters)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "delete the queue's jobs and dead letters with it")
	return cmd
}

func (e *env) queuePurgeCommand() *cobra.Command {
	var waiting, deadLetters bool
	cmd := &cobra.Command{
		Use:   "purge QUEUE (--waiting | --dead-letters)",
		Short: "Remove a queue's waiting jobs or its dead letters",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var target client.PurgeTarget
			switch {
			case waiting && !deadLetters:
				target = client.PurgeWaiting
			case deadLetters && !waiting:
				target = client.PurgeDeadLetters
			default:
				return &CodeError{Code: ExitUsage, Err: fmt.Errorf("purge needs exactly one of --waiting or --dead-letters")}
			}
			return e.run(cmd, func(ctx context.Context, c *client.Client, out io.Writer) error {
				res, err := c.PurgeQueue(ctx, args[0], target)
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(out, map[string]any{"queue": args[0], "jobs_removed": res.Jobs, "dead_letters_removed": res.DeadLetters})
				}
				if target == client.PurgeWaiting {
					fmt.Fprintf(out, "purged %d waiting jobs from queue %s\n", res.Jobs, args[0])
				} else {
					fmt.Fprintf(out, "purged %d dead letters from queue %s\n", res.DeadLetters, args[0])
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&waiting, "waiting", false, "remove the Ready and Scheduled jobs (reserved ones stay)")
	cmd.Flags().BoolVar(&deadLetters, "dead-letters", false, "remove the retained dead letters")
	return cmd
}
