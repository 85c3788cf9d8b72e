package engine_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// taggedEngine is traceEngine with tags on two queues, one created at
// runtime, so the fuzzer starts from a layout 14 snapshot.
func taggedEngine(t testing.TB) *engine.Engine {
	t.Helper()
	e := traceEngine(t)
	now := e.Now().Add(time.Second)
	if err := e.CreateQueue(now, engine.QueueConfig{Name: "billing", Tags: engine.TagsFromMap(map[string]string{"team": "payments", "env": "prod", "cost-center": ""})}, false); err != nil {
		t.Fatal(err)
	}
	if err := e.UpdateQueue(now, engine.QueueUpdate{Name: "a", SetTags: true, Set: engine.QueueConfig{Tags: []engine.Tag{{Key: "team", Value: "core"}}}}); err != nil {
		t.Fatal(err)
	}
	return e
}

func queueTags(t *testing.T, e *engine.Engine, name string) []engine.Tag {
	t.Helper()
	st, err := e.QueueStats(e.Now(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st.Tags
}

func TestQueueTags_CreateUpdateInherit(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := engine.New(engine.DefaultConfig())
	tags := engine.TagsFromMap(map[string]string{"team": "a", "env": "prod"})
	if err := e.CreateQueue(clock.Now(), engine.QueueConfig{Name: "q", Tags: tags}, false); err != nil {
		t.Fatal(err)
	}
	want := []engine.Tag{{Key: "env", Value: "prod"}, {Key: "team", Value: "a"}}
	if got := queueTags(t, e, "q"); !equalTags(got, want) {
		t.Fatalf("after create: %v, want %v (sorted by key)", got, want)
	}

	// An update that does not set tags leaves them.
	p := uint32(3)
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "q", Set: engine.QueueConfig{DefaultPriority: &p}}); err != nil {
		t.Fatal(err)
	}
	if got := queueTags(t, e, "q"); !equalTags(got, want) {
		t.Fatalf("after an update of another setting: %v, want %v", got, want)
	}

	// A set replaces the whole set.
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "q", SetTags: true, Set: engine.QueueConfig{Tags: []engine.Tag{{Key: "owner", Value: "x"}}}}); err != nil {
		t.Fatal(err)
	}
	if got := queueTags(t, e, "q"); !equalTags(got, []engine.Tag{{Key: "owner", Value: "x"}}) {
		t.Fatalf("after replacing: %v", got)
	}

	// Inheriting drops them; so does setting an empty set.
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "q", Inherit: []string{"tags"}}); err != nil {
		t.Fatal(err)
	}
	if got := queueTags(t, e, "q"); got != nil {
		t.Fatalf("after inherit: %v, want none", got)
	}
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "q", SetTags: true, Set: engine.QueueConfig{Tags: tags}}); err != nil {
		t.Fatal(err)
	}
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "q", SetTags: true}); err != nil {
		t.Fatal(err)
	}
	if got := queueTags(t, e, "q"); got != nil {
		t.Fatalf("after setting an empty set: %v, want none", got)
	}
}

// An update of a command before version 18 (KeepTags) neither sets tags
// nor knows "tags" in inherit, as the binaries that wrote it did not.
func TestQueueTags_KeepTags(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := engine.New(engine.DefaultConfig())
	if err := e.CreateQueue(clock.Now(), engine.QueueConfig{Name: "q"}, false); err != nil {
		t.Fatal(err)
	}
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "q", KeepTags: true, SetTags: true, Set: engine.QueueConfig{Tags: []engine.Tag{{Key: "k", Value: "v"}}}}); err != nil {
		t.Fatal(err)
	}
	if got := queueTags(t, e, "q"); got != nil {
		t.Fatalf("KeepTags set tags: %v", got)
	}
	err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "q", KeepTags: true, Inherit: []string{"tags"}})
	if !errors.Is(err, engine.ErrInvalidArgument) || !strings.Contains(err.Error(), `unknown setting "tags"`) {
		t.Fatalf("inherit tags with KeepTags: %v, want unknown setting", err)
	}
}

func TestQueueTags_Validation(t *testing.T) {
	t.Parallel()
	many := make(map[string]string)
	for i := range engine.MaxQueueTags + 1 {
		many[strings.Repeat("k", i+1)] = ""
	}
	tests := []struct {
		name  string
		tags  []engine.Tag
		field string // "" when valid
		want  string
	}{
		{"ok", []engine.Tag{{Key: "a b_c.d:e/f=g+h-i@j", Value: "anything goes ✓"}, {Key: "ünïcode", Value: ""}}, "", ""},
		{"fifty", engine.TagsFromMap(func() map[string]string {
			m := map[string]string{}
			for k := range many {
				if len(k) <= 50 {
					m[k] = ""
				}
			}
			return m
		}()), "", ""},
		{"too many", engine.TagsFromMap(many), `queues["q"].tags`, "51 tags, above the limit of 50"},
		{"empty key", []engine.Tag{{Key: "", Value: "v"}}, `queues["q"].tags[""]`, "the key is empty"},
		{"long key", []engine.Tag{{Key: strings.Repeat("k", 129)}}, `queues["q"].tags[`, "129 bytes, above the limit of 128"},
		{"long value", []engine.Tag{{Key: "k", Value: strings.Repeat("v", 257)}}, `queues["q"].tags["k"]`, "257 bytes, above the limit of 256"},
		{"bad char", []engine.Tag{{Key: "a*b"}}, `queues["q"].tags["a*b"]`, `holds '*'`},
		{"bad utf8", []engine.Tag{{Key: "k", Value: "\xff"}}, `queues["q"].tags["k"]`, "not valid UTF-8"},
		{"unsorted", []engine.Tag{{Key: "b"}, {Key: "a"}}, `queues["q"].tags`, "not sorted"},
		{"twice", []engine.Tag{{Key: "a"}, {Key: "a"}}, `queues["q"].tags`, "not sorted by key, or key \"a\" twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := engine.New(engine.DefaultConfig())
			err := e.CreateQueue(time.Unix(1, 0), engine.QueueConfig{Name: "q", Tags: tt.tags}, false)
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *engine.FieldError
			if !errors.As(err, &fe) || !errors.Is(err, engine.ErrInvalidArgument) || !strings.HasPrefix(fe.Field, tt.field) || !strings.Contains(fe.Reason, tt.want) {
				t.Fatalf("got %v, want InvalidArgument on %s: ...%s...", err, tt.field, tt.want)
			}
		})
	}
}

func TestQueueTags_Filter(t *testing.T) {
	t.Parallel()
	tags := []engine.Tag{{Key: "env", Value: "prod"}, {Key: "team", Value: "a=b"}}
	for _, tt := range []struct {
		terms []string
		want  bool
	}{
		{nil, true},
		{[]string{"env"}, true},
		{[]string{"env=prod"}, true},
		{[]string{"env=dev"}, false},
		{[]string{"env="}, false}, // the empty value, not any value
		{[]string{"team=a=b"}, true},
		{[]string{"env=prod", "team"}, true},
		{[]string{"env=prod", "owner"}, false},
	} {
		var f []engine.TagFilter
		for _, s := range tt.terms {
			tf, err := engine.ParseTagFilter(s)
			if err != nil {
				t.Fatal(err)
			}
			f = append(f, tf)
		}
		if got := engine.MatchTags(tags, f); got != tt.want {
			t.Errorf("%q: %v, want %v", tt.terms, got, tt.want)
		}
	}
	if _, err := engine.ParseTagFilter("=v"); !errors.Is(err, engine.ErrInvalidArgument) {
		t.Fatalf("a term without a key: %v, want InvalidArgument", err)
	}
}

// Tags survive a snapshot, which is written in layout 14 only while a queue
// has them: once dropped, the state is written as an older binary writes it.
func TestQueueTags_Snapshot(t *testing.T) {
	t.Parallel()
	e := taggedEngine(t)
	data := snapshotBytes(t, e)
	if data[8] != 14 {
		t.Fatalf("layout %d, want 14", data[8])
	}
	r := engine.New(engine.DefaultConfig())
	if err := r.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != e.Digest() {
		t.Fatal("restored state differs")
	}
	if got := queueTags(t, r, "billing"); !equalTags(got, []engine.Tag{{Key: "cost-center"}, {Key: "env", Value: "prod"}, {Key: "team", Value: "payments"}}) {
		t.Fatalf("restored tags: %v", got)
	}
	now := e.Now()
	for _, name := range []string{"a", "billing"} {
		if err := e.UpdateQueue(now, engine.QueueUpdate{Name: name, Inherit: []string{"tags"}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := snapshotBytes(t, e)[8]; got != 13 {
		t.Fatalf("layout %d without tags, want 13 (the trace engine's)", got)
	}
}

func equalTags(a, b []engine.Tag) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
