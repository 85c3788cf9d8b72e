package fsm

import (
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
)

// A ConfigSet with record_fields is of command version 12 and turns the
// engine's recordFields on when applied; a declarative ConfigSet without
// it leaves recordFields off (what an older leader proposes).
func TestRecordFieldsConfigSet(t *testing.T) {
	cfg := engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "q", DeadLetterQueue: "q.dead"}}}
	if c := RecordFieldsConfigCommand(cfg); c.GetVersion() != CommandVersionRecordFields || !c.GetConfigSet().GetRecordFields() || !c.GetConfigSet().GetDeclarative() {
		t.Fatalf("command: %v", c)
	}
	if c := DeclaredConfigCommand(cfg); c.GetVersion() >= CommandVersionRecordFields || c.GetConfigSet().GetRecordFields() {
		t.Fatalf("declared command: %v", c)
	}
	recordFields := func(f *FSM) (on bool) {
		_ = f.Read(func(e *engine.Engine) error { on = e.RecordFields(); return nil })
		return on
	}
	f := newTestFSM(t)
	applyEntry(t, f, 1, stamped(t0, DeclaredConfigCommand(cfg)))
	if recordFields(f) {
		t.Fatal("a declarative ConfigSet without record_fields turned recordFields on")
	}
	res := applyEntry(t, f, 2, stamped(t0.Add(time.Second), RecordFieldsConfigCommand(cfg)))
	if res[0].Err != nil || !recordFields(f) {
		t.Fatalf("record_fields ConfigSet: %v, recordFields %v", res[0].Err, recordFields(f))
	}
}
