package fsm

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/store"
)

// A disk that starts refusing the payload store's table writes stops the
// node: the process exits naming the failure, instead of its apply
// blocking behind a flush that Pebble retries forever. The child process
// (this test binary again) applies 4 KiB enqueues until it dies.
func TestPayloadStoreFailureStopsTheNode(t *testing.T) {
	if os.Getenv("SEPP_FSM_STORE_FAILURE_CHILD") == "1" {
		storeFailureChild(t)
		return
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPayloadStoreFailureStopsTheNode$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SEPP_FSM_STORE_FAILURE_CHILD=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("the node went on applying over a failing store:\n%s", out.String())
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		if err := <-done; err == nil {
			t.Log("the child ended cleanly as it was killed")
		}
		t.Fatalf("the node neither stopped nor finished within 2 minutes (its apply hung behind the failing store):\n%s", out.String())
	}
	if msg := "fsm: payload store failed, stopping the node"; !strings.Contains(out.String(), msg) {
		t.Fatalf("the node stopped without saying %q:\n%s", msg, out.String())
	}
}

func storeFailureChild(t *testing.T) {
	t.Helper()
	var failing atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failing.Load() && strings.HasSuffix(op.Path, ".sst") && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return errorfs.ErrInjected
		}
		return nil
	}))
	f, err := Open(Config{
		Engine:       engine.Config{Limits: engine.DefaultLimits()},
		PayloadDir:   "payloads",
		PayloadStore: store.Options{FS: fs, MemTableBytes: 256 << 10, CacheBytes: 1 << 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	payload := bytes.Repeat([]byte{'x'}, 4<<10)
	for i := range 4096 {
		applyEntry(t, f, uint64(i+1), stamped(t0, EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: payload})))
	}
	t.Log("applied every entry over a failing store")
}
