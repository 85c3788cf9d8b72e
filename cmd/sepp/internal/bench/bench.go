// Package bench is `sepp bench`: the benchmark users run to compare sepp
// with the replicated brokers of its field. It drives a cluster through the
// Go client (the same paths a producer and a worker use) and prints every
// figure as a `name: value unit` line, or JSON.
//
// With no addresses it starts its own local three-node cluster of real sepp
// processes on loopback with the default config (fsync on), which also
// makes the scenarios that kill, transfer and restart nodes possible.
package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/devcluster"
)

// Options are the knobs of one run; Defaults gives the documented values.
type Options struct {
	Addrs     []string // empty: start a local three-node cluster
	Binary    string   // sepp binary for the local cluster; empty: this one
	Dir       string   // folder for the local cluster (kept); empty: a temporary one
	Scenarios []string // produce, latency, consume, mixed, failover, recovery, backlog

	PayloadBytes int
	// RandomPayload fills payloads past their 16-byte header with random
	// bytes instead of the alphabet over and over, which compresses about
	// 13-21x wherever sepp compresses (the payload store's blocks).
	RandomPayload bool
	Produce       int // jobs in the produce scenario
	Window        int // outstanding produce requests
	// ProducerBatch caps the jobs per EnqueueBatch call of the client's
	// Producer; 0 takes the client's default.
	ProducerBatch int
	// ProducerLinger is the client producer's linger (0: its default).
	ProducerLinger time.Duration
	Latency        int // sync enqueues in the latency scenario
	// IdleGap spaces the sync enqueues (and the disk probe's fsyncs) of the
	// _after_idle figures: what a producer that enqueues now and then sees.
	// 0 skips them.
	IdleGap      time.Duration
	ConsumeBatch int // jobs per reserve in consume
	Consumers    int // concurrent reserve loops in consume

	MixedDuration  time.Duration
	MixedProducers int
	MixedWorkers   int
	MixedRate      int // offered jobs/s for the end-to-end latency part
	MixedRateFor   time.Duration

	FailoverInterval time.Duration // between enqueues of the failover producer
	FailoverBefore   time.Duration // enqueueing before the fault
	FailoverAfter    time.Duration // enqueueing after the fault

	RecoveryJobs int
	// RecoveryClean makes the recovery scenario wait, before it fills its
	// queue, until the earlier scenarios' idempotency keys have expired
	// (up to limits.idempotency_window), so its memory figures count its
	// own jobs and their keys, not what the scenarios before it left.
	RecoveryClean bool

	// BacklogJobs is the backlog scenario's backlog; BacklogRateJobs the
	// jobs it enqueues and consumes to time the rates (0: a tenth of the
	// backlog, at most 100,000).
	BacklogJobs     int
	BacklogRateJobs int
	// BacklogAfterWindow has the backlog scenario, once it has timed the
	// restarts, wait until the backlog's idempotency keys are forgotten
	// (limits.idempotency_window, 2 minutes by default) and read the
	// memory per job again: what a backlog older than the window costs.
	BacklogAfterWindow bool

	JSON     bool
	Out      io.Writer // figures
	Progress io.Writer // progress lines; nil: none
}

// knownScenarios are every scenario, in the order they run. Defaults'
// Scenarios ("all") leave out backlog, which fills a backlog of its own and
// restarts a node three times: it runs when named.
var knownScenarios = []string{"produce", "latency", "consume", "mixed", "failover", "recovery", "backlog"}

// Defaults are the values the issue and the README quote.
func Defaults() Options {
	return Options{
		Scenarios:        []string{"produce", "latency", "consume", "mixed", "failover", "recovery"},
		PayloadBytes:     256,
		Produce:          100_000,
		Window:           256,
		Latency:          2_000,
		IdleGap:          20 * time.Millisecond,
		ConsumeBatch:     100,
		Consumers:        16,
		MixedDuration:    10 * time.Second,
		MixedProducers:   4,
		MixedWorkers:     4,
		MixedRate:        1_000,
		MixedRateFor:     5 * time.Second,
		FailoverInterval: 5 * time.Millisecond,
		FailoverBefore:   time.Second,
		FailoverAfter:    2 * time.Second,
		RecoveryJobs:     1_000_000,
		RecoveryClean:    true,
		BacklogJobs:      1_000_000,
		Out:              os.Stdout,
	}
}

// Figure is one measured value.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Report is a whole run.
type Report struct {
	Figures []Figure `json:"figures"`
	Notes   []string `json:"notes,omitempty"`
}

type runner struct {
	opts    Options
	cluster *devcluster.Cluster // nil when running against given addresses
	cli     *client.Client
	report  Report
	mu      sync.Mutex
	// retriedAcks counts acks whose lost first attempt completed the job.
	retriedAcks atomic.Int64
	// produced is the queue the produce scenario filled, which consume
	// then empties.
	produced string
	// calls times the client's calls (timings.go).
	calls callTimer
	// keyPoll overrides how often the waits for idempotency keys read the
	// nodes' counts (keyroom.go); tests shorten it.
	keyPoll time.Duration
}

// ErrIntegrity is returned when a scenario lost or duplicated a job.
var ErrIntegrity = errors.New("bench: jobs lost or duplicated")

// localNodes is the size of the cluster bench starts when given no address.
const localNodes = 3

// requireEmptyDir refuses a --dir that holds anything: the scenarios count
// jobs from an empty cluster (consume drains the queue, recovery times a
// node holding exactly what it enqueued), so an earlier run's data would
// skew every figure. A folder that does not exist yet is fine.
func requireEmptyDir(dir string) error {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bench: --dir: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("bench: --dir %s is not empty (%s ...): the figures need a fresh cluster; remove it or name another folder", dir, entries[0].Name())
	}
	return nil
}

// Run executes the chosen scenarios and prints the figures.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	r := &runner{opts: opts}
	addrs := opts.Addrs
	if len(addrs) == 0 {
		if err := requireEmptyDir(opts.Dir); err != nil {
			return nil, err
		}
		if os.Getenv("GOMAXPROCS") == "" {
			// The nodes split the machine's CPUs (devcluster); this client
			// takes its share too rather than contend with them for all.
			cpus := runtime.NumCPU()
			prev := runtime.GOMAXPROCS(devcluster.CPUShare(cpus, localNodes+1))
			defer runtime.GOMAXPROCS(prev)
			r.note("the host's %d CPUs are split: GOMAXPROCS %d for each node, %d for this client (set GOMAXPROCS to choose for all)",
				cpus, devcluster.CPUShare(cpus, localNodes), runtime.GOMAXPROCS(0))
		}
		r.progress("starting a local three-node cluster (fsync on, default config)")
		c, err := devcluster.Start(devcluster.Options{Binary: opts.Binary, Dir: opts.Dir, Nodes: localNodes})
		if err != nil {
			return nil, err
		}
		defer func() { _ = c.Stop() }()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = c.WaitServing(wctx)
		cancel()
		if err != nil {
			return nil, err
		}
		r.cluster = c
		addrs = c.Addrs()
	}
	cli, err := client.New(ctx, addrs, client.WithRetryTimeout(15*time.Second),
		client.WithDialOptions(grpc.WithChainUnaryInterceptor(r.calls.intercept)))
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	r.cli = cli
	if err := r.waitLeader(ctx); err != nil {
		return nil, err
	}
	if r.cluster != nil {
		r.progress("timing fsync in the cluster's folder")
		if err := r.diskFigures(r.cluster.Nodes[0].Dir); err != nil {
			return nil, err
		}
	}

	scenarios := map[string]func(context.Context) error{
		"produce":  r.produce,
		"latency":  r.latency,
		"consume":  r.consume,
		"mixed":    r.mixed,
		"failover": r.failover,
		"recovery": r.recovery,
		"backlog":  r.backlog,
	}
	var integrity error
	for _, name := range opts.Scenarios {
		fn, ok := scenarios[name]
		if !ok {
			return nil, fmt.Errorf("bench: unknown scenario %q (want %s)", name, strings.Join(knownScenarios, ", "))
		}
		r.settle(ctx)
		r.progress("scenario " + name)
		err := fn(ctx)
		if errors.Is(err, ErrIntegrity) {
			integrity = err
			continue
		}
		if err != nil {
			return &r.report, fmt.Errorf("bench %s: %w", name, err)
		}
	}
	if n := r.retriedAcks.Load(); n > 0 {
		r.note("%d acks lost their answer, were retried and found the job already completed", n)
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r.report); err != nil {
			return &r.report, err
		}
	}
	return &r.report, integrity
}

func (r *runner) add(name string, value float64, unit string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report.Figures = append(r.report.Figures, Figure{Name: name, Value: value, Unit: unit})
	if !r.opts.JSON {
		fmt.Fprintf(r.opts.Out, "%s: %s %s\n", name, formatValue(value), unit)
	}
}

// figure is the value of the figure name reported so far, if any.
func (r *runner) figure(name string) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.report.Figures {
		if f.Name == name {
			return f.Value, true
		}
	}
	return 0, false
}

func (r *runner) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.report.Notes = append(r.report.Notes, msg)
	r.mu.Unlock()
	if !r.opts.JSON {
		fmt.Fprintf(r.opts.Out, "# %s\n", msg)
	}
}

func formatValue(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func (r *runner) progress(msg string) {
	if r.opts.Progress != nil {
		fmt.Fprintf(r.opts.Progress, "[bench %s] %s\n", time.Now().Format("15:04:05"), msg)
	}
}

// ticker prints a progress line every second while a scenario runs.
func (r *runner) ticker(ctx context.Context, what string, count *atomic.Int64, total int64) func() {
	if r.opts.Progress == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if total > 0 {
					r.progress(fmt.Sprintf("%s: %d / %d", what, count.Load(), total))
				} else {
					r.progress(fmt.Sprintf("%s: %d", what, count.Load()))
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (r *runner) waitLeader(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := r.cli.ClusterStatus(ctx)
		if err == nil && st.Leader.ID != "" {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				return errors.New("bench: no leader within 30s: the nodes answer but none leads (their logs in --dir tell why)")
			}
			return fmt.Errorf("bench: no leader within 30s: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// payload makes a payload of the configured size whose first 16 bytes carry
// a sequence number and a send time, for loss, duplicate and latency checks.
func (r *runner) payload(seq uint64, sent time.Time) []byte {
	return r.payloadOf(r.opts.PayloadBytes, seq, sent)
}

// payloadOf is a payload of size bytes (at least 16) carrying seq and
// sent, its filler random with opts.RandomPayload.
func (r *runner) payloadOf(size int, seq uint64, sent time.Time) []byte {
	if r.opts.RandomPayload {
		return randomPayload(size, seq, sent)
	}
	return makePayload(size, seq, sent)
}

// makePayload is a payload of size bytes (at least 16) carrying seq and
// sent, then the alphabet over and over.
func makePayload(size int, seq uint64, sent time.Time) []byte {
	n := max(size, 16)
	p := make([]byte, n)
	putPayloadHeader(p, seq, sent)
	// The filler is copied, not computed byte by byte: the bench's own work
	// counts in the client's CPU figure.
	for i := 16; i < n; {
		i += copy(p[i:], payloadFiller[i%26:])
	}
	return p
}

func putPayloadHeader(p []byte, seq uint64, sent time.Time) {
	binary.BigEndian.PutUint64(p, seq)
	binary.BigEndian.PutUint64(p[8:], uint64(sent.UnixNano()))
}

// randomPayload is makePayload with a random filler: a slice of
// randomPool at an offset drawn from seq, copied rather than generated
// (the bench's own work counts in the client's CPU figure).
func randomPayload(size int, seq uint64, sent time.Time) []byte {
	n := max(size, 16)
	p := make([]byte, n)
	putPayloadHeader(p, seq, sent)
	pool := randomPool()
	fill := p[16:]
	// splitmix64 of seq spreads the offsets over the pool.
	z := seq + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	for off := int(z % uint64(len(pool))); len(fill) > 0; off = 0 {
		fill = fill[copy(fill, pool[off:]):]
	}
	return p
}

// randomPool is 4 MiB of random bytes, made once (the same every run).
var randomPool = sync.OnceValue(func() []byte {
	b := make([]byte, 4<<20)
	rng := rand.NewChaCha8([32]byte{'s', 'e', 'p', 'p'})
	_, _ = rng.Read(b)
	return b
})

// payloadFiller is "abc…z" repeated; payloadFiller[i%26:] continues the
// pattern at position i of a payload.
var payloadFiller = []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz", 160))

func payloadSeq(p []byte) (seq uint64, sent time.Time, ok bool) {
	if len(p) < 16 {
		return 0, time.Time{}, false
	}
	return binary.BigEndian.Uint64(p), time.Unix(0, int64(binary.BigEndian.Uint64(p[8:]))), true
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func queueName(scenario string) string {
	return fmt.Sprintf("bench.%s.%d", scenario, time.Now().UnixNano())
}

// drainQueue reserves and acks every job of queue, returning the sequence
// numbers seen (with repeats) so callers can count losses and duplicates.
func (r *runner) drainQueue(ctx context.Context, queue string) ([]uint64, error) {
	var seqs []uint64
	for {
		ds, err := r.cli.Reserve(ctx, queue, client.ReserveOptions{WorkerID: "bench-drain", Max: 100, Lease: time.Minute})
		if err != nil {
			return seqs, err
		}
		if len(ds) == 0 {
			return seqs, nil
		}
		if err := r.ackAll(ctx, ds, func(d client.Delivery) {
			if s, _, ok := payloadSeq(d.Job.Payload); ok {
				r.mu.Lock()
				seqs = append(seqs, s)
				r.mu.Unlock()
			}
		}); err != nil {
			return seqs, err
		}
	}
}

// ackAll acks the deliveries with one AckBatch (each still confirmed on
// its own) and calls onAck for each that took effect. It returns the first
// failure, after every delivery has its answer.
func (r *runner) ackAll(ctx context.Context, ds []client.Delivery, onAck func(client.Delivery)) error {
	jcs := make([]client.JobContext, len(ds))
	for i := range ds {
		jcs[i] = ds[i].Ctx
	}
	var first error
	for i, err := range r.cli.AckBatch(ctx, jcs) {
		if err != nil {
			if !ackTookEffect(err) {
				if first == nil {
					first = err
				}
				continue
			}
			r.retriedAcks.Add(1)
		}
		if onAck != nil {
			onAck(ds[i])
		}
	}
	return first
}

// ackBehind acks a worker's batch in the background while the worker
// reserves the next, one batch at a time: a consumer with a prefetch
// window, as it works with a broker, each ack still confirmed. One worker
// goroutine uses it.
type ackBehind struct {
	r      *runner
	slot   chan struct{} // held while a batch's acks are in flight
	failed atomic.Bool   // a batch's acks failed: stop reserving
}

func (r *runner) newAckBehind() *ackBehind {
	return &ackBehind{r: r, slot: make(chan struct{}, 1)}
}

// ack waits for the previous batch's acks, then acks ds in the background;
// done gets the count of a batch acked in full, fail a batch's error.
func (a *ackBehind) ack(ctx context.Context, ds []client.Delivery, done func(n int), fail func(error)) {
	a.slot <- struct{}{}
	go func() {
		defer func() { <-a.slot }()
		if err := a.r.ackAll(ctx, ds, nil); err != nil {
			a.failed.Store(true)
			fail(err)
			return
		}
		done(len(ds))
	}()
}

// wait returns once the last batch's acks are done.
func (a *ackBehind) wait() { a.slot <- struct{}{} }

// ackTookEffect reads an ack that was retried after an attempt whose answer
// was lost and then found its lease gone. The bench leases for a minute and
// is the only consumer, so the lease did not lapse: the lost attempt is what
// completed the job. (The engine does not remember completed leases, so the
// client cannot tell this apart in general and honestly says "unknown".)
func ackTookEffect(err error) bool {
	return errors.Is(err, client.ErrUnknownOutcome) && errors.Is(err, client.ErrLeaseLost)
}

// leaderIndex finds the local cluster's node that leads.
func (r *runner) leaderIndex(ctx context.Context) (int, error) {
	st, err := r.cli.ClusterStatus(ctx)
	if err != nil {
		return -1, err
	}
	for i, n := range r.cluster.Nodes {
		if n.ID == st.Leader.ID {
			return i, nil
		}
	}
	return -1, fmt.Errorf("leader %q is not one of the local nodes", st.Leader.ID)
}

// countLossAndDup compares the acknowledged sequence numbers with those
// delivered.
func countLossAndDup(acked map[uint64]bool, delivered []uint64) (lost, dup int) {
	seen := make(map[uint64]int, len(delivered))
	for _, s := range delivered {
		seen[s]++
	}
	for s := range acked {
		if seen[s] == 0 {
			lost++
		}
	}
	for _, n := range seen {
		if n > 1 {
			dup += n - 1
		}
	}
	return lost, dup
}

func sortDurations(ds []time.Duration) { slices.Sort(ds) }

// ParseScenarios reads a comma-separated list; "all" means the default
// scenarios (every one but backlog).
func ParseScenarios(s string) []string {
	if s == "" || s == "all" {
		return Defaults().Scenarios
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return order(out[i]) < order(out[j]) })
	return out
}

func order(s string) int {
	for i, n := range knownScenarios {
		if n == s {
			return i
		}
	}
	return 100
}
