package fsm

import (
	"reflect"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
)

// TestSetConfigCommand_ReserveLimitsVersion: a ConfigSet that sets a queue's
// reserve limits carries CommandVersionReserveLimits, the limits survive the
// round trip through the log, and a replica applying it holds jobs back.
func TestSetConfigCommand_ReserveLimitsVersion(t *testing.T) {
	tests := []struct {
		name        string
		q           engine.QueueConfig
		wantVersion uint32
	}{
		{name: "None", q: engine.QueueConfig{Name: "q"}, wantVersion: CommandVersionKeyMinWindow}, // the default limits set the min window
		{name: "MaxReserved", q: engine.QueueConfig{Name: "q", MaxReserved: 1}, wantVersion: CommandVersionReserveLimits},
		{name: "Rate", q: engine.QueueConfig{Name: "q", RateLimit: 1, RatePeriod: time.Minute, RateBurst: 1}, wantVersion: CommandVersionReserveLimits},
		{name: "PerKey", q: engine.QueueConfig{Name: "q", ConcurrencyKey: "customer", MaxPerKey: 1}, wantVersion: CommandVersionReserveLimits},
		{name: "WithMemoryBudget", q: engine.QueueConfig{Name: "q", MaxReserved: 1, MaxMemoryBytes: ptr[int64](1 << 20)}, wantVersion: CommandVersionReserveLimits},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{tt.q}}
			cmd := SetConfigCommand(cfg)
			if cmd.GetVersion() != tt.wantVersion {
				t.Fatalf("version %d, want %d", cmd.GetVersion(), tt.wantVersion)
			}
			// The declarative ConfigSet is of version 5 at least, and of the
			// limits' version when it carries them.
			if got, want := DeclaredConfigCommand(cfg).GetVersion(), max(tt.wantVersion, CommandVersionQueues); got != want {
				t.Fatalf("declarative version %d, want %d", got, want)
			}
			if got := engine.ConfigFromProto(cmd.GetConfigSet().GetConfig()); !reflect.DeepEqual(got, cfg) {
				t.Fatalf("round trip %+v, want %+v", got.Queues, cfg.Queues)
			}
			f := newTestFSM(t)
			if r := applyEntry(t, f, 1, stamped(t0, cmd)); r[0].Err != nil {
				t.Fatal(r[0].Err)
			}
			var running engine.Config
			_ = f.Read(func(e *engine.Engine) error { running = e.Config(); return nil })
			if !reflect.DeepEqual(running.Queues, cfg.Queues) {
				t.Fatalf("running %+v, want %+v", running.Queues, cfg.Queues)
			}
		})
	}
}

func TestStripReserveLimits(t *testing.T) {
	cfg := engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "q", MaxReserved: 2, RateLimit: 3, ConcurrencyKey: "c", MaxPerKey: 1, DeadLetterQueue: "d"}}}
	got := engine.StripReserveLimits(cfg)
	if engine.HasReserveLimits(got) || got.Queues[0].DeadLetterQueue != "d" {
		t.Fatalf("stripped %+v", got.Queues[0])
	}
	if SetConfigCommand(got).GetVersion() == CommandVersionReserveLimits {
		t.Fatal("a stripped config still needs the reserve-limits version")
	}
	if cfg.Queues[0].MaxReserved != 2 {
		t.Fatal("StripReserveLimits changed its argument")
	}
}
