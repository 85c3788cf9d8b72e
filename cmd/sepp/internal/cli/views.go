package cli

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sepp-io/sepp/client"
)

// JSON shapes of the --json output. Field names are stable for scripts.

type jobView struct {
	ID            uint64            `json:"id"`
	Queue         string            `json:"queue"`
	JobType       string            `json:"job_type"`
	Payload       *string           `json:"payload,omitempty"`        // when valid UTF-8
	PayloadBase64 string            `json:"payload_base64,omitempty"` // otherwise
	Priority      uint32            `json:"priority"`
	State         string            `json:"state"`
	EnqueuedAt    *time.Time        `json:"enqueued_at,omitempty"`
	ScheduledAt   *time.Time        `json:"scheduled_at,omitempty"`
	NextAttemptAt *time.Time        `json:"next_attempt_at,omitempty"`
	Attempt       uint32            `json:"attempt"`
	MaxAttempts   uint32            `json:"max_attempts"`
	Custom        map[string]string `json:"custom,omitempty"`
	WorkerID      string            `json:"worker_id,omitempty"`
	LeaseDeadline *time.Time        `json:"lease_deadline,omitempty"`
	LastReason    string            `json:"last_reason,omitempty"`
	History       []attemptView     `json:"history,omitempty"`
	StartedAt     *time.Time        `json:"started_at,omitempty"`
	Origin        *originView       `json:"origin,omitempty"`
	ExpiresAt     *time.Time        `json:"expires_at,omitempty"`
	Traceparent   string            `json:"traceparent,omitempty"`
	Tracestate    string            `json:"tracestate,omitempty"`
	Progress      *progressView     `json:"progress,omitempty"`
	// A completed job's result, as the payload is: text when valid
	// UTF-8, else base64.
	Result               *string      `json:"result,omitempty"`
	ResultBase64         string       `json:"result_base64,omitempty"`
	CompletedAt          *time.Time   `json:"completed_at,omitempty"`
	RunTimeMS            *int64       `json:"run_time_ms,omitempty"`
	Parents              []parentView `json:"parents,omitempty"`
	OnParentFailure      string       `json:"on_parent_failure,omitempty"` // "cancel" or "run", with parents
	WaitingChildren      []uint64     `json:"waiting_children,omitempty"`
	WaitingChildrenTotal int          `json:"waiting_children_total,omitempty"`
}

type progressView struct {
	Percent int    `json:"percent"`
	Message string `json:"message,omitempty"`
}

// parentView is one of a job's parents and how it ended (Job.parents).
type parentView struct {
	JobID         uint64  `json:"job_id"`
	State         string  `json:"state"`
	Cause         string  `json:"cause,omitempty"` // a dead parent's
	Ended         bool    `json:"ended"`
	ResultKept    bool    `json:"result_kept,omitempty"`
	Result        *string `json:"result,omitempty"`
	ResultBase64  string  `json:"result_base64,omitempty"`
	ResultOmitted bool    `json:"result_omitted,omitempty"` // kept, left out of the answer: get the parent itself
}

// textOrBase64 is b as text when it is valid UTF-8, else as base64: the
// payload's and a result's JSON form.
func textOrBase64(b []byte) (*string, string) {
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	return nil, base64.StdEncoding.EncodeToString(b)
}

type attemptView struct {
	Attempt    uint32     `json:"attempt"`
	WorkerID   string     `json:"worker_id,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
	DurationMS *int64     `json:"duration_ms,omitempty"`
	LeaseToken uint64     `json:"lease_token,omitempty"`
	Outcome    string     `json:"outcome"`
	Directive  string     `json:"directive,omitempty"`
	Reason     string     `json:"reason,omitempty"`
}

type originView struct {
	Queue        string     `json:"queue"`
	JobID        uint64     `json:"job_id"`
	Cause        string     `json:"cause"`
	FailedAt     *time.Time `json:"failed_at,omitempty"`
	LastReason   string     `json:"last_reason,omitempty"`
	FinalAttempt uint32     `json:"final_attempt"`
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func viewJob(j client.Job) jobView {
	v := jobView{
		ID: j.ID, Queue: j.Queue, JobType: j.Type, Priority: uint32(j.Priority), State: j.State.String(),
		EnqueuedAt: optTime(j.EnqueuedAt), ScheduledAt: optTime(j.ScheduledAt), NextAttemptAt: optTime(j.NextAttemptAt),
		Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, Custom: j.Custom, WorkerID: j.WorkerID,
		LeaseDeadline: optTime(j.LeaseDeadline), LastReason: j.LastReason,
	}
	v.Payload, v.PayloadBase64 = textOrBase64(j.Payload)
	v.StartedAt = optTime(j.StartedAt)
	for _, a := range j.History {
		av := attemptView{Attempt: a.Attempt, WorkerID: a.WorkerID, StartedAt: optTime(a.StartedAt), EndedAt: optTime(a.EndedAt),
			LeaseToken: a.LeaseToken, Outcome: a.Outcome, Directive: a.Directive, Reason: a.Reason}
		if !a.StartedAt.IsZero() {
			ms := a.Duration.Milliseconds()
			av.DurationMS = &ms
		}
		v.History = append(v.History, av)
	}
	if o := j.Origin; o != nil {
		v.Origin = &originView{Queue: o.Queue, JobID: o.JobID, Cause: o.Cause.String(), FailedAt: optTime(o.FailedAt), LastReason: o.LastReason, FinalAttempt: o.FinalAttempt}
	}
	v.ExpiresAt = optTime(j.ExpiresAt)
	if tc := j.TraceContext; tc != nil {
		v.Traceparent, v.Tracestate = tc.Traceparent, tc.Tracestate
	}
	if p := j.Progress; p != nil {
		v.Progress = &progressView{Percent: p.Percent, Message: p.Message}
	}
	if j.Result != nil {
		v.Result, v.ResultBase64 = textOrBase64(j.Result)
	}
	if !j.CompletedAt.IsZero() {
		v.CompletedAt = optTime(j.CompletedAt)
		ms := j.RunTime.Milliseconds()
		v.RunTimeMS = &ms
	}
	for _, p := range j.Parents {
		pv := parentView{JobID: p.JobID, State: p.State.String(), Ended: p.Ended, ResultKept: p.ResultKept, ResultOmitted: p.ResultOmitted}
		if p.State == client.StateDead {
			pv.Cause = p.Cause.String()
		}
		if p.ResultKept && !p.ResultOmitted {
			pv.Result, pv.ResultBase64 = textOrBase64(p.Result)
		}
		v.Parents = append(v.Parents, pv)
	}
	if len(j.Parents) > 0 {
		v.OnParentFailure = "cancel"
		if j.OnParentFailure == client.ParentFailureRun {
			v.OnParentFailure = "run"
		}
	}
	v.WaitingChildren, v.WaitingChildrenTotal = j.WaitingChildren, j.WaitingChildrenTotal
	return v
}

type deliveryView struct {
	JobID         uint64     `json:"job_id"`
	LeaseToken    uint64     `json:"lease_token"`
	Attempt       uint32     `json:"attempt"`
	MaxAttempts   uint32     `json:"max_attempts"`
	LeaseDeadline *time.Time `json:"lease_deadline,omitempty"`
	Queue         string     `json:"queue"`
	Job           jobView    `json:"job"`
}

func viewDelivery(d client.Delivery) deliveryView {
	return deliveryView{
		JobID: d.Ctx.JobID, LeaseToken: d.Ctx.LeaseToken, Attempt: d.Ctx.Attempt, MaxAttempts: d.Ctx.MaxAttempts,
		LeaseDeadline: optTime(d.Ctx.LeaseDeadline), Queue: d.Ctx.Queue, Job: viewJob(d.Job),
	}
}

type deadLetterView struct {
	JobID        uint64     `json:"job_id"`
	Cause        string     `json:"cause"`
	FailedAt     *time.Time `json:"failed_at,omitempty"`
	FinalAttempt uint32     `json:"final_attempt"`
	LastReason   string     `json:"last_reason,omitempty"`
	Job          jobView    `json:"job"`
}

func viewDeadLetter(r client.DeadLetterRecord) deadLetterView {
	return deadLetterView{JobID: r.Job.ID, Cause: r.Cause.String(), FailedAt: optTime(r.FailedAt), FinalAttempt: r.FinalAttempt, LastReason: r.LastReason, Job: viewJob(r.Job)}
}

// payloadPreview shortens a payload for a table cell.
func payloadPreview(p []byte) string {
	const limit = 40
	if !utf8.Valid(p) {
		return fmt.Sprintf("<%d bytes>", len(p))
	}
	s := strconv.Quote(string(p))
	if len(s) > limit {
		s = s[:limit-3] + "..."
	}
	return s
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
