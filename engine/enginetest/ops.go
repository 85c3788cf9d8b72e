package enginetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"sort"
	"testing"

	"github.com/sepp-io/sepp/engine"
)

// OpCase is one write of every kind engine.Op has, zero-valued, with a
// check that a result is of the type the op's engine.OpOf names.
type OpCase struct {
	Op engine.Op
	// HasResultType reports whether v, what a Propose or Apply of Op
	// returned (with or without an error), is of Op's result type.
	HasResultType func(v any) bool
}

func opCase[R any](op engine.OpOf[R]) OpCase {
	return OpCase{Op: op, HasResultType: func(v any) bool { _, ok := v.(R); return ok }}
}

// EveryOp is one OpCase per kind of engine.Op. RequireEveryOp fails a test
// when engine/ops.go declares a kind this list lacks.
func EveryOp() []OpCase {
	return []OpCase{
		opCase(engine.EnqueueOp{}),
		opCase(engine.EnqueueBatchOp{}),
		opCase(engine.ReserveOp{}),
		opCase(engine.AckOp{}),
		opCase(engine.AckFollowUpsOp{}),
		opCase(engine.NackOp{}),
		opCase(engine.ReleaseOp{}),
		opCase(engine.ExtendLeaseOp{}),
		opCase(engine.DrainDeadLettersOp{}),
		opCase(engine.RequeueDeadLettersOp{}),
		opCase(engine.DeleteDeadLettersOp{}),
		opCase(engine.DeadLetterJobsOp{}),
		opCase(engine.PauseQueueOp{}),
		opCase(engine.ResumeQueueOp{}),
		opCase(engine.CreateQueueOp{}),
		opCase(engine.UpdateQueueOp{}),
		opCase(engine.DeleteQueueOp{}),
		opCase(engine.PurgeQueueOp{}),
		opCase(engine.ActOnJobsOp{}),
		opCase(engine.StartRedriveOp{}),
		opCase(engine.SetRedriveStateOp{}),
		opCase(engine.CreateScheduleOp{}),
		opCase(engine.UpdateScheduleOp{}),
		opCase(engine.SetSchedulePausedOp{}),
		opCase(engine.DeleteScheduleOp{}),
		opCase(engine.UpsertScheduleOp{}),
		opCase(engine.PauseScheduleOp{}),
	}
}

// RequireEveryOp fails t unless EveryOp has a case for each type that
// engine/ops.go gives an OpName method, read from the source so that a new
// kind of write cannot be added without its case.
func RequireEveryOp(t testing.TB) {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "ops.go")
	f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || fn.Name.Name != "OpName" {
			continue
		}
		if id, ok := fn.Recv.List[0].Type.(*ast.Ident); ok {
			declared = append(declared, id.Name)
		}
	}
	listed := map[string]bool{}
	for _, c := range EveryOp() {
		listed[c.Op.OpName()+"Op"] = true
	}
	sort.Strings(declared)
	for _, name := range declared {
		if !listed[name] {
			t.Errorf("engine/ops.go declares %s, which enginetest.EveryOp lacks", name)
		}
	}
	if len(declared) != len(listed) {
		t.Errorf("engine/ops.go declares %d ops, EveryOp lists %d", len(declared), len(listed))
	}
}
