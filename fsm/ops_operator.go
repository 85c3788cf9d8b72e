package fsm

import (
	"reflect"
	"slices"
	"time"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// Queues as managed objects and actions on live jobs: the commands of
// engine/queues.go and engine/jobactions.go. All are of
// CommandVersionQueues; the leader proposes them only while every member
// applies it (cluster), so an older member never meets one.

// jobsActVersion is the command version a JobsAct of action a needs.
func jobsActVersion(a engine.JobAction) uint32 {
	switch a {
	case engine.JobActionCancel, engine.JobActionCancelDelete:
		return CommandVersionCancel
	}
	return CommandVersionQueues
}

func queueCommand() *cmdpb.Command { return &cmdpb.Command{Version: CommandVersionQueues} }

// CreateQueueCommand builds a QueueCreate: of CommandVersionReserveLimits
// when it sets reserve limits (engine.CreateQueue has applied a queue's
// whole config since then), later versions as its other settings need.
func CreateQueueCommand(qc engine.QueueConfig, paused bool) *cmdpb.Command {
	c := queueCommand()
	if engine.HasReserveLimits(engine.Config{Queues: []engine.QueueConfig{qc}}) {
		c.Version = CommandVersionReserveLimits
	}
	if expiryFairnessInQueue(qc, nil) {
		c.Version = CommandVersionExpiryFairness
	}
	if qc.DeadLetterQueue != "" {
		c.Version = CommandVersionDeadLetterEdges // the target is checked
	}
	if len(qc.Tags) > 0 {
		c.Version = CommandVersionQueueTags
	}
	if qc.CompletedRetention != 0 {
		c.Version = CommandVersionResults
	}
	c.Op = &cmdpb.Command_QueueCreate{QueueCreate: &cmdpb.QueueCreate{Config: queueConfigToProto(qc), Paused: paused}}
	return c
}

// UpdateQueueCommand builds a QueueUpdate: of
// CommandVersionQueueReserveLimits when it sets or inherits a reserve limit
// (an older binary leaves them alone), else as its settings need.
func UpdateQueueCommand(u engine.QueueUpdate) *cmdpb.Command {
	set := u.Set
	set.Name = u.Name
	c := queueCommand()
	if expiryFairnessInQueue(set, u.Inherit) {
		c.Version = CommandVersionExpiryFairness
	}
	if u.SetDeadLetterQueue && set.DeadLetterQueue != "" {
		c.Version = CommandVersionDeadLetterEdges // the target is checked
	}
	if u.TouchesReserveLimits() {
		c.Version = CommandVersionQueueReserveLimits
	}
	if u.TouchesTags() {
		c.Version = CommandVersionQueueTags
	}
	if set.CompletedRetention != 0 || slices.Contains(u.Inherit, "completed_retention_ms") {
		c.Version = CommandVersionResults
	}
	if !u.SetTags {
		set.Tags = nil // tags that are not set are not the update's
	}
	c.Op = &cmdpb.Command_QueueUpdate{QueueUpdate: &cmdpb.QueueUpdate{
		Config:             queueConfigToProto(set),
		SetDeadLetterQueue: u.SetDeadLetterQueue,
		Inherit:            u.Inherit,
		Paused:             clonePtr(u.Paused),
		SetTags:            u.SetTags,
	}}
	return c
}

// PublicCreateQueueCommand builds a QueueCreate of
// CommandVersionPublicQueueSettings: it holds the public QueueSettings
// (apiconv.QueueSettings of qc), which the state machine converts back with
// the API's own converter, so the log has no settings of its own to keep
// in step with the API. The leader proposes it once every member applies
// that version, CreateQueueCommand's before. qc is one the API's converter
// made (apiconv.QueueConfig): whole milliseconds, as the API states them.
func PublicCreateQueueCommand(qc engine.QueueConfig, paused bool) *cmdpb.Command {
	return &cmdpb.Command{Version: CommandVersionPublicQueueSettings, Op: &cmdpb.Command_QueueCreate{QueueCreate: &cmdpb.QueueCreate{
		Name: qc.Name, Settings: apiconv.QueueSettings(qc), Paused: paused,
	}}}
}

// PublicUpdateQueueCommand builds a QueueUpdate of
// CommandVersionPublicQueueSettings from u, which the API's converter made
// (apiconv.QueueUpdate): the request's settings, inherit and pause as the
// public UpdateQueueRequest has them (apiconv.QueueUpdateSettings).
func PublicUpdateQueueCommand(u engine.QueueUpdate) *cmdpb.Command {
	settings, inherit := apiconv.QueueUpdateSettings(u)
	return &cmdpb.Command{Version: CommandVersionPublicQueueSettings, Op: &cmdpb.Command_QueueUpdate{QueueUpdate: &cmdpb.QueueUpdate{
		Name: u.Name, Settings: settings, Inherit: inherit, Paused: clonePtr(u.Paused),
	}}}
}

// DeleteQueueCommand builds a QueueDelete.
func DeleteQueueCommand(queue string, force bool) *cmdpb.Command {
	c := queueCommand()
	c.Op = &cmdpb.Command_QueueDelete{QueueDelete: &cmdpb.QueueDelete{Queue: queue, Force: force}}
	return c
}

// PurgeQueueCommand builds a QueuePurge.
func PurgeQueueCommand(queue string, target engine.PurgeTarget) *cmdpb.Command {
	c := queueCommand()
	c.Op = &cmdpb.Command_QueuePurge{QueuePurge: &cmdpb.QueuePurge{Queue: queue, Target: uint32(target)}}
	return c
}

// JobsActCommand builds a JobsAct.
func JobsActCommand(p engine.JobActionParams) *cmdpb.Command {
	c := &cmdpb.Command{Version: jobsActVersion(p.Action)}
	c.Op = &cmdpb.Command_JobsAct{JobsAct: &cmdpb.JobsAct{
		Action: uint32(p.Action), JobIds: jobIDsToProto(p.IDs), RunAtUnixNano: unixNano(p.RunAt), Priority: p.Priority, Reason: p.Reason,
	}}
	return c
}

// DeclaredConfigCommand builds a declarative ConfigSet: the node's file
// config met with the running queues by engine.ApplyDeclared; of
// CommandVersionReserveLimits when a queue sets reserve limits.
func DeclaredConfigCommand(cfg engine.Config) *cmdpb.Command {
	c := queueCommand()
	if engine.HasReserveLimits(cfg) {
		c.Version = CommandVersionReserveLimits
	}
	if engine.HasExpiryFairness(cfg) {
		c.Version = CommandVersionExpiryFairness
	}
	if cfg.Limits.MaxDiskBytes != 0 {
		c.Version = CommandVersionPayloadsOffHeap
	}
	if engine.HasTags(cfg) {
		c.Version = CommandVersionQueueTags
	}
	if engine.HasCompletedRetention(cfg) {
		c.Version = CommandVersionResults
	}
	c.Op = &cmdpb.Command_ConfigSet{ConfigSet: &cmdpb.ConfigSet{Config: engine.ConfigToProto(cfg), Declarative: true}}
	return c
}

// DeclaredReserveLimitsConfigCommand marks a declarative ConfigSet (of
// DeclaredConfigCommand and the builders that wrap it) to turn on, and
// convert to, the rule under which a file definition's reserve limits are
// part of it (engine.ApplyDeclaredReserveLimits); of
// CommandVersionQueueReserveLimits.
func DeclaredReserveLimitsConfigCommand(cmd *cmdpb.Command) *cmdpb.Command {
	// Never lower: the config may need a later version (tags, say).
	atLeast(&cmd.Version, CommandVersionQueueReserveLimits)
	cmd.GetConfigSet().DeclaredReserveLimits = true
	return cmd
}

// TaggedConfigCommand raises cmd, a declarative ConfigSet built by the
// builders above and wrapped by those that turn a switch on, to
// CommandVersionQueueTags when its config sets a queue's tags: a wrapper
// stamps its own version, which may be lower. Call it last.
func TaggedConfigCommand(cmd *cmdpb.Command) *cmdpb.Command {
	cfg := engine.ConfigFromProto(cmd.GetConfigSet().GetConfig())
	if engine.HasTags(cfg) {
		atLeast(&cmd.Version, CommandVersionQueueTags)
	}
	if engine.HasCompletedRetention(cfg) {
		atLeast(&cmd.Version, CommandVersionResults)
	}
	return cmd
}

// PublicQueueSettingsConfigCommand writes the queues of cmd, a declarative
// ConfigSet built from cfg by the builders above and wrapped by them, in
// the public form of CommandVersionPublicQueueSettings: each a
// QueueDefinition holding its name and the public QueueSettings, which the
// state machine converts with the API's converter (apiconv). They are
// written from cfg, not read back from cmd, so that a setting the log's
// own QueueConfig does not have (one added after this version) reaches the
// log. A config whose queues the API cannot state exactly (a duration
// finer than a millisecond, which the config file cannot write) keeps the
// older form, which applies the same on every binary: the form must not
// change what is applied. The leader calls it last, and only once every
// member applies the version.
func PublicQueueSettingsConfigCommand(cmd *cmdpb.Command, cfg engine.Config) *cmdpb.Command {
	cs := cmd.GetConfigSet()
	pc := cs.GetConfig()
	if !cs.GetDeclarative() || len(cfg.Queues) == 0 {
		return cmd
	}
	defs := make([]*cmdpb.QueueDefinition, 0, len(cfg.Queues))
	for _, q := range cfg.Queues {
		if len(q.Tags) == 0 {
			q.Tags = nil // none, as the older form writes them
		}
		s := apiconv.QueueSettings(q)
		if back, err := apiconv.QueueConfig(q.Name, s); err != nil || !reflect.DeepEqual(back, q) {
			return cmd
		}
		defs = append(defs, &cmdpb.QueueDefinition{Name: q.Name, Settings: s})
	}
	pc.Queues, pc.QueueSettings = nil, defs
	atLeast(&cmd.Version, CommandVersionPublicQueueSettings)
	return cmd
}

// configOf is the engine config a ConfigSet of command version version
// holds: its queues in the log's own form, or from version 21 in the
// public form too, converted as the API converts them. An error (a
// definition the API would refuse, which only a faulty leader writes) is
// the same on every replica.
func configOf(version uint32, pc *cmdpb.EngineConfig) (engine.Config, error) {
	cfg := engine.ConfigFromProto(pc)
	if version < CommandVersionPublicQueueSettings {
		return cfg, nil
	}
	for _, d := range pc.GetQueueSettings() {
		qc, err := apiconv.QueueConfig(d.GetName(), d.GetSettings())
		if err != nil {
			return cfg, err
		}
		cfg.Queues = append(cfg.Queues, qc)
	}
	return cfg, nil
}

func queueConfigToProto(qc engine.QueueConfig) *cmdpb.QueueConfig {
	return engine.ConfigToProto(engine.Config{Queues: []engine.QueueConfig{qc}}).GetQueues()[0]
}

func queueConfigFromProto(pq *cmdpb.QueueConfig) engine.QueueConfig {
	if pq == nil {
		return engine.QueueConfig{}
	}
	return engine.ConfigFromProto(&cmdpb.EngineConfig{Queues: []*cmdpb.QueueConfig{pq}}).Queues[0]
}

func (f *FSM) applyQueueCreate(now time.Time, version uint32, c *cmdpb.QueueCreate) Result {
	qc := queueConfigFromProto(c.GetConfig())
	if version >= CommandVersionPublicQueueSettings {
		// The public settings, through the converter the API checked them
		// with: an error here is the same on every replica.
		var err error
		if qc, err = apiconv.QueueConfig(c.GetName(), c.GetSettings()); err != nil {
			return Result{Err: err}
		}
	}
	if version >= CommandVersionDeadLetterEdges {
		// Older entries created the target on the first death (edges.go).
		if err := f.eng.CheckDeadLetterTarget("dead_letter_queue", qc.DeadLetterQueue); err != nil {
			return Result{Err: err}
		}
	}
	return Result{Err: f.eng.CreateQueue(now, qc, c.GetPaused())}
}

func (f *FSM) applyQueueUpdate(now time.Time, version uint32, c *cmdpb.QueueUpdate) Result {
	var u engine.QueueUpdate
	if version >= CommandVersionPublicQueueSettings {
		var err error
		if u, err = apiconv.QueueUpdate(c.GetName(), c.GetSettings(), c.GetInherit(), c.Paused); err != nil {
			return Result{Err: err}
		}
	} else {
		set := queueConfigFromProto(c.GetConfig())
		u = engine.QueueUpdate{
			Name:               set.Name,
			Set:                set,
			SetDeadLetterQueue: c.GetSetDeadLetterQueue(),
			Inherit:            c.GetInherit(),
			Paused:             clonePtr(c.Paused),
			// An older entry's reserve limits were ignored, their keys in
			// inherit refused: the same again, so replicas replay it alike.
			KeepReserveLimits: version < CommandVersionQueueReserveLimits,
			// Likewise tags before version 18.
			SetTags:  c.GetSetTags(),
			KeepTags: version < CommandVersionQueueTags,
		}
		u.Set.Name = ""
	}
	if version >= CommandVersionDeadLetterEdges && u.SetDeadLetterQueue {
		if err := f.eng.CheckDeadLetterTarget("dead_letter_queue", u.Set.DeadLetterQueue); err != nil {
			return Result{Err: err}
		}
	}
	return Result{Err: f.eng.UpdateQueue(now, u)}
}

func (f *FSM) applyQueueDelete(now time.Time, c *cmdpb.QueueDelete) Result {
	removed, err := f.eng.DeleteQueue(now, c.GetQueue(), c.GetForce())
	return Result{Removed: removed, Err: err}
}

func (f *FSM) applyQueuePurge(now time.Time, c *cmdpb.QueuePurge) Result {
	removed, err := f.eng.PurgeQueue(now, c.GetQueue(), engine.PurgeTarget(c.GetTarget()))
	return Result{Removed: removed, Err: err}
}

func (f *FSM) applyJobsAct(now time.Time, c *cmdpb.JobsAct) Result {
	items, err := f.eng.ActOnJobs(now, engine.JobActionParams{
		Action: engine.JobAction(c.GetAction()), IDs: jobIDsFromProto(c.GetJobIds()),
		RunAt: fromUnixNano(c.GetRunAtUnixNano()), Priority: c.GetPriority(), Reason: c.GetReason(),
	})
	return Result{Items: items, Err: err}
}
