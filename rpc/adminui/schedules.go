package adminui

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
)

// The Schedules pages: a list of the periodic schedules with their next
// fire time, and one schedule's page with its template, policies and next
// fire times. Operators pause, resume and delete (after a confirmation)
// from either page. The next fire times are the stored next tick and the
// ones after it (rpc.NextFireTimes), as the API shows them.

// scheduleNextShown is how many fire times a schedule's page lists.
const scheduleNextShown = 5

type schedulesView struct {
	Schedules []scheduleRow
}

type scheduleRow struct {
	engine.Schedule
	Spec  string
	Next  []time.Time
	Path  string
	Empty bool // the template has no payload
}

func newScheduleRow(s engine.Schedule, next int) scheduleRow {
	spec := "every " + humanDuration(s.Interval)
	if s.Kind == engine.ScheduleCron {
		spec = s.Cron
		if s.TimeZone != "" {
			spec += " (" + s.TimeZone + ")"
		} else {
			spec += " (UTC)"
		}
	}
	return scheduleRow{Schedule: s, Spec: spec, Next: rpc.NextFireTimes(s, next), Path: schedulePath(s.Name), Empty: len(s.Template.Payload) == 0}
}

func schedulePath(name string) string { return "/schedules/" + url.PathEscape(name) }

func (h *handler) scheduleRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /schedules", h.with(accessView, h.schedulesPage))
	mux.HandleFunc("GET /schedules/{name}", h.with(accessView, h.schedulePage))
	mux.HandleFunc("POST /schedules/{name}/pause", h.with(accessOperate, h.pauseSchedule))
	mux.HandleFunc("POST /schedules/{name}/resume", h.with(accessOperate, h.resumeSchedule))
	mux.HandleFunc("POST /schedules/{name}/delete", h.with(accessOperate, h.deleteSchedule))
}

func (h *handler) schedulesPage(w http.ResponseWriter, r *http.Request, q *request) {
	var v schedulesView
	stale, err := h.read(r.Context(), func(e engine.View) error {
		list := e.Schedules()
		v.Schedules = make([]scheduleRow, len(list))
		for i, s := range list {
			v.Schedules[i] = newScheduleRow(s, 1)
		}
		return nil
	})
	if err != nil {
		h.readFailed(w, r, q, err)
		return
	}
	p := h.newPage(r, q, "Schedules", "schedules", v)
	p.Stale = stale
	h.renderPage(w, http.StatusOK, "schedules", p)
}

type scheduleView struct {
	scheduleRow
	// Confirm asks before a delete.
	Confirm bool
}

func (h *handler) schedulePage(w http.ResponseWriter, r *http.Request, q *request) {
	h.renderSchedule(w, r, q, r.PathValue("name"), false)
}

func (h *handler) renderSchedule(w http.ResponseWriter, r *http.Request, q *request, name string, confirm bool) {
	var v scheduleView
	stale, err := h.read(r.Context(), func(e engine.View) error {
		s, err := e.GetSchedule(name)
		if err != nil {
			return err
		}
		v = scheduleView{scheduleRow: newScheduleRow(s, scheduleNextShown), Confirm: confirm}
		return nil
	})
	if err != nil {
		h.readFailed(w, r, q, err)
		return
	}
	p := h.newPage(r, q, "Schedule "+name, "schedules", v)
	p.Stale = stale
	h.renderPage(w, http.StatusOK, "schedule", p)
}

func (h *handler) pauseSchedule(w http.ResponseWriter, r *http.Request, q *request) {
	h.setSchedulePaused(w, r, q, true)
}

func (h *handler) resumeSchedule(w http.ResponseWriter, r *http.Request, q *request) {
	h.setSchedulePaused(w, r, q, false)
}

func (h *handler) setSchedulePaused(w http.ResponseWriter, r *http.Request, q *request, paused bool) {
	name := r.PathValue("name")
	verb, text := "pause-schedule", "Paused schedule "+name+": it fires nothing until resumed."
	if !paused {
		verb, text = "resume-schedule", "Resumed schedule "+name+": it fires from its next tick; the paused ticks are not caught up."
	}
	h.perform(w, r, q, action{name: verb, queue: name, back: backTo(r, schedulePath(name)), run: func(ctx context.Context) (flash, error) {
		if _, err := rpc.Propose(ctx, h.backend, engine.SetSchedulePausedOp{Name: name, Paused: paused}); err != nil {
			return flash{}, err
		}
		return flash{Kind: "ok", Text: text}, nil
	}})
}

// deleteSchedule shows the schedule with a confirmation first, then acts.
func (h *handler) deleteSchedule(w http.ResponseWriter, r *http.Request, q *request) {
	name := r.PathValue("name")
	if !confirmed(r) {
		h.renderSchedule(w, r, q, name, true)
		return
	}
	h.perform(w, r, q, action{name: "delete-schedule", queue: name, back: "/schedules", run: func(ctx context.Context) (flash, error) {
		if _, err := rpc.Propose(ctx, h.backend, engine.DeleteScheduleOp{Name: name}); err != nil {
			return flash{}, err
		}
		return flash{Kind: "ok", Text: "Deleted schedule " + name + "; the jobs it fired stay."}, nil
	}})
}
