package fsm

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// queueLimits reads queue q's reserve limits from f's running config.
func queueLimits(t *testing.T, f *FSM, q string) engine.QueueConfig {
	t.Helper()
	var out engine.QueueConfig
	found := false
	_ = f.Read(func(e *engine.Engine) error {
		for _, qc := range e.Config().Queues {
			if qc.Name == q {
				out, found = qc, true
			}
		}
		return nil
	})
	if !found {
		t.Fatalf("queue %q is not configured", q)
	}
	return engine.QueueConfig{Name: out.Name, MaxReserved: out.MaxReserved, RateLimit: out.RateLimit, RatePeriod: out.RatePeriod,
		RateBurst: out.RateBurst, ConcurrencyKey: out.ConcurrencyKey, MaxPerKey: out.MaxPerKey}
}

// A QueueUpdate's reserve limits count from command version 15: the
// builder stamps it when an update sets or inherits one, a replica applies
// them, and an entry of an older version (written by a binary that ignored
// them) is applied as that binary did: the limits in its config left
// alone, their keys in inherit refused whole.
func TestQueueUpdate_ReserveLimitsByVersion(t *testing.T) {
	limited := engine.QueueConfig{Name: "q", MaxReserved: 4, RateLimit: 10, RatePeriod: time.Minute}
	tests := []struct {
		name        string
		u           engine.QueueUpdate
		wantVersion uint32 // what the builder stamps
		asVersion   uint32 // the version the entry is applied as; 0: as built
		want        engine.QueueConfig
		wantErr     string // a part of the error; "" for none
	}{
		{name: "SetMaxReserved", u: engine.QueueUpdate{Set: engine.QueueConfig{MaxReserved: 2}},
			wantVersion: CommandVersionQueueReserveLimits,
			want:        engine.QueueConfig{Name: "q", MaxReserved: 2, RateLimit: 10, RatePeriod: time.Minute}},
		{name: "SetPerKey", u: engine.QueueUpdate{Set: engine.QueueConfig{ConcurrencyKey: "customer", MaxPerKey: 1}},
			wantVersion: CommandVersionQueueReserveLimits,
			want:        engine.QueueConfig{Name: "q", MaxReserved: 4, RateLimit: 10, RatePeriod: time.Minute, ConcurrencyKey: "customer", MaxPerKey: 1}},
		{name: "InheritRate", u: engine.QueueUpdate{Inherit: []string{"rate_limit", "rate_period_ms"}},
			wantVersion: CommandVersionQueueReserveLimits,
			want:        engine.QueueConfig{Name: "q", MaxReserved: 4}},
		{name: "OtherSettingOnly", u: engine.QueueUpdate{Set: engine.QueueConfig{DefaultPriority: ptr[uint32](2)}},
			wantVersion: CommandVersionQueues, want: limited},
		{name: "WithDeadLetterTarget", u: engine.QueueUpdate{Set: engine.QueueConfig{DeadLetterQueue: "q.dead", MaxReserved: 1}, SetDeadLetterQueue: true},
			wantVersion: CommandVersionQueueReserveLimits,
			want:        engine.QueueConfig{Name: "q", MaxReserved: 1, RateLimit: 10, RatePeriod: time.Minute}},
		{name: "OlderEntryIgnoresSet", u: engine.QueueUpdate{Set: engine.QueueConfig{MaxReserved: 2, DefaultPriority: ptr[uint32](2)}},
			wantVersion: CommandVersionQueueReserveLimits, asVersion: CommandVersionDeadLetterEdges, want: limited},
		{name: "OlderEntryRefusesInherit", u: engine.QueueUpdate{Inherit: []string{"default_priority", "max_reserved"}},
			wantVersion: CommandVersionQueueReserveLimits, asVersion: CommandVersionQueues, want: limited,
			wantErr: `inherit: unknown setting "max_reserved"`},
		{name: "BadCombination", u: engine.QueueUpdate{Set: engine.QueueConfig{MaxPerKey: 1}},
			wantVersion: CommandVersionQueueReserveLimits, want: limited,
			wantErr: `queues["q"].concurrency_key: must name a custom field when max_per_key is set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newTestFSM(t)
			setup := []*cmdpb.Command{
				CreateQueueCommand(engine.QueueConfig{Name: "q.dead"}, false),
				CreateQueueCommand(limited, false),
			}
			for i, r := range applyEntry(t, f, 1, stamped(t0, setup...)) {
				if r.Err != nil {
					t.Fatalf("setup %d: %v", i, r.Err)
				}
			}
			before := f.Digest()
			u := tt.u
			u.Name = "q"
			cmd := UpdateQueueCommand(u)
			if cmd.GetVersion() != tt.wantVersion {
				t.Fatalf("built with version %d, want %d", cmd.GetVersion(), tt.wantVersion)
			}
			if tt.asVersion != 0 {
				cmd.Version = tt.asVersion
			}
			res := applyEntry(t, f, 2, stamped(t0, cmd))[0] // the same now: a refused update leaves the digest
			if tt.wantErr != "" {
				if !errors.Is(res.Err, engine.ErrInvalidArgument) || !strings.Contains(res.Err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want InvalidArgument with %q", res.Err, tt.wantErr)
				}
				if f.Digest() != before {
					t.Fatal("a refused update changed the state")
				}
			} else if res.Err != nil {
				t.Fatal(res.Err)
			}
			if got := queueLimits(t, f, "q"); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("limits %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A QueueCreate that sets reserve limits carries the version that applies
// a created queue's whole config (6) or a later one its other settings
// need; the limits hold on the replica.
func TestCreateQueueCommand_ReserveLimitsVersion(t *testing.T) {
	tests := []struct {
		name string
		qc   engine.QueueConfig
		want uint32
	}{
		{"None", engine.QueueConfig{Name: "q"}, CommandVersionQueues},
		{"MaxReserved", engine.QueueConfig{Name: "q", MaxReserved: 1}, CommandVersionReserveLimits},
		{"ConcurrencyKeyOnly", engine.QueueConfig{Name: "q", ConcurrencyKey: "c"}, CommandVersionReserveLimits},
		{"RateAndMaxWait", engine.QueueConfig{Name: "q", RateLimit: 1, MaxWait: time.Minute}, CommandVersionExpiryFairness},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CreateQueueCommand(tt.qc, false).GetVersion(); got != tt.want {
				t.Fatalf("version %d, want %d", got, tt.want)
			}
		})
	}
	f := newTestFSM(t)
	enq := func(idx uint64) {
		t.Helper()
		if r := applyEntry(t, f, idx, stamped(t0, EnqueueCommand(enqueueParams("q", 1)))); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
	}
	if r := applyEntry(t, f, 1, stamped(t0, CreateQueueCommand(engine.QueueConfig{Name: "q", MaxReserved: 1}, false))); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	enq(2)
	enq(3)
	res := applyEntry(t, f, 4, stamped(t0, ReserveCommand(engine.ReserveParams{Queue: "q", N: 5, WorkerID: "w", Lease: time.Minute})))
	if res[0].Err != nil || len(res[0].Deliveries) != 1 {
		t.Fatalf("reserve under max_reserved 1: %d jobs, %v", len(res[0].Deliveries), res[0].Err)
	}
}

// The declarative ConfigSet with declared_reserve_limits turns the rule on
// in the replicated state: a limits-only edit of a definition is applied
// after it, not before; and a runtime update of the limits survives the
// same file proposed again (a new leader).
func TestConfigSet_DeclaredReserveLimits(t *testing.T) {
	file := func(maxReserved int) engine.Config {
		return engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "q", MaxReserved: maxReserved}}}
	}
	f := newTestFSM(t)
	idx := uint64(0)
	apply := func(cmds ...*cmdpb.Command) {
		t.Helper()
		idx++
		for i, r := range applyEntry(t, f, idx, stamped(t0.Add(time.Duration(idx)*time.Second), cmds...)) {
			if r.Err != nil {
				t.Fatalf("entry %d command %d: %v", idx, i, r.Err)
			}
		}
	}
	maxReserved := func() int { t.Helper(); return queueLimits(t, f, "q").MaxReserved }
	on := func() (on bool) {
		_ = f.Read(func(e *engine.Engine) error { on = e.DeclaredReserveLimits(); return nil })
		return
	}

	apply(DeclaredConfigCommand(file(5)))
	apply(DeclaredConfigCommand(file(7)))
	if maxReserved() != 5 || on() {
		t.Fatalf("before the rule: max_reserved %d (want 5, the edit skipped), on %v", maxReserved(), on())
	}
	cmd := DeclaredReserveLimitsConfigCommand(DeclaredConfigCommand(file(5)))
	if cmd.GetVersion() != CommandVersionQueueReserveLimits || !cmd.GetConfigSet().GetDeclaredReserveLimits() {
		t.Fatalf("built %v", cmd)
	}
	apply(cmd)
	if maxReserved() != 5 || !on() {
		t.Fatalf("the conversion: max_reserved %d, on %v; want 5, on", maxReserved(), on())
	}
	apply(UpdateQueueCommand(engine.QueueUpdate{Name: "q", Set: engine.QueueConfig{MaxReserved: 1}}))
	apply(DeclaredConfigCommand(file(5))) // a new leader with the same file
	if maxReserved() != 1 {
		t.Fatalf("the same file overwrote the runtime value: max_reserved %d", maxReserved())
	}
	apply(DeclaredConfigCommand(file(7))) // the file's entry edited
	if maxReserved() != 7 {
		t.Fatalf("a limits-only edit under the rule: max_reserved %d, want 7", maxReserved())
	}
}
