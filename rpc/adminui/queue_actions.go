package adminui

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
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
	bad = append(bad, readReserveLimits(r, &qc)...)
	tags, badTags := readTags(r.PostForm.Get("tags"))
	qc.Tags, bad = tags, append(bad, badTags...)
	paused := r.PostForm.Get("paused") == "yes"
	h.perform(w, r, q, action{name: "create-queue", queue: name, back: "/queues", run: func(ctx context.Context) (flash, error) {
		if len(bad) > 0 {
			return flash{Kind: "error", Text: "The queue was not created: " + strings.Join(bad, "; ") + "."}, nil
		}
		if _, err := rpc.Propose(ctx, h.backend, engine.CreateQueueOp{Config: qc, Paused: paused}); err != nil {
			return flash{}, err
		}
		text := "Created queue " + name + "."
		if paused {
			text = "Created queue " + name + ", paused: it accepts jobs and hands none out until resumed."
		}
		return flash{Kind: "ok", Text: text}, nil
	}})
}

// readReserveLimits reads the reserve-limit fields of a form into qc (an
// empty field or 0 sets none) and says what it could not read; the engine
// checks how they combine (max_per_key needs concurrency_key, a burst
// needs a rate).
func readReserveLimits(r *http.Request, qc *engine.QueueConfig) (bad []string) {
	count := func(field string, dst *int) {
		if s := strings.TrimSpace(r.PostForm.Get(field)); s != "" {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil || v > 1_000_000 {
				bad = append(bad, field+" must be a whole number 0..1000000 (0: no limit)")
				return
			}
			*dst = int(v)
		}
	}
	count("max_reserved", &qc.MaxReserved)
	count("rate_limit", &qc.RateLimit)
	count("rate_burst", &qc.RateBurst)
	count("max_per_key", &qc.MaxPerKey)
	if s := strings.TrimSpace(r.PostForm.Get("rate_period_ms")); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil || v > 3_600_000 {
			bad = append(bad, "rate_period_ms must be a whole number of milliseconds 1..3600000 (0: 1000)")
		} else {
			qc.RatePeriod = time.Duration(v) * time.Millisecond
		}
	}
	qc.ConcurrencyKey = strings.TrimSpace(r.PostForm.Get("concurrency_key"))
	return bad
}

// limitsForm is a queue's own reserve limits as the queue page's form
// shows them (0 and "": none).
type limitsForm struct {
	MaxReserved, RateLimit, RateBurst, MaxPerKey int
	RatePeriodMs                                 int64
	ConcurrencyKey                               string
}

func limitsFormOf(qc engine.QueueConfig) limitsForm {
	return limitsForm{MaxReserved: qc.MaxReserved, RateLimit: qc.RateLimit, RateBurst: qc.RateBurst, MaxPerKey: qc.MaxPerKey,
		RatePeriodMs: qc.RatePeriod.Milliseconds(), ConcurrencyKey: qc.ConcurrencyKey}
}

// setReserveLimits reads the queue page's Reserve limits form: the form
// holds all six, so each field replaces the queue's (empty or 0: none).
// They apply at once, on every node, as `sepp queues update` does.
func (h *handler) setReserveLimits(w http.ResponseWriter, r *http.Request, q *request) {
	queue := r.PathValue("queue")
	var set engine.QueueConfig
	bad := readReserveLimits(r, &set)
	u := engine.QueueUpdate{Name: queue, Set: set}
	for _, z := range []struct {
		key  string
		zero bool
	}{
		{"max_reserved", set.MaxReserved == 0}, {"rate_limit", set.RateLimit == 0}, {"rate_period_ms", set.RatePeriod == 0},
		{"rate_burst", set.RateBurst == 0}, {"concurrency_key", set.ConcurrencyKey == ""}, {"max_per_key", set.MaxPerKey == 0},
	} {
		if z.zero {
			u.Inherit = append(u.Inherit, z.key)
		}
	}
	h.perform(w, r, q, action{name: "set-reserve-limits", queue: queue, back: backTo(r, queuePath(queue)), run: func(ctx context.Context) (flash, error) {
		if len(bad) > 0 {
			return flash{Kind: "error", Text: "The reserve limits were not changed: " + strings.Join(bad, "; ") + "."}, nil
		}
		if _, err := rpc.Propose(ctx, h.backend, engine.UpdateQueueOp{Update: u}); err != nil {
			return flash{}, err
		}
		return flash{Kind: "ok", Text: "Set the reserve limits of queue " + queue + ": " + describeLimits(set) + ". They apply to the next reserve, on every node."}, nil
	}})
}

// describeLimits says in words what reserve limits qc sets.
func describeLimits(qc engine.QueueConfig) string {
	var parts []string
	if qc.MaxReserved > 0 {
		parts = append(parts, fmt.Sprintf("at most %d reserved at once", qc.MaxReserved))
	}
	if qc.RateLimit > 0 {
		period, burst := qc.RatePeriod, qc.RateBurst
		if period == 0 {
			period = time.Second
		}
		if burst == 0 {
			burst = qc.RateLimit
		}
		parts = append(parts, fmt.Sprintf("%d reservations per %s, burst %d", qc.RateLimit, period, burst))
	}
	if qc.MaxPerKey > 0 {
		parts = append(parts, fmt.Sprintf("at most %d reserved per %s", qc.MaxPerKey, qc.ConcurrencyKey))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
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
		res, err := rpc.Propose(ctx, h.backend, engine.PurgeQueueOp{Queue: queue, Target: pt})
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
		res, err := rpc.Propose(ctx, h.backend, engine.DeleteQueueOp{Queue: queue, Force: force})
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
		v.Holds = s.Ready+s.Scheduled+s.Blocked+s.Reserved+s.Dead > 0
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
