package integration

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// seppBinary is the static sepp binary TestMain builds once for every test
// (the containers run the same file).
var seppBinary string

// repoRoot is the module root (deploy/ and the Makefile live there).
var repoRoot string

func TestMain(m *testing.M) {
	if d, err := time.ParseDuration(os.Getenv(busyLoopEnv)); err == nil {
		busyLoop(d) // a CPU hog child of elections_test.go, not a test run
		os.Exit(0)
	}
	flag.Parse()
	if testing.Short() {
		fmt.Println("integration: skipped under -short (real processes and containers)")
		os.Exit(m.Run())
	}
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Dir(filepath.Dir(file))
	dir, err := os.MkdirTemp("", "sepp-integration-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	seppBinary = filepath.Join(dir, "sepp")
	// Static, so the same file runs FROM scratch in the containers.
	build := exec.Command("go", "build", "-o", seppBinary, "./cmd/sepp")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("build sepp: %w\n%s", err, out)
	}
	code := m.Run()
	removeImage()
	printSummary()
	return code, nil
}

// requireLong skips t under -short.
func requireLong(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("real processes: skipped under -short")
	}
}

// figures collects every fault's `name: value unit` lines for the summary
// printed after the run.
var figures struct {
	sync.Mutex
	lines []string
}

// report logs one figure on t and keeps it for the summary.
func report(t *testing.T, name string, value any, unit string) {
	t.Helper()
	line := fmt.Sprintf("%s: %v %s", name, value, unit)
	t.Log(line)
	figures.Lock()
	figures.lines = append(figures.lines, line)
	figures.Unlock()
}

func printSummary() {
	figures.Lock()
	defer figures.Unlock()
	if len(figures.lines) == 0 {
		return
	}
	fmt.Println("== fault summary")
	fmt.Println(strings.Join(figures.lines, "\n"))
}
