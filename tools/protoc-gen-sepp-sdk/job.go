package main

import (
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The job family: sepp.v1.Job and every message it embeds (JobAttempt,
// JobOrigin, TraceContext, Progress, JobParent), with the enums they
// use. Each SDK's read-side types of a job, and their conversions from
// the wire, are written from it (the package doc has the rules).
const jobMessage protoreflect.FullName = "sepp.v1.Job"

// The well-known messages the job family reads as scalars.
const (
	timestampMessage protoreflect.FullName = "google.protobuf.Timestamp"
	durationMessage  protoreflect.FullName = "google.protobuf.Duration"
)

// Where a native name or shape of the job family does not follow from
// the proto by the rules, it is declared here, once, and nowhere else:
// the SDKs' public names and shapes predate the generator, and users'
// code must not break.

// jobEnums are the enums the job family may use, with what their native
// forms keep of the hand-written types they replace. An enum the family
// uses must be listed (the plugin refuses it otherwise): whether its
// value 0 has a native name is a decision, not a rule.
var jobEnums = map[protoreflect.FullName]jobEnumNames{
	// Value 0 is a state of its own (a deleted parent's): "unspecified"
	// (TypeScript, Rust) or UNKNOWN (Python, Go's StateUnknown).
	"sepp.v1.JobState": {zero: true},
	// Value 0 is "unspecified" (TypeScript, Rust) or UNKNOWN (Python,
	// Go's CauseUnknown): a record without a cause.
	"sepp.v1.DeadLetterCause": {zero: true},
	// Value 0 is what a job without parents has: no policy (undefined,
	// None), in Go the default, ParentFailureCancel. Go, Python and Rust
	// have always called the type ParentFailure.
	"sepp.v1.ParentFailurePolicy": {native: "ParentFailure"},
}

type jobEnumNames struct {
	// zero: value 0 has a native name, and a field of the enum is always
	// set (an unknown value reads as it). Otherwise a field is optional
	// and 0 reads as unset (Go: as the first named value); an unknown
	// value reads as the first named value.
	zero bool
	// native is the Go, Python and Rust type name, when not the proto's.
	// TypeScript keeps the proto's.
	native string
}

// jobFieldExceptions are the job family's fields whose native form
// departs from the rules in one SDK.
var jobFieldExceptions = map[protoreflect.FullName]jobFieldException{
	// Go has always named it Job.Type.
	"sepp.v1.Job.job_type": {goName: "Type"},
	// Go: the client's Priority type (P0 to P9).
	"sepp.v1.Job.priority": {goType: "Priority"},
	// Go: an int, as Go counts.
	"sepp.v1.Job.waiting_children_total": {goType: "int"},
	"sepp.v1.Progress.percent":           {goType: "int"},
	// TypeScript: declared optional (added after the interface was
	// published), though the decoder always sets them.
	"sepp.v1.JobAttempt.lease_token": {tsOptional: true},
	"sepp.v1.JobAttempt.directive":   {tsOptional: true},
	// TypeScript: optional and absent when empty, as the write side's
	// TraceContext (a propagator's carrier) has it.
	"sepp.v1.TraceContext.tracestate": {tsOptional: true, tsOmitEmpty: true},
	// Rust: None when empty (no worker nacked it).
	"sepp.v1.Job.last_reason": {rustOptional: true},
	// Set exactly when the job has parents (the server sends a policy then
	// and only then), unspecified reading as the default, cancel: as every
	// SDK read it before the generator.
	"sepp.v1.Job.on_parent_failure": {setWith: "parents"},
}

type jobFieldException struct {
	goName       string // the Go field's name
	goType       string // the Go field's type, converted to from the proto's
	tsOptional   bool
	tsOmitEmpty  bool // with tsOptional: absent when "" (a string's)
	rustOptional bool
	// setWith names a repeated field of the same message: this one (an
	// enum without a native name for 0) is set exactly when that one is
	// not empty, and 0 then reads as the first named value.
	setWith string
}

// jobPython is, per message, how many of its first fields (in field
// number order) Python's dataclass requires, and how many it takes
// positionally, as it did before the generator; the others are
// keyword-only with defaults (their zero values, None, ()), so that a
// field added later shifts no position. A message not listed (one new
// to Python) has every field keyword-only. base names a hand-kept class
// of sepp._job_methods the dataclass derives from, for the methods the
// type has beyond its fields.
var jobPython = map[protoreflect.FullName]jobPythonShape{
	"sepp.v1.Job":        {required: 16, positional: 16}, // id to history
	"sepp.v1.JobAttempt": {required: 5, positional: 5},   // attempt to reason
	"sepp.v1.JobParent":  {required: 4, positional: 4},   // job_id to ended
	// Progress(percent, message="").
	"sepp.v1.Progress": {required: 1, positional: 2},
	// TraceContext(traceparent, tracestate=""), with as_headers,
	// from_headers and to_proto (the write side's).
	"sepp.v1.TraceContext": {required: 1, positional: 2, base: "TraceContextMethods"},
}

type jobPythonShape struct {
	required, positional int
	base                 string
}

// jobKind is the native form of a job family field (see the rules).
type jobKind int

const (
	jkInt       jobKind = iota // 32-bit integers
	jkInt64                    // 64-bit integers: ids, tokens
	jkBool                     // bool
	jkString                   // string
	jkBytes                    // bytes
	jkTime                     // google.protobuf.Timestamp
	jkDuration                 // google.protobuf.Duration
	jkEnum                     // an enum of jobEnums
	jkMessage                  // another message of the family
	jkStringMap                // map<string, string>
)

// jobFamily is the job family as the writers see it.
type jobFamily struct {
	messages []*jobMsg  // sepp.v1.Job first, then each as first embedded
	enums    []*jobEnum // in order of first use
	file     *protogen.File
}

type jobMsg struct {
	m      *protogen.Message
	name   string // the proto's, and every SDK's: JobAttempt
	doc    []string
	fields []*jobField // in declaration order
}

// byNumber is m's fields in field number order (Python's dataclass).
func (m *jobMsg) byNumber() []*jobField {
	out := append([]*jobField(nil), m.fields...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].f.Desc.Number() < out[j].f.Desc.Number() })
	return out
}

type jobField struct {
	f        *protogen.Field
	kind     jobKind
	repeated bool
	signed   bool // jkInt, jkInt64
	enum     *jobEnum
	msg      *jobMsg
	proto    string // job_type
	json     string // jobType
	doc      []string
	exc      jobFieldException
}

type jobEnum struct {
	e      *protogen.Enum
	name   string // the proto's, and TypeScript's: ParentFailurePolicy
	native string // Go, Python, Rust: ParentFailure
	zero   bool
	doc    []string
	zeroV  enumValue   // value 0: lower "unspecified" (from its name)
	values []enumValue // the others, in declaration order
}

// optional reports whether a field of the enum may be unset natively.
func (e *jobEnum) optional() bool { return !e.zero }

func newJobFamily(gen *protogen.Plugin) (*jobFamily, error) {
	job := findMessage(gen, jobMessage)
	if job == nil {
		return nil, fmt.Errorf("%s is not among the files to generate (buf.gen.yaml must give the plugin package sepp.v1)", jobMessage)
	}
	fam := &jobFamily{file: fileOf(gen, job)}
	msgs := map[protoreflect.FullName]*jobMsg{}
	enums := map[protoreflect.FullName]*jobEnum{}
	var add func(m *protogen.Message) (*jobMsg, error)
	add = func(m *protogen.Message) (*jobMsg, error) {
		full := m.Desc.FullName()
		if jm := msgs[full]; jm != nil {
			return jm, nil
		}
		if m.Desc.Parent() != m.Desc.ParentFile() {
			return nil, fmt.Errorf("message %s must be declared at the top level of its file", full)
		}
		if m.Desc.ParentFile().Package() != job.Desc.ParentFile().Package() {
			return nil, fmt.Errorf("message %s is not of package %s: the job family has no native form for it", full, job.Desc.ParentFile().Package())
		}
		jm := &jobMsg{m: m, name: string(m.Desc.Name()), doc: commentLines(m.Comments.Leading)}
		msgs[full] = jm
		fam.messages = append(fam.messages, jm)
		for _, f := range m.Fields {
			jf, err := newJobField(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Desc.FullName(), err)
			}
			switch jf.kind {
			case jkMessage:
				if jf.msg, err = add(f.Message); err != nil {
					return nil, err
				}
			case jkEnum:
				ef := f.Enum.Desc.FullName()
				if enums[ef] == nil {
					e, err := newJobEnum(f.Enum)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", f.Desc.FullName(), err)
					}
					enums[ef] = e
					fam.enums = append(fam.enums, e)
				}
				jf.enum = enums[ef]
			}
			jm.fields = append(jm.fields, jf)
		}
		return jm, nil
	}
	if _, err := add(job); err != nil {
		return nil, err
	}
	// Every exception must name a field of the family: one left over
	// from a renamed field would silently stop applying.
	for name := range jobFieldExceptions {
		if !fam.hasField(name) {
			return nil, fmt.Errorf("jobFieldExceptions names %s, which is no field of the job family", name)
		}
	}
	for name, p := range jobPython {
		if msgs[name] == nil {
			return nil, fmt.Errorf("jobPython names %s, which is no message of the job family", name)
		} else if p.required > p.positional || p.positional > len(msgs[name].fields) {
			return nil, fmt.Errorf("jobPython: %s has %d fields, of which %d required and %d positional", name, len(msgs[name].fields), p.required, p.positional)
		}
	}
	return fam, nil
}

func (fam *jobFamily) hasField(name protoreflect.FullName) bool {
	for _, m := range fam.messages {
		for _, f := range m.fields {
			if f.f.Desc.FullName() == name {
				return true
			}
		}
	}
	return false
}

func fileOf(gen *protogen.Plugin, m *protogen.Message) *protogen.File {
	for _, f := range gen.Files {
		if f.Desc == m.Desc.ParentFile() {
			return f
		}
	}
	return nil
}

func newJobField(f *protogen.Field) (*jobField, error) {
	d := f.Desc
	jf := &jobField{f: f, proto: string(d.Name()), json: d.JSONName(), doc: commentLines(f.Comments.Leading),
		repeated: d.IsList(), exc: jobFieldExceptions[d.FullName()]}
	if d.ContainingOneof() != nil && !d.HasOptionalKeyword() {
		return nil, fmt.Errorf("a oneof has no native form in the job family")
	}
	if d.HasOptionalKeyword() {
		return nil, fmt.Errorf("proto3 optional has no native form in the job family (a message field is optional already)")
	}
	if d.IsMap() {
		if d.MapKey().Kind() != protoreflect.StringKind || d.MapValue().Kind() != protoreflect.StringKind {
			return nil, fmt.Errorf("a map other than map<string, string> has no native form in the job family")
		}
		jf.kind = jkStringMap
		return jf, checkKeyword(jf)
	}
	switch d.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		jf.kind, jf.signed = jkInt, true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		jf.kind = jkInt
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		jf.kind, jf.signed = jkInt64, true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		jf.kind = jkInt64
	case protoreflect.BoolKind:
		jf.kind = jkBool
	case protoreflect.StringKind:
		jf.kind = jkString
	case protoreflect.BytesKind:
		jf.kind = jkBytes
	case protoreflect.EnumKind:
		jf.kind = jkEnum
	case protoreflect.MessageKind:
		switch f.Message.Desc.FullName() {
		case timestampMessage:
			jf.kind = jkTime
		case durationMessage:
			jf.kind = jkDuration
		default:
			jf.kind = jkMessage
		}
	default:
		return nil, fmt.Errorf("%v has no native form in the job family (see protoc-gen-sepp-sdk's rules)", d.Kind())
	}
	if jf.repeated && (jf.kind == jkTime || jf.kind == jkDuration || jf.kind == jkEnum || jf.kind == jkBytes) {
		return nil, fmt.Errorf("a repeated %v has no native form in the job family", d.Kind())
	}
	if jf.exc.rustOptional && (jf.kind != jkString || jf.repeated) {
		return nil, fmt.Errorf("rustOptional is for a string field")
	}
	if jf.exc.setWith != "" {
		w := f.Parent.Desc.Fields().ByName(protoreflect.Name(jf.exc.setWith))
		if jf.kind != jkEnum || jobEnums[f.Enum.Desc.FullName()].zero || w == nil || !w.IsList() {
			return nil, fmt.Errorf("setWith is for an enum without a native 0, and must name a repeated field of %s", f.Parent.Desc.FullName())
		}
	}
	if jf.exc.tsOmitEmpty && (!jf.exc.tsOptional || jf.kind != jkString) {
		return nil, fmt.Errorf("tsOmitEmpty is for a tsOptional string")
	}
	if jf.exc.tsOptional && (jf.repeated || jf.kind == jkMessage || jf.kind == jkTime || jf.kind == jkDuration || jf.kind == jkEnum) {
		return nil, fmt.Errorf("tsOptional is for a scalar field that is always set")
	}
	return jf, checkKeyword(jf)
}

func checkKeyword(jf *jobField) error {
	if keyword[jf.proto] {
		return fmt.Errorf("%s is a Python or Rust keyword", jf.proto)
	}
	return nil
}

func newJobEnum(e *protogen.Enum) (*jobEnum, error) {
	names, ok := jobEnums[e.Desc.FullName()]
	if !ok {
		return nil, fmt.Errorf("enum %s is not in jobEnums: say there whether its value 0 has a native name", e.Desc.FullName())
	}
	em, err := newEnum(e)
	if err != nil {
		return nil, err
	}
	je := &jobEnum{e: e, name: em.name, native: em.name, zero: names.zero, doc: em.doc, values: em.values}
	if names.native != "" {
		je.native = names.native
	}
	for _, v := range e.Values {
		if v.Desc.Number() == 0 {
			wire := string(v.Desc.Name())
			rest := strings.ToLower(strings.TrimPrefix(wire, screamingSnake(em.name)+"_"))
			je.zeroV = enumValue{v: v, wire: wire, lower: rest, camel: upperCamel(rest), doc: commentLines(v.Comments.Leading)}
		}
	}
	return je, nil
}

// named is the enum's values with a native name: value 0 first when it
// has one.
func (e *jobEnum) named() []enumValue {
	if e.zero {
		return append([]enumValue{e.zeroV}, e.values...)
	}
	return e.values
}

// fallback is the native value an unknown value reads as.
func (e *jobEnum) fallback() enumValue {
	if e.zero {
		return e.zeroV
	}
	return e.values[0]
}
