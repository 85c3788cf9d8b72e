package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sepp-io/sepp/client"
)

// goDriver runs steps with the Go client. It keeps the last delivery of
// each job it reserved, for ack, nack, release and extend_lease.
type goDriver struct {
	c          *client.Client
	deliveries map[uint64]client.Delivery
}

func newGoDriver(c *client.Client) *goDriver {
	return &goDriver{c: c, deliveries: map[uint64]client.Delivery{}}
}

// args reads a step's arguments; the first bad one is kept in err.
type args struct {
	m   map[string]any
	err error
}

func (a *args) fail(key, want string) {
	if a.err == nil {
		a.err = fmt.Errorf("argument %q: want %s, got %v", key, want, a.m[key])
	}
}

func (a *args) has(key string) bool { _, ok := a.m[key]; return ok && a.m[key] != nil }

func (a *args) str(key string) string {
	v, ok := a.m[key]
	if !ok || v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		a.fail(key, "a string")
	}
	return s
}

func (a *args) num(key string) uint64 {
	v, ok := a.m[key]
	if !ok || v == nil {
		return 0
	}
	f, ok := v.(float64)
	if !ok || f < 0 || f != float64(uint64(f)) {
		a.fail(key, "a whole number")
		return 0
	}
	return uint64(f)
}

func (a *args) boolean(key string) bool {
	v, ok := a.m[key]
	if !ok || v == nil {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		a.fail(key, "a bool")
	}
	return b
}

func (a *args) ids(key string) []uint64 {
	v, _ := a.m[key].([]any)
	out := make([]uint64, len(v))
	for i, e := range v {
		f, ok := e.(float64)
		if !ok {
			a.fail(key, "an array of job ids")
			return nil
		}
		out[i] = uint64(f)
	}
	return out
}

func (a *args) strs(key string) []string {
	v, _ := a.m[key].([]any)
	out := make([]string, len(v))
	for i, e := range v {
		s, ok := e.(string)
		if !ok {
			a.fail(key, "an array of strings")
			return nil
		}
		out[i] = s
	}
	return out
}

func (a *args) sub(key string) *args {
	v, ok := a.m[key]
	if !ok || v == nil {
		return &args{m: map[string]any{}}
	}
	m, ok := v.(map[string]any)
	if !ok {
		a.fail(key, "an object")
		return &args{m: map[string]any{}}
	}
	return &args{m: m}
}

func (d *goDriver) call(ctx context.Context, op string, m map[string]any) (map[string]any, error) {
	a := &args{m: m}
	res, err := d.dispatch(ctx, op, a)
	if a.err != nil {
		return nil, a.err
	}
	if err != nil {
		var ce *client.Error
		if errors.As(err, &ce) {
			return nil, stepErrorOf(err)
		}
		return nil, err
	}
	return res, nil
}

// errorKinds are the suite's error kinds in the order they are tested: the
// most specific first, as an error can match several sentinels (a
// cancelled lease is also a lost one).
var errorKinds = []struct {
	kind string
	err  error
}{
	{"job_cancelled", client.ErrJobCancelled},
	{"lease_lost", client.ErrLeaseLost},
	{"scheduled_too_far", client.ErrScheduledTooFar},
	{"queue_full", client.ErrQueueFull},
	{"invalid_argument", client.ErrInvalidArgument},
	{"not_found", client.ErrNotFound},
	{"wrong_state", client.ErrWrongState},
	{"already_exists", client.ErrAlreadyExists},
	{"resource_exhausted", client.ErrResourceExhausted},
	{"unknown_outcome", client.ErrUnknownOutcome},
	{"unavailable", client.ErrUnavailable},
	{"permission_denied", client.ErrPermissionDenied},
	{"unauthenticated", client.ErrUnauthenticated},
	{"internal", client.ErrInternal},
}

// errorKind names a call's error by the sentinels the client's *Error says
// it means (Kinds), not by its detail: a NotFound naming a field carries a
// *FieldError, which matches ErrInvalidArgument too.
func errorKind(err error) string {
	var uc *client.UniqueConflictError
	if errors.As(err, &uc) {
		return "unique_conflict"
	}
	var tooFar *client.ScheduledTooFarError
	if errors.As(err, &tooFar) {
		return "scheduled_too_far"
	}
	kinds := []error{err}
	var ce *client.Error
	if errors.As(err, &ce) {
		kinds = ce.Kinds
	}
	for _, k := range errorKinds {
		for _, e := range kinds {
			if errors.Is(e, k.err) {
				return k.kind
			}
		}
	}
	return "unknown"
}

func stepErrorOf(err error) *stepError {
	se := &stepError{Kind: errorKind(err), Err: err}
	var fe *client.FieldError
	if errors.As(err, &fe) {
		se.Field = fe.Field
	}
	return se
}

func (d *goDriver) delivery(a *args) client.Delivery {
	id := a.num("job_id")
	dl, ok := d.deliveries[id]
	if !ok {
		a.err = fmt.Errorf("job %d was never reserved in this scenario", id)
	}
	return dl
}

func ms(n uint64) time.Duration { return time.Duration(n) * time.Millisecond }

func (d *goDriver) dispatch(ctx context.Context, op string, a *args) (map[string]any, error) {
	c := d.c
	switch op {
	case "enqueue":
		req := enqueueRequest(a)
		if a.err != nil {
			return nil, nil
		}
		r, err := c.Enqueue(ctx, req)
		if err != nil {
			return nil, err
		}
		return map[string]any{"job_id": r.JobID, "state": r.State.String(), "duplicate": r.Duplicate}, nil
	case "reserve":
		max := int(a.num("max"))
		if max == 0 {
			max = 1
		}
		ds, err := c.Reserve(ctx, a.str("queue"), client.ReserveOptions{Max: max, Lease: ms(a.num("lease_ms")), WorkerID: "conformance"})
		if err != nil {
			return nil, err
		}
		jobs := []any{}
		for _, dl := range ds {
			d.deliveries[dl.Ctx.JobID] = dl
			jobs = append(jobs, map[string]any{
				"job_id": dl.Ctx.JobID, "queue": dl.Job.Queue, "job_type": dl.Job.Type, "payload": string(dl.Job.Payload),
				"priority": uint32(dl.Job.Priority), "attempt": dl.Ctx.Attempt, "max_attempts": dl.Ctx.MaxAttempts,
			})
		}
		return map[string]any{"jobs": jobs}, nil
	case "ack":
		dl := d.delivery(a)
		if a.err != nil {
			return nil, nil
		}
		return map[string]any{}, c.Ack(ctx, dl.Ctx)
	case "ack_follow_ups":
		dl := d.delivery(a)
		items, _ := a.m["follow_ups"].([]any)
		reqs := make([]*client.EnqueueRequest, len(items))
		for i, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				a.fail("follow_ups", "an array of enqueue arguments")
				return nil, nil
			}
			item := &args{m: m}
			reqs[i] = enqueueRequest(item)
			if item.err != nil {
				a.err = fmt.Errorf("follow_ups[%d]: %w", i, item.err)
				return nil, nil
			}
		}
		if a.err != nil {
			return nil, nil
		}
		rs, err := c.AckWithFollowUps(ctx, dl.Ctx, nil, reqs)
		if err != nil {
			return nil, err
		}
		results := []any{}
		for _, r := range rs {
			results = append(results, map[string]any{"job_id": r.JobID, "state": r.State.String(), "duplicate": r.Duplicate})
		}
		return map[string]any{"follow_ups": results}, nil
	case "nack":
		dl := d.delivery(a)
		var dir client.RetryDirective
		switch a.str("directive") {
		case "", "default":
			dir = client.DefaultRetry()
		case "after":
			dir = client.After(ms(a.num("delay_ms")))
		case "dead_letter":
			dir = client.DeadLetter()
		default:
			a.fail("directive", "default, after or dead_letter")
		}
		if a.err != nil {
			return nil, nil
		}
		dead, err := c.Nack(ctx, dl.Ctx, dir, a.str("reason"))
		return map[string]any{"dead_lettered": dead}, err
	case "release":
		dl := d.delivery(a)
		if a.err != nil {
			return nil, nil
		}
		return map[string]any{}, c.Release(ctx, dl.Ctx)
	case "extend_lease":
		dl := d.delivery(a)
		if a.err != nil {
			return nil, nil
		}
		_, err := c.ExtendLease(ctx, dl.Ctx, ms(a.num("lease_ms")))
		return map[string]any{}, err
	case "get_job":
		j, err := c.GetJob(ctx, a.num("job_id"), false)
		if err != nil {
			return nil, err
		}
		return jobResult(*j), nil
	case "list_jobs":
		st, err := client.ParseJobState(a.str("state"))
		if err != nil {
			a.fail("state", "scheduled, ready or reserved")
			return nil, nil
		}
		js, _, err := c.ListJobs(ctx, a.str("queue"), client.ListJobsOptions{State: st})
		if err != nil {
			return nil, err
		}
		jobs := []any{}
		for _, j := range js {
			jobs = append(jobs, jobResult(j))
		}
		return map[string]any{"jobs": jobs}, nil
	case "set_jobs_priority":
		return actions(c.SetJobsPriority(ctx, a.ids("job_ids"), uint32(a.num("priority"))))
	case "run_jobs_now":
		return actions(c.RunJobsNow(ctx, a.ids("job_ids")))
	case "delete_jobs":
		return actions(c.DeleteJobs(ctx, a.ids("job_ids")))
	case "reschedule_jobs":
		return actions(c.RescheduleJobs(ctx, a.ids("job_ids"), time.Now().Add(ms(a.num("delay_ms")))))
	case "cancel_jobs":
		return actions(c.CancelJobs(ctx, a.ids("job_ids"), client.CancelJobsOptions{Delete: a.boolean("delete"), Reason: a.str("reason")}))
	case "dead_letter_jobs":
		return actions(c.DeadLetterJobs(ctx, a.ids("job_ids"), a.str("reason")))
	case "requeue_dead_letters":
		return actions(c.RequeueDeadLetters(ctx, a.ids("job_ids")))
	case "delete_dead_letters":
		return actions(c.DeleteDeadLetters(ctx, a.ids("job_ids")))
	case "list_dead_letters":
		rs, _, err := c.ListDeadLetters(ctx, client.ListDeadLettersOptions{Queue: a.str("queue")})
		if err != nil {
			return nil, err
		}
		records := []any{}
		for _, r := range rs {
			records = append(records, deadLetterResult(r))
		}
		return map[string]any{"records": records}, nil
	case "get_dead_letter":
		r, err := c.GetDeadLetter(ctx, a.num("job_id"), false)
		if err != nil {
			return nil, err
		}
		return deadLetterResult(*r), nil
	case "create_queue":
		s := queueSettings(a.sub("settings"))
		if a.err != nil {
			return nil, nil
		}
		eff, err := c.CreateQueue(ctx, a.str("name"), s, a.boolean("paused"))
		if err != nil {
			return nil, err
		}
		return map[string]any{"effective": settingsResult(eff)}, nil
	case "update_queue":
		u := client.QueueUpdate{Settings: queueSettings(a.sub("settings")), Inherit: a.strs("inherit")}
		if a.has("paused") {
			p := a.boolean("paused")
			u.Paused = &p
		}
		if a.err != nil {
			return nil, nil
		}
		eff, err := c.UpdateQueue(ctx, a.str("name"), u)
		if err != nil {
			return nil, err
		}
		return map[string]any{"effective": settingsResult(eff)}, nil
	case "get_queue":
		q, err := c.GetQueue(ctx, a.str("name"), false)
		if err != nil {
			return nil, err
		}
		out := statsResult(q.Stats)
		out["settings"] = settingsResult(q.Settings)
		out["effective"] = settingsResult(q.Effective)
		return out, nil
	case "list_queues":
		qs, err := c.ListQueuesByTag(ctx, false, a.strs("tag")...)
		if err != nil {
			return nil, err
		}
		prefix := a.str("name_prefix")
		sort.Slice(qs, func(i, j int) bool { return qs[i].Name < qs[j].Name })
		queues := []any{}
		for _, q := range qs {
			if strings.HasPrefix(q.Name, prefix) {
				queues = append(queues, statsResult(q))
			}
		}
		return map[string]any{"queues": queues}, nil
	case "delete_queue":
		r, err := c.DeleteQueue(ctx, a.str("name"), a.boolean("force"))
		return map[string]any{"jobs_removed": r.Jobs, "dead_letters_removed": r.DeadLetters}, err
	case "purge_queue":
		var target client.PurgeTarget
		switch a.str("target") {
		case "waiting":
			target = client.PurgeWaiting
		case "dead_letters":
			target = client.PurgeDeadLetters
		default:
			a.fail("target", "waiting or dead_letters")
			return nil, nil
		}
		r, err := c.PurgeQueue(ctx, a.str("name"), target)
		return map[string]any{"jobs_removed": r.Jobs, "dead_letters_removed": r.DeadLetters}, err
	case "pause_queue":
		return map[string]any{}, c.PauseQueue(ctx, a.str("queue"))
	case "resume_queue":
		return map[string]any{}, c.ResumeQueue(ctx, a.str("queue"))
	case "preview_redrive":
		o := redriveOptions(a)
		if a.err != nil {
			return nil, nil
		}
		p, err := c.PreviewRedrive(ctx, o, 0)
		if err != nil {
			return nil, err
		}
		return map[string]any{"matching": p.Matching}, nil
	case "start_redrive":
		o := redriveOptions(a)
		if a.err != nil {
			return nil, nil
		}
		return task(c.StartRedrive(ctx, o))
	case "get_redrive":
		return task(c.GetRedrive(ctx, a.num("id"), false))
	case "list_redrives":
		ts, err := c.ListRedrives(ctx, false)
		if err != nil {
			return nil, err
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].ID < ts[j].ID })
		tasks := []any{}
		for _, t := range ts {
			if t.Options.Selection.Queue == a.str("queue") {
				m, _ := task(t, nil)
				tasks = append(tasks, m)
			}
		}
		return map[string]any{"tasks": tasks}, nil
	case "pause_redrive":
		return task(c.PauseRedrive(ctx, a.num("id")))
	case "resume_redrive":
		return task(c.ResumeRedrive(ctx, a.num("id")))
	case "cancel_redrive":
		return task(c.CancelRedrive(ctx, a.num("id")))
	case "enqueue_batch":
		items, _ := a.m["jobs"].([]any)
		reqs := make([]*client.EnqueueRequest, len(items))
		for i, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				a.fail("jobs", "an array of enqueue arguments")
				return nil, nil
			}
			item := &args{m: m}
			reqs[i] = enqueueRequest(item)
			if item.err != nil {
				a.err = fmt.Errorf("jobs[%d]: %w", i, item.err)
				return nil, nil
			}
		}
		rs, err := c.EnqueueBatch(ctx, reqs)
		if err != nil {
			return nil, err
		}
		results := []any{}
		for _, r := range rs {
			if r.Err != nil {
				results = append(results, map[string]any{"job_id": nil, "state": nil, "duplicate": nil, "error": errorKind(r.Err)})
				continue
			}
			results = append(results, map[string]any{"job_id": r.Result.JobID, "state": r.Result.State.String(), "duplicate": r.Result.Duplicate, "error": nil})
		}
		return map[string]any{"results": results}, nil
	case "ack_batch":
		ids := a.ids("job_ids")
		jcs := make([]client.JobContext, len(ids))
		for i, id := range ids {
			dl, ok := d.deliveries[id]
			if !ok {
				a.err = fmt.Errorf("job %d was never reserved in this scenario", id)
				return nil, nil
			}
			jcs[i] = dl.Ctx
		}
		errs := c.AckBatch(ctx, jcs)
		results := []any{}
		for i, e := range errs {
			var kind any
			if e != nil {
				kind = errorKind(e)
			}
			results = append(results, map[string]any{"job_id": ids[i], "error": kind})
		}
		return map[string]any{"results": results}, nil
	case "drain_dead_letters":
		rs, err := c.DrainDeadLetters(ctx, client.DrainOptions{Queue: a.str("queue"), Max: int(a.num("max"))})
		if err != nil {
			return nil, err
		}
		records := []any{}
		for _, r := range rs {
			records = append(records, deadLetterResult(r))
		}
		return map[string]any{"records": records}, nil
	case "create_schedule":
		def := client.ScheduleDefinition{
			Name: a.str("name"), Cron: a.str("cron"), Interval: ms(a.num("interval_ms")), TimeZone: a.str("time_zone"),
			Template: client.JobTemplate{Queue: a.str("queue"), JobType: a.str("job_type"), Payload: []byte(a.str("payload"))},
			Paused:   a.boolean("paused"),
		}
		if a.err != nil {
			return nil, nil
		}
		return schedule(c.CreateSchedule(ctx, def))
	case "get_schedule":
		return schedule(c.GetSchedule(ctx, a.str("name"), 0, false))
	case "pause_schedule":
		return schedule(c.PauseSchedule(ctx, a.str("name")))
	case "resume_schedule":
		return schedule(c.ResumeSchedule(ctx, a.str("name")))
	case "delete_schedule":
		return map[string]any{}, c.DeleteSchedule(ctx, a.str("name"))
	case "list_schedules":
		ss, err := c.ListSchedules(ctx, 0, false)
		if err != nil {
			return nil, err
		}
		prefix := a.str("name_prefix")
		sort.Slice(ss, func(i, j int) bool { return ss[i].Name < ss[j].Name })
		schedules := []any{}
		for _, s := range ss {
			if strings.HasPrefix(s.Name, prefix) {
				m, _ := schedule(s, nil)
				schedules = append(schedules, m)
			}
		}
		return map[string]any{"schedules": schedules}, nil
	}
	return nil, fmt.Errorf("unknown op %q", op)
}

// enqueueRequest reads enqueue's arguments (also each item of
// enqueue_batch's jobs).
func enqueueRequest(a *args) *client.EnqueueRequest {
	req := client.NewEnqueueRequest(a.str("queue"), a.str("job_type")).WithPayload([]byte(a.str("payload")))
	if a.has("priority") {
		req.WithPriority(client.Priority(a.num("priority")))
	}
	if a.has("delay_ms") {
		req.WithScheduledAt(time.Now().Add(ms(a.num("delay_ms"))))
	}
	if a.has("max_attempts") {
		req.WithMaxAttempts(uint32(a.num("max_attempts")))
	}
	if a.has("idempotency_key") {
		req.WithIdempotencyKey(a.str("idempotency_key"))
	}
	if a.has("unique_key") {
		req.WithUnique(client.UniqueOptions{Key: a.str("unique_key"), Refuse: a.boolean("unique_refuse")})
	}
	if a.has("ttl_ms") {
		req.WithTTL(ms(a.num("ttl_ms")))
	}
	for _, i := range a.ids("after") {
		req.WithAfter(int(i))
	}
	switch p := a.str("on_parent_failure"); p {
	case "":
	case "cancel":
		req.WithOnParentFailure(client.ParentFailureCancel)
	case "run":
		req.WithOnParentFailure(client.ParentFailureRun)
	default:
		a.fail("on_parent_failure", "cancel or run")
	}
	return req
}

func jobResult(j client.Job) map[string]any {
	return map[string]any{
		"job_id": j.ID, "queue": j.Queue, "job_type": j.Type, "payload": string(j.Payload), "state": j.State.String(),
		"priority": uint32(j.Priority), "attempt": j.Attempt, "max_attempts": j.MaxAttempts, "last_reason": j.LastReason,
		"parents": parentsResult(j), "on_parent_failure": policyName(j),
		// [] rather than null when none, as the other runners give it.
		"waiting_children": append([]uint64{}, j.WaitingChildren...), "waiting_children_total": j.WaitingChildrenTotal,
	}
}

// parentsResult is a job's parents as get_job gives them: job_id, state,
// cause (null unless dead) and ended.
func parentsResult(j client.Job) []any {
	out := []any{}
	for _, p := range j.Parents {
		var cause any
		if p.State == client.StateDead {
			cause = p.Cause.String()
		}
		out = append(out, map[string]any{"job_id": p.JobID, "state": p.State.String(), "cause": cause, "ended": p.Ended})
	}
	return out
}

// policyName is a job's on_parent_failure: null without parents.
func policyName(j client.Job) any {
	switch {
	case len(j.Parents) == 0:
		return nil
	case j.OnParentFailure == client.ParentFailureRun:
		return "run"
	default:
		return "cancel"
	}
}

func deadLetterResult(r client.DeadLetterRecord) map[string]any {
	return map[string]any{
		"job_id": r.Job.ID, "queue": r.Job.Queue, "job_type": r.Job.Type, "payload": string(r.Job.Payload),
		"cause": r.Cause.String(), "final_attempt": r.FinalAttempt, "last_reason": r.LastReason,
	}
}

func statsResult(q client.QueueStats) map[string]any {
	return map[string]any{
		"name": q.Name, "paused": q.Paused, "scheduled": q.Scheduled, "ready": q.Ready, "reserved": q.Reserved, "dead": q.Dead,
		"blocked": q.Blocked, "tags": tagsResult(q.Tags),
	}
}

// tagsResult is a queue's tags as the scenarios write them: an object, or
// null for none.
func tagsResult(tags map[string]string) any {
	if tags == nil {
		return nil
	}
	out := make(map[string]any, len(tags))
	for k, v := range tags {
		out[k] = v
	}
	return out
}

func actions(rs []client.ActionResult, err error) (map[string]any, error) {
	if err != nil {
		return nil, err
	}
	results := []any{}
	for _, r := range rs {
		var kind any
		if r.Err != nil {
			kind = errorKind(r.Err)
		}
		results = append(results, map[string]any{"job_id": r.JobID, "error": kind})
	}
	return map[string]any{"results": results}, nil
}

func task(t client.RedriveTask, err error) (map[string]any, error) {
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"id": t.ID, "state": t.State.String(), "queue": t.Options.Selection.Queue, "fresh": t.Options.Fresh,
		"to_queue": t.Options.ToQueue, "rate": t.Options.Rate, "moved": t.Moved, "remaining": t.Remaining,
	}, nil
}

// schedule is a schedule's stable part: no fire times or counters, which
// depend on the clock.
func schedule(s client.Schedule, err error) (map[string]any, error) {
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"name": s.Name, "paused": s.Paused, "queue": s.Template.Queue, "job_type": s.Template.JobType,
		"payload": string(s.Template.Payload), "cron": s.Cron, "interval_ms": s.Interval.Milliseconds(), "time_zone": s.TimeZone,
	}, nil
}

var causes = map[string]client.DeadLetterCause{
	"attempts_exhausted": client.CauseAttemptsExhausted, "rejected": client.CauseRejected, "lease_expired": client.CauseLeaseExpired,
	"admin": client.CauseAdmin, "cancelled": client.CauseCancelled, "expired": client.CauseExpired,
}

func redriveOptions(a *args) client.RedriveOptions {
	o := client.RedriveOptions{
		Selection: client.RedriveSelection{Queue: a.str("queue"), JobType: a.str("job_type"), ReasonContains: a.str("reason_contains")},
		ToQueue:   a.str("to_queue"), Fresh: a.boolean("fresh"), Rate: uint32(a.num("rate")),
	}
	if a.has("cause") {
		c, ok := causes[a.str("cause")]
		if !ok {
			a.fail("cause", "a dead-letter cause")
		}
		o.Selection.Cause = c
	}
	return o
}

// queueSettings reads the settings the suite knows; the others are left to
// each SDK's own tests.
func queueSettings(a *args) client.QueueSettings {
	var s client.QueueSettings
	u32 := func(key string) *uint32 {
		if !a.has(key) {
			return nil
		}
		v := uint32(a.num(key))
		return &v
	}
	u64 := func(key string) *uint64 {
		if !a.has(key) {
			return nil
		}
		v := a.num(key)
		return &v
	}
	dur := func(key string) *time.Duration {
		if !a.has(key) {
			return nil
		}
		v := ms(a.num(key))
		return &v
	}
	str := func(key string) *string {
		if !a.has(key) {
			return nil
		}
		v := a.str(key)
		return &v
	}
	s.DefaultPriority = u32("default_priority")
	s.DefaultMaxAttempts = u32("default_max_attempts")
	s.RetryDelay = dur("retry_delay_ms")
	s.RetryBackoff = str("retry_backoff")
	s.RetryDelayMax = dur("retry_delay_max_ms")
	s.MaxScheduleHorizon = dur("max_schedule_horizon_ms")
	s.MaxLength = u64("max_length")
	s.DeadLetterQueue = str("dead_letter_queue")
	if a.has("tags") {
		t := a.sub("tags")
		s.Tags = make(map[string]string, len(t.m))
		for k := range t.m {
			s.Tags[k] = t.str(k)
		}
	}
	return s
}

func settingsResult(s client.QueueSettings) map[string]any {
	out := map[string]any{}
	put := func(key string, v any, set bool) {
		if set {
			out[key] = v
		} else {
			out[key] = nil
		}
	}
	put("default_priority", deref(s.DefaultPriority), s.DefaultPriority != nil)
	put("default_max_attempts", deref(s.DefaultMaxAttempts), s.DefaultMaxAttempts != nil)
	put("retry_delay_ms", deref(s.RetryDelay).Milliseconds(), s.RetryDelay != nil)
	put("retry_backoff", deref(s.RetryBackoff), s.RetryBackoff != nil)
	put("retry_delay_max_ms", deref(s.RetryDelayMax).Milliseconds(), s.RetryDelayMax != nil)
	put("max_schedule_horizon_ms", deref(s.MaxScheduleHorizon).Milliseconds(), s.MaxScheduleHorizon != nil)
	put("max_length", deref(s.MaxLength), s.MaxLength != nil)
	put("dead_letter_queue", deref(s.DeadLetterQueue), s.DeadLetterQueue != nil)
	out["tags"] = tagsResult(s.Tags)
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
