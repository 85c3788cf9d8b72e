package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Every job the Go client enqueues carries an idempotency key, which the
// nodes remember for limits.idempotency_window (two minutes by default) and
// of which they hold at most limits.max_idempotency_keys (four million):
// past that a new key makes the oldest be forgotten early if it is
// limits.idempotency_min_window (20 s) old, and is refused otherwise. The
// scenarios run back to back, so at 150k jobs/s the keys of produce,
// consume and mixed are all still remembered, some younger than 20 s, when
// recovery enqueues its million. Before a scenario enqueues n keyed jobs,
// awaitKeyRoom waits for older keys to expire until n fit.

// keyRoomPoll is how often the waits for idempotency keys read the nodes'
// counts.
const keyRoomPoll = time.Second

// keyRoomTimeout bounds the wait: keys expire within the window, so a wait
// longer than the default window and some means the limits are not what
// the bench expects.
const keyRoomTimeout = 3 * time.Minute

// rememberedKeys is what a node's /metrics says of its idempotency keys.
type rememberedKeys struct {
	keys, limit int64
	known       bool // both metrics were present
}

// parseRememberedKeys reads sepp_remembered_keys{kind="idempotency_key"}
// and sepp_remembered_keys_limit from a Prometheus text exposition.
func parseRememberedKeys(r io.Reader) (rememberedKeys, error) {
	families, err := parseExposition(r)
	if err != nil {
		return rememberedKeys{}, err
	}
	var out rememberedKeys
	var haveKeys, haveLimit bool
	if f := families["sepp_remembered_keys"]; f != nil && f.GetType() == dto.MetricType_GAUGE {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == "idempotency_key" {
					out.keys, haveKeys = int64(m.GetGauge().GetValue()), true
				}
			}
		}
	}
	if f := families["sepp_remembered_keys_limit"]; f != nil && f.GetType() == dto.MetricType_GAUGE && len(f.GetMetric()) > 0 {
		out.limit, haveLimit = int64(f.GetMetric()[0].GetGauge().GetValue()), true
	}
	out.known = haveKeys && haveLimit
	return out, nil
}

// keyRoom says whether n more keys fit beside what k holds. More than the
// limit fit only into an empty store: past the limit the nodes forget this
// scenario's own oldest keys early (limits.idempotency_min_window), or
// refuse new ones if it enqueues faster than that allows, which the
// scenario then reports.
func keyRoom(k rememberedKeys, n int) bool {
	return !k.known || k.keys == 0 || k.keys+int64(n) <= k.limit
}

// readRememberedKeys reads the local nodes' counts and returns the largest
// (a follower may lag the leader by an entry or two).
func (r *runner) readRememberedKeys(ctx context.Context) (rememberedKeys, error) {
	var most rememberedKeys
	for _, n := range r.cluster.Nodes {
		var k rememberedKeys
		err := scrapeMetrics(ctx, n.HTTPAddr, func(body io.Reader) error {
			var err error
			k, err = parseRememberedKeys(body)
			return err
		})
		if err != nil {
			return rememberedKeys{}, err
		}
		if k.known && (!most.known || k.keys > most.keys) {
			most = k
		}
	}
	return most, nil
}

// awaitKeyRoom returns once the local cluster has room for n more
// idempotency keys, printing what it waits for. Against a cluster given
// with --addr it returns at once: the bench does not know its nodes'
// /metrics, and a refusal then comes back from the server.
func (r *runner) awaitKeyRoom(ctx context.Context, n int) error {
	return r.awaitKeysEvery(ctx, r.keyPollInterval(),
		func(k rememberedKeys) bool { return keyRoom(k, n) },
		func(k rememberedKeys) string {
			return fmt.Sprintf("waiting for remembered idempotency keys to expire: %d held, %d more needed, limits.max_idempotency_keys = %d", k.keys, n, k.limit)
		})
}

// awaitNoKeys returns once the local cluster remembers no idempotency keys:
// the recovery scenario waits for the earlier scenarios' keys to expire, so
// that the memory it reports is its own jobs' (and their keys').
func (r *runner) awaitNoKeys(ctx context.Context) error {
	return r.awaitKeysEvery(ctx, r.keyPollInterval(),
		func(k rememberedKeys) bool { return !k.known || k.keys == 0 },
		func(k rememberedKeys) string {
			return fmt.Sprintf("waiting for the earlier scenarios' %d idempotency keys to expire (limits.idempotency_window), so the memory figures count this scenario's jobs alone; --recovery-clean=false skips this", k.keys)
		})
}

// keyPollInterval is keyRoomPoll unless a test set runner.keyPoll.
func (r *runner) keyPollInterval() time.Duration {
	if r.keyPoll > 0 {
		return r.keyPoll
	}
	return keyRoomPoll
}

// awaitKeysEvery reads the local cluster's remembered keys every poll until
// ready says so, printing waiting once.
func (r *runner) awaitKeysEvery(ctx context.Context, poll time.Duration, ready func(rememberedKeys) bool, waiting func(rememberedKeys) string) error {
	if r.cluster == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, keyRoomTimeout)
	defer cancel()
	for announced := false; ; {
		k, err := r.readRememberedKeys(ctx)
		if err != nil {
			return fmt.Errorf("reading remembered idempotency keys: %w", err)
		}
		if ready(k) {
			return nil
		}
		if !announced {
			r.progress(waiting(k))
			announced = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", waiting(k), ctx.Err())
		case <-time.After(poll):
		}
	}
}
