package adminui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
)

// The redrive page (issue #25): select dead letters by queue, cause, type,
// reason substring and failed-at range; preview the count and a sample;
// start a task to the records' own queue or another, at a rate, as a
// same-id requeue or a fresh replay; watch its progress; pause, resume or
// cancel it; read the audit list of ended tasks.

const redriveSample = 10

type redriveView struct {
	Form    redriveForm
	Preview *redrivePreview
	Tasks   []engine.RedriveTask // running and paused first, then the audit records, newest first
	Err     string
}

type redriveForm struct {
	Queue, Cause, Type, Reason, After, Before, ToQueue, Rate, Mode string
}

type redrivePreview struct {
	Count  int
	Sample []engine.DeadLetterRecord
	Query  string // the form as a query, for the start form's hidden fields
}

func (f redriveForm) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"queue": f.Queue, "cause": f.Cause, "type": f.Type, "reason": f.Reason,
		"failed_after": f.After, "failed_before": f.Before, "to_queue": f.ToQueue, "rate": f.Rate, "mode": f.Mode} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

func readRedriveForm(v url.Values) redriveForm {
	g := func(k string) string { return strings.TrimSpace(v.Get(k)) }
	return redriveForm{Queue: g("queue"), Cause: g("cause"), Type: g("type"), Reason: v.Get("reason"),
		After: g("failed_after"), Before: g("failed_before"), ToQueue: g("to_queue"), Rate: g("rate"), Mode: g("mode")}
}

func parseTimeField(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s: must be a UTC time such as 2026-12-02T10:00, got %q", field, s)
}

func (f redriveForm) params(by string) (engine.RedriveParams, error) {
	p := engine.RedriveParams{ToQueue: f.ToQueue, By: by, Fresh: f.Mode == "fresh"}
	switch f.Mode {
	case "", "same-id", "fresh":
	default:
		return p, fmt.Errorf("mode: must be same-id or fresh, got %q", f.Mode)
	}
	s := &p.Selection
	s.Queue, s.JobType, s.ReasonContains = f.Queue, f.Type, f.Reason
	if f.Cause != "" {
		filter, err := parseFilter(url.Values{"cause": {f.Cause}})
		if err != nil {
			return p, err
		}
		s.Cause = filter.Cause
	}
	var err error
	if s.FailedAfter, err = parseTimeField("failed_after", f.After); err != nil {
		return p, err
	}
	if s.FailedBefore, err = parseTimeField("failed_before", f.Before); err != nil {
		return p, err
	}
	if f.Rate != "" {
		n, err := strconv.Atoi(f.Rate)
		if err != nil || n < 1 || n > engine.MaxRedriveRate {
			return p, fmt.Errorf("rate: must be 1..%d jobs per second, got %q", engine.MaxRedriveRate, f.Rate)
		}
		p.Rate = n
	}
	if !p.Fresh && p.ToQueue != "" {
		return p, fmt.Errorf("to_queue: a same-id requeue returns each job to its own queue; choose fresh to replay into %q", p.ToQueue)
	}
	return p, nil
}

func (h *handler) loadRedrive(r *http.Request, v *redriveView, preview bool, by string) (stale bool, err error) {
	var p engine.RedriveParams
	if preview {
		if p, err = v.Form.params(by); err != nil {
			v.Err = err.Error()
			preview = false
		}
	}
	now := h.clock()
	return h.read(r.Context(), func(e engine.View) error {
		v.Tasks = v.Tasks[:0]
		all := e.RedriveTasks()
		for _, t := range all {
			if !t.State.Ended() {
				v.Tasks = append(v.Tasks, t)
			}
		}
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].State.Ended() {
				v.Tasks = append(v.Tasks, all[i])
			}
		}
		if preview {
			n, sample, err := e.RedriveDryRun(now, p, redriveSample)
			if err != nil {
				v.Err = err.Error()
				v.Preview = nil
				return nil
			}
			v.Preview = &redrivePreview{Count: n, Sample: sample, Query: v.Form.values().Encode()}
		}
		return nil
	})
}

// redrivePage is GET /redrive; with preview=1 it also runs the dry run of
// the form's selection.
func (h *handler) redrivePage(w http.ResponseWriter, r *http.Request, q *request) {
	v := redriveView{Form: readRedriveForm(r.URL.Query())}
	stale, err := h.loadRedrive(r, &v, r.URL.Query().Get("preview") != "", actor(q))
	if err != nil {
		h.readFailed(w, r, q, err)
		return
	}
	p := h.newPage(r, q, "Redrive", "redrive", v)
	p.Stale = stale
	h.renderPage(w, http.StatusOK, "redrive", p)
}

// redriveStart is POST /redrive/start.
func (h *handler) redriveStart(w http.ResponseWriter, r *http.Request, q *request) {
	form := readRedriveForm(r.PostForm)
	p, err := form.params(actor(q))
	if err != nil {
		h.fail(w, r, q, http.StatusBadRequest, err.Error())
		return
	}
	h.perform(w, r, q, action{name: "redrive-start", queue: form.Queue, back: "/redrive", run: func(ctx context.Context) (flash, error) {
		t, err := rpc.Propose(ctx, h.backend, engine.StartRedriveOp{Params: p})
		if err != nil {
			return flash{}, err
		}
		mode := "same-id requeue"
		if t.Params.Fresh {
			mode = "fresh replay"
		}
		return flash{Kind: "ok", Text: fmt.Sprintf("Started redrive task %d (%s): %s to move.", t.ID, mode, plural(t.Remaining, "record"))}, nil
	}})
}

// redriveState is POST /redrive/{id}/{pause,resume,cancel}.
func (h *handler) redriveState(w http.ResponseWriter, r *http.Request, q *request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil || id == 0 {
		h.fail(w, r, q, http.StatusBadRequest, fmt.Sprintf("task id: must be a positive whole number, got %q", r.PathValue("id")))
		return
	}
	verb := r.PathValue("verb")
	states := map[string]engine.RedriveState{"pause": engine.RedrivePaused, "resume": engine.RedriveRunning, "cancel": engine.RedriveCancelled}
	st, ok := states[verb]
	if !ok {
		h.fail(w, r, q, http.StatusNotFound, "There is no redrive action "+verb+".")
		return
	}
	h.perform(w, r, q, action{name: "redrive-" + verb, back: "/redrive", run: func(ctx context.Context) (flash, error) {
		t, err := rpc.Propose(ctx, h.backend, engine.SetRedriveStateOp{ID: id, State: st, By: actor(q)})
		if err != nil {
			return flash{}, err
		}
		return flash{Kind: "ok", Text: fmt.Sprintf("Redrive task %d is %s: %d moved, %d remaining.", t.ID, t.State, t.Moved, t.Remaining)}, nil
	}})
}
