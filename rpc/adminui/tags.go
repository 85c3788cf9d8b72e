package adminui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
)

// Queue tags in the UI: chips on the Queues list and the queue page, a
// filter of the list by tag (the terms ListQueues takes: key=value or key,
// every one must match), and the tags in the New queue form and the queue
// page's Tags form, one key=value per line.

// tagFilterView is the Queues list's tag filter as the page shows it.
type tagFilterView struct {
	Terms []tagTerm
	// Error says why a term was not understood; the list is then unfiltered.
	Error string
}

// tagTerm is one term with the URL of the list without it.
type tagTerm struct {
	Text      string
	RemoveURL string
}

// tagChip is one tag as a chip: its text and the URL of the Queues list
// filtered by it (added to the terms already in force).
type tagChip struct {
	Key, Value string
	FilterURL  string
}

// parseTagFilter reads the tag terms of the Queues list's URL: each tag
// parameter is one term. An empty term (the filter's input left empty) is
// skipped.
func parseTagFilter(q url.Values) ([]string, []engine.TagFilter, error) {
	var terms []string
	var filter []engine.TagFilter
	for _, t := range q["tag"] {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		f, err := engine.ParseTagFilter(t)
		if err != nil {
			var fe *engine.FieldError
			if errors.As(err, &fe) {
				return nil, nil, fmt.Errorf("the tag filter %q is not understood: %s", t, fe.Reason)
			}
			return nil, nil, err
		}
		terms = append(terms, t)
		filter = append(filter, f)
	}
	return terms, filter, nil
}

// queuesURL is the Queues list filtered by terms.
func queuesURL(terms []string) string {
	if len(terms) == 0 {
		return "/queues"
	}
	v := url.Values{"tag": terms}
	return "/queues?" + v.Encode()
}

func tagFilterViewOf(terms []string) tagFilterView {
	var v tagFilterView
	for i, t := range terms {
		rest := append(append([]string{}, terms[:i]...), terms[i+1:]...)
		v.Terms = append(v.Terms, tagTerm{Text: t, RemoveURL: queuesURL(rest)})
	}
	return v
}

// chipsOf is tags as chips, each linking to the list filtered by it too.
func chipsOf(tags []engine.Tag, terms []string) []tagChip {
	out := make([]tagChip, 0, len(tags))
	for _, t := range tags {
		term := t.Key + "=" + t.Value
		with := terms
		if !slices.Contains(terms, term) {
			with = append(append([]string{}, terms...), term)
		}
		out = append(out, tagChip{Key: t.Key, Value: t.Value, FilterURL: queuesURL(with)})
	}
	return out
}

// tagsText is tags as the forms write them: key=value, one per line.
func tagsText(tags []engine.Tag) string {
	var b strings.Builder
	for _, t := range tags {
		b.WriteString(t.Key + "=" + t.Value + "\n")
	}
	return b.String()
}

// readTags reads a form's tags field, one key=value per line (a line
// without '=' is a key with an empty value; blank lines are skipped), and
// says what it could not accept. The engine checks the tags again.
func readTags(text string) ([]engine.Tag, []string) {
	m := map[string]string{}
	var bad []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if reason := engine.CheckTag(k, v); reason != "" {
			bad = append(bad, fmt.Sprintf("tag %q: %s", line, reason))
			continue
		}
		if _, dup := m[k]; dup {
			bad = append(bad, fmt.Sprintf("tag %q is given twice", k))
			continue
		}
		m[k] = v
	}
	if len(m) > engine.MaxQueueTags {
		bad = append(bad, fmt.Sprintf("%d tags, above the limit of %d", len(m), engine.MaxQueueTags))
	}
	return engine.TagsFromMap(m), bad
}

// setTags reads the queue page's Tags form: the form holds the whole set,
// so it replaces the queue's tags (empty: none).
func (h *handler) setTags(w http.ResponseWriter, r *http.Request, q *request) {
	queue := r.PathValue("queue")
	tags, bad := readTags(r.PostForm.Get("tags"))
	u := engine.QueueUpdate{Name: queue, SetTags: true, Set: engine.QueueConfig{Tags: tags}}
	h.perform(w, r, q, action{name: "set-tags", queue: queue, back: backTo(r, queuePath(queue)), run: func(ctx context.Context) (flash, error) {
		if len(bad) > 0 {
			return flash{Kind: "error", Text: "The tags were not changed: " + strings.Join(bad, "; ") + "."}, nil
		}
		if _, err := rpc.Propose(ctx, h.backend, engine.UpdateQueueOp{Update: u}); err != nil {
			return flash{}, err
		}
		if len(tags) == 0 {
			return flash{Kind: "ok", Text: "Removed the tags of queue " + queue + "."}, nil
		}
		return flash{Kind: "ok", Text: fmt.Sprintf("Set %d tags on queue %s.", len(tags), queue)}, nil
	}})
}
