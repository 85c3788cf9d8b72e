package conformance_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/devcluster"
)

// TestScenarios runs every scenario of scenarios/ with the Go client
// against one `sepp serve` node; each scenario has queue names of its own.
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sepp serve process")
	}
	scenarios, names, err := loadScenarios("scenarios")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no scenarios in scenarios/")
	}
	c := connect(t, startServer(t))
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			run := fmt.Sprintf("go-%s-%d", name, time.Now().UnixNano())
			if err := runScenario(ctx, newGoDriver(c), scenarios[name], run); err != nil {
				t.Fatalf("%s: %v", scenarios[name].Description, err)
			}
		})
	}
}

// TestRunnerReportsMismatch holds the runner to failing: a scenario whose
// expectation is wrong, or whose expected error does not come, must be
// reported with the step and what differed.
func TestRunnerReportsMismatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sepp serve process")
	}
	c := connect(t, startServer(t))
	cases := map[string]struct {
		steps string
		want  string
	}{
		"WrongResultField": {
			steps: `[{"op": "enqueue", "args": {"queue": "${run}-q", "job_type": "t"}},
				{"op": "reserve", "args": {"queue": "${run}-q"}, "expect": {"jobs": [{"job_type": "not-t"}]}}]`,
			want: `step 2 (reserve): result.jobs[0].job_type: expected "not-t", got "t"`,
		},
		"WrongLength": {
			steps: `[{"op": "reserve", "args": {"queue": "${run}-q"}, "expect": {"jobs": [{"job_type": "t"}]}}]`,
			want:  `step 1 (reserve): result.jobs: expected 1 elements, got 0`,
		},
		"ErrorThatDoesNotCome": {
			steps: `[{"op": "create_queue", "args": {"name": "${run}-q"}, "error": {"kind": "already_exists"}}]`,
			want:  `step 1 (create_queue): expected error already_exists, got result`,
		},
		"OtherError": {
			steps: `[{"op": "get_job", "args": {"job_id": 999999999}, "error": {"kind": "wrong_state"}}]`,
			want:  `step 1 (get_job): expected error wrong_state, got not_found`,
		},
		"UnexpectedError": {
			steps: `[{"op": "get_job", "args": {"job_id": 999999999}}]`,
			want:  `step 1 (get_job): unexpected error: not_found`,
		},
		"NotWithin": {
			steps: `[{"op": "reserve", "args": {"queue": "${run}-q"}, "within_ms": 300, "expect": {"jobs": [{"job_type": "t"}]}}]`,
			want:  `step 1 (reserve): not within 300 ms: result.jobs: expected 1 elements, got 0`,
		},
		"UnknownOp": {
			steps: `[{"op": "enqueue_many", "args": {}}]`,
			want:  `step 1 (enqueue_many): unknown op "enqueue_many"`,
		},
		"UnknownVariable": {
			steps: `[{"op": "get_job", "args": {"job_id": "${nothing}"}}]`,
			want:  `step 1 (get_job): unknown variable ${nothing}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var sc scenario
			if err := jsonUnmarshal(`{"description": "bad", "steps": `+tc.steps+`}`, &sc); err != nil {
				t.Fatal(err)
			}
			err := runScenario(context.Background(), newGoDriver(c), sc, fmt.Sprintf("go-bad-%s-%d", name, time.Now().UnixNano()))
			if err == nil {
				t.Fatal("the runner passed a scenario that must fail")
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got  %v\nwant %s...", err, tc.want)
			}
		})
	}
}

func connect(t *testing.T, addr string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// startServer runs `sepp serve` as a cluster of one (devcluster, the
// package the integration tests and `sepp dev` start nodes with), its data
// under t.TempDir, and stops it when the test ends.
func startServer(t *testing.T) string {
	t.Helper()
	// Dead letters are kept, as every runner's server keeps them, so that
	// the scenarios can read and act on them.
	dc, err := devcluster.Start(devcluster.Options{Binary: seppBinary(t), Nodes: 1, Dir: t.TempDir(), DeadLetterRetention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dc.Stop() })
	if err := waitReady(dc.Nodes[0].HTTPAddr, 30*time.Second); err != nil {
		t.Fatalf("sepp serve: %v (log: %s)", err, filepath.Join(dc.Nodes[0].Dir, "sepp.log"))
	}
	return dc.Nodes[0].GRPCAddr
}

// waitReady waits until the node's /readyz answers 200: it leads and has
// applied what it committed, so the first step finds a serving node.
func waitReady(httpAddr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	hc := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		if r, err := hc.Get("http://" + httpAddr + "/readyz"); err == nil {
			_ = r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready within %v", within)
}

var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// seppBinary is $SEPP_BIN, or sepp built from this checkout once per run.
func seppBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("SEPP_BIN"); bin != "" {
		return bin
	}
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "sepp-conformance-")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "sepp")
		cmd := exec.Command("go", "build", "-o", built.path, "../cmd/sepp")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ../cmd/sepp: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// TestMain removes the binary seppBinary built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}
