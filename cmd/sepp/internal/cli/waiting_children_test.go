package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// `sepp jobs get` of a fan-out job prints the jobs still waiting for it
// on one waiting_children line; a job nothing waits for has no such line.
func TestCLI_JobsGetPrintsWaitingChildren(t *testing.T) {
	addr := startServer(t)
	ctx, c := clientOf(t, addr)
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

// `sepp jobs get --json` carries what a script needs of a workflow: a
// parent's waiting children, then its result and run time once completed
// (which the text form shows too), and a child's parents with their
// outcome, kept result and policy.
func TestCLI_JobsGetJSONShowsAWorkflow(t *testing.T) {
	addr := startServer(t)
	ctx, c := clientOf(t, addr)
	hour := time.Hour
	if _, err := c.CreateQueue(ctx, "video", client.QueueSettings{CompletedRetention: &hour}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnqueueBatch(ctx, []*client.EnqueueRequest{
		client.NewEnqueueRequest("video", "plan"),
		client.NewEnqueueRequest("video", "render").WithAfter(0).WithOnParentFailure(client.ParentFailureRun),
	}); err != nil {
		t.Fatal(err)
	}

	parent := decode[map[string]any](t, mustRun(t, addr, "jobs", "get", "1", "--json"))
	if got := fmt.Sprint(parent["waiting_children"], " ", parent["waiting_children_total"]); got != "[2] 1" {
		t.Errorf("parent's waiting_children and total = %s, want [2] 1: %v", got, parent)
	}
	ds, err := c.Reserve(ctx, "video", client.ReserveOptions{Max: 1})
	if err != nil || len(ds) != 1 {
		t.Fatalf("reserve: %v %v", ds, err)
	}
	if err := c.AckWithResult(ctx, ds[0].Ctx, []byte("3 scenes")); err != nil {
		t.Fatal(err)
	}

	parent = decode[map[string]any](t, mustRun(t, addr, "jobs", "get", "1", "--json"))
	if parent["result"] != "3 scenes" || parent["completed_at"] == nil || parent["run_time_ms"] == nil || parent["waiting_children"] != nil {
		t.Errorf("completed parent: result, completed_at, run_time_ms and no waiting_children wanted: %v", parent)
	}
	if out := mustRun(t, addr, "jobs", "get", "1"); !strings.Contains(out, "result") || !strings.Contains(out, "3 scenes") || !strings.Contains(out, "completed_at") {
		t.Errorf("jobs get of the completed parent lacks its result or completed_at:\n%s", out)
	}
	child := decode[map[string]any](t, mustRun(t, addr, "jobs", "get", "2", "--json"))
	parents, _ := child["parents"].([]any)
	if len(parents) != 1 || child["on_parent_failure"] != "run" {
		t.Fatalf("child's parents and policy: %v", child)
	}
	p := parents[0].(map[string]any)
	if p["job_id"] != float64(1) || p["state"] != "completed" || p["ended"] != true || p["result_kept"] != true || p["result"] != "3 scenes" {
		t.Errorf("child's parent = %v, want job 1 completed, ended, its result kept and shown", p)
	}
}

// clientOf is a Go client of the test server at addr and a context that
// bounds the test's calls, both ended by the test's cleanup.
func clientOf(t *testing.T, addr string) (context.Context, *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := client.New(ctx, []string{addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return ctx, c
}
