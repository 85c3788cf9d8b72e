package engine_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

func TestPriority_ResolvesAndValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		queueDef *uint32 // the queue's default_priority
		globDef  uint32  // [limits] default_priority
		prio     *uint32 // the job's
		want     uint32
		wantErr  string
	}{
		// spec: PRI-1
		{name: "JobPriorityZeroIsKept", prio: et.Ptr[uint32](0), want: 0},
		// spec: PRI-1
		{name: "JobPriorityNineIsKept", prio: et.Ptr[uint32](9), want: 9},
		// spec: PRI-2
		{name: "PriorityTenRejectedNamingRange", prio: et.Ptr[uint32](10), wantErr: "priority: must be 0..9, got 10"},
		// spec: PRI-2
		{name: "HugePriorityRejected", prio: et.Ptr[uint32](1 << 31), wantErr: "priority: must be 0..9, got 2147483648"},
		// spec: PRI-3
		{name: "UnsetTakesGlobalDefaultZero", want: 0},
		// spec: PRI-3
		{name: "UnsetTakesGlobalDefault", globDef: 4, want: 4},
		// spec: PRI-3
		{name: "UnsetTakesQueueDefaultOverGlobal", globDef: 4, queueDef: et.Ptr[uint32](7), want: 7},
		// spec: PRI-3
		{name: "JobValueBeatsQueueDefault", queueDef: et.Ptr[uint32](7), prio: et.Ptr[uint32](2), want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, func(c *engine.Config) { c.Limits.DefaultPriority = tt.globDef },
				et.WithQueue(engine.QueueConfig{Name: "alerts", DefaultPriority: tt.queueDef}))
			p := et.Job("alerts")
			p.Priority = tt.prio
			res, err := e.Enqueue(clock.Now(), p)
			if tt.wantErr != "" {
				if !errors.Is(err, engine.ErrInvalidArgument) || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q wrapping ErrInvalidArgument", err, tt.wantErr)
				}
				if s, _ := e.QueueStats(clock.Now(), "alerts"); s.Enqueued != 0 {
					t.Fatalf("a refused job was added")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			j, err := e.GetJob(res.JobID)
			if err != nil {
				t.Fatal(err)
			}
			if j.Priority != tt.want {
				t.Fatalf("priority = %d, want %d", j.Priority, tt.want)
			}
		})
	}
}

// spec: PRI-4
// spec: PRI-5
func TestReserve_PriorityThenFIFOOrder(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	// Enqueue in an interleaved order; expect every 9 before any 8 and so on,
	// FIFO by enqueue order within a level.
	prios := []uint32{3, 9, 0, 8, 9, 3, 0, 8, 5, 9}
	ids := make(map[engine.JobID]uint32)
	for _, p := range prios {
		req := et.Job("q")
		req.Priority = et.Ptr(p)
		ids[et.MustEnqueue(t, e, clock.Advance(time.Millisecond), req)] = p
	}
	var got []uint32
	var last engine.JobID
	var lastPrio uint32 = 10
	for range prios {
		d := et.MustReserveOne(t, e, clock.Advance(time.Millisecond), "q")
		p := ids[d.Job.ID]
		if p == lastPrio && d.Job.ID < last {
			t.Fatalf("within priority %d job %d came after %d", p, d.Job.ID, last)
		}
		last, lastPrio = d.Job.ID, p
		got = append(got, p)
	}
	want := []uint32{9, 9, 9, 8, 8, 5, 3, 3, 0, 0}
	if !slices.Equal(got, want) {
		t.Fatalf("priorities in reserve order = %v, want %v", got, want)
	}
	et.RequireInvariants(t, e)
}

func TestReserve_RetriedJobKeepsOriginalPlace(t *testing.T) {
	t.Parallel()
	// spec: PRI-5
	clock := et.NewClock()
	e := et.New(t)
	a := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	b := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	d := et.MustReserveOne(t, e, clock.Now(), "q") // a
	c := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	if _, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(d), Reason: "boom"}); err != nil {
		t.Fatal(err)
	}
	got := et.IDs(et.MustReserve(t, e, clock.Now(), "q", 3))
	if want := []engine.JobID{a, b, c}; !slices.Equal(got, want) {
		t.Fatalf("order after retry = %v, want %v (retried job back at the front)", got, want)
	}
}

func TestScheduling(t *testing.T) {
	t.Parallel()
	const horizon = 30 * 24 * time.Hour
	tests := []struct {
		name        string
		scheduledIn time.Duration // from now; 0 leaves scheduled_at unset
		horizon     *time.Duration
		wantState   engine.State
		wantErr     bool
	}{
		// spec: SCH-1
		{name: "FutureScheduledAtIsScheduled", scheduledIn: time.Minute, wantState: engine.StateScheduled},
		// spec: SCH-4
		{name: "UnsetScheduledAtIsReady", wantState: engine.StateReady},
		// spec: SCH-4
		{name: "PastScheduledAtIsReady", scheduledIn: -time.Hour, wantState: engine.StateReady},
		// spec: SCH-5
		{name: "ExactlyAtDefaultHorizonAccepted", scheduledIn: horizon, wantState: engine.StateScheduled},
		// spec: SCH-5
		{name: "BeyondDefaultHorizonRejected", scheduledIn: horizon + time.Millisecond, wantErr: true},
		// spec: SCH-5
		{name: "QueueHorizonOverridesGlobal", scheduledIn: 2 * time.Hour, horizon: et.Ptr(time.Hour), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "q", MaxScheduleHorizon: tt.horizon}))
			p := et.Job("q")
			if tt.scheduledIn != 0 {
				p.ScheduledAt = clock.Now().Add(tt.scheduledIn)
			}
			res, err := e.Enqueue(clock.Now(), p)
			if tt.wantErr {
				var tooFar *engine.ScheduledTooFarError
				if !errors.As(err, &tooFar) || !errors.Is(err, engine.ErrScheduledTooFar) {
					t.Fatalf("err = %v, want a ScheduledTooFarError", err)
				}
				wantHorizon := horizon
				if tt.horizon != nil {
					wantHorizon = *tt.horizon
				}
				if tooFar.Horizon != wantHorizon || !tooFar.Requested.Equal(p.ScheduledAt) || !tooFar.Latest.Equal(clock.Now().Add(wantHorizon)) || tooFar.Queue != "q" {
					t.Fatalf("error carries %+v, want horizon %s and requested %s", tooFar, wantHorizon, p.ScheduledAt)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.State != tt.wantState {
				t.Fatalf("state = %v, want %v", res.State, tt.wantState)
			}
		})
	}
}

// spec: SCH-1
// spec: SCH-2
func TestScheduledJobInvisibleUntilPromoted(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	runAt := clock.Now().Add(time.Minute)
	p := et.Job("q")
	p.ScheduledAt = runAt
	id := et.MustEnqueue(t, e, clock.Now(), p)
	if ds := et.MustReserve(t, e, clock.Advance(59*time.Second), "q", 10); len(ds) != 0 {
		t.Fatalf("a scheduled job was handed out before its time: %v", et.IDs(ds))
	}
	if next, ok := e.NextDeadline(); !ok || !next.Equal(runAt) {
		t.Fatalf("NextDeadline = %v %v, want %v", next, ok, runAt)
	}
	res := e.Tick(runAt)
	if res.Promoted != 1 {
		t.Fatalf("Tick promoted %d, want 1", res.Promoted)
	}
	j, _ := e.GetJob(id)
	if j.State != engine.StateReady || !j.ScheduledAt.Equal(runAt) {
		t.Fatalf("after promotion: state %v scheduled_at %v", j.State, j.ScheduledAt)
	}
	if d := et.MustReserveOne(t, e, runAt, "q"); d.Job.ID != id {
		t.Fatalf("reserved %d, want %d", d.Job.ID, id)
	}
}

// spec: SCH-2
func TestReserveSeesDueJobWithoutTick(t *testing.T) {
	t.Parallel()
	// The time is the earliest run time: any operation at or after it sees
	// the job Ready, whether or not a tick was proposed in between.
	clock := et.NewClock()
	e := et.New(t)
	p := et.Job("q")
	p.ScheduledAt = clock.Now().Add(time.Second)
	id := et.MustEnqueue(t, e, clock.Now(), p)
	if d := et.MustReserveOne(t, e, clock.Advance(2*time.Second), "q"); d.Job.ID != id {
		t.Fatalf("reserved %d, want %d", d.Job.ID, id)
	}
}

// spec: SCH-3
// spec: SCH-8
func TestPromotedJobTakesPlaceByPriorityAndEnqueueOrder(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	early := et.Job("q")
	early.Priority = et.Ptr[uint32](9)
	early.ScheduledAt = clock.Now().Add(time.Minute) // high priority AND scheduled
	scheduled := et.MustEnqueue(t, e, clock.Now(), early)
	var later []engine.JobID
	for range 3 {
		p := et.Job("q")
		p.Priority = et.Ptr[uint32](9)
		later = append(later, et.MustEnqueue(t, e, clock.Advance(time.Second), p))
	}
	low := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	e.Tick(clock.Advance(time.Minute))
	got := et.IDs(et.MustReserve(t, e, clock.Now(), "q", 10))
	want := append(append([]engine.JobID{scheduled}, later...), low)
	if !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v (promoted job first by its original enqueue time)", got, want)
	}
	et.RequireInvariants(t, e)
}

// spec: SCH-7
func TestReadyJobWaitsBeyondHorizon(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "q", MaxScheduleHorizon: et.Ptr(time.Hour)}))
	id := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	e.Tick(clock.Advance(48 * time.Hour))
	if d := et.MustReserveOne(t, e, clock.Now(), "q"); d.Job.ID != id {
		t.Fatalf("got %d, want %d", d.Job.ID, id)
	}
	s, _ := e.QueueStats(clock.Now(), "q")
	if s.Dead+int(s.Dropped) != 0 {
		t.Fatalf("a ready job was dropped after waiting past the horizon")
	}
}
