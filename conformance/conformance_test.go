package conformance_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// The server configuration every runner uses: dead letters are kept, so
// that the scenarios can read and act on them.
const serverConfig = "[storage]\ndead_letter_retention_ms = 3600000\n"

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

// startServer runs `sepp serve` as a cluster of one on free loopback
// ports, its data under t.TempDir, and stops it when the test ends.
func startServer(t *testing.T) string {
	t.Helper()
	bin := seppBinary(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "sepp.toml")
	if err := os.WriteFile(config, []byte(serverConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		ports := freePorts(t, 3)
		addr, httpAddr := "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1]
		var out bytes.Buffer
		cmd := exec.Command(bin, "serve", "--config", config, "--data-dir", filepath.Join(dir, fmt.Sprint("data", attempt)),
			"--grpc-addr", addr, "--http-addr", httpAddr, "--raft-addr", "127.0.0.1:"+ports[2])
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		err := waitReady(httpAddr, exited)
		if err == nil {
			t.Cleanup(stop)
			return addr
		}
		stop()
		if !strings.Contains(out.String(), "address already in use") || attempt == 3 {
			t.Fatalf("sepp serve: %v\n%s", err, out.String())
		}
	}
}

func waitReady(httpAddr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	hc := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("exited before it was ready")
		default:
		}
		if r, err := hc.Get("http://" + httpAddr + "/readyz"); err == nil {
			_ = r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready within 30 s")
}

func freePorts(t *testing.T, n int) []string {
	t.Helper()
	ports := make([]string, n)
	for i := range ports {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer lis.Close()
		_, ports[i], _ = net.SplitHostPort(lis.Addr().String())
	}
	return ports
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
