// Command protoc-gen-sepp-sdk is the protoc plugin that writes each SDK's
// native queue settings type (and, below, the job and enqueue families) from the public proto message
// sepp.v1.QueueSettings, with its conversions to and from the wire, so that
// a setting added to the proto reaches the TypeScript, Python and Rust SDKs
// by `make generate` alone. Out of the directory it is given (buf.gen.yaml:
// sdk) it writes:
//
//   - typescript/src/gen/queue_settings.ts: the QueueSettings interface,
//     EffectiveQueueSettings, queueSettingsToJSON, queueSettingsFromJSON,
//     queueLimitsFromJSON and the queueSettingsFields guard (over the
//     protojson shapes protoc-gen-sepp-ts writes beside it);
//   - python/src/sepp/_queue_settings.py: the frozen QueueSettings
//     dataclass with to_proto, from_proto and from_limits (over the
//     protoc-generated _pb2 modules);
//   - rust/src/queue_settings.rs: the QueueSettings struct, one native enum
//     per proto enum a setting uses, and to_wire, from_wire and from_limits
//     (over prost's types in crate::pb).
//
// With the option lang=go (buf.gen.yaml's second run, out directory
// client) it writes instead:
//
//   - queue_settings_gen.go: the Go client's QueueSettings struct (package
//     client), one pair of private functions per enum (retryBackoffToProto,
//     retryBackoffName), queueSettingsToProto, queueSettingsFromProto and
//     queueLimitsFromProto (over protoc-gen-go's types of the settings'
//     package, imported as seppv1).
//
// The hand-kept SDK and client code imports these and keeps no list of
// settings.
//
// # The rules
//
// A field's native name and type follow from its proto name and type
// alone, the same way in every language:
//
//   - Every setting has presence (proto3 optional, or a message): unset
//     means "inherit" (on update, "leave it"). It is an optional field of
//     the native type: undefined, None, Option::None. A field without
//     presence (a plain scalar, repeated, map) is refused.
//   - Integers (int32, uint32, int64, uint64 and their sint, fixed and
//     sfixed forms): TypeScript number (64-bit ones are sent as the decimal
//     string protojson wants, and must be safe integers; unsigned ones, and
//     durations, at least 0), Python int, Rust the integer of that width
//     and sign.
//   - An int64 or uint64 whose name ends in _ms is a duration in whole
//     milliseconds: TypeScript keeps the name (retryDelayMs: number),
//     Python and Rust drop the suffix and take timedelta and
//     std::time::Duration (retry_delay). Any other integer named _ms is
//     refused.
//   - bool: boolean, bool, bool. string: string, str, String.
//   - An enum is named by its values with the enum's prefix taken off
//     (RETRY_BACKOFF_EXPONENTIAL: "exponential" in TypeScript's union and
//     Python's str, RetryBackoff::Exponential in Rust's enum, which is
//     written here and named as the proto enum). Value 0 (…_UNSPECIFIED)
//     gets no name; a value the SDK does not know (a newer server's), or 0,
//     reads as the enum's first named value. Sending a name not among the
//     values is an error (RangeError, InvalidField) for callers the type
//     system does not hold (JavaScript, Python).
//   - A message field whose message holds exactly one field, a
//     map<string, string> (a map wrapped to give it presence, as QueueTags),
//     is the map itself: Record<string, string>, Mapping[str, str],
//     BTreeMap<String, String>. A present but empty map is sent as present.
//   - float, double, bytes and other messages are refused: the generator
//     does not guess a native form (and Rust's QueueSettings derives Eq,
//     which floats lack).
//
// In Go a setting is a pointer (nil: unset) to the same types, named in
// upper camel case (RetryDelay); an integer keeps its width and sign, a
// duration is *time.Duration, an enum *string (its value names, as in
// Python: an unknown name is an error when sent), the map
// map[string]string, whose nil is unset.
//
// Fields keep the proto's declaration order: Python's dataclass takes
// them positionally in that order, so a new setting goes at the end of the
// message, as protobuf's own advice on field numbers suggests anyway.
// Each field's doc comment is its leading comment in the proto.
//
// The effective settings (what a queue runs with, sepp.v1.QueueLimits)
// are read into the same native type: a setting is among them when
// QueueLimits has a field of the same name and type without presence
// (every such field is set then); one QueueLimits lacks (tags) is left out
// of TypeScript's EffectiveQueueSettings and is None in Python and Rust.
// A same-named field of another type is refused.
//
// # The job family
//
// It writes too the read side of a job: the native type of sepp.v1.Job
// and of every message it embeds (JobAttempt, JobOrigin, TraceContext,
// Progress, JobParent), the enums they use (JobState, DeadLetterCause,
// ParentFailurePolicy), and their conversions from the wire, so that a
// field added to Job (or to a message it embeds) reaches every SDK by
// `make generate` alone:
//
//   - typescript/src/gen/job.ts: one interface per message, one union
//     per enum, jobFromJSON and its kin (over the protojson shapes);
//   - python/src/sepp/_job.py: one frozen dataclass per message with
//     from_proto, one IntEnum per enum (value 0 is UNKNOWN; str() is the
//     lower-case name; an unknown value reads as the rules say);
//   - rust/src/job.rs: one struct per message with from_wire, one enum
//     per enum (named by its values in upper camel case, as prost does)
//     with from_wire and to_wire, over prost's types in crate::pb; each
//     derives Clone, Debug, Default, PartialEq, Eq and Hash (an enum's
//     default: value 0, or its first named value);
//   - with lang=go, job_gen.go: the Go client's structs, one per message,
//     and jobFromProto and its kin (package client). The enums' Go types
//     and constants stay the client's own (JobState, StateReady ...):
//     the generated code converts to them.
//
// The hand-kept files re-export them, and keep what is not on the wire
// (helpers, the write side's conversions). A message is named as in the
// proto; a field is named as in the proto (snake_case in Python and
// Rust) or by its JSON name (TypeScript). Per kind:
//
//   - 32-bit integers: number, int; 64-bit ones (ids, lease tokens):
//     TypeScript string (the decimal string protojson sends: a number
//     holds 53 bits), int.
//   - bool, string: as for the settings. bytes: Uint8Array, bytes.
//   - google.protobuf.Timestamp: Date, datetime (UTC); unset (or the
//     epoch) is absent: an optional field (undefined, None). Rust and Go
//     (below) read the epoch as a time like any other.
//   - google.protobuf.Duration: TypeScript a number of milliseconds
//     named so (run_time: runTimeMs), Python timedelta; unset is absent.
//   - Another message of the family: its native type, absent when unset
//     (Go: a pointer, nil). Messages of other packages (but the two
//     above) are refused.
//   - map<string, string>: Record<string, string>, Mapping[str, str].
//     Other maps are refused.
//   - repeated: an array (TypeScript), a tuple (Python) of the element's
//     native form, empty when none; repeated timestamps, durations,
//     enums and bytes are refused.
//   - An enum is the lower-case names of its values (TypeScript's union,
//     named as the proto enum). Each enum the family uses is listed in
//     jobEnums, which says whether its value 0 has a native name
//     (JobState's "unspecified"): then a field is always set and an
//     unknown value reads as value 0; else (ParentFailurePolicy) a field
//     is optional, 0 reads as unset and an unknown value as the first
//     named value.
//   - float, double, oneofs and proto3 optional are refused.
//
// Rust: integers keep their width and sign (u64 ids), bytes Vec<u8>,
// times Option<SystemTime>, durations Option<Duration> (prost-types'
// conversions), messages Option<T>, maps BTreeMap<String, String>,
// repeated Vec<T>; an enum without a native 0 is Option<T>. Go: integers
// keep theirs, bytes []byte, times time.Time (zero: unset), durations
// time.Duration (0: unset), repeated []T (messages by value), maps
// map[string]string; a field is named in upper camel case with the word
// id as ID; an enum without a native 0 reads 0 as its first named value
// (Go has no unset). setWith does not apply to Go, for the same reason.
//
// Python's dataclass takes its fields in field number order; the first
// ones are required and positional as jobPython says (none for a message
// it does not list), the rest keyword-only with defaults (the zero
// value, None, ()), so that a field added later moves no position.
//
// Where an SDK's public name or shape predates these rules and departs
// from them, the departure is declared once, in job.go's tables
// (jobEnums, jobFieldExceptions, jobPython), each entry with its
// reason; an entry that names no field of the family is an error.
//
// # The enqueue family
//
// It writes too the write side of a job: the native type of
// sepp.v1.EnqueueRequest and of every message of its own it embeds
// (UniqueOptions), with their setters where the SDK's style has them and
// their conversions to the wire, so that a plain field added to
// EnqueueRequest (or UniqueOptions) reaches every SDK by `make generate`
// alone:
//
//   - typescript/src/gen/enqueue.ts: one interface per message, every
//     field optional, and enqueueRequestToJSON and its kin (a field at
//     its zero value is left out, as protojson does), with an enum's
//     parentFailurePolicyToJSON and traceContextToJSON;
//   - python/src/sepp/_enqueue.py: one dataclass per message (fields in
//     field number order; positional, mutable or frozen, and a hand-kept
//     base class as enqMessages says; later fields keyword-only, with
//     defaults) and to_proto;
//   - rust/src/enqueue.rs: one struct per message with a with_<field>
//     setter per field (a map's takes one key and value, a repeated
//     field's extends it), and to_wire; EnqueueRequest's fields are
//     private, with a getter each and from_required for new;
//   - with lang=go, enqueue_gen.go: the Go client's structs, With<Field>
//     methods on EnqueueRequest (a map's takes one key and value, a
//     repeated field's appends), and enqueueRequestToProto and its kin.
//
// A message the request embeds that is of the job family (TraceContext)
// keeps the job family's native type; only its conversion to the wire is
// written here (its fields must be strings, bools or 32-bit integers,
// whose forms the two families share). An enum must be the job
// family's (ParentFailurePolicy: its native type and names).
//
// Per kind (TypeScript, Python, Rust, Go):
//
//   - string: string, str, String (a setter takes impl Into<String>),
//     string. bool: boolean, bool, bool, bool.
//   - 32-bit integers: number, int, and in Rust and Go the integer of
//     that width and sign; 64-bit ones: string (protojson's decimal, as
//     on the read side), int, i64/u64, int64/uint64.
//   - An int64 or uint64 named *_ms is a duration in whole milliseconds:
//     TypeScript keeps the name (ttlMs: number, sent floored), Python,
//     Rust and Go drop the suffix and take timedelta, Duration and
//     time.Duration (completed_for), sent in whole milliseconds rounded
//     down; 0 is unset. Any other integer named _ms is refused.
//   - bytes: Uint8Array, bytes, Vec<u8> (impl Into<Vec<u8>>), []byte.
//   - google.protobuf.Timestamp: Date, Optional[datetime],
//     Option<SystemTime>, time.Time (zero: unset).
//   - map<string, string>: Record<string, string>, dict[str, str],
//     BTreeMap<String, String>, map[string]string. Other maps are refused.
//   - Another message of the family: its native type, unset when absent
//     (Optional, Option, a Go pointer).
//   - An enum of the job family: its native type; one without a native
//     name for 0 is optional (unset is 0), in Go the value (0: unset).
//   - repeated (integers, strings, bools, messages): T[], Sequence[T],
//     Vec<T>, []T; empty when none.
//   - proto3 optional (an integer, a bool or a string): unset apart from
//     zero, sent when set: TypeScript's optional field, Optional, Option,
//     a Go pointer.
//   - float, double, oneofs, google.protobuf.Duration (a duration is an
//     integer named _ms), repeated enums, timestamps or bytes, and
//     messages of other packages are refused.
//
// Names: a field is named by its JSON name in TypeScript, its proto name
// in Python and Rust (a duration's _ms dropped), that name in upper camel
// case (the word id as ID) in Go. Each field's doc comment is its leading
// comment in the proto.
//
// What is not a plain field stays in the hand-kept code, which wraps the
// generated types: the idempotency key the client generates (the
// generated conversions leave the field out), TypeScript's payload given
// as text, the uniqueness key the server derives, trace-context
// injection, validation with clear errors, and the constructors that
// check the required fields. Where an SDK's public name or shape departs
// from these rules, the departure is declared once, in enqueue.go's
// tables (enqFieldExceptions, enqMessages), each entry with its reason;
// an entry that names no field or message of the family is an error.
//
// buf generate runs it (buf.gen.yaml) on package sepp.v1; its output is
// checked by make verify like the other generated code.
package main

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

const (
	settingsMessage protoreflect.FullName = "sepp.v1.QueueSettings"
	limitsMessage   protoreflect.FullName = "sepp.v1.QueueLimits"

	// The generated files, relative to the plugin's out directory (sdk/).
	tsFile     = "typescript/src/gen/queue_settings.ts"
	pythonFile = "python/src/sepp/_queue_settings.py"
	rustFile   = "rust/src/queue_settings.rs"
	// With the option lang=go, out of the Go client's directory (client/).
	goFile = "queue_settings_gen.go"

	// The job family's, out of sdk/.
	jobTSFile     = "typescript/src/gen/job.ts"
	jobPythonFile = "python/src/sepp/_job.py"
	jobRustFile   = "rust/src/job.rs"
	// With lang=go, out of client/.
	jobGoFile = "job_gen.go"

	// The enqueue family's, out of sdk/.
	enqTSFile     = "typescript/src/gen/enqueue.ts"
	enqPythonFile = "python/src/sepp/_enqueue.py"
	enqRustFile   = "rust/src/enqueue.rs"
	// With lang=go, out of client/.
	enqGoFile = "enqueue_gen.go"

	generator = "protoc-gen-sepp-sdk"
)

func main() {
	var p params
	protogen.Options{ParamFunc: p.set}.Run(func(gen *protogen.Plugin) error { return generate(gen, p) })
}

// params are the plugin's options: lang unset writes the SDKs' files (out
// directory sdk/), lang=go the Go client's (out directory client/).
type params struct{ lang string }

func (p *params) set(name, value string) error {
	if name != "lang" || (value != "" && value != "go") {
		return fmt.Errorf("unknown option %s=%s (the one option is lang=go)", name, value)
	}
	p.lang = value
	return nil
}

func generate(gen *protogen.Plugin, p params) error {
	gen.SupportedFeatures = uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL | pluginpb.CodeGeneratorResponse_FEATURE_SUPPORTS_EDITIONS)
	// Editions are accepted so that the workspace's edition 2023 files
	// (the engine's snapshot, seppstore.v1) may sit beside the files this
	// plugin reads, all proto3 (sepp.v1): it generates nothing from them.
	gen.SupportedEditionsMinimum = descriptorpb.Edition_EDITION_PROTO2
	gen.SupportedEditionsMaximum = descriptorpb.Edition_EDITION_2023
	settings := findMessage(gen, settingsMessage)
	if settings == nil {
		return fmt.Errorf("%s is not among the files to generate (buf.gen.yaml must give the plugin package sepp.v1)", settingsMessage)
	}
	limits := findMessage(gen, limitsMessage)
	if limits == nil {
		return fmt.Errorf("%s is not among the files to generate (buf.gen.yaml must give the plugin package sepp.v1)", limitsMessage)
	}
	m, err := newModel(settings, limits)
	if err != nil {
		return err
	}
	fam, err := newJobFamily(gen)
	if err != nil {
		return err
	}
	enq, err := newEnqFamily(gen, fam)
	if err != nil {
		return err
	}
	type output struct {
		name  string
		write func() (string, error)
	}
	outs := []output{
		{tsFile, func() (string, error) { return writeTypeScript(m) }},
		{pythonFile, func() (string, error) { return writePython(m) }},
		{rustFile, func() (string, error) { return writeRust(m) }},
		{jobTSFile, func() (string, error) { return writeJobTypeScript(fam) }},
		{jobPythonFile, func() (string, error) { return writeJobPython(fam) }},
		{jobRustFile, func() (string, error) { return writeJobRust(fam) }},
		{enqTSFile, func() (string, error) { return writeEnqueueTypeScript(enq) }},
		{enqPythonFile, func() (string, error) { return writeEnqueuePython(enq) }},
		{enqRustFile, func() (string, error) { return writeEnqueueRust(enq) }},
	}
	if p.lang == "go" {
		outs = []output{
			{goFile, func() (string, error) { return writeGo(m) }},
			{jobGoFile, func() (string, error) { return writeJobGo(fam) }},
			{enqGoFile, func() (string, error) { return writeEnqueueGo(enq) }},
		}
	}
	for _, out := range outs {
		text, err := out.write()
		if err != nil {
			return err
		}
		g := gen.NewGeneratedFile(out.name, "")
		if _, err := g.Write([]byte(text)); err != nil {
			return err
		}
	}
	return nil
}

// findMessage is the top-level message of that name in a file to generate.
func findMessage(gen *protogen.Plugin, name protoreflect.FullName) *protogen.Message {
	for _, f := range gen.Files {
		if !f.Generate {
			continue
		}
		for _, m := range f.Messages {
			if m.Desc.FullName() == name {
				return m
			}
		}
	}
	return nil
}

// kind is the native form of a setting (see the rules above).
type kind int

const (
	kindInt kind = iota
	kindDuration
	kindBool
	kindString
	kindEnum
	kindStringMap
)

// model is QueueSettings as the writers see it.
type model struct {
	msg     *protogen.Message
	limits  *protogen.Message
	fields  []*setting
	enums   []*enumModel // those the fields use, in order of first use
	omitted []*setting   // the settings QueueLimits lacks
}

type setting struct {
	f       *protogen.Field
	kind    kind
	proto   string   // the proto (and Python wire) name: retry_delay_ms
	json    string   // the JSON and TypeScript name: retryDelayMs
	native  string   // the Python and Rust name: retry_delay
	doc     []string // the proto's leading comment, by line
	bits    int      // kindInt, kindDuration: 32 or 64
	signed  bool     // kindInt, kindDuration
	enum    *enumModel
	mapName string            // kindStringMap: the wrapper's map field
	limit   *protogen.Field   // the same-named QueueLimits field; nil when none
	wrapper *protogen.Message // kindStringMap: the wrapping message
}

type enumModel struct {
	e      *protogen.Enum
	name   string // RetryBackoff
	doc    []string
	values []enumValue // value 0 left out; values[0] is what an unknown value reads as
}

type enumValue struct {
	v     *protogen.EnumValue
	wire  string // RETRY_BACKOFF_EXPONENTIAL
	lower string // exponential
	camel string // Exponential
	doc   []string
}

func newModel(msg, limits *protogen.Message) (*model, error) {
	m := &model{msg: msg, limits: limits}
	byName := map[protoreflect.Name]*protogen.Field{}
	for _, f := range limits.Fields {
		byName[f.Desc.Name()] = f
	}
	enums := map[protoreflect.FullName]*enumModel{}
	for _, f := range msg.Fields {
		s, err := newSetting(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Desc.FullName(), err)
		}
		if s.kind == kindEnum {
			full := f.Enum.Desc.FullName()
			if enums[full] == nil {
				e, err := newEnum(f.Enum)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", f.Desc.FullName(), err)
				}
				enums[full] = e
				m.enums = append(m.enums, e)
			}
			s.enum = enums[full]
		}
		if l := byName[f.Desc.Name()]; l != nil {
			if err := matchLimit(s, l); err != nil {
				return nil, err
			}
			s.limit = l
		} else {
			m.omitted = append(m.omitted, s)
		}
		m.fields = append(m.fields, s)
	}
	return m, nil
}

func newSetting(f *protogen.Field) (*setting, error) {
	d := f.Desc
	s := &setting{f: f, proto: string(d.Name()), json: d.JSONName(), native: string(d.Name()), doc: commentLines(f.Comments.Leading)}
	if d.IsList() || d.IsMap() || !d.HasPresence() {
		return nil, fmt.Errorf("a queue setting needs presence (proto3 optional, or a message): unset must mean inherit")
	}
	switch d.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		s.kind, s.bits, s.signed = kindInt, 32, true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		s.kind, s.bits = kindInt, 32
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		s.kind, s.bits, s.signed = kindInt, 64, true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		s.kind, s.bits = kindInt, 64
	case protoreflect.BoolKind:
		s.kind = kindBool
	case protoreflect.StringKind:
		s.kind = kindString
	case protoreflect.EnumKind:
		s.kind = kindEnum
	case protoreflect.MessageKind:
		w := f.Message
		if len(w.Fields) != 1 || !w.Fields[0].Desc.IsMap() ||
			w.Fields[0].Desc.MapKey().Kind() != protoreflect.StringKind || w.Fields[0].Desc.MapValue().Kind() != protoreflect.StringKind {
			return nil, fmt.Errorf("message %s is no map<string, string> wrapper, the one message form a setting may take", w.Desc.FullName())
		}
		if w.Desc.Parent() != w.Desc.ParentFile() {
			return nil, fmt.Errorf("the wrapper %s must be declared at the top level of its file", w.Desc.FullName())
		}
		s.kind, s.wrapper, s.mapName = kindStringMap, w, string(w.Fields[0].Desc.Name())
	default:
		return nil, fmt.Errorf("%v has no native form here (see protoc-gen-sepp-sdk's rules)", d.Kind())
	}
	if strings.HasSuffix(s.proto, "_ms") {
		if s.kind != kindInt || s.bits != 64 {
			return nil, fmt.Errorf("a name ending in _ms is a duration in milliseconds, which must be an int64 or uint64, not %v", d.Kind())
		}
		s.kind = kindDuration
		s.native = strings.TrimSuffix(s.proto, "_ms")
	}
	if keyword[s.native] {
		return nil, fmt.Errorf("%s is a Python or Rust keyword", s.native)
	}
	return s, nil
}

// keyword are the Python and Rust keywords a snake_case name could be.
var keyword = map[string]bool{
	"and": true, "as": true, "assert": true, "async": true, "await": true, "break": true, "class": true,
	"const": true, "continue": true, "crate": true, "def": true, "del": true, "dyn": true, "elif": true,
	"else": true, "enum": true, "except": true, "extern": true, "false": true, "finally": true, "fn": true,
	"for": true, "from": true, "global": true, "if": true, "impl": true, "import": true, "in": true, "is": true,
	"lambda": true, "let": true, "loop": true, "match": true, "mod": true, "move": true, "mut": true,
	"nonlocal": true, "not": true, "or": true, "pass": true, "pub": true, "raise": true, "ref": true,
	"return": true, "self": true, "static": true, "struct": true, "super": true, "trait": true, "true": true,
	"try": true, "type": true, "unsafe": true, "use": true, "where": true, "while": true, "with": true, "yield": true,
}

// matchLimit checks that QueueLimits' field of a setting's name is of the
// setting's type, without presence (so that it is always set).
func matchLimit(s *setting, l *protogen.Field) error {
	d := l.Desc
	if d.IsList() || d.IsMap() || d.HasPresence() || d.Kind() != s.f.Desc.Kind() ||
		(s.kind == kindEnum && l.Enum.Desc.FullName() != s.f.Enum.Desc.FullName()) {
		return fmt.Errorf("%s does not match %s: an effective setting is a plain field of the setting's type (or has another name)",
			d.FullName(), s.f.Desc.FullName())
	}
	return nil
}

func newEnum(e *protogen.Enum) (*enumModel, error) {
	if e.Desc.Parent() != e.Desc.ParentFile() {
		return nil, fmt.Errorf("enum %s must be declared at the top level of its file", e.Desc.FullName())
	}
	em := &enumModel{e: e, name: string(e.Desc.Name()), doc: commentLines(e.Comments.Leading)}
	prefix := screamingSnake(em.name) + "_"
	seen := map[protoreflect.EnumNumber]bool{}
	for _, v := range e.Values {
		if v.Desc.Number() == 0 || seen[v.Desc.Number()] {
			continue // no name of its own; or an alias
		}
		seen[v.Desc.Number()] = true
		wire := string(v.Desc.Name())
		if !strings.HasPrefix(wire, prefix) {
			return nil, fmt.Errorf("enum value %s lacks the prefix %s", wire, prefix)
		}
		rest := strings.ToLower(strings.TrimPrefix(wire, prefix))
		em.values = append(em.values, enumValue{v: v, wire: wire, lower: rest, camel: upperCamel(rest), doc: commentLines(v.Comments.Leading)})
	}
	if len(em.values) == 0 {
		return nil, fmt.Errorf("enum %s has no value but 0", e.Desc.FullName())
	}
	return em, nil
}

// screamingSnake is RetryBackoff as RETRY_BACKOFF.
func screamingSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// upperCamel is dead_letters (or DEAD_LETTERS) as DeadLetters, as prost
// names enum variants.
func upperCamel(snake string) string {
	var b strings.Builder
	for _, part := range strings.Split(snake, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + strings.ToLower(part[1:]))
	}
	return b.String()
}

// lowerCamel is retry_delay as retryDelay.
func lowerCamel(snake string) string {
	u := upperCamel(snake)
	if u == "" {
		return u
	}
	return strings.ToLower(u[:1]) + u[1:]
}

// commentLines is a proto comment by line, the space after // taken off.
func commentLines(c protogen.Comments) []string {
	s := strings.TrimRight(string(c), "\n")
	if strings.TrimSpace(s) == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(strings.TrimPrefix(l, " "), " \t")
	}
	return lines
}
