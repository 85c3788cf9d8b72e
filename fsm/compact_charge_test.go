package fsm

import (
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
)

// A ConfigSet of CommandVersionCompactCharge turns the engine's compact
// charge on and lowers the count of the plain waiting jobs held; a
// declarative ConfigSet without it leaves the charge as it is.
func TestCompactCharge_ConfigSetTurnsItOn(t *testing.T) {
	f := newTestFSM(t)
	now := time.Unix(100, 0)
	cfg := engine.Config{Limits: engine.DefaultLimits()}
	held := func() (int64, bool) {
		var n int64
		var on bool
		_ = f.Read(func(e *engine.Engine) error {
			n, on = e.MemoryHeldTotal(), e.CompactCharge()
			return nil
		})
		return n, on
	}
	for i, res := range applyCommands(t, f, now,
		EnqueueCommand(engine.EnqueueParams{Queue: "c", JobType: "t", Payload: []byte("p")}),
		DeclaredConfigCommand(cfg)) {
		if res.Err != nil {
			t.Fatalf("command %d: %v", i, res.Err)
		}
	}
	before, on := held()
	if on {
		t.Fatal("compact charge on before any ConfigSet asked for it")
	}
	cmd := CompactChargeConfigCommand(DeclaredConfigCommand(cfg))
	if cmd.GetVersion() != CommandVersionCompactCharge {
		t.Fatalf("built with version %d, want %d", cmd.GetVersion(), CommandVersionCompactCharge)
	}
	if res := applyCommands(t, f, now, cmd); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	after, on := held()
	if !on || before-after != 144+1-32 {
		t.Fatalf("compact charge %v, held %d -> %d bytes; want on and %d bytes less", on, before, after, 144+1-32)
	}
}
