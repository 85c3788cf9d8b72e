package adminui

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sepp-io/sepp/engine"
)

// Queues as managed objects in the UI: create a queue from the Queues page,
// purge its waiting jobs or dead letters and delete it from its row, each
// destructive action after a page that shows what it would remove.

// queueConfirmView asks before a purge or delete of a whole queue.
type queueConfirmView struct {
	Action  string // "purge-waiting", "purge-dead-letters", "delete"
	Verb    string
	Queue   string
	PostURL string
	Target  string
	Stats   engine.QueueStats
	// Holds: the queue still has jobs or records, so a delete must be
	// forced.
	Holds bool
}

// createQueue reads the New queue form: every field left empty inherits.
func (h *handler) createQueue(w http.ResponseWriter, r *http.Request, q *request) {
	name := strings.TrimSpace(r.PostForm.Get("name"))
	qc := engine.QueueConfig{Name: name}
	var bad []string
	u32 := func(field string, dst **uint32) {
		if s := strings.TrimSpace(r.PostForm.Get(field)); s != "" {
			v, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				bad = append(bad, field+" must be a whole number")
				return
			}
			n := uint32(v)
			*dst = &n
		}
	}
	u32("default_priority", &qc.DefaultPriority)
	u32("default_max_attempts", &qc.DefaultMaxAttempts)
	if s := strings.TrimSpace(r.PostForm.Get("retry_delay_ms")); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 || v > int64(365*24*time.Hour/time.Millisecond) {
			bad = append(bad, "retry_delay_ms must be a whole number of milliseconds, at most a year")
		} else {
			d := time.Duration(v) * time.Millisecond
			qc.RetryDelay = &d
		}
	}
	if s := strings.TrimSpace(r.PostForm.Get("max_length")); s != "" {
		v, err := strconv.ParseUint(s, 10, 31)
		if err != nil {
			bad = append(bad, "max_length must be a whole number below 2^31")
		} else {
			n := int(v)
			qc.MaxLength = &n
		}
	}
	qc.DeadLetterQueue = strings.TrimSpace(r.PostForm.Get("dead_letter_queue"))
	paused := r.PostForm.Get("paused") == "yes"
	h.perform(w, r, q, action{name: "create-queue", queue: name, back: "/queues", run: func(ctx context.Context) (flash, error) {
		if len(bad) > 0 {
			return flash{Kind: "error", Text: "The queue was not created: " + strings.Join(bad, "; ") + "."}, nil
		}
		if err := h.backend.CreateQueue(ctx, qc, paused); err != nil {
			return flash{}, err
		}
		text := "Created queue " + name + "."
		if paused {
			text = "Created queue " + name + ", paused: it accepts jobs and hands none out until resumed."
		}
		return flash{Kind: "ok", Text: text}, nil
	}})
}

// purgeQueue and deleteQueue show a confirmation first, then act.
func (h *handler) purgeQueue(w http.ResponseWriter, r *http.Request, q *request) {
	queue := r.PathValue("queue")
	target := r.PostForm.Get("target")
	var pt engine.PurgeTarget
	var v queueConfirmView
	switch target {
	case "waiting":
		pt, v = engine.PurgeWaiting, queueConfirmView{Action: "purge-waiting", Verb: "Purge waiting jobs"}
	case "dead_letters":
		pt, v = engine.PurgeDeadLetters, queueConfirmView{Action: "purge-dead-letters", Verb: "Purge dead letters"}
	default:
		h.perform(w, r, q, action{name: "purge-queue", queue: queue, back: "/queues", run: func(context.Context) (flash, error) {
			return flash{Kind: "error", Text: "Choose what to purge: waiting jobs or dead letters. Nothing was changed."}, nil
		}})
		return
	}
	if !confirmed(r) {
		v.Queue, v.PostURL, v.Target = queue, "/queues/"+queue+"/purge", target
		h.confirmQueue(w, r, q, v)
		return
	}
	h.perform(w, r, q, action{name: "purge-queue", queue: queue, back: backTo(r, "/queues"), run: func(ctx context.Context) (flash, error) {
		res, err := h.backend.PurgeQueue(ctx, queue, pt)
		if err != nil {
			return flash{}, err
		}
		if pt == engine.PurgeWaiting {
			return flash{Kind: "ok", Text: fmt.Sprintf("Purged %s from queue %s; reserved jobs stay with their workers.", plural(res.Jobs, "waiting job"), queue)}, nil
		}
		return flash{Kind: "ok", Text: fmt.Sprintf("Purged %s from queue %s.", plural(res.DeadLetters, "dead letter"), queue)}, nil
	}})
}

func (h *handler) deleteQueue(w http.ResponseWriter, r *http.Request, q *request) {
	queue := r.PathValue("queue")
	if !confirmed(r) {
		h.confirmQueue(w, r, q, queueConfirmView{Action: "delete", Verb: "Delete queue", Queue: queue, PostURL: "/queues/" + queue + "/delete"})
		return
	}
	force := r.PostForm.Get("force") == "yes"
	h.perform(w, r, q, action{name: "delete-queue", queue: queue, back: "/queues", run: func(ctx context.Context) (flash, error) {
		res, err := h.backend.DeleteQueue(ctx, queue, force)
		if err != nil {
			return flash{}, err
		}
		return flash{Kind: "ok", Text: fmt.Sprintf("Deleted queue %s: %s and %s removed.", queue, plural(res.Jobs, "job"), plural(res.DeadLetters, "dead letter"))}, nil
	}})
}

func (h *handler) confirmQueue(w http.ResponseWriter, r *http.Request, q *request, v queueConfirmView) {
	now := h.clock()
	stale, err := h.read(r.Context(), func(e engine.View) error {
		s, err := e.QueueStats(now, v.Queue)
		v.Stats = s
		v.Holds = s.Ready+s.Scheduled+s.Reserved+s.Dead > 0
		return err
	})
	if err != nil {
		h.readFailed(w, r, q, err)
		return
	}
	p := h.newPage(r, q, v.Verb+" "+v.Queue, "queues", v)
	p.Stale = stale
	h.renderPage(w, http.StatusOK, "queue_confirm", p)
}
