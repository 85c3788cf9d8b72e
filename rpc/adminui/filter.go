package adminui

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/sepp-io/sepp/engine"
)

// A filter narrows a queue tab's list: by job type, one custom field
// (key=value, or key alone for "has the key"), a substring of the last
// failure reason, and on the dead-letter tab the cause. Filtering reads the
// tab's jobs on this node; it stops after maxScan of them and says so.
const (
	maxScan       = 100_000
	scanChunk     = 1000
	maxFilterText = 256
	// maxMatchAct bounds an "act on all matching": the actions run in
	// chunks of maxSelected ids, one Raft entry each.
	maxMatchAct = 10_000
)

type jobFilter struct {
	Type   string
	Field  string // "key=value" or "key"
	Reason string
	Cause  engine.Cause
	State  string // the tab, carried for links
}

func (f jobFilter) active() bool {
	return f.Type != "" || f.Field != "" || f.Reason != "" || f.Cause != engine.CauseUnknown
}

// Query is the filter's part of a URL (no leading "&").
func (f jobFilter) Query() string {
	v := url.Values{}
	if f.Type != "" {
		v.Set("type", f.Type)
	}
	if f.Field != "" {
		v.Set("field", f.Field)
	}
	if f.Reason != "" {
		v.Set("reason", f.Reason)
	}
	if f.Cause != engine.CauseUnknown {
		v.Set("cause", f.Cause.String())
	}
	return v.Encode()
}

func (f jobFilter) CauseName() string {
	if f.Cause == engine.CauseUnknown {
		return ""
	}
	return f.Cause.String()
}

func parseFilter(v url.Values) (jobFilter, error) {
	f := jobFilter{
		Type:   strings.TrimSpace(v.Get("type")),
		Field:  strings.TrimSpace(v.Get("field")),
		Reason: v.Get("reason"),
	}
	for name, s := range map[string]string{"type": f.Type, "field": f.Field, "reason": f.Reason} {
		if len(s) > maxFilterText {
			return f, fmt.Errorf("%s: at most %d bytes, got %d", name, maxFilterText, len(s))
		}
	}
	if c := v.Get("cause"); c != "" {
		found := false
		for _, k := range engine.Causes() {
			if k.String() == c {
				f.Cause, found = k, true
			}
		}
		if !found {
			return f, fmt.Errorf("cause: not a dead-letter cause: %q", c)
		}
	}
	return f, nil
}

func (f jobFilter) matchJob(j engine.Job) bool {
	if f.Type != "" && j.JobType != f.Type {
		return false
	}
	if f.Field != "" {
		k, val, hasVal := strings.Cut(f.Field, "=")
		got, ok := j.Custom[k]
		if !ok || (hasVal && got != val) {
			return false
		}
	}
	if f.Reason != "" && !strings.Contains(j.LastReason, f.Reason) {
		return false
	}
	return true
}

func (f jobFilter) matchRecord(r engine.DeadLetterRecord) bool {
	if f.Cause != engine.CauseUnknown && r.Cause != f.Cause {
		return false
	}
	if f.Reason != "" && !strings.Contains(r.LastReason, f.Reason) {
		return false
	}
	g := f
	g.Reason = ""
	return g.matchJob(r.Job)
}

// redriveSelection is the filter as a redrive task's selection; ok is
// false when the filter has a part a selection cannot express (a custom
// field).
func (f jobFilter) redriveSelection(queue string) (engine.RedriveSelection, bool) {
	return engine.RedriveSelection{Queue: queue, Cause: f.Cause, JobType: f.Type, ReasonContains: f.Reason}, f.Field == ""
}

// scanned is what a filtered read found.
type scanned struct {
	Jobs      []engine.Job
	Records   []engine.DeadLetterRecord
	Matched   int  // matches found (all of them unless Truncated)
	Scanned   int  // jobs or records looked at
	Truncated bool // maxScan reached before the end of the tab
}

// scan reads a tab's jobs (Ready in hand-out order) and keeps those f
// matches, up to keep of them (all are counted). It runs inside a read.
func scan(e engine.View, queue string, state engine.State, f jobFilter, keep int) (scanned, error) {
	var s scanned
	add := func(j engine.Job) {
		if f.matchJob(j) {
			s.Matched++
			if len(s.Jobs) < keep {
				s.Jobs = append(s.Jobs, j)
			}
		}
	}
	switch state {
	case engine.StateDead:
		var after engine.JobID
		for s.Scanned < maxScan {
			recs, err := e.ListDeadLetters(queue, engine.Page{AfterID: after, Limit: scanChunk})
			if err != nil {
				return s, err
			}
			for _, r := range recs {
				s.Scanned++
				if f.matchRecord(r) {
					s.Matched++
					if len(s.Records) < keep {
						s.Records = append(s.Records, r)
					}
				}
			}
			if len(recs) < scanChunk {
				return s, nil
			}
			after = recs[len(recs)-1].Job.ID
		}
	case engine.StateReady:
		for s.Scanned < maxScan {
			js, err := e.ListReadyInOrder(queue, s.Scanned, scanChunk)
			if err != nil {
				return s, err
			}
			for _, j := range js {
				s.Scanned++
				add(j)
			}
			if len(js) < scanChunk {
				return s, nil
			}
		}
	default:
		var after engine.JobID
		for s.Scanned < maxScan {
			js, err := e.ListJobs(queue, state, engine.Page{AfterID: after, Limit: scanChunk})
			if err != nil {
				return s, err
			}
			for _, j := range js {
				s.Scanned++
				add(j)
			}
			if len(js) < scanChunk {
				return s, nil
			}
			after = js[len(js)-1].ID
		}
	}
	s.Truncated = true
	return s, nil
}

func parseOffset(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxScan {
		return 0, fmt.Errorf("offset: must be a whole number 0..%d, got %q", maxScan, s)
	}
	return n, nil
}
