package adminui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
)

const (
	// maxSelected caps the ids of one action: a page shows 50 rows, and an
	// action is one Raft entry that should stay small.
	maxSelected     = 1000
	maxReasonBytes  = 1024
	maxForwardReply = 64 << 10
)

// action is one operator action after its form is parsed and checked.
type action struct {
	name  string // "requeue", "delete", "dead-letter", "pause", "resume"
	queue string
	back  string // where the browser goes afterwards
	run   func(ctx context.Context) (flash, error)
}

// perform runs a, forwarding it to the leader when this node does not lead,
// and answers with a redirect carrying the result (a browser) or with JSON
// (a forwarding follower).
func (h *handler) perform(w http.ResponseWriter, r *http.Request, q *request, a action) {
	res, err := a.run(r.Context())
	var notLeader *cluster.NotLeaderError
	switch {
	case err == nil:
	case errors.As(err, &notLeader) && q.forwardedBy == "" && notLeader.Leader.HTTPAddr != "":
		res, err = h.forward(r, notLeader.Leader)
	case errors.As(err, &notLeader) && q.forwardedBy != "":
		res = flash{Kind: "error", Text: "Leadership moved while the action was forwarded; nothing was changed. Try again."}
		err = nil
	}
	if err != nil {
		res = actionError(err)
	}
	h.log.Info("admin action", "action", a.name, "queue", a.queue, "user", q.user, "forwarded_by", q.forwardedBy, "result", res.Kind, "message", res.Text)
	if q.forwardedBy != "" {
		writeJSON(w, http.StatusOK, res)
		return
	}
	h.setFlash(w, res)
	http.Redirect(w, r, a.back, http.StatusSeeOther)
}

// actionError says what an error means for the person who clicked.
func actionError(err error) flash {
	var notLeader *cluster.NotLeaderError
	switch {
	case errors.As(err, &notLeader):
		return flash{Kind: "error", Text: "This node is not the leader and does not know the leader's admin address, so the action was not sent; nothing was changed. Try again in a moment or use the leader's UI."}
	case errors.Is(err, cluster.ErrNoLeader):
		return flash{Kind: "error", Text: "The cluster has no leader right now (an election is running); nothing was changed. Try again in a moment."}
	case errors.Is(err, cluster.ErrUnknownOutcome):
		return flash{Kind: "error", Text: "The outcome is unknown: the action may or may not have been applied (leadership changed or the deadline passed). Reload the page to see the current state before trying again."}
	case errors.Is(err, cluster.ErrShutdown):
		return flash{Kind: "error", Text: "The node is shutting down; nothing was changed."}
	}
	return flash{Kind: "error", Text: "The action failed: " + err.Error()}
}

// forward sends the action, already checked here, to the leader's admin UI.
// The leader checks the session, the CSRF token and the role again (it
// trusts nothing from this node but the cookie, which the nodes' shared key
// lets it verify), runs the action and answers with the result as JSON.
func (h *handler) forward(r *http.Request, leader cluster.NodeInfo) (flash, error) {
	target := h.scheme + "://" + leader.HTTPAddr + r.URL.EscapedPath()
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, target, strings.NewReader(r.PostForm.Encode()))
	if err != nil {
		return flash{}, fmt.Errorf("forward to leader %s: %w", leader.ID, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set(forwardedHeader, h.backend.Self().ID)
	if c, err := r.Cookie(sessionCookie); err == nil {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	resp, err := h.client.Do(req)
	if err != nil {
		// The request may have reached the leader before the connection
		// failed, so the outcome is unknown, not failed.
		return flash{Kind: "error", Text: fmt.Sprintf("Could not reach the leader %s at %s to run the action (%v); it may or may not have been applied. Reload the page to check.", leader.ID, leader.HTTPAddr, err)}, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxForwardReply))
	if err != nil {
		return flash{Kind: "error", Text: fmt.Sprintf("The leader %s's answer was cut off (%v); the action may or may not have been applied. Reload the page to check.", leader.ID, err)}, nil
	}
	var res flash
	if jerr := json.Unmarshal(body, &res); jerr != nil || res.Text == "" {
		return flash{Kind: "error", Text: fmt.Sprintf("The leader %s answered %s with no readable result; reload the page to check.", leader.ID, resp.Status)}, nil
	}
	if resp.StatusCode == http.StatusUnauthorized {
		res.Text = fmt.Sprintf("The leader %s did not accept this node's sign-in, so nothing was changed. Use the leader's admin UI at %s://%s, or give every node the same admin session key.", leader.ID, h.scheme, leader.HTTPAddr)
	}
	res.Text = "Forwarded to the leader " + leader.ID + ": " + res.Text
	return res, nil
}

// --- forms -----------------------------------------------------------------

// parseIDs reads the selected job ids ("id" fields), in order, without
// repeats.
func parseIDs(values []string) ([]engine.JobID, error) {
	if len(values) == 0 {
		return nil, errors.New("id: select at least one job")
	}
	seen := make(map[engine.JobID]bool, len(values))
	ids := make([]engine.JobID, 0, len(values))
	for _, s := range values {
		id, err := parseJobID(s)
		if err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) > maxSelected {
		return nil, fmt.Errorf("id: at most %d jobs per action, got %d", maxSelected, len(ids))
	}
	return ids, nil
}

// backTo is the page an action returns to: the form's "back" field when it
// is a path on this site, else the queue's tab.
func backTo(r *http.Request, fallback string) string {
	if b := safeNext(r.PostForm.Get("back")); b != "/" {
		return b
	}
	return fallback
}

func confirmed(r *http.Request) bool { return r.PostForm.Get("confirmed") == "yes" }

// confirmView is the page that asks before a destructive action.
type confirmView struct {
	Action  string // "requeue", "delete" or "dead-letter"
	Verb    string // button text
	Queue   string
	PostURL string
	Back    string
	Reason  string
	Rows    []confirmRow
	Danger  bool
	// RetentionOff warns that dead-lettered jobs will not be kept.
	RetentionOff bool
}

type confirmRow struct {
	ID      engine.JobID
	Found   bool
	Summary string
}

// confirm shows what the action would touch and asks to go ahead. The
// operator check has already passed: a viewer never sees this page.
func (h *handler) confirm(w http.ResponseWriter, r *http.Request, q *request, v confirmView, ids []engine.JobID, dead bool) {
	stale, err := h.read(r.Context(), func(e engine.View) error {
		v.Rows = v.Rows[:0]
		v.RetentionOff = e.Config().Limits.DeadLetterRetention <= 0
		for _, id := range ids {
			row := confirmRow{ID: id}
			if dead {
				if rec, err := e.GetDeadLetter(id); err == nil && rec.Job.Queue == v.Queue {
					row.Found = true
					row.Summary = fmt.Sprintf("%s · %s · failed on attempt %d", rec.Job.JobType, rec.Cause, rec.FinalAttempt)
					if rec.LastReason != "" {
						row.Summary += " · " + rec.LastReason
					}
				}
			} else if j, err := e.GetJob(id); err == nil && j.Queue == v.Queue {
				row.Found = true
				row.Summary = fmt.Sprintf("%s · %s · priority %d", j.JobType, j.State, j.Priority)
			}
			v.Rows = append(v.Rows, row)
		}
		return nil
	})
	if err != nil {
		h.readFailed(w, r, q, err)
		return
	}
	p := h.newPage(r, q, "Confirm "+v.Action, "queues", v)
	p.Stale = stale
	h.renderPage(w, http.StatusOK, "confirm", p)
}

func (h *handler) requeue(w http.ResponseWriter, r *http.Request, q *request) {
	h.deadLetterAction(w, r, q, "requeue", "Requeue", false)
}

func (h *handler) delete(w http.ResponseWriter, r *http.Request, q *request) {
	h.deadLetterAction(w, r, q, "delete", "Delete for good", true)
}

func (h *handler) deadLetterAction(w http.ResponseWriter, r *http.Request, q *request, name, verb string, danger bool) {
	queue := r.PathValue("queue")
	ids, err := parseIDs(r.PostForm["id"])
	if err != nil {
		h.fail(w, r, q, http.StatusBadRequest, err.Error())
		return
	}
	back := backTo(r, queuePath(queue)+"?tab=dead")
	if !confirmed(r) {
		h.confirm(w, r, q, confirmView{
			Action: name, Verb: verb, Queue: queue, Danger: danger, Back: back,
			PostURL: queuePath(queue) + "/dead-letters/" + name,
		}, ids, true)
		return
	}
	h.perform(w, r, q, action{name: name, queue: queue, back: back, run: func(ctx context.Context) (flash, error) {
		var (
			res []engine.ItemResult
			err error
		)
		if name == "requeue" {
			res, err = rpc.Propose(ctx, h.backend, engine.RequeueDeadLettersOp{IDs: ids})
		} else {
			res, err = rpc.Propose(ctx, h.backend, engine.DeleteDeadLettersOp{IDs: ids})
		}
		if err != nil {
			return flash{}, err
		}
		if name == "requeue" {
			return summarize(res, "Requeued", "job", "back in Ready with the same id, attempt counter reset", "Not requeued"), nil
		}
		return summarize(res, "Deleted", "record", "gone for good", "Not deleted"), nil
	}})
}

func (h *handler) deadLetter(w http.ResponseWriter, r *http.Request, q *request) {
	queue := r.PathValue("queue")
	ids, err := parseIDs(r.PostForm["id"])
	if err != nil {
		h.fail(w, r, q, http.StatusBadRequest, err.Error())
		return
	}
	reason := strings.TrimSpace(r.PostForm.Get("reason"))
	if len(reason) > maxReasonBytes || !utf8.ValidString(reason) {
		h.fail(w, r, q, http.StatusBadRequest, fmt.Sprintf("reason: at most %d bytes of UTF-8 text, got %d bytes", maxReasonBytes, len(reason)))
		return
	}
	back := backTo(r, queuePath(queue)+"?tab=ready")
	if !confirmed(r) {
		h.confirm(w, r, q, confirmView{
			Action: "dead-letter", Verb: "Dead-letter", Queue: queue, Danger: true, Back: back, Reason: reason,
			PostURL: queuePath(queue) + "/jobs/dead-letter",
		}, ids, false)
		return
	}
	if reason == "" {
		reason = "dead-lettered from the admin UI"
		if q.user != "" {
			reason += " by " + q.user
		}
	}
	h.perform(w, r, q, action{name: "dead-letter", queue: queue, back: back, run: func(ctx context.Context) (flash, error) {
		res, err := rpc.Propose(ctx, h.backend, engine.DeadLetterJobsOp{IDs: ids, Reason: reason})
		if err != nil {
			return flash{}, err
		}
		return summarize(res, "Dead-lettered", "job", "recorded with cause admin", "Not dead-lettered"), nil
	}})
}

func (h *handler) pause(w http.ResponseWriter, r *http.Request, q *request) {
	h.pauseAction(w, r, q, true)
}

func (h *handler) resume(w http.ResponseWriter, r *http.Request, q *request) {
	h.pauseAction(w, r, q, false)
}

func (h *handler) pauseAction(w http.ResponseWriter, r *http.Request, q *request, pause bool) {
	queue := r.PathValue("queue")
	name, done := "resume", "Resumed queue "+queue+": workers receive its jobs again."
	if pause {
		name, done = "pause", "Paused queue "+queue+": workers receive none of its jobs until it is resumed; enqueues still succeed."
	}
	h.perform(w, r, q, action{name: name, queue: queue, back: backTo(r, "/queues"), run: func(ctx context.Context) (flash, error) {
		var err error
		if pause {
			_, err = rpc.Propose(ctx, h.backend, engine.PauseQueueOp{Queue: queue})
		} else {
			_, err = rpc.Propose(ctx, h.backend, engine.ResumeQueueOp{Queue: queue})
		}
		if err != nil {
			return flash{}, err
		}
		return flash{Kind: "ok", Text: done}, nil
	}})
}

// summarize turns per-item results into one message: what succeeded, then
// each failure with its reason.
func summarize(res []engine.ItemResult, verb, noun, effect, failedVerb string) flash {
	var okIDs, failed []string
	for _, it := range res {
		id := "#" + strconv.FormatUint(uint64(it.JobID), 10)
		if it.Err == nil {
			okIDs = append(okIDs, id)
			continue
		}
		failed = append(failed, id+" ("+itemReason(it.Err)+")")
	}
	var parts []string
	if len(okIDs) > 0 {
		parts = append(parts, fmt.Sprintf("%s %s %s: %s.", verb, plural(len(okIDs), noun), strings.Join(okIDs, ", "), effect))
	}
	if len(failed) > 0 {
		parts = append(parts, failedVerb+": "+strings.Join(failed, "; ")+".")
	}
	kind := "ok"
	switch {
	case len(okIDs) == 0:
		kind = "error"
	case len(failed) > 0:
		kind = "partial"
	}
	return flash{Kind: kind, Text: strings.Join(parts, " ")}
}

func itemReason(err error) string {
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return "not found: already requeued, deleted, drained or swept?"
	}
	return err.Error()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
