package adminui

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
)

// pageSize is how many rows a queue tab shows at once.
const pageSize = 50

// --- cluster ---------------------------------------------------------------

type clusterView struct {
	Status cluster.Status
	// HealthKnown: only the leader hears from every member; a follower
	// knows only that it is itself alive.
	HealthKnown bool
	Members     []memberView
	Err         string
}

type memberView struct {
	cluster.Member
	IsSelf bool
	UIURL  string
}

func (h *handler) clusterPage(w http.ResponseWriter, r *http.Request, q *request) {
	st, err := h.backend.Status(r.Context())
	v := clusterView{Status: st, HealthKnown: st.State == "Leader"}
	if err != nil {
		v.Err = err.Error()
	}
	for _, m := range st.Members {
		mv := memberView{Member: m, IsSelf: m.ID == st.Self.ID}
		if m.HTTPAddr != "" {
			mv.UIURL = h.scheme + "://" + m.HTTPAddr + "/cluster"
		}
		v.Members = append(v.Members, mv)
	}
	h.render(w, r, q, http.StatusOK, "cluster", "Cluster", "cluster", v)
}

// --- queues ----------------------------------------------------------------

type queuesView struct {
	Charts    []chart // every queue summed, over the ring
	Every     time.Duration
	Queues    []queueRow
	Retention time.Duration
	// TagFilter narrows the list to the queues whose tags match every
	// term; Hidden counts the queues it left out.
	TagFilter tagFilterView
	Hidden    int
}

type queueRow struct {
	engine.QueueStats
	Chips             []tagChip
	DeadLetteredTotal uint64
	Rates             rates
	Spark             template.HTML // enqueued/s over the ring
}

func (h *handler) queuesPage(w http.ResponseWriter, r *http.Request, q *request) {
	now := h.clock()
	terms, filter, ferr := parseTagFilter(r.URL.Query())
	var v queuesView
	stale, err := h.read(r.Context(), func(e engine.View) error {
		stats := e.Stats(now)
		h.ring.maybeSample(now, stats)
		v = queuesView{Retention: e.Config().Limits.DeadLetterRetention, Queues: make([]queueRow, 0, len(stats)), TagFilter: tagFilterViewOf(terms)}
		for _, s := range stats {
			// The same match as ListQueues' tag filter.
			if !engine.MatchTags(s.Tags, filter) {
				v.Hidden++
				continue
			}
			v.Queues = append(v.Queues, queueRow{QueueStats: s, Chips: chipsOf(s.Tags, terms), DeadLetteredTotal: sumCauses(s.DeadLettered)})
		}
		return nil
	})
	if ferr != nil {
		v.TagFilter.Error = ferr.Error()
	}
	if err != nil {
		h.readFailed(w, r, q, err)
		return
	}
	for i := range v.Queues {
		row := &v.Queues[i]
		row.Rates = h.ring.rates(row.Name, now, ringCounters{enqueued: row.Enqueued, reserved: row.Activity.Reserved, acked: row.Acked,
			nacked: row.Activity.NackedDefault + row.Activity.NackedAfter + row.Activity.NackedDeadLetter, dead: row.DeadLetteredTotal})
		s := h.ring.series(row.Name)
		vals := make([]float64, 0, len(s))
		for _, p := range s {
			if p.Known {
				vals = append(vals, p.Enqueued)
			}
		}
		row.Spark = sparkline(vals)
	}
	v.Charts = rateCharts("all", h.ring.series(""))
	v.Every = h.ring.Every()
	p := h.newPage(r, q, "Queues", "queues", v)
	p.Stale = stale
	h.renderPage(w, http.StatusOK, "queues", p)
}

func sumCauses(m map[engine.Cause]uint64) uint64 {
	var n uint64
	for _, c := range m {
		n += c
	}
	return n
}

// --- one queue -------------------------------------------------------------

// The tabs of the queue page, in order.
var queueTabs = []struct {
	Key   string
	Label string
	State engine.State
}{
	{"ready", "Ready", engine.StateReady},
	{"scheduled", "Scheduled", engine.StateScheduled},
	{"blocked", "Blocked", engine.StateBlocked},
	{"reserved", "Reserved", engine.StateReserved},
	{"dead", "Dead letters", engine.StateDead},
	{"completed", "Completed", engine.StateCompleted},
}

type tabLink struct {
	Key, Label, URL string
	Count           int
	Active          bool
}

type queueView struct {
	Stats     engine.QueueStats
	Charts    []chart
	Tab       string
	Tabs      []tabLink
	Jobs      []engine.Job
	Records   []engine.DeadLetterRecord
	Retention time.Duration
	// AfterID is the cursor this page started from; NextURL and FirstURL
	// page through the tab (empty when there is nowhere to go).
	AfterID  engine.JobID
	Offset   int
	NextURL  string
	FirstURL string
	ClearURL string // the tab without a filter
	Path     string // this page's URL, where actions return to
	// Filter narrows the list; Matched counts what it matched among
	// Scanned jobs (Truncated: the scan stopped at its bound).
	Filter    jobFilter
	Matched   int
	Scanned   int
	Truncated bool
	// Own is the queue's own reserve limits, for the form that sets them.
	Own limitsForm
	// Chips are the queue's tags; TagsText the same for the Tags form.
	Chips    []tagChip
	TagsText string
}

func (q queueView) RetentionOff() bool { return q.Retention <= 0 }

func (h *handler) queuePage(w http.ResponseWriter, r *http.Request, q *request) {
	name := r.PathValue("queue")
	tab := r.URL.Query().Get("tab")
	state := engine.StateReady
	found := false
	for _, t := range queueTabs {
		if t.Key == tab {
			state, found = t.State, true
		}
	}
	if !found {
		tab = "ready"
	}
	after, err := parseCursor(r.URL.Query().Get("after"))
	if err != nil {
		h.fail(w, r, q, http.StatusBadRequest, err.Error())
		return
	}
	offset, err := parseOffset(r.URL.Query().Get("offset"))
	if err != nil {
		h.fail(w, r, q, http.StatusBadRequest, err.Error())
		return
	}
	filter, err := parseFilter(r.URL.Query())
	if err != nil {
		h.fail(w, r, q, http.StatusBadRequest, err.Error())
		return
	}
	filter.State = tab
	// Ready is listed in hand-out order and a filtered tab by position:
	// both page by offset. The other tabs page by job id.
	byOffset := filter.active() || state == engine.StateReady
	now := h.clock()
	var v queueView
	stale, err := h.read(r.Context(), func(e engine.View) error {
		v = queueView{Tab: tab, AfterID: after, Offset: offset, Filter: filter, Retention: e.Config().Limits.DeadLetterRetention}
		st, err := e.QueueStats(now, name)
		if err != nil {
			return err
		}
		h.ring.maybeSample(now, e.Stats(now))
		v.Stats = st
		for _, qc := range e.Config().Queues {
			if qc.Name == name {
				v.Own = limitsFormOf(qc)
			}
		}
		v.Chips, v.TagsText = chipsOf(st.Tags, nil), tagsText(st.Tags)
		switch {
		case filter.active():
			sc, err := scan(e, name, state, filter, offset+pageSize+1)
			if err != nil {
				return err
			}
			v.Matched, v.Scanned, v.Truncated = sc.Matched, sc.Scanned, sc.Truncated
			v.Jobs, v.Records = tail(sc.Jobs, offset), tail(sc.Records, offset)
			return nil
		case state == engine.StateReady:
			v.Jobs, err = e.ListReadyInOrder(name, offset, pageSize+1)
			return err
		}
		// One row more than shown tells whether a next page exists.
		pg := engine.Page{AfterID: after, Limit: pageSize + 1}
		if state == engine.StateDead {
			v.Records, err = e.ListDeadLetters(name, pg)
		} else {
			v.Jobs, err = e.ListJobs(name, state, pg)
		}
		return err
	})
	if err != nil {
		h.readFailed(w, r, q, err)
		return
	}
	base := queuePath(name) + "?tab=" + tab
	if fq := filter.Query(); fq != "" {
		base += "&" + fq
	}
	var last engine.JobID
	more := len(v.Records) > pageSize || len(v.Jobs) > pageSize
	if len(v.Records) > pageSize {
		v.Records = v.Records[:pageSize]
		last = v.Records[pageSize-1].Job.ID
	}
	if len(v.Jobs) > pageSize {
		v.Jobs = v.Jobs[:pageSize]
		last = v.Jobs[pageSize-1].ID
	}
	switch {
	case byOffset && more:
		v.NextURL = base + "&offset=" + strconv.Itoa(offset+pageSize)
	case !byOffset && last != 0:
		v.NextURL = base + "&after=" + strconv.FormatUint(uint64(last), 10)
	}
	if after != 0 || offset != 0 {
		v.FirstURL = base
	}
	v.ClearURL = queuePath(name) + "?tab=" + tab
	v.Path = r.URL.RequestURI()
	v.Charts = rateCharts("q", h.ring.series(name))
	counts := map[string]int{"ready": v.Stats.Ready, "scheduled": v.Stats.Scheduled, "blocked": v.Stats.Blocked, "reserved": v.Stats.Reserved, "dead": v.Stats.Dead, "completed": v.Stats.Completed}
	for _, t := range queueTabs {
		v.Tabs = append(v.Tabs, tabLink{Key: t.Key, Label: t.Label, URL: queuePath(name) + "?tab=" + t.Key, Count: counts[t.Key], Active: t.Key == tab})
	}
	p := h.newPage(r, q, name, "queues", v)
	p.Stale = stale
	h.renderPage(w, http.StatusOK, "queue", p)
}

func parseCursor(s string) (engine.JobID, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("after: must be a job id (a whole number), got %q", s)
	}
	return engine.JobID(n), nil
}

func parseJobID(s string) (engine.JobID, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("job id: must be a positive whole number, got %q", s)
	}
	return engine.JobID(n), nil
}

func queuePath(name string) string { return "/queues/" + url.PathEscape(name) }

// --- one job or record -------------------------------------------------------

type jobView struct {
	Job     engine.Job
	Record  *engine.DeadLetterRecord // set on a dead-letter record's page
	Payload payloadView
	Custom  []customField
	Back    string // the tab the job is listed in
	// Retention is the configured retention; ExpiresAt is when the sweep
	// reclaims the record.
	Retention time.Duration
	ExpiresAt time.Time
	// Result is a completed job's result, rendered as a payload is;
	// RunTime how long its completing delivery ran (0: not recorded).
	Result  *payloadView
	RunTime time.Duration
	// Parents is the job's parents, for a job enqueued after others
	// (nil: none).
	Parents *parentsView
	// Children is the jobs still waiting for this one (nil: none).
	Children *childrenView
}

// parentsView is what the job page shows of a job's parents: the first
// maxParentRows of them, each looked up for its queue and type, and how
// many ended each way among all of them (ParentLinks only: no lookup).
type parentsView struct {
	Rows                              []parentRow
	More                              int // parents past Rows
	Total, Pending, Completed, Failed int
	// RunAnyway: the job runs whatever its parents' outcomes; else a
	// parent that does not complete cancels it.
	RunAnyway bool
	Blocked   bool
}

// parentRow is one parent: Queue and JobType are empty when the engine
// no longer holds it (acked without a kept result, or its dead-letter
// record or the job itself removed), and there is no page to link to.
// Reason is a dead parent's last failure reason, while its record is kept.
type parentRow struct {
	engine.ParentLink
	Queue, JobType, Reason string
}

// Removed: the parent was deleted or purged before it completed.
func (p parentRow) Removed() bool { return p.Ended && p.State == engine.StateUnknown }

// maxParentRows bounds the parents listed, and so the lookups of one job
// page (a batch's callback may wait for up to engine.MaxParents): as many
// as a queue tab lists jobs.
const maxParentRows = pageSize

// parentsOf builds j's parents view inside a read (nil when j has none).
func parentsOf(e engine.View, j engine.Job) *parentsView {
	if len(j.Parents) == 0 {
		return nil
	}
	v := &parentsView{Total: len(j.Parents), RunAnyway: j.RunsAfterParentFailure, Blocked: j.State == engine.StateBlocked}
	for _, p := range j.Parents {
		switch {
		case !p.Ended:
			v.Pending++
		case p.State == engine.StateCompleted:
			v.Completed++
		default:
			v.Failed++
		}
	}
	shown := j.Parents[:min(len(j.Parents), maxParentRows)]
	v.More = len(j.Parents) - len(shown)
	for _, p := range shown {
		row := parentRow{ParentLink: p}
		if pj, err := e.GetJob(p.ID); err == nil {
			row.Queue, row.JobType = pj.Queue, pj.JobType
			if p.Ended && p.State == engine.StateDead && pj.State == engine.StateDead {
				row.Reason = pj.LastReason
			}
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// childrenView is what the job page shows of the jobs waiting for it: the
// first maxChildRows of those GetJob listed, each looked up for its queue,
// type and state, and how many wait in all, so that an operator walks a
// workflow down from its first job as the parents section walks it up.
type childrenView struct {
	Rows  []childRow
	More  int // children past Rows, listed by GetJob or not
	Total int
}

// childRow is one waiting child; Queue is empty if it is no longer held
// (it cannot end within the read that listed it, but the page does not
// rely on it).
type childRow struct {
	ID                      engine.JobID
	Queue, JobType          string
	State                   engine.State
	PendingParents, Parents int
}

// maxChildRows bounds the children listed, and so the lookups of one job
// page, as maxParentRows does the parents'.
const maxChildRows = pageSize

// childrenOf builds j's children view inside a read (nil when nothing
// waits for j).
func childrenOf(e engine.View, j engine.Job) *childrenView {
	if j.WaitingChildrenTotal == 0 {
		return nil
	}
	shown := j.WaitingChildren[:min(len(j.WaitingChildren), maxChildRows)]
	v := &childrenView{Total: j.WaitingChildrenTotal, More: j.WaitingChildrenTotal - len(shown)}
	for _, id := range shown {
		row := childRow{ID: id}
		if cj, err := e.GetJob(id); err == nil {
			row.Queue, row.JobType, row.State, row.Parents = cj.Queue, cj.JobType, cj.State, len(cj.Parents)
			for _, p := range cj.Parents {
				if !p.Ended {
					row.PendingParents++
				}
			}
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

type customField struct{ Key, Value string }

func sortedCustom(m map[string]string) []customField {
	out := make([]customField, 0, len(m))
	for k, v := range m {
		out = append(out, customField{k, v})
	}
	slices.SortFunc(out, func(a, b customField) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return out
}

func (h *handler) jobPage(w http.ResponseWriter, r *http.Request, q *request) {
	name := r.PathValue("queue")
	id, err := parseJobID(r.PathValue("id"))
	if err != nil {
		h.fail(w, r, q, http.StatusBadRequest, err.Error())
		return
	}
	var v jobView
	stale, err := h.read(r.Context(), func(e engine.View) error {
		j, err := e.GetJob(id)
		if err != nil {
			return err
		}
		v = jobView{Job: j, Parents: parentsOf(e, j), Children: childrenOf(e, j)}
		if j.State == engine.StateDead {
			rec, err := e.GetDeadLetter(id)
			if err != nil {
				return err
			}
			v.Record = &rec
			v.Retention = e.Config().Limits.DeadLetterRetention
		}
		return nil
	})
	if err == nil && v.Job.Queue != name {
		err = fmt.Errorf("job %d is not on queue %q: %w", id, name, engine.ErrNotFound)
	}
	if err != nil {
		h.readFailed(w, r, q, err)
		return
	}
	if v.Record != nil {
		http.Redirect(w, r, queuePath(name)+"/dead-letters/"+strconv.FormatUint(uint64(id), 10), http.StatusSeeOther)
		return
	}
	h.renderJob(w, r, q, stale, v)
}

func (h *handler) deadLetterPage(w http.ResponseWriter, r *http.Request, q *request) {
	name := r.PathValue("queue")
	id, err := parseJobID(r.PathValue("id"))
	if err != nil {
		h.fail(w, r, q, http.StatusBadRequest, err.Error())
		return
	}
	var v jobView
	stale, err := h.read(r.Context(), func(e engine.View) error {
		rec, err := e.GetDeadLetter(id)
		if err != nil {
			return err
		}
		v = jobView{Job: rec.Job, Record: &rec, Retention: e.Config().Limits.DeadLetterRetention, Parents: parentsOf(e, rec.Job)}
		return nil
	})
	if err == nil && v.Job.Queue != name {
		err = fmt.Errorf("dead-letter record of job %d is not on queue %q: %w", id, name, engine.ErrNotFound)
	}
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			h.fail(w, r, q, http.StatusNotFound, fmt.Sprintf("There is no dead-letter record of job %d on queue %s: it was requeued, deleted, drained or swept by retention.", id, name))
			return
		}
		h.readFailed(w, r, q, err)
		return
	}
	h.renderJob(w, r, q, stale, v)
}

func (h *handler) renderJob(w http.ResponseWriter, r *http.Request, q *request, stale bool, v jobView) {
	v.Payload = renderPayload(v.Job.Payload)
	if c := v.Job.Completed; c != nil {
		res := renderPayload(c.Result)
		v.Result = &res
		if !v.Job.StartedAt.IsZero() {
			v.RunTime = c.CompletedAt.Sub(v.Job.StartedAt)
		}
	}
	v.Custom = sortedCustom(v.Job.Custom)
	tab := v.Job.State.String()
	title := fmt.Sprintf("Job %d", v.Job.ID)
	if v.Record != nil {
		tab = "dead"
		title = fmt.Sprintf("Dead letter %d", v.Job.ID)
		if v.Retention > 0 {
			v.ExpiresAt = v.Record.FailedAt.Add(v.Retention)
		}
	}
	v.Back = queuePath(v.Job.Queue) + "?tab=" + tab
	p := h.newPage(r, q, title, "queues", v)
	p.Stale = stale
	h.renderPage(w, http.StatusOK, "job", p)
}

func tail[T any](s []T, from int) []T {
	if from >= len(s) {
		return nil
	}
	return s[from:]
}
