package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/devcluster"
)

// exposition is a node's /metrics with keys remembered of limit.
func exposition(keys, limit int64) string {
	return fmt.Sprintf(`# HELP sepp_remembered_keys Keys remembered to answer retried calls.
# TYPE sepp_remembered_keys gauge
sepp_remembered_keys{kind="idempotency_key",node="sepp-1"} %d
sepp_remembered_keys{kind="reserve_request_id",node="sepp-1"} 7
# HELP sepp_remembered_keys_limit limits.max_idempotency_keys.
# TYPE sepp_remembered_keys_limit gauge
sepp_remembered_keys_limit{node="sepp-1"} %d
`, keys, limit)
}

func TestParseRememberedKeys(t *testing.T) {
	tests := []struct {
		name string
		text string
		want rememberedKeys
	}{
		{"both", exposition(1710477, 2000000), rememberedKeys{keys: 1710477, limit: 2000000, known: true}},
		{"float notation, as Prometheus writes large values", "# TYPE sepp_remembered_keys gauge\nsepp_remembered_keys{kind=\"idempotency_key\"} 1.710477e+06\n# TYPE sepp_remembered_keys_limit gauge\nsepp_remembered_keys_limit 2e+06\n", rememberedKeys{keys: 1710477, limit: 2000000, known: true}},
		{"a node without the metrics", "# TYPE sepp_raft_term gauge\nsepp_raft_term 3\n", rememberedKeys{}},
		{"the limit missing", strings.Split(exposition(5, 10), "# HELP sepp_remembered_keys_limit")[0], rememberedKeys{keys: 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRememberedKeys(strings.NewReader(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := parseRememberedKeys(strings.NewReader("not { a metric")); err == nil {
		t.Error("a broken exposition parsed")
	}
}

func TestKeyRoom(t *testing.T) {
	limit := func(keys int64) rememberedKeys { return rememberedKeys{keys: keys, limit: 1000, known: true} }
	for _, tc := range []struct {
		name string
		k    rememberedKeys
		n    int
		fits bool
	}{
		{"room", limit(100), 900, true},
		{"one too many waits", limit(101), 900, false},
		{"more than the limit waits for an empty store", limit(1), 1001, false},
		{"more than the limit goes into an empty store", limit(0), 1001, true},
		{"unknown counts do not hold the bench", rememberedKeys{}, 5_000_000, true},
	} {
		if got := keyRoom(tc.k, tc.n); got != tc.fits {
			t.Errorf("%s: keyRoom = %v, want %v", tc.name, got, tc.fits)
		}
	}
}

// TestAwaitKeyRoom: the wait ends once a node's count has dropped far
// enough, and says once what it waits for.
func TestAwaitKeyRoom(t *testing.T) {
	var reads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		held := max(1_900_000-100_000*reads.Add(1), 0) // keys expiring as the clock runs
		_, _ = io.WriteString(w, exposition(held, 2_000_000))
	}))
	defer srv.Close()
	var progress strings.Builder
	r := &runner{
		cluster: &devcluster.Cluster{Nodes: []*devcluster.Node{{ID: "sepp-1", HTTPAddr: strings.TrimPrefix(srv.URL, "http://")}}},
		opts:    Options{Progress: &progress},
		keyPoll: time.Millisecond,
	}
	if err := r.awaitKeyRoom(context.Background(), 500_000); err != nil {
		t.Fatal(err)
	}
	// 1.8M, 1.7M, 1.6M held do not leave room for 500k; 1.5M does.
	if got := reads.Load(); got != 4 {
		t.Errorf("read the metrics %d times, want 4", got)
	}
	if got := strings.Count(progress.String(), "waiting for remembered idempotency keys to expire"); got != 1 {
		t.Errorf("progress said it waits %d times, want once:\n%s", got, progress.String())
	}
}

// TestAwaitNoKeys: the recovery scenario's wait ends once a node remembers
// no keys, and at once when the metrics are not there to read.
func TestAwaitNoKeys(t *testing.T) {
	tests := []struct {
		name      string
		body      func(read int64) string
		wantReads int64
	}{
		{"keys expiring", func(read int64) string { return exposition(max(300-100*read, 0), 1000) }, 3},
		{"none to begin with", func(int64) string { return exposition(0, 1000) }, 1},
		{"a server without the metrics", func(int64) string { return "# TYPE sepp_raft_term gauge\nsepp_raft_term 3\n" }, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var reads atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, tc.body(reads.Add(1)))
			}))
			defer srv.Close()
			r := &runner{
				cluster: &devcluster.Cluster{Nodes: []*devcluster.Node{{ID: "sepp-1", HTTPAddr: strings.TrimPrefix(srv.URL, "http://")}}},
				keyPoll: time.Millisecond,
			}
			if err := r.awaitNoKeys(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := reads.Load(); got != tc.wantReads {
				t.Errorf("read the metrics %d times, want %d", got, tc.wantReads)
			}
		})
	}
}
