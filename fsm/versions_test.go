package fsm

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// TestVersionTable_Shape: the rows run 1..CommandVersion in order (a
// version number is on disk: a gap or a swap would be a bad merge), every
// feature name is new and snake_case, and every operation a row lists is
// an operation of Command's oneof, listed once. An operation of a field
// after the first binary's (10..27) that no row lists would silently be
// version 1, which an older binary stops on.
func TestVersionTable_Shape(t *testing.T) {
	if CommandVersion != uint32(len(commandVersions)) || CommandVersion < 2 {
		t.Fatalf("CommandVersion %d, table has %d rows", CommandVersion, len(commandVersions))
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	names := map[string]uint32{}
	listed := map[protoreflect.Name]uint32{}
	for i, r := range commandVersions {
		if r.version != uint32(i+1) {
			t.Errorf("row %d has version %d, want %d: rows run 1..N in order", i, r.version, i+1)
		}
		if r.adds == "" {
			t.Errorf("version %d: say what it adds", r.version)
		}
		if i == 0 {
			if r.feature != "" || len(r.ops) != 0 {
				t.Errorf("version 1 is the base: no feature name, no operations")
			}
			continue
		}
		if !snake.MatchString(r.feature) {
			t.Errorf("version %d: feature name %q is not snake_case", r.version, r.feature)
		}
		if prev, dup := names[r.feature]; dup {
			t.Errorf("feature name %q of version %d is already version %d's", r.feature, r.version, prev)
		}
		names[r.feature] = r.version
		for _, op := range r.ops {
			f := opOneof.Fields().ByName(op)
			if f == nil {
				t.Errorf("version %d lists %q, which is no operation of Command", r.version, op)
				continue
			}
			if prev, dup := listed[op]; dup {
				t.Errorf("operation %q is listed by versions %d and %d", op, prev, r.version)
			}
			listed[op] = r.version
			if got := opVersions[f.Number()]; got != r.version {
				t.Errorf("operation %q: CheckEntry's version %d, want %d", op, got, r.version)
			}
			if got := opVersion(opOfField(f)); got != r.version {
				t.Errorf("operation %q: DecodeEntry's version %d, want %d", op, got, r.version)
			}
		}
	}
	fields := opOneof.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if _, ok := listed[f.Name()]; !ok && f.Number() > 27 {
			t.Errorf("operation %s (field %d) is no version 1 operation and no row lists it: add it to its version's ops", f.Name(), f.Number())
		}
	}
	feats := Features()
	features := commandVersions[1:] // the rows but the base
	if len(feats) != len(features) {
		t.Fatalf("Features() has %d entries, want %d", len(feats), len(features))
	}
	for i, f := range feats {
		if r := features[i]; f.Name != r.feature || f.CommandVersion != r.version {
			t.Errorf("Features()[%d] = %+v, want {%s %d}", i, f, r.feature, r.version)
		}
		if got, ok := FeatureOf(f.CommandVersion); !ok || got != f {
			t.Errorf("FeatureOf(%d) = %+v, %v; want %+v", f.CommandVersion, got, ok, f)
		}
	}
	for _, v := range []uint32{0, 1, CommandVersion + 1} {
		if f, ok := FeatureOf(v); ok {
			t.Errorf("FeatureOf(%d) = %+v, want none", v, f)
		}
	}
}

// TestVersionTable_BuildersStampItsRows: every builder stamps a version of
// the table, and every row of the table is stamped by some builder (a row
// no command carries is a version nobody needs). A new version needs a
// case here that builds a command of it.
func TestVersionTable_BuildersStampItsRows(t *testing.T) {
	ref := engine.LeaseRef{JobID: 1, LeaseToken: 1}
	plainCfg := engine.Config{Limits: engine.DefaultLimits()}
	plainCfg.Limits.IdempotencyMinWindow = 0
	queueCfg := func(mut func(*engine.QueueConfig)) engine.Config {
		cfg := plainCfg
		q := engine.QueueConfig{Name: "q"}
		mut(&q)
		cfg.Queues = []engine.QueueConfig{q}
		return cfg
	}
	budget := int64(1 << 20)
	unique := enqueueParams("q", 1)
	unique.Unique = &engine.UniqueOpts{Key: "k"}
	expiring := enqueueParams("q", 1)
	expiring.Expiry = &engine.ExpiryOpts{TTL: time.Minute}
	traced := enqueueParams("q", 1)
	traced.Trace = &engine.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	schedule := engine.ScheduleParams{Name: "s", Kind: engine.ScheduleInterval, Interval: time.Minute,
		Template: engine.JobTemplate{Queue: "q", JobType: "t"}}
	at := time.Unix(1_700_000_000, 0)

	tests := []struct {
		name string
		cmd  *cmdpb.Command
		want uint32
	}{
		{"Enqueue", EnqueueCommand(enqueueParams("q", 1)), commandV1},
		{"EnqueueBatch", EnqueueBatchCommand([]engine.EnqueueParams{enqueueParams("q", 1)}), commandV1},
		{"Reserve", ReserveCommand(engine.ReserveParams{Queue: "q"}), commandV1},
		{"Ack", AckCommand(ref), commandV1},
		{"Nack", NackCommand(engine.NackParams{LeaseRef: ref}), commandV1},
		{"Release", ReleaseCommand(ref), commandV1},
		{"ExtendLease", ExtendLeaseCommand(engine.ExtendParams{LeaseRef: ref}), commandV1},
		{"ExtendAllLeases", ExtendAllLeasesCommand(time.Second), commandV1},
		{"Drain", DrainCommand(engine.DrainParams{}), commandV1},
		{"RequeueDeadLetters", RequeueDeadLettersCommand(nil), commandV1},
		{"DeleteDeadLetters", DeleteDeadLettersCommand(nil), commandV1},
		{"DeadLetterJobs", DeadLetterJobsCommand(nil, ""), commandV1},
		{"PauseQueue", PauseQueueCommand("q"), commandV1},
		{"ResumeQueue", ResumeQueueCommand("q"), commandV1},
		{"Tick", TickCommand(), commandV1},
		{"SetConfig", SetConfigCommand(plainCfg), commandV1},
		{"SetNode", SetNodeCommand(NodeMeta{ID: "n"}), commandV1},
		{"DeleteNode", DeleteNodeCommand("n"), commandV1},
		{"AckBatch", AckBatchCommand([]engine.LeaseRef{ref}), CommandVersionAckBatch},
		{"SetConfigMinWindow", SetConfigCommand(engine.Config{Limits: engine.DefaultLimits()}), CommandVersionKeyMinWindow},
		{"SetConfigMemoryBudget", SetConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.MaxMemoryBytes = &budget })), CommandVersionMemoryBudget},
		{"CreateQueue", CreateQueueCommand(engine.QueueConfig{Name: "q"}, false), CommandVersionQueues},
		{"UpdateQueue", UpdateQueueCommand(engine.QueueUpdate{Name: "q"}), CommandVersionQueues},
		{"DeleteQueue", DeleteQueueCommand("q", false), CommandVersionQueues},
		{"PurgeQueue", PurgeQueueCommand("q", 0), CommandVersionQueues},
		{"JobsActRunNow", JobsActCommand(engine.JobActionParams{Action: engine.JobActionRunNow}), CommandVersionQueues},
		{"DeclaredConfig", DeclaredConfigCommand(plainCfg), CommandVersionQueues},
		{"SetConfigReserveLimits", SetConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.MaxReserved = 3 })), CommandVersionReserveLimits},
		{"DeclaredConfigReserveLimits", DeclaredConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.MaxReserved = 3 })), CommandVersionReserveLimits},
		{"UpsertSchedule", UpsertScheduleCommand(schedule), CommandVersionSchedules},
		{"DeleteSchedule", DeleteScheduleCommand("s"), CommandVersionSchedules},
		{"PauseSchedule", PauseScheduleCommand("s", true, at), CommandVersionSchedules},
		{"FireSchedule", FireScheduleCommand("s", at, at.Add(time.Minute), false), CommandVersionSchedules},
		{"EnqueueUnique", EnqueueCommand(unique), CommandVersionUnique},
		{"EnqueueBatchUnique", EnqueueBatchCommand([]engine.EnqueueParams{unique}), CommandVersionUnique},
		{"JobsActCancel", JobsActCommand(engine.JobActionParams{Action: engine.JobActionCancel}), CommandVersionCancel},
		{"JobsActCancelDelete", JobsActCommand(engine.JobActionParams{Action: engine.JobActionCancelDelete}), CommandVersionCancel},
		{"RedriveStart", RedriveStartCommand(engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "q"}}), CommandVersionRedrive},
		{"RedriveStep", RedriveStepCommand(1, 10), CommandVersionRedrive},
		{"RedriveSetState", RedriveSetStateCommand(1, engine.RedrivePaused, "op"), CommandVersionRedrive},
		{"EnqueueExpiry", EnqueueCommand(expiring), CommandVersionExpiryFairness},
		{"EnqueueBatchExpiry", EnqueueBatchCommand([]engine.EnqueueParams{expiring}), CommandVersionExpiryFairness},
		{"EnqueueUniqueExpiry", EnqueueCommand(func() engine.EnqueueParams { p := unique; p.Expiry = expiring.Expiry; return p }()), CommandVersionExpiryFairness},
		{"CreateQueueFairness", CreateQueueCommand(engine.QueueConfig{Name: "q", FairnessKey: "tenant"}, false), CommandVersionExpiryFairness},
		{"UpdateQueueInheritMaxWait", UpdateQueueCommand(engine.QueueUpdate{Name: "q", Inherit: []string{"max_wait_ms"}}), CommandVersionExpiryFairness},
		{"SetConfigMaxWait", SetConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.MaxWait = time.Minute })), CommandVersionExpiryFairness},
		{"DeclaredConfigMaxWait", DeclaredConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.MaxWait = time.Minute })), CommandVersionExpiryFairness},
		{"RecordFieldsConfig", RecordFieldsConfigCommand(plainCfg), CommandVersionRecordFields},
		{"CreateQueueDeadLetterTarget", CreateQueueCommand(engine.QueueConfig{Name: "q", DeadLetterQueue: "q.dead"}, false), CommandVersionDeadLetterEdges},
		{"UpdateQueueDeadLetterTarget", UpdateQueueCommand(engine.QueueUpdate{Name: "q", Set: engine.QueueConfig{DeadLetterQueue: "q.dead"}, SetDeadLetterQueue: true}), CommandVersionDeadLetterEdges},
		{"RedriveStartExpired", RedriveStartCommand(engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "q", Cause: engine.CauseExpired}}), CommandVersionDeadLetterEdges},
		{"ForwardKeepsPriorityConfig", ForwardKeepsPriorityConfigCommand(DeclaredConfigCommand(plainCfg)), CommandVersionDeadLetterEdges},
		{"ReserveRetryWindow", ReserveCommand(engine.ReserveParams{Queue: "q", N: 1, RequestID: "r1", RetryWindow: true}), CommandVersionReserveRetry},
		{"EnqueueTrace", EnqueueCommand(traced), CommandVersionTraceContext},
		{"EnqueueBatchTrace", EnqueueBatchCommand([]engine.EnqueueParams{enqueueParams("q", 1), traced}), CommandVersionTraceContext},
		{"PayloadsOffHeapConfig", PayloadsOffHeapConfigCommand(DeclaredConfigCommand(plainCfg)), CommandVersionPayloadsOffHeap},
		{"ReserveWithoutRetryWindow", ReserveCommand(engine.ReserveParams{Queue: "q", N: 1, RequestID: "r1"}), commandV1},
		{"CreateQueueReserveLimits", CreateQueueCommand(engine.QueueConfig{Name: "q", MaxReserved: 3}, false), CommandVersionReserveLimits},
		{"UpdateQueueReserveLimits", UpdateQueueCommand(engine.QueueUpdate{Name: "q", Set: engine.QueueConfig{MaxReserved: 3}}), CommandVersionQueueReserveLimits},
		{"UpdateQueueInheritRateLimit", UpdateQueueCommand(engine.QueueUpdate{Name: "q", Inherit: []string{"rate_limit"}}), CommandVersionQueueReserveLimits},
		{"DeclaredReserveLimitsConfig", DeclaredReserveLimitsConfigCommand(DeclaredConfigCommand(plainCfg)), CommandVersionQueueReserveLimits},
		{"CreateQueueTags", CreateQueueCommand(engine.QueueConfig{Name: "q", Tags: []engine.Tag{{Key: "env", Value: "prod"}}}, false), CommandVersionQueueTags},
		{"UpdateQueueSetTags", UpdateQueueCommand(engine.QueueUpdate{Name: "q", SetTags: true}), CommandVersionQueueTags},
		{"UpdateQueueInheritTags", UpdateQueueCommand(engine.QueueUpdate{Name: "q", Inherit: []string{"tags"}}), CommandVersionQueueTags},
		{"SetConfigTags", SetConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.Tags = []engine.Tag{{Key: "k"}} })), CommandVersionQueueTags},
		{"DeclaredConfigTags", DeclaredConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.Tags = []engine.Tag{{Key: "k"}} })), CommandVersionQueueTags},
		// The reserve-limits rule never lowers a version its config needs.
		{"DeclaredReserveLimitsWithTags", DeclaredReserveLimitsConfigCommand(DeclaredConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.Tags = []engine.Tag{{Key: "k"}} }))), CommandVersionQueueTags},
		{"TaggedOverPayloadsOffHeap", TaggedConfigCommand(PayloadsOffHeapConfigCommand(DeclaredConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.Tags = []engine.Tag{{Key: "k"}} })))), CommandVersionQueueTags},
		{"RecordFieldsWithTags", ForwardKeepsPriorityConfigCommand(RecordFieldsConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.Tags = []engine.Tag{{Key: "k"}} }))), CommandVersionQueueTags},
		{"AckWithResult", AckWithResultCommand(engine.LeaseRef{JobID: 1, LeaseToken: 1}, []byte("r")), CommandVersionResults},
		{"AckWithEmptyResult", AckWithResultCommand(engine.LeaseRef{JobID: 1, LeaseToken: 1}, nil), commandV1},
		{"AckFollowUps", AckFollowUpsCommand(engine.LeaseRef{JobID: 1, LeaseToken: 1}, nil, []engine.EnqueueParams{{Queue: "q", JobType: "t"}}), CommandVersionFollowUps},
		{"AckFollowUpsResult", AckFollowUpsCommand(engine.LeaseRef{JobID: 1, LeaseToken: 1}, []byte("r"), []engine.EnqueueParams{{Queue: "q", JobType: "t"}}), CommandVersionFollowUps},
		{"AckNoFollowUps", AckFollowUpsCommand(engine.LeaseRef{JobID: 1, LeaseToken: 1}, []byte("r"), nil), CommandVersionResults},
		{"PublicEnqueue", mustPublic(PublicEnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t"})), CommandVersionPublicEnqueue},
		{"PublicEnqueueBatch", mustPublic(PublicEnqueueBatchCommand([]engine.EnqueueParams{{Queue: "q", JobType: "t"}})), CommandVersionPublicEnqueue},
		{"PublicEnqueueBatchAfter", mustPublic(PublicEnqueueBatchCommand([]engine.EnqueueParams{{Queue: "q", JobType: "t"}, {Queue: "q", JobType: "t", After: []int{0}}})), CommandVersionDependencies},
		{"AckFollowUpsAfter", AckFollowUpsCommand(engine.LeaseRef{JobID: 1, LeaseToken: 1}, nil, []engine.EnqueueParams{{Queue: "q", JobType: "t"}, {Queue: "q", JobType: "t", After: []int{0}, OnParentFailure: engine.ParentFailureRun}}), CommandVersionDependencies},
		{"PublicEnqueueUnique", mustPublic(PublicEnqueueBatchCommand([]engine.EnqueueParams{{Queue: "q", JobType: "t", Unique: &engine.UniqueOpts{}}})), CommandVersionPublicEnqueue},
		{"CreateQueueCompletedRetention", CreateQueueCommand(engine.QueueConfig{Name: "q", CompletedRetention: time.Hour}, false), CommandVersionResults},
		{"UpdateQueueCompletedRetention", UpdateQueueCommand(engine.QueueUpdate{Name: "q", Set: engine.QueueConfig{CompletedRetention: time.Hour}}), CommandVersionResults},
		{"UpdateQueueInheritCompletedRetention", UpdateQueueCommand(engine.QueueUpdate{Name: "q", Inherit: []string{"completed_retention_ms"}}), CommandVersionResults},
		{"SetConfigCompletedRetention", SetConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.CompletedRetention = time.Hour })), CommandVersionResults},
		{"DeclaredConfigCompletedRetention", DeclaredConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.CompletedRetention = time.Hour })), CommandVersionResults},
		{"RetentionOverPayloadsOffHeap", TaggedConfigCommand(PayloadsOffHeapConfigCommand(DeclaredConfigCommand(queueCfg(func(q *engine.QueueConfig) { q.CompletedRetention = time.Hour })))), CommandVersionResults},
		{"PublicCreateQueue", PublicCreateQueueCommand(engine.QueueConfig{Name: "q"}, false), CommandVersionPublicQueueSettings},
		{"ExtendLease", ExtendLeaseCommand(engine.ExtendParams{LeaseRef: engine.LeaseRef{JobID: 1, LeaseToken: 1}}), commandV1},
		{"ExtendLeaseProgress", ExtendLeaseCommand(engine.ExtendParams{LeaseRef: engine.LeaseRef{JobID: 1, LeaseToken: 1}, Progress: &engine.Progress{Percent: 1}}), CommandVersionProgress},
		{"PublicCreateQueueTags", PublicCreateQueueCommand(engine.QueueConfig{Name: "q", Tags: []engine.Tag{{Key: "k"}}}, false), CommandVersionPublicQueueSettings},
		{"PublicQueueSettingsConfig", PublicQueueSettingsConfigCommand(DeclaredConfigCommand(queueCfg(func(*engine.QueueConfig) {})), queueCfg(func(*engine.QueueConfig) {})), CommandVersionPublicQueueSettings},
		{"PublicQueueSettingsConfigNoQueues", PublicQueueSettingsConfigCommand(DeclaredConfigCommand(plainCfg), plainCfg), CommandVersionQueues},
		{"PublicUpdateQueue", PublicUpdateQueueCommand(engine.QueueUpdate{Name: "q"}), CommandVersionPublicQueueSettings},
		{"CompactCharge", CompactChargeConfigCommand(DeclaredConfigCommand(plainCfg)), CommandVersionCompactCharge},
		{"CompactChargeOverPublicSettings", CompactChargeConfigCommand(PublicQueueSettingsConfigCommand(TaggedConfigCommand(PayloadsOffHeapConfigCommand(DeclaredConfigCommand(queueCfg(func(*engine.QueueConfig) {})))), queueCfg(func(*engine.QueueConfig) {}))), CommandVersionCompactCharge},
		{"DeclaredReserveLimitsOverEdges", DeclaredReserveLimitsConfigCommand(ForwardKeepsPriorityConfigCommand(RecordFieldsConfigCommand(plainCfg))), CommandVersionQueueReserveLimits},
	}
	stamped := map[uint32]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.cmd.GetVersion()
			if v < 1 || v > CommandVersion {
				t.Fatalf("built with version %d, which is not in the table (1..%d)", v, CommandVersion)
			}
			if v != tc.want {
				t.Fatalf("built with version %d (%s), want %d (%s)", v, commandVersions[v-1].feature, tc.want, commandVersions[tc.want-1].feature)
			}
			if since := opVersion(tc.cmd.GetOp()); v < since {
				t.Fatalf("version %d is older than its operation's %d", v, since)
			}
			// The command decodes: the version is one this binary applies.
			data, err := EncodeEntry([]*cmdpb.Command{tc.cmd})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := DecodeEntry(data); err != nil {
				t.Fatalf("DecodeEntry: %v", err)
			}
			if err := CheckEntry(data); err != nil {
				t.Fatalf("CheckEntry: %v", err)
			}
		})
		stamped[tc.cmd.GetVersion()] = true
	}
	for _, r := range commandVersions {
		switch {
		case isCapability(r.version) && stamped[r.version]:
			t.Errorf("a builder stamps version %d (%s), a capability no command carries", r.version, r.feature)
		case !isCapability(r.version) && !stamped[r.version]:
			t.Errorf("no builder stamps version %d (%s): a row no command carries, or a missing case here", r.version, r.feature)
		}
	}
}

// TestVersionTable_OneDeclaration reads this package's sources: a command's
// version is set only from the table's constants (never a number written
// at the builder, which the table would not know), every constant of the
// table is stamped somewhere outside versions.go, and no CommandVersionXxx
// constant is declared outside versions.go.
func TestVersionTable_OneDeclaration(t *testing.T) {
	tableConsts := map[string]uint32{}
	capabilities := map[string]bool{}
	for _, r := range commandVersions {
		name := versionConstName(t, r.version)
		if isCapability(r.version) {
			capabilities[name] = true
			continue
		}
		tableConsts[name] = r.version
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	used := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		// checkValue accepts a table constant or a call (a helper such as
		// jobsActVersion that returns one; its own returns are checked as
		// the values of a function named ...Version below).
		checkValue := func(where string, e ast.Expr) {
			switch x := e.(type) {
			case *ast.Ident:
				if _, ok := tableConsts[x.Name]; ok {
					if path != "versions.go" {
						used[x.Name] = true
					}
					return
				}
			case *ast.CallExpr:
				return
			}
			if id, ok := e.(*ast.Ident); ok && capabilities[id.Name] {
				t.Errorf("%s: %s stamps %s, a capability no command carries", fset.Position(e.Pos()), where, id.Name)
				return
			}
			t.Errorf("%s: %s sets a command version from %s, not from a constant of the table (versions.go)", fset.Position(e.Pos()), where, exprString(e))
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && capabilities[id.Name] && path != "versions.go" {
				used[id.Name] = true // a capability is asked for, never stamped
			}
			switch x := n.(type) {
			case *ast.GenDecl:
				if x.Tok != token.CONST || path == "versions.go" {
					return true
				}
				for _, s := range x.Specs {
					for _, name := range s.(*ast.ValueSpec).Names {
						if strings.HasPrefix(name.Name, "CommandVersion") || name.Name == "commandV1" {
							t.Errorf("%s: %s is declared outside versions.go: add it to the table", fset.Position(name.Pos()), name.Name)
						}
					}
				}
			case *ast.KeyValueExpr:
				if k, ok := x.Key.(*ast.Ident); ok && k.Name == "Version" {
					checkValue("a Command literal", x.Value)
				}
			case *ast.AssignStmt:
				for i, lhs := range x.Lhs {
					if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Version" && i < len(x.Rhs) {
						checkValue("an assignment", x.Rhs[i])
					}
				}
			case *ast.CallExpr:
				if fn, ok := x.Fun.(*ast.Ident); ok && fn.Name == "atLeast" && len(x.Args) == 2 {
					checkValue("atLeast", x.Args[1])
				}
			case *ast.FuncDecl:
				if !strings.HasSuffix(x.Name.Name, "Version") || x.Body == nil || x.Type.Results == nil {
					return true
				}
				if id, ok := x.Type.Results.List[0].Type.(*ast.Ident); !ok || id.Name != "uint32" || x.Recv != nil {
					return true
				}
				ast.Inspect(x.Body, func(n ast.Node) bool {
					if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
						if x.Name.Name == "opVersion" {
							return true // reads the table's maps
						}
						checkValue(x.Name.Name, r.Results[0])
					}
					return true
				})
			}
			return true
		})
	}
	for name, v := range tableConsts {
		if !used[name] {
			t.Errorf("%s (version %d) is stamped nowhere outside versions.go", name, v)
		}
	}
	for name := range capabilities {
		if !used[name] {
			t.Errorf("%s, a capability, is asked for nowhere outside versions.go", name)
		}
	}
}

// versionConstName is the name of the constant whose value is version v,
// read from versions.go's const block.
func versionConstName(t *testing.T, v uint32) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "versions.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if len(vs.Values) != 1 || len(vs.Names) != 1 {
				continue
			}
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.INT && lit.Value == strconv.FormatUint(uint64(v), 10) {
				return vs.Names[0].Name
			}
		}
	}
	t.Fatalf("versions.go declares no constant of version %d", v)
	return ""
}

func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.BasicLit:
		return x.Value
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	}
	return "an expression"
}

// mustPublic is a public-form enqueue command that must have been built.
func mustPublic(c *cmdpb.Command, ok bool) *cmdpb.Command {
	if !ok {
		panic("the public form does not state the test's params")
	}
	return c
}
