package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// `sepp jobs get` of a fan-out job prints the jobs still waiting for it
// on one waiting_children line; a job nothing waits for has no such line.
func TestCLI_JobsGetPrintsWaitingChildren(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.EnqueueBatch(ctx, []*client.EnqueueRequest{
		client.NewEnqueueRequest("video", "plan"),
		client.NewEnqueueRequest("render", "render").WithAfter(0),
		client.NewEnqueueRequest("render", "render").WithAfter(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
	}
	if out := mustRun(t, addr, "jobs", "get", "1"); !strings.Contains(out, "waiting_children") || !strings.Contains(out, "2 3\n") {
		t.Errorf("jobs get of the parent lacks its waiting children 2 3:\n%s", out)
	}
	if out := mustRun(t, addr, "jobs", "get", "2"); strings.Contains(out, "waiting_children") {
		t.Errorf("jobs get of a child shows waiting children:\n%s", out)
	}
}

func TestWaitingChildrenText(t *testing.T) {
	for _, tc := range []struct {
		ids   []uint64
		total int
		want  string
	}{
		{[]uint64{7}, 1, "7"},
		{[]uint64{7, 9}, 2, "7 9"},
		{[]uint64{7, 9}, 130, "7 9 and 128 more"},
	} {
		if got := waitingChildrenText(tc.ids, tc.total); got != tc.want {
			t.Errorf("waitingChildrenText(%v, %d) = %q, want %q", tc.ids, tc.total, got, tc.want)
		}
	}
}
