package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sepp-io/sepp/client"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// testCluster is what a fault test needs from a cluster, whether its nodes
// are processes on loopback or containers on a docker network.
type testCluster interface {
	Addrs() []string // gRPC addresses, reachable from the test
	IDs() []string   // node ids, in the same order
	LogTail(i int) string
}

// leaderIndex finds the node a majority names as leader and which says it
// leads.
func leaderIndex(ctx context.Context, insp *client.Client, tc testCluster) (int, error) {
	// Ask every node at once: a cut-off node may take the whole attempt
	// timeout to fail, and should not delay what the others say.
	addrs := tc.Addrs()
	sts := make([]*client.ClusterStatus, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			qctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
			defer cancel()
			if st, err := insp.ClusterStatusOf(qctx, addr); err == nil {
				sts[i] = st
			}
		}()
	}
	wg.Wait()
	votes := map[string]int{}
	leads := map[string]bool{}
	for _, st := range sts {
		if st == nil {
			continue
		}
		if st.Leader.ID != "" {
			votes[st.Leader.ID]++
		}
		if st.State == "Leader" {
			leads[st.Self.ID] = true
		}
	}
	for i, id := range tc.IDs() {
		if votes[id] > len(tc.IDs())/2 && leads[id] {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no leader named by a majority (votes %v)", votes)
}

func waitLeader(ctx context.Context, t *testing.T, insp *client.Client, tc testCluster, timeout time.Duration, not int) int {
	t.Helper()
	idx := -1
	err := waitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		i, err := leaderIndex(ctx, insp, tc)
		if err != nil {
			return false, err
		}
		if i == not {
			return false, fmt.Errorf("node %d still leads", i)
		}
		idx = i
		return true, nil
	})
	if err != nil {
		t.Fatalf("wait for leader: %v", err)
	}
	return idx
}

// waitCaughtUp waits until node i follows the current leader and has
// applied everything the leader had committed when the wait began.
func waitCaughtUp(ctx context.Context, insp *client.Client, tc testCluster, i int, timeout time.Duration) error {
	var target uint64
	leaderID := ""
	return waitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		if leaderID == "" {
			li, err := leaderIndex(ctx, insp, tc)
			if err != nil {
				return false, err
			}
			st, err := insp.ClusterStatusOf(ctx, tc.Addrs()[li])
			if err != nil {
				return false, err
			}
			leaderID, target = tc.IDs()[li], st.CommitIndex
		}
		st, err := insp.ClusterStatusOf(ctx, tc.Addrs()[i])
		if err != nil {
			return false, err
		}
		if st.Leader.ID != leaderID || st.AppliedIndex < target {
			return false, fmt.Errorf("%s: leader %q applied %d, want leader %q applied >= %d", tc.IDs()[i], st.Leader.ID, st.AppliedIndex, leaderID, target)
		}
		return true, nil
	})
}

// replicaState is one node's own view of the replicated state: the digest
// of its whole state machine (engine, clock, member metadata) and the log
// index that state includes, as the node reports them over gRPC.
func replicaState(ctx context.Context, addr string) (applied uint64, digest string, err error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 0, "", err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := seppv1.NewClusterServiceClient(cc).Status(ctx, &seppv1.StatusRequest{IncludeDigest: true})
	if err != nil {
		return 0, "", fmt.Errorf("%s: status: %w", addr, err)
	}
	if len(st.GetStateDigest()) != 64 {
		return 0, "", fmt.Errorf("%s: state digest %q is not 32 bytes of hex", addr, st.GetStateDigest())
	}
	return st.GetDigestIndex(), st.GetStateDigest()[:16], nil
}

// waitReplicasAgree waits until every node has applied the same index and
// shows the same state, and returns how long that took. The nodes are asked
// at once, each round: the state machine goes on after the clients are held
// (the leader's ticks for leases, retention and, a second late, expired
// idempotency keys), and answers gathered one after another rarely share an
// index while it does. Two nodes that report the same index with different
// digests have diverged: that fails at once, whatever comes after.
func waitReplicasAgree(ctx context.Context, tc testCluster, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	var diverged error
	err := waitFor(ctx, timeout, func(ctx context.Context) (bool, error) {
		addrs, ids := tc.Addrs(), tc.IDs()
		applied, digests, errs := make([]uint64, len(addrs)), make([]string, len(addrs)), make([]error, len(addrs))
		var wg sync.WaitGroup
		for i, addr := range addrs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				applied[i], digests[i], errs[i] = replicaState(ctx, addr)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return false, err
		}
		var views []string
		same := true
		for i := range addrs {
			views = append(views, fmt.Sprintf("%s@%d=%s", ids[i], applied[i], digests[i]))
			same = same && applied[i] == applied[0] && digests[i] == digests[0]
			for j := range i {
				if applied[i] == applied[j] && digests[i] != digests[j] {
					diverged = fmt.Errorf("replicas diverged: %s and %s at the same index", views[j], views[i])
				}
			}
		}
		if diverged != nil {
			return true, nil // stop: no later round undoes it
		}
		if !same {
			return false, errors.New("replicas differ: " + strings.Join(views, " "))
		}
		return true, nil
	})
	if diverged != nil {
		return time.Since(start), diverged
	}
	return time.Since(start), err
}

func dumpLogs(t *testing.T, tc testCluster) {
	t.Helper()
	if !t.Failed() {
		return
	}
	for i, id := range tc.IDs() {
		t.Logf("---- last lines of %s's log\n%s", id, tc.LogTail(i))
	}
}

func ms(d time.Duration) int64 { return d.Milliseconds() }
