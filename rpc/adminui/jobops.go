package adminui

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
)

// Actions on live jobs (issue #25): delete, run now, reschedule, change
// priority, cancel a reserved job. Each acts on the ticked ids, or, with
// match=all, on every job of the tab the filter matches (at most
// maxMatchAct, in Raft entries of maxSelected ids). A confirmation page
// names the action and the count first.

var jobActions = map[string]struct {
	act    engine.JobAction
	verb   string
	danger bool
	effect string
}{
	"delete":        {engine.JobActionDelete, "Delete", true, "removed for good"},
	"run-now":       {engine.JobActionRunNow, "Run now", false, "Ready now"},
	"reschedule":    {engine.JobActionReschedule, "Reschedule", false, "held until the new time"},
	"priority":      {engine.JobActionPriority, "Change priority of", false, "in line by the new priority and their original enqueue time"},
	"cancel":        {engine.JobActionCancel, "Cancel", true, "lease revoked, dead-lettered with cause cancelled"},
	"cancel-delete": {engine.JobActionCancelDelete, "Cancel and delete", true, "lease revoked and removed for good"},
}

type jobActConfirm struct {
	Action, Verb, Queue, Back, PostURL string
	Danger                             bool
	All                                bool // act on all matching
	Filter                             jobFilter
	Tab                                string
	IDs                                []engine.JobID
	Count                              int
	Truncated                          bool
	RunAt, Delay, Priority, Reason     string
	Effect                             string
}

// jobsAct is POST /queues/{queue}/jobs/act.
func (h *handler) jobsAct(w http.ResponseWriter, r *http.Request, q *request) {
	queue := r.PathValue("queue")
	f := r.PostForm
	name := f.Get("action")
	spec, ok := jobActions[name]
	if !ok {
		h.fail(w, r, q, http.StatusBadRequest, fmt.Sprintf("action: must be one of delete, run-now, reschedule, priority, cancel, cancel-delete; got %q", name))
		return
	}
	tab := f.Get("tab")
	state := engine.StateReady
	for _, t := range queueTabs {
		if t.Key == tab && t.State != engine.StateDead {
			state = t.State
		}
	}
	back := backTo(r, queuePath(queue)+"?tab="+state.String())
	v := jobActConfirm{Action: name, Verb: spec.verb, Queue: queue, Back: back, Danger: spec.danger, Effect: spec.effect,
		PostURL: queuePath(queue) + "/jobs/act", Tab: tab,
		RunAt: f.Get("run_at"), Delay: f.Get("delay"), Priority: f.Get("priority"), Reason: f.Get("cancel_reason")}
	if f.Get("match") == "all" {
		filter, err := parseFilter(f)
		if err != nil {
			h.fail(w, r, q, http.StatusBadRequest, err.Error())
			return
		}
		v.All, v.Filter = true, filter
		var sc scanned
		if _, err := h.read(r.Context(), func(e engine.View) error {
			var err error
			sc, err = scan(e, queue, state, filter, maxMatchAct)
			return err
		}); err != nil {
			h.readFailed(w, r, q, err)
			return
		}
		for _, j := range sc.Jobs {
			v.IDs = append(v.IDs, j.ID)
		}
		v.Count, v.Truncated = sc.Matched, sc.Truncated || sc.Matched > len(sc.Jobs)
	} else {
		ids, err := parseIDs(f["id"])
		if err != nil {
			h.fail(w, r, q, http.StatusBadRequest, err.Error())
			return
		}
		v.IDs, v.Count = ids, len(ids)
	}
	// The count the operator confirmed must still be what the filter
	// matches; a changed count asks again.
	if !confirmed(r) || (v.All && f.Get("count") != strconv.Itoa(v.Count)) {
		h.render(w, r, q, http.StatusOK, "jobact_confirm", "Confirm "+name, "queues", v)
		return
	}
	// The parameters are asked for on the confirmation page: checked once
	// confirmed.
	p := engine.JobActionParams{Action: spec.act}
	switch spec.act {
	case engine.JobActionReschedule:
		at, err := parseRunAt(f.Get("run_at"), f.Get("delay"), h.clock())
		if err != nil {
			h.fail(w, r, q, http.StatusBadRequest, err.Error())
			return
		}
		p.RunAt = at
	case engine.JobActionPriority:
		n, err := strconv.ParseUint(strings.TrimSpace(f.Get("priority")), 10, 32)
		if err != nil || n > engine.MaxPriority {
			h.fail(w, r, q, http.StatusBadRequest, fmt.Sprintf("priority: must be 0..%d, got %q", engine.MaxPriority, f.Get("priority")))
			return
		}
		p.Priority = uint32(n)
	case engine.JobActionCancel, engine.JobActionCancelDelete:
		reason := strings.TrimSpace(f.Get("cancel_reason"))
		if len(reason) > maxReasonBytes || !utf8.ValidString(reason) {
			h.fail(w, r, q, http.StatusBadRequest, fmt.Sprintf("reason: at most %d bytes of UTF-8 text, got %d bytes", maxReasonBytes, len(reason)))
			return
		}
		if reason == "" {
			reason = engine.DefaultCancelReason
			if q.user != "" {
				reason += " (" + q.user + ")"
			}
		}
		p.Reason = reason
	}
	ids := v.IDs
	h.perform(w, r, q, action{name: "jobs-" + name, queue: queue, back: back, run: func(ctx context.Context) (flash, error) {
		var all []engine.ItemResult
		for len(ids) > 0 {
			n := min(len(ids), maxSelected)
			p.IDs = ids[:n]
			res, err := rpc.Propose(ctx, h.backend, engine.ActOnJobsOp{Params: p})
			if err != nil {
				if len(all) == 0 {
					return flash{}, err
				}
				fl := summarizeCount(all, spec.verb, spec.effect)
				fl.Kind = "partial"
				fl.Text += " Then: " + actionError(err).Text
				return fl, nil
			}
			all = append(all, res...)
			ids = ids[n:]
		}
		if len(all) <= 20 {
			return summarize(all, spec.verb, "job", spec.effect, "Not done"), nil
		}
		return summarizeCount(all, spec.verb, spec.effect), nil
	}})
}

// summarizeCount is summarize for many items: counts, and the first few
// failures.
func summarizeCount(res []engine.ItemResult, verb, effect string) flash {
	okN := 0
	var failed []string
	for _, it := range res {
		if it.Err == nil {
			okN++
		} else if len(failed) < 5 {
			failed = append(failed, "#"+strconv.FormatUint(uint64(it.JobID), 10)+" ("+itemReason(it.Err)+")")
		}
	}
	text := fmt.Sprintf("%s: %s, %s.", verb, plural(okN, "job"), effect)
	kind := "ok"
	if bad := len(res) - okN; bad > 0 {
		kind = "partial"
		if okN == 0 {
			kind = "error"
		}
		text += fmt.Sprintf(" %s not done, e.g. %s.", plural(bad, "job"), strings.Join(failed, "; "))
	}
	return flash{Kind: kind, Text: text}
}

// parseRunAt reads a reschedule's time: run_at as RFC 3339 or an HTML
// datetime-local value (UTC), or delay as a Go duration from now.
func parseRunAt(runAt, delay string, now time.Time) (time.Time, error) {
	runAt, delay = strings.TrimSpace(runAt), strings.TrimSpace(delay)
	switch {
	case delay != "":
		d, err := time.ParseDuration(delay)
		if err != nil || d < 0 {
			return time.Time{}, fmt.Errorf("delay: must be a duration such as 10m or 2h, got %q", delay)
		}
		return now.Add(d), nil
	case runAt != "":
		for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02T15:04:05"} {
			if t, err := time.ParseInLocation(layout, runAt, time.UTC); err == nil {
				return t, nil
			}
		}
		return time.Time{}, fmt.Errorf("run_at: must be a time such as 2026-12-02T10:00 (UTC) or RFC 3339, got %q", runAt)
	}
	return time.Time{}, fmt.Errorf("run_at: give a time or a delay to reschedule to")
}

// deadActAll is POST /queues/{queue}/dead-letters/act-all: requeue or
// delete every record the filter matches. A requeue runs as a redrive task
// (paced, with progress and an audit record) when the filter is one a
// selection can express; else, like a delete, by ids in chunks.
func (h *handler) deadActAll(w http.ResponseWriter, r *http.Request, q *request) {
	queue := r.PathValue("queue")
	f := r.PostForm
	name := f.Get("action")
	if name != "requeue" && name != "delete" {
		h.fail(w, r, q, http.StatusBadRequest, fmt.Sprintf("action: must be requeue or delete, got %q", name))
		return
	}
	filter, err := parseFilter(f)
	if err != nil {
		h.fail(w, r, q, http.StatusBadRequest, err.Error())
		return
	}
	var sc scanned
	if _, err := h.read(r.Context(), func(e engine.View) error {
		var err error
		sc, err = scan(e, queue, engine.StateDead, filter, maxMatchAct)
		return err
	}); err != nil {
		h.readFailed(w, r, q, err)
		return
	}
	back := backTo(r, queuePath(queue)+"?tab=dead")
	sel, asTask := filter.redriveSelection(queue)
	asTask = asTask && name == "requeue"
	v := jobActConfirm{Action: name, Verb: map[string]string{"requeue": "Requeue", "delete": "Delete for good"}[name], Queue: queue, Back: back,
		Danger: name == "delete", All: true, Filter: filter, Tab: "dead", Count: sc.Matched,
		Truncated: sc.Truncated || sc.Matched > len(sc.Records), PostURL: queuePath(queue) + "/dead-letters/act-all"}
	if asTask {
		v.Effect = "as a redrive task: back in Ready with the same id, attempt counter reset, at 100 jobs/s, with progress on the Redrive page"
	} else if name == "requeue" {
		v.Effect = "back in Ready with the same id, attempt counter reset"
	} else {
		v.Effect = "gone for good"
	}
	if !confirmed(r) || f.Get("count") != strconv.Itoa(v.Count) {
		h.render(w, r, q, http.StatusOK, "jobact_confirm", "Confirm "+name, "queues", v)
		return
	}
	ids := make([]engine.JobID, 0, len(sc.Records))
	for _, rec := range sc.Records {
		ids = append(ids, rec.Job.ID)
	}
	if asTask {
		back = "/redrive"
	}
	h.perform(w, r, q, action{name: "dead-letters-" + name + "-all", queue: queue, back: back, run: func(ctx context.Context) (flash, error) {
		if asTask {
			t, err := rpc.Propose(ctx, h.backend, engine.StartRedriveOp{Params: engine.RedriveParams{Selection: sel, By: actor(q)}})
			if err != nil {
				return flash{}, err
			}
			return flash{Kind: "ok", Text: fmt.Sprintf("Started redrive task %d: it requeues the %s matching now, %d jobs/s.", t.ID, plural(t.Remaining, "record"), engine.DefaultRedriveRate)}, nil
		}
		var all []engine.ItemResult
		for len(ids) > 0 {
			n := min(len(ids), maxSelected)
			var (
				res []engine.ItemResult
				err error
			)
			if name == "requeue" {
				res, err = rpc.Propose(ctx, h.backend, engine.RequeueDeadLettersOp{IDs: ids[:n]})
			} else {
				res, err = rpc.Propose(ctx, h.backend, engine.DeleteDeadLettersOp{IDs: ids[:n]})
			}
			if err != nil {
				if len(all) == 0 {
					return flash{}, err
				}
				break
			}
			all = append(all, res...)
			ids = ids[n:]
		}
		return summarizeCount(all, v.Verb, v.Effect), nil
	}})
}

// actor names the signed-in user for audit records.
func actor(q *request) string {
	if q.user == "" {
		return "admin-ui"
	}
	return q.user
}
