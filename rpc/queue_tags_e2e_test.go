package rpc_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

func tagsOf(m map[string]string) *seppv1.QueueTags { return &seppv1.QueueTags{Tags: m} }

// Queue tags through the AdminService: CreateQueue sets them, GetQueue and
// ListQueues show them, a present QueueTags replaces the whole set on
// update (an empty one drops them, as inherit does), an absent one leaves
// them, and ListQueues' tag filter keeps the queues matching every term.
func TestQueueTags_ThroughTheAPI(t *testing.T) {
	env := start(t, nil)
	ctx := ctxT(t)
	for name, tags := range map[string]map[string]string{
		"billing": {"team": "payments", "env": "prod"},
		"emails":  {"team": "growth", "env": "prod"},
		"scratch": {"env": "dev"},
		"plain":   nil,
	} {
		s := &seppv1.QueueSettings{}
		if tags != nil {
			s.Tags = tagsOf(tags)
		}
		if _, err := env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: name, Settings: s}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := env.Admin.GetQueue(ctx, &seppv1.GetQueueRequest{Name: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"team": "payments", "env": "prod"}; !maps.Equal(got.GetSettings().GetTags().GetTags(), want) || !maps.Equal(got.GetSummary().GetTags(), want) {
		t.Fatalf("GetQueue tags: settings %v, summary %v, want %v", got.GetSettings().GetTags(), got.GetSummary().GetTags(), want)
	}
	if got, _ := env.Admin.GetQueue(ctx, &seppv1.GetQueueRequest{Name: "plain"}); got.GetSettings().Tags != nil {
		t.Fatalf("an untagged queue's settings carry tags %v", got.GetSettings().Tags)
	}

	list := func(terms ...string) []string {
		t.Helper()
		res, err := env.Admin.ListQueues(ctx, &seppv1.ListQueuesRequest{Tag: terms})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, q := range res.GetQueues() {
			names = append(names, q.GetName())
		}
		slices.Sort(names)
		return names
	}
	for _, tt := range []struct {
		terms []string
		want  []string
	}{
		{nil, []string{"billing", "emails", "plain", "scratch"}},
		{[]string{"env=prod"}, []string{"billing", "emails"}},
		{[]string{"team"}, []string{"billing", "emails"}},
		{[]string{"env=prod", "team=growth"}, []string{"emails"}},
		{[]string{"env=staging"}, nil},
	} {
		if got := list(tt.terms...); !slices.Equal(got, tt.want) {
			t.Errorf("ListQueues tag %q: %v, want %v", tt.terms, got, tt.want)
		}
	}

	// An update of another setting leaves the tags; a set replaces them.
	if _, err := env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "billing", Settings: &seppv1.QueueSettings{MaxLength: u64(10)}}); err != nil {
		t.Fatal(err)
	}
	if got := list("team=payments"); !slices.Equal(got, []string{"billing"}) {
		t.Fatalf("after an update of another setting: %v", got)
	}
	if _, err := env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "billing", Settings: &seppv1.QueueSettings{Tags: tagsOf(map[string]string{"owner": "ops"})}}); err != nil {
		t.Fatal(err)
	}
	if got := list("team"); !slices.Equal(got, []string{"emails"}) {
		t.Fatalf("after replacing billing's tags, team: %v", got)
	}
	if got := list("owner=ops"); !slices.Equal(got, []string{"billing"}) {
		t.Fatalf("after replacing billing's tags, owner=ops: %v", got)
	}
	if _, err := env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "billing", Inherit: []string{"tags"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "emails", Settings: &seppv1.QueueSettings{Tags: tagsOf(nil)}}); err != nil {
		t.Fatal(err)
	}
	if got := list("env=prod"); got != nil {
		t.Fatalf("after dropping the tags: %v", got)
	}

	_, err = env.Admin.ListQueues(ctx, &seppv1.ListQueuesRequest{Tag: []string{"env", "=x"}})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "tag[1]", "key=value or key")
}

// Bad tags are InvalidArgument naming the tag as the request spells it and
// the limit it broke, and change nothing. (Invalid UTF-8 cannot reach the
// server: protobuf refuses a string field holding it; the engine's own
// check covers the config file.)
func TestQueueTags_Validation(t *testing.T) {
	env := start(t, nil)
	ctx := ctxT(t)
	if _, err := env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "q", Settings: &seppv1.QueueSettings{Tags: tagsOf(map[string]string{"keep": "me"})}}); err != nil {
		t.Fatal(err)
	}
	fifty := map[string]string{}
	for i := range 51 {
		fifty[strings.Repeat("k", i+1)] = "v"
	}
	tests := []struct {
		name         string
		tags         map[string]string
		field, limit string
	}{
		{"TooMany", fifty, "settings.tags.tags", "50"},
		{"BadKeyChar", map[string]string{"bad key!": "v"}, `settings.tags.tags["bad key!"]`, "letters, digits, spaces"},
		{"EmptyKey", map[string]string{"": "v"}, `settings.tags.tags[""]`, "1..128 bytes"},
		{"LongKey", map[string]string{strings.Repeat("k", 129): ""}, `settings.tags.tags["` + strings.Repeat("k", 129) + `"]`, "above the limit of 128"},
		{"LongValue", map[string]string{"k": strings.Repeat("v", 257)}, `settings.tags.tags["k"]`, "above the limit of 256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "q", Settings: &seppv1.QueueSettings{Tags: tagsOf(tt.tags)}})
			requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), tt.field, tt.limit)
			got, err := env.Admin.GetQueue(ctx, &seppv1.GetQueueRequest{Name: "q"})
			if err != nil || !maps.Equal(got.GetSettings().GetTags().GetTags(), map[string]string{"keep": "me"}) {
				t.Fatalf("a refused update changed the tags: %v (%v)", got.GetSettings().GetTags(), err)
			}
			_, err = env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "new", Settings: &seppv1.QueueSettings{Tags: tagsOf(tt.tags)}})
			requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), tt.field, tt.limit)
		})
	}
}
