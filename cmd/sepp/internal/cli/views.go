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
	if utf8.Valid(j.Payload) {
		p := string(j.Payload)
		v.Payload = &p
	} else {
		v.PayloadBase64 = base64.StdEncoding.EncodeToString(j.Payload)
	}
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
