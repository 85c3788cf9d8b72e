package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
)

// mountSmallTmpfs mounts a tmpfs of size bytes on a fresh directory and
// unmounts it at cleanup. Where mounting is not permitted (not root, no
// CAP_SYS_ADMIN) the test is skipped with the reason, or fails when
// SEPP_REQUIRE_ALL is set, so CI cannot silently lose it.
func mountSmallTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		reason := fmt.Sprintf("cannot mount a %d-byte tmpfs on %s (needs root or CAP_SYS_ADMIN): %v", size, dir, err)
		if os.Getenv("SEPP_REQUIRE_ALL") != "" {
			t.Fatal(reason + "; SEPP_REQUIRE_ALL is set")
		}
		t.Skip(reason)
	}
	// Registered before the node's cleanup, so it runs after the node has
	// closed its files.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// lockedLog passes a node's log lines to t.Log (shown only when the test
// fails) until close.
type lockedLog struct {
	t      *testing.T
	mu     sync.Mutex
	closed bool
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (l *lockedLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
}

// fillFilesystem writes a filler file in dir until the filesystem refuses
// with ENOSPC, and returns its path.
func fillFilesystem(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v, want ENOSPC", dir, err)
			}
			break
		}
	}
	// The last partial page too: write single bytes until nothing fits.
	for {
		if _, err := f.Write(chunk[:1]); err != nil {
			break
		}
	}
	return path
}

// TestDiskFullRefusesWritesAndRecovers puts a single node's data directory
// on a 16 MiB tmpfs, fills the filesystem, and checks that enqueues are
// refused promptly with an error naming the full disk (not success, not a
// hang), and that once space returns writes succeed again with every job
// acknowledged before, during and after the episode intact.
func TestDiskFullRefusesWritesAndRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs and runs a node (-short)")
	}
	mnt := mountSmallTmpfs(t, 16<<20)
	dataDir := filepath.Join(mnt, "data")

	cfg := clustertest.TestConfig()
	cfg.NodeID = "n0"
	cfg.DataDir = dataDir
	_, cfg.Transport = raft.NewInmemTransport("")
	cfg.SnapshotThreshold = 1 << 20 // no snapshot in the middle of the episode
	cfg.WALSegmentSize = 1 << 20    // the default 64 MiB would not fit the tmpfs
	logs := &lockedLog{t: t}
	t.Cleanup(logs.close) // after the node's cleanup below
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
	node, err := cluster.NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := node.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})

	payload := func(i int) []byte {
		return bytes.Repeat([]byte{byte(i)}, 48<<10) // big enough that bolt needs new pages
	}
	// Every attempt has its own idempotency key: were a refused enqueue
	// secretly applied, its retry would make a second job, which the final
	// reserve would find unacknowledged.
	attempts := 0
	enqueue := func(i int) (engine.JobID, error) {
		attempts++
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := cluster.Do(ctx, node, engine.EnqueueOp{Params: engine.EnqueueParams{
			Queue: "q", JobType: "t", Payload: payload(i), IdempotencyKey: fmt.Sprint("attempt-", attempts),
		}})

		return res.JobID, err
	}
	acked := map[engine.JobID]int{} // job id -> payload seed

	// waitEnqueue retries job i until it is accepted: at start while the
	// node elects itself, and after the disk is freed.
	waitEnqueue := func(i int, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			id, err := enqueue(i)
			if err == nil {
				acked[id] = i
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("enqueue %d still failing after %s: %v", i, within, err)
			}
			select {
			case <-node.Applied():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}

	next := 0
	waitEnqueue(next, 10*time.Second)
	for next = 1; next < 20; next++ {
		id, err := enqueue(next)
		if err != nil {
			t.Fatalf("enqueue %d before the disk filled: %v", next, err)
		}
		acked[id] = next
	}

	filler := fillFilesystem(t, mnt)

	// bolt reuses its free pages first, so a few more writes may fit. Each
	// enqueue must be acknowledged or refused with ErrDiskFull naming the
	// data directory, well before its deadline; soon one is refused.
	var refused []int
	for len(refused) < 3 {
		if next > 400 {
			t.Fatalf("400 enqueues of 48 KiB on a full 16 MiB filesystem and none refused")
		}
		start := time.Now()
		id, err := enqueue(next)
		switch {
		case err == nil:
			acked[id] = next
		case errors.Is(err, cluster.ErrDiskFull):
			var df *cluster.DiskFullError
			if !errors.As(err, &df) || df.Dir != dataDir {
				t.Fatalf("enqueue %d: %v does not name the data dir %s", next, err, dataDir)
			}
			if want := "disk full on " + dataDir; !strings.Contains(err.Error(), want) {
				t.Fatalf("enqueue %d: error %q does not say %q", next, err, want)
			}
			if errors.Is(err, cluster.ErrUnknownOutcome) {
				t.Fatalf("enqueue %d: a refused write reads as an unknown outcome: %v", next, err)
			}
			t.Logf("enqueue %d refused after %s: %v", next, time.Since(start).Round(time.Millisecond), err)
			refused = append(refused, next)
		default:
			t.Fatalf("enqueue %d on a full disk: %v, want ErrDiskFull", next, err)
		}
		next++
	}

	// While the disk stays full raft keeps electing the node and stepping
	// it down again when a log write fails. Across two such rounds every
	// enqueue is acknowledged (bolt can still find free pages for one now
	// and then) or refused with the disk named; none waits out its
	// deadline, none fails any other way.
	st, err := node.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for term, deadline := st.Term, time.Now().Add(20*time.Second); st.Term < term+2; {
		if time.Now().After(deadline) {
			t.Fatalf("term still %d 20s after the disk filled (was %d): the node stopped trying to lead", st.Term, term)
		}
		id, err := enqueue(next)
		switch {
		case err == nil:
			acked[id] = next
		case !errors.Is(err, cluster.ErrDiskFull) || errors.Is(err, context.DeadlineExceeded):
			t.Fatalf("enqueue %d in term %d with the disk still full: %v, want success or a prompt ErrDiskFull", next, st.Term, err)
		default:
			refused = append(refused, next)
		}
		next++
		select {
		case <-time.After(50 * time.Millisecond):
		case <-node.Applied():
		}
		if st, err = node.Status(context.Background()); err != nil {
			t.Fatal(err)
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// Space is back: the very jobs that were refused go through, then new
	// ones.
	for _, i := range refused {
		waitEnqueue(i, 20*time.Second)
	}
	for end := next + 3; next < end; next++ {
		id, err := enqueue(next)
		if err != nil {
			t.Fatalf("enqueue %d after space returned: %v", next, err)
		}
		acked[id] = next
	}

	// Every acknowledged job is there, once, with its payload, and no
	// refused attempt was applied after all.
	got := map[engine.JobID]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for len(got) < len(acked) {
		ds, err := cluster.Do(ctx, node, engine.ReserveOp{Params: engine.ReserveParams{Queue: "q", WorkerID: "w", N: 100}})
		if err != nil {
			t.Fatalf("reserve after recovery: %v", err)
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			seed, ok := acked[d.Job.ID]
			if !ok {
				t.Fatalf("reserved job %d that was never acknowledged", d.Job.ID)
			}
			if got[d.Job.ID] {
				t.Fatalf("job %d delivered twice", d.Job.ID)
			}
			if !bytes.Equal(d.Job.Payload, payload(seed)) {
				t.Fatalf("job %d: payload changed", d.Job.ID)
			}
			got[d.Job.ID] = true
		}
	}
	if len(got) != len(acked) {
		t.Fatalf("reserved %d of %d acknowledged jobs", len(got), len(acked))
	}
	t.Logf("%d jobs acknowledged (%d refused while the disk was full, then retried), all reserved intact", len(acked), len(refused))
}
