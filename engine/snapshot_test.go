package engine_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

var updateFuzzSeeds = flag.Bool("update-fuzz-seeds", false, "rewrite testdata/fuzz/FuzzRestore seeds")

// richEngine builds a state that uses every structure: scheduled jobs and
// retries, Ready jobs in FIFO rings and in the returns heaps, leases with
// worker ids, history, custom fields, dead-letter records, idempotency keys,
// reserve request ids, a paused queue, per-queue config.
func richEngine(t testing.TB, mutate ...func(*engine.Config)) *engine.Engine {
	t.Helper()
	clock := et.NewClock()
	e := et.New(t, append([]func(*engine.Config){et.WithRetention(time.Hour),
		et.WithQueue(engine.QueueConfig{Name: "a", DeadLetterQueue: "a.dead", DefaultPriority: et.Ptr[uint32](3), RetryDelay: et.Ptr(time.Second)}),
		et.WithQueue(engine.QueueConfig{Name: "a.dead", MaxLength: et.Ptr(1000)})}, mutate...)...)
	for i := range 40 {
		p := engine.EnqueueParams{Queue: []string{"a", "b"}[i%2], JobType: fmt.Sprint("type", i%3), Payload: []byte(fmt.Sprint("payload-", i)), Priority: et.Ptr(uint32(i % 10))}
		if i%5 == 0 {
			p.ScheduledAt = clock.Now().Add(time.Duration(i) * time.Minute)
		}
		if i%7 == 0 {
			p.Custom = map[string]string{"z": "last", "a": fmt.Sprint(i)}
			p.IdempotencyKey = fmt.Sprint("key-", i)
		}
		et.MustEnqueue(t, e, clock.Advance(time.Second), p)
	}
	ds, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "a", N: 6, WorkerID: "worker-7", RequestID: "req-1"})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(ds[0]), Reason: "retry me"})
	_, _ = e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(ds[1]), Directive: engine.DirectiveDeadLetter, Reason: "poison"})
	_ = e.Release(clock.Now(), et.Ref(ds[2]))
	_ = e.Ack(clock.Now(), et.Ref(ds[3]))
	et.MustReserve(t, e, clock.Now(), "b", 3)
	e.DeadLetterJobs(clock.Now(), []engine.JobID{2}, "operator")
	_ = e.PauseQueue(clock.Now(), "b")
	e.Tick(clock.Advance(90 * time.Second))
	return e
}

// protobufSnapshotBytes is e's snapshot in the protobuf form, layout 19.
func protobufSnapshotBytes(t testing.TB, e *engine.Engine) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := e.SnapshotWith(&buf, engine.SnapshotOptions{Protobuf: true}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// protobufGoldens are the golden snapshots of layout 19: one per state of
// the hand-written layouts' goldens that uses a feature of its own.
var protobufGoldens = []struct {
	file string
	from func(testing.TB) *engine.Engine
}{
	{"protobuf-rich-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return richEngine(tb, withHistory5) }},
	{"protobuf-budget-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return richEngine(tb, withBudgets, withHistory5) }},
	{"protobuf-operator-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return operatorEngine(tb, withHistory5) }},
	{"protobuf-limited-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return limitedEngine(tb, withHistory5) }},
	{"protobuf-scheduled-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return scheduledEngine(tb) }},
	{"protobuf-unique-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return uniqueEngine(tb, withHistory5) }},
	{"protobuf-cancel-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return cancelEngine(tb, withHistory5) }},
	{"protobuf-redrive-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return redrivingEngine(tb, withHistory5) }},
	{"protobuf-expiry-fair-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return expiryFairEngine(tb) }},
	{"protobuf-attempts-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return attemptsEngine(tb) }},
	{"protobuf-payloads-off-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return payloadsOffEngine(tb) }},
	{"protobuf-trace-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return traceEngine(tb) }},
	{"protobuf-tags-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return taggedEngine(tb) }},
	{"protobuf-completed-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return completedSeedEngine(tb) }},
	{"protobuf-compact-charge-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return compactChargeSeedEngine(tb) }},
	{"protobuf-progress-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return progressEngine(tb) }},
	{"protobuf-dependencies-engine", func(tb testing.TB) *engine.Engine { tb.Helper(); return dependenciesEngine(tb) }},
}

func snapshotBytes(t testing.TB, e *engine.Engine) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := e.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSnapshot_RoundTripsExactly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		e    *engine.Engine
	}{
		{"Empty", engine.New(engine.DefaultConfig())},
		{"Rich", richEngine(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshotBytes(t, tc.e)
			restored := engine.New(engine.DefaultConfig())
			if err := restored.Restore(bytes.NewReader(snap)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(snapshotBytes(t, restored), snap) || restored.Digest() != tc.e.Digest() {
				t.Fatal("restored engine differs from the original")
			}
			et.RequireInvariants(t, restored)
			// The restored engine behaves exactly as the original from here on.
			now := tc.e.Now().Add(time.Hour)
			for _, e := range []*engine.Engine{tc.e, restored} {
				_ = e.ResumeQueue(now, "b")
				e.Tick(now)
				for _, q := range []string{"a", "b", "a.dead"} {
					for _, d := range et.MustReserve(t, e, now, q, 100) {
						_ = e.Ack(now, et.Ref(d))
					}
				}
			}
			if restored.Digest() != tc.e.Digest() {
				t.Fatal("restored engine diverged after the same operations")
			}
		})
	}
}

func TestSnapshot_DigestTracksState(t *testing.T) {
	t.Parallel()
	a, b := richEngine(t), richEngine(t)
	if a.Digest() != b.Digest() || !bytes.Equal(snapshotBytes(t, a), snapshotBytes(t, b)) {
		t.Fatal("engines fed the same operations differ")
	}
	before := a.Digest()
	for _, d := range et.MustReserve(t, a, a.Now(), "a", 1) {
		_ = a.Release(a.Now(), et.Ref(d)) // a visible change: history grew
	}
	if a.Digest() == before {
		t.Fatal("digest did not change with the state")
	}
	// Reads do not change the state.
	d := b.Digest()
	b.Stats(time.Time{})
	_, _ = b.ListJobs("a", engine.StateReady, engine.Page{})
	_, _ = b.ListDeadLetters("", engine.Page{})
	b.NextDeadline()
	if b.Digest() != d {
		t.Fatal("a read changed the state")
	}
}

func TestRestore_RejectsCorruptInput(t *testing.T) {
	t.Parallel()
	good := snapshotBytes(t, richEngine(t))
	cases := map[string][]byte{
		"Empty":        nil,
		"MagicOnly":    good[:8],
		"BadMagic":     append([]byte("NOTSNAP!"), good[8:]...),
		"TrailingData": append(bytes.Clone(good), 0),
		"NoTrailer":    good[:len(good)-4],
	}
	for i := 1; i < len(good); i += max(1, len(good)/97) {
		cases[fmt.Sprint("TruncatedAt", i)] = good[:i]
		flipped := bytes.Clone(good)
		flipped[i] ^= 0x5a
		cases[fmt.Sprint("ByteFlippedAt", i)] = flipped
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			e := richEngine(t)
			before := e.Digest()
			err := e.Restore(bytes.NewReader(in))
			if !errors.Is(err, engine.ErrCorruptSnapshot) {
				t.Fatalf("err = %v, want ErrCorruptSnapshot", err)
			}
			if e.Digest() != before {
				t.Fatal("a rejected restore changed the engine")
			}
		})
	}
}

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after < len(p) {
		return 0, errors.New("disk full")
	}
	w.after -= len(p)
	return len(p), nil
}

func TestSnapshot_ReportsWriteErrors(t *testing.T) {
	t.Parallel()
	e := richEngine(t)
	if err := e.Snapshot(&failingWriter{after: 100}); err == nil {
		t.Fatal("a failing writer went unnoticed")
	}
}

func FuzzRestore(f *testing.F) {
	f.Add(snapshotBytes(f, engine.New(engine.DefaultConfig())))
	f.Add(snapshotBytes(f, richEngine(f)))
	f.Add(snapshotBytes(f, limitedEngine(f)))
	f.Add(snapshotBytes(f, scheduledEngine(f)))
	f.Add(snapshotBytes(f, uniqueEngine(f)))
	f.Add(snapshotBytes(f, redrivingEngine(f)))
	f.Add(snapshotBytes(f, expiryFairEngine(f)))
	f.Add(snapshotBytes(f, completedSeedEngine(f)))
	f.Add(snapshotBytes(f, progressEngine(f)))
	f.Add([]byte("SEPPENG\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		restoreFuzzed(t, data)
		// Again with a valid checksum, so mutations reach the consistency
		// checks behind it instead of stopping at the trailer.
		if len(data) >= 4 {
			fixed := bytes.Clone(data)
			binary.LittleEndian.PutUint32(fixed[len(fixed)-4:], crc32.ChecksumIEEE(fixed[:len(fixed)-4]))
			restoreFuzzed(t, fixed)
		}
	})
}

// restoreFuzzed restores data: it must be rejected with ErrCorruptSnapshot
// or accepted as a consistent state that round-trips.
func restoreFuzzed(t *testing.T, data []byte) {
	t.Helper()
	e := engine.New(engine.DefaultConfig())
	if err := e.Restore(bytes.NewReader(data)); err != nil {
		if !errors.Is(err, engine.ErrCorruptSnapshot) {
			t.Fatalf("error %v does not wrap ErrCorruptSnapshot", err)
		}
		return
	}
	// Accepted: it must be a consistent state that round-trips.
	if err := e.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	again := engine.New(engine.DefaultConfig())
	if err := again.Restore(bytes.NewReader(snapshotBytes(t, e))); err != nil {
		t.Fatal(err)
	}
	if again.Digest() != e.Digest() {
		t.Fatal("round trip changed the digest")
	}
	pb := engine.New(engine.DefaultConfig())
	if err := pb.Restore(bytes.NewReader(protobufSnapshotBytes(t, e))); err != nil {
		t.Fatalf("restore of the accepted state's protobuf form: %v", err)
	}
	if pb.Digest() != e.Digest() {
		t.Fatal("round trip through the protobuf form changed the digest")
	}
}

// TestFuzzSeedCorpus keeps the committed seeds valid; run with
// -update-fuzz-seeds to rewrite them after a format change.
func TestFuzzSeedCorpus(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "fuzz", "FuzzRestore")
	seeds := map[string][]byte{
		"empty-engine": snapshotBytes(t, engine.New(engine.DefaultConfig())),
		"rich-engine":  snapshotBytes(t, richEngine(t, withHistory5)),
		"header-only":  []byte("SEPPENG\x00\x01"),
		"truncated":    snapshotBytes(t, richEngine(t, withHistory5))[:200],
		// Layout version 3: a memory budget, global and per queue.
		"budget-engine": snapshotBytes(t, richEngine(t, withBudgets, withHistory5)),
		// Layout version 11: attempt detail and forwarded origins.
		"attempts-engine": snapshotBytes(t, attemptsEngine(t)),
		// Layout version 12: payloads charged to the disk budget.
		"payloads-off-engine": snapshotBytes(t, payloadsOffEngine(t)),
		// Layout version 13: trace contexts of live jobs and records.
		"trace-engine": snapshotBytes(t, traceEngine(t)),
		// Layout version 14: queue tags.
		"tags-engine": snapshotBytes(t, taggedEngine(t)),
		// Layout version 15: completed jobs and their records.
		"completed-engine": snapshotBytes(t, completedSeedEngine(t)),
		// Layout version 16: plain waiting jobs charged as compact entries.
		"compact-charge-engine": snapshotBytes(t, compactChargeSeedEngine(t)),
		// Layout snapshotVersionProgress: reserved jobs' progress.
		"progress-engine": snapshotBytes(t, progressEngine(t)),
		// Layout snapshotVersionDependencies: blocked jobs and parents.
		"dependencies-engine": snapshotBytes(t, dependenciesEngine(t)),
		// Layout version 6: periodic schedules, one fired, one paused.
		"scheduled-engine": snapshotBytes(t, scheduledEngine(t)),
		// The golden snapshots of layouts 4, 5, 7, 8 and 9 (3 and 6 are
		// above), read back by TestGoldenSnapshotLayouts.
		"operator-engine": snapshotBytes(t, operatorEngine(t, withHistory5)),
		"limited-engine":  snapshotBytes(t, limitedEngine(t, withHistory5)),
		"unique-engine":   snapshotBytes(t, uniqueEngine(t, withHistory5)),
		"cancel-engine":   snapshotBytes(t, cancelEngine(t, withHistory5)),
		"redrive-engine":  snapshotBytes(t, redrivingEngine(t, withHistory5)),

		// Layout version 10: expiry deadlines, an expired record, fairness
		// turn orders.
		"expiry-fair-engine": snapshotBytes(t, expiryFairEngine(t)),
	}
	// Layout 19, the protobuf form, of the states above that use a
	// feature each (TestGoldenSnapshotLayouts reads them back).
	for _, g := range protobufGoldens {
		seeds[g.file] = protobufSnapshotBytes(t, g.from(t))
	}
	for name, data := range seeds {
		path := filepath.Join(dir, name)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if *updateFuzzSeeds {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Fatalf("seed %s is stale or missing (%v); run go test ./engine -run TestFuzzSeedCorpus -update-fuzz-seeds", path, err)
		}
	}
}

// TestRestoreVersion1 restores a snapshot written by the version 1 layout
// (testdata/fuzz/FuzzRestore/rich-engine-v1, the rich engine as the engine
// before limits.idempotency_min_window wrote it): the same state, with a
// config whose minimum window is 0, so its keys are never forgotten early,
// as they were not then.
func TestRestoreVersion1(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzRestore", "rich-engine-v1"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(raw), "\n", 3)
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "[]byte(") {
		t.Fatalf("not a fuzz seed file: %q", raw)
	}
	data, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(data, "SEPPENG\x00\x01") {
		t.Fatalf("the seed is not a version 1 snapshot: % x", data[:9])
	}
	e := engine.New(engine.DefaultConfig())
	if err := e.Restore(strings.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if got := e.Config().Limits.IdempotencyMinWindow; got != 0 {
		t.Errorf("minimum window restored from version 1 = %s, want 0", got)
	}
	want := richEngine(t, func(c *engine.Config) {
		c.Limits.IdempotencyMinWindow = 0
		c.Limits.MaxIdempotencyKeys = 2_000_000 // that engine's default
		c.Limits.AttemptHistory = 5             // likewise
	})
	if e.Digest() != want.Digest() {
		t.Error("the version 1 snapshot restored to another state than the one it was written from")
	}
	if err := e.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// withBudgets sets a global memory budget and one of queue "a"'s own.
func withBudgets(c *engine.Config) {
	c.Limits.MaxMemoryBytes = 1 << 30
	for i := range c.Queues {
		if c.Queues[i].Name == "a" {
			c.Queues[i].MaxMemoryBytes = et.Ptr[int64](1 << 20)
		}
	}
}

// TestSnapshot_MemoryBudgetLayout: a state with a memory budget is written
// in layout version 3 and restores with its budgets and count; one without
// stays version 2, the bytes an older binary reads.
func TestSnapshot_MemoryBudgetLayout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		mutate  []func(*engine.Config)
		version byte
	}{{name: "NoBudget", version: 2}, {name: "Budget", mutate: []func(*engine.Config){withBudgets}, version: 3}} {
		t.Run(tt.name, func(t *testing.T) {
			e := richEngine(t, tt.mutate...)
			data := snapshotBytes(t, e)
			if got := data[len("SEPPENG\x00")]; got != tt.version {
				t.Fatalf("layout version %d, want %d", got, tt.version)
			}
			restored := engine.New(engine.DefaultConfig())
			if err := restored.Restore(bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(restored.Config(), e.Config()) {
				t.Fatalf("config after restore %+v, want %+v", restored.Config(), e.Config())
			}
			et.RequireInvariants(t, restored)
		})
	}
}

// TestGoldenSnapshotLayouts restores the committed snapshot of every layout
// version (testdata/fuzz/FuzzRestore: rich-engine-v1 written by the version
// 1 engine, rich-engine in layout 2, budget-engine 3, operator-engine 4,
// limited-engine 5, scheduled-engine 6, unique-engine 7, cancel-engine 8,
// redrive-engine 9; TestFuzzSeedCorpus writes them) and checks
// that each gives the state it was written from, and that re-snapshotting
// a layout this engine still writes gives the same bytes: what a node
// restores from an older member's snapshot during a rolling upgrade.
func TestGoldenSnapshotLayouts(t *testing.T) {
	tests := []struct {
		file    string
		layout  byte
		from    func(t *testing.T) *engine.Engine
		rewrite bool // this engine still writes the layout
	}{
		{"rich-engine-v1", 1, func(t *testing.T) *engine.Engine {
			t.Helper()
			return richEngine(t, func(c *engine.Config) {
				c.Limits.IdempotencyMinWindow = 0
				c.Limits.MaxIdempotencyKeys = 2_000_000 // that engine's default
				c.Limits.AttemptHistory = 5             // likewise
			})
		}, false},
		{"rich-engine", 2, func(t *testing.T) *engine.Engine {
			t.Helper()
			return richEngine(t, withHistory5)
		}, true},
		{"budget-engine", 3, func(t *testing.T) *engine.Engine {
			t.Helper()
			return richEngine(t, withBudgets, withHistory5)
		}, true},
		{"operator-engine", 4, func(t *testing.T) *engine.Engine { t.Helper(); return operatorEngine(t, withHistory5) }, true},
		{"limited-engine", 5, func(t *testing.T) *engine.Engine { t.Helper(); return limitedEngine(t, withHistory5) }, true},
		{"scheduled-engine", 6, func(t *testing.T) *engine.Engine { t.Helper(); return scheduledEngine(t) }, true},
		{"unique-engine", 7, func(t *testing.T) *engine.Engine { t.Helper(); return uniqueEngine(t, withHistory5) }, true},
		{"cancel-engine", 8, func(t *testing.T) *engine.Engine { t.Helper(); return cancelEngine(t, withHistory5) }, true},
		{"redrive-engine", 9, func(t *testing.T) *engine.Engine { t.Helper(); return redrivingEngine(t, withHistory5) }, true},
		{"expiry-fair-engine", 10, func(t *testing.T) *engine.Engine { t.Helper(); return expiryFairEngine(t) }, true},
		{"attempts-engine", 11, func(t *testing.T) *engine.Engine { t.Helper(); return attemptsEngine(t) }, true},
		{"payloads-off-engine", 12, func(t *testing.T) *engine.Engine { t.Helper(); return payloadsOffEngine(t) }, true},
		{"trace-engine", 13, func(t *testing.T) *engine.Engine { t.Helper(); return traceEngine(t) }, true},
		{"tags-engine", 14, func(t *testing.T) *engine.Engine { t.Helper(); return taggedEngine(t) }, true},
		{"compact-charge-engine", 16, func(t *testing.T) *engine.Engine { t.Helper(); return compactChargeSeedEngine(t) }, true},
		{"progress-engine", engine.SnapshotVersionProgress, func(t *testing.T) *engine.Engine { t.Helper(); return progressEngine(t) }, true},
		{"dependencies-engine", engine.SnapshotVersionDependencies, func(t *testing.T) *engine.Engine { t.Helper(); return dependenciesEngine(t) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := readFuzzSeed(t, filepath.Join("testdata", "fuzz", "FuzzRestore", tt.file))
			if !strings.HasPrefix(data, "SEPPENG\x00") || len(data) < 9 || data[8] != tt.layout {
				t.Fatalf("not a layout %d snapshot: % x", tt.layout, data[:min(9, len(data))])
			}
			e := engine.New(engine.DefaultConfig())
			if err := e.Restore(strings.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			if err := e.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			if e.Digest() != tt.from(t).Digest() {
				t.Fatal("the snapshot restored to another state than the one it was written from")
			}
			if got := string(snapshotBytes(t, e)); tt.rewrite && got != data {
				t.Fatal("re-snapshotting the restored state gives other bytes than the golden file")
			}
		})
	}
	for _, g := range protobufGoldens {
		t.Run(g.file, func(t *testing.T) {
			data := readFuzzSeed(t, filepath.Join("testdata", "fuzz", "FuzzRestore", g.file))
			if !strings.HasPrefix(data, "SEPPENG\x00") || len(data) < 9 || data[8] != engine.SnapshotVersionProto {
				t.Fatalf("not a layout %d snapshot: % x", engine.SnapshotVersionProto, data[:min(9, len(data))])
			}
			e := engine.New(engine.DefaultConfig())
			if err := e.Restore(strings.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			if err := e.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
			if e.Digest() != g.from(t).Digest() {
				t.Fatal("the snapshot restored to another state than the one it was written from")
			}
			if got := string(protobufSnapshotBytes(t, e)); got != data {
				t.Fatal("re-snapshotting the restored state gives other bytes than the golden file")
			}
		})
	}
}

// readFuzzSeed returns the value of a one-value `go test fuzz v1` file.
func readFuzzSeed(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(raw), "\n", 3)
	if len(lines) < 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "[]byte(") {
		t.Fatalf("%s is not a fuzz seed file", path)
	}
	data, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data
}

// redrivingEngine holds a running and a cancelled redrive task, so the
// fuzzer starts from a layout 9 snapshot.
func redrivingEngine(tb testing.TB, opts ...func(*engine.Config)) *engine.Engine {
	tb.Helper()
	e := richEngine(tb, opts...)
	now := e.Now().Add(time.Second)
	a, err := e.StartRedrive(now, engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "a", ReasonContains: "x", FailedAfter: et.Epoch}, Rate: 7, By: "alice"})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := e.RedriveStep(now, a.ID, 1); err != nil {
		tb.Fatal(err)
	}
	b, err := e.StartRedrive(now, engine.RedriveParams{Fresh: true, ToQueue: "b"})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := e.CancelRedrive(now, b.ID, "bob"); err != nil {
		tb.Fatal(err)
	}
	return e
}

// operatorEngine is richEngine after a purge and with a declared queue
// (the operator section, layout 4).
func operatorEngine(tb testing.TB, opts ...func(*engine.Config)) *engine.Engine {
	tb.Helper()
	e := richEngine(tb, opts...)
	now := e.Now().Add(time.Second)
	if _, err := e.PurgeQueue(now, "b", engine.PurgeWaiting); err != nil {
		tb.Fatal(err)
	}
	if err := e.CreateQueue(now, engine.QueueConfig{Name: "made", MaxLength: et.Ptr(10)}, true); err != nil {
		tb.Fatal(err)
	}
	return e
}

// cancelEngine is richEngine with a reserved job cancelled into the dead
// letters (the cancel section, layout 8).
func cancelEngine(tb testing.TB, opts ...func(*engine.Config)) *engine.Engine {
	tb.Helper()
	e := richEngine(tb, opts...)
	now := e.Now().Add(time.Second)
	ds, err := e.Reserve(now, engine.ReserveParams{Queue: "a", N: 1, WorkerID: "worker-9"})
	if err != nil || len(ds) != 1 {
		tb.Fatalf("reserve: %v %v", ds, err)
	}
	res, err := e.ActOnJobs(now, engine.JobActionParams{Action: engine.JobActionCancel, IDs: []engine.JobID{ds[0].Job.ID}})
	if err != nil || res[0].Err != nil {
		tb.Fatalf("cancel: %+v %v", res, err)
	}
	return e
}

// withHistory5 is the attempt_history default the golden snapshots were
// written with (before DefaultAttemptHistory became 25).
func withHistory5(c *engine.Config) { c.Limits.AttemptHistory = 5 }
