package main

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The enqueue family: sepp.v1.EnqueueRequest and every message it embeds
// (UniqueOptions, and TraceContext, whose native type is the job
// family's). Each SDK's write-side request types, and their conversions
// to the wire, are written from it (the package doc has the rules).
const enqueueMessage protoreflect.FullName = "sepp.v1.EnqueueRequest"

// Where a native name or shape of the enqueue family does not follow
// from the proto by the rules, it is declared here, once, and nowhere
// else: the SDKs' public names and shapes predate the generator, and
// users' code must not break. An entry that names no field of the family
// is an error.
var enqFieldExceptions = map[protoreflect.FullName]enqFieldException{
	// Required: TypeScript's field is not optional, Python's has no
	// default, Rust's and Go's constructors (new, NewEnqueueRequest) take
	// it, and there is no setter.
	"sepp.v1.EnqueueRequest.queue":    {required: true},
	"sepp.v1.EnqueueRequest.job_type": {required: true},
	// TypeScript takes text too (sent as its UTF-8 bytes): the client
	// writes the payload (hand-kept).
	"sepp.v1.EnqueueRequest.payload": {tsType: "Uint8Array | string", tsHandKept: true},
	// Rust's and Go's Priority types (P0 to P9), which hold the range.
	"sepp.v1.EnqueueRequest.priority": {rustType: "crate::types::Priority", rustToWire: "crate::types::Priority::level", goType: "Priority"},
	// Empty, the client generates one per call and reuses it on that
	// call's retries: the hand-kept code writes the key it sends. Rust:
	// None when not given.
	"sepp.v1.EnqueueRequest.idempotency_key": {handKept: true, rustOptional: true,
		note: "Unset, the client generates one per call and reuses it on that call's retries."},
	// Go spells the initialism TTL. Python and Rust: None (not given)
	// apart from zero, as before the generator.
	"sepp.v1.EnqueueRequest.ttl_ms": {goName: "TTL", optional: true},
	// Indexes of the same call's requests: usize (Rust) and int (Go), as
	// those languages index; validate refuses one out of the wire's range
	// before the conversion.
	"sepp.v1.EnqueueRequest.after": {rustType: "usize", rustToWire: "|&a| u32::try_from(a).unwrap_or(u32::MAX)", goType: "int"},
	// Set by a client's trace injector (Tracing) when the request has
	// none: the hand-kept client code does that on the wire message.
	"sepp.v1.EnqueueRequest.trace_context": {note: "Unset, the client's trace injector (if any) supplies the caller's."},
}

type enqFieldException struct {
	required bool // see queue above
	// handKept: the generated conversion leaves the field out; the
	// hand-kept code writes it.
	handKept   bool
	tsHandKept bool   // handKept, in TypeScript alone
	tsType     string // TypeScript's field type
	rustType   string // Rust's element type (a path), converted to the wire by rustToWire
	rustToWire string // a function (or closure) from rustType (&rustType for a repeated field) to the proto's type
	// rustOptional: a string is Option<String>, None when not given.
	rustOptional bool
	// optional: a duration is Optional[timedelta] in Python and
	// Option<Duration> in Rust, None when not given (sent as 0).
	optional bool
	goName   string // Go's field name (and With<goName>)
	goType   string // Go's element type, converted to the proto's by a Go conversion
	note     string // a sentence added to the field's doc in every SDK
}

// enqMessages is, per message of the family (but the job family's), the
// shape it keeps in the SDKs. A message not listed (one new to the
// family) takes the zero shape: Python keyword-only fields, no base.
var enqMessages = map[protoreflect.FullName]enqShape{
	// Python: a mutable dataclass of 14 positional fields (queue to
	// on_parent_failure), whose base (sepp._enqueue_methods) validates it
	// on construction and writes the idempotency key. Rust: private fields
	// behind with_ setters and getters. Go: With methods.
	"sepp.v1.EnqueueRequest": {pyPositional: 14, pyBase: "EnqueueRequestMethods", rustPrivate: true, goWith: true},
	// Python: frozen, positional as before (key to refuse).
	"sepp.v1.UniqueOptions": {pyPositional: 5, pyFrozen: true},
}

type enqShape struct {
	pyPositional int    // Python: how many first fields (number order) are positional
	pyBase       string // Python: a hand-kept class of sepp._enqueue_methods to derive from
	pyFrozen     bool   // Python: a frozen dataclass
	rustPrivate  bool   // Rust: pub(crate) fields, with getters, and no Default
	goWith       bool   // Go: a With method per field but the required ones
}

// enqKind is the native form of an enqueue family field.
type enqKind int

const (
	ekInt       enqKind = iota // 32-bit integers
	ekInt64                    // 64-bit integers
	ekDuration                 // an int64 or uint64 named *_ms
	ekBool                     // bool
	ekString                   // string
	ekBytes                    // bytes
	ekTime                     // google.protobuf.Timestamp
	ekEnum                     // an enum of the job family
	ekMessage                  // another message of the family
	ekStringMap                // map<string, string>
)

type enqFamily struct {
	messages []*enqMsg // EnqueueRequest first, then each as first embedded
	enums    []*jobEnum
	file     *protogen.File
}

type enqMsg struct {
	m      *protogen.Message
	name   string
	doc    []string
	fields []*enqField // in declaration order
	// job is the job family's message of the same name, whose native
	// type this one is (TraceContext): only its conversion to the wire is
	// written here.
	job   *jobMsg
	shape enqShape
}

// handKept reports whether one of m's fields is written by hand-kept
// code in SDK lang ("ts" or ""): then the generated conversion is the
// private part of a hand-kept one.
func (m *enqMsg) handKept(ts bool) bool {
	for _, f := range m.fields {
		if f.exc.handKept || (ts && f.exc.tsHandKept) {
			return true
		}
	}
	return false
}

type enqField struct {
	f        *protogen.Field
	kind     enqKind
	repeated bool
	presence bool // proto3 optional: unset apart from zero
	signed   bool
	enum     *jobEnum
	msg      *enqMsg
	proto    string // ttl_ms
	json     string // ttlMs
	native   string // Python, Rust: ttl (a duration's _ms dropped)
	doc      []string
	exc      enqFieldException
}

func newEnqFamily(gen *protogen.Plugin, jobs *jobFamily) (*enqFamily, error) {
	req := findMessage(gen, enqueueMessage)
	if req == nil {
		return nil, fmt.Errorf("%s is not among the files to generate (buf.gen.yaml must give the plugin package sepp.v1)", enqueueMessage)
	}
	fam := &enqFamily{file: fileOf(gen, req)}
	msgs := map[protoreflect.FullName]*enqMsg{}
	enums := map[protoreflect.FullName]bool{}
	var add func(m *protogen.Message) (*enqMsg, error)
	add = func(m *protogen.Message) (*enqMsg, error) {
		full := m.Desc.FullName()
		if em := msgs[full]; em != nil {
			return em, nil
		}
		if m.Desc.Parent() != m.Desc.ParentFile() {
			return nil, fmt.Errorf("message %s must be declared at the top level of its file", full)
		}
		if m.Desc.ParentFile().Package() != req.Desc.ParentFile().Package() {
			return nil, fmt.Errorf("message %s is not of package %s: the enqueue family has no native form for it", full, req.Desc.ParentFile().Package())
		}
		em := &enqMsg{m: m, name: string(m.Desc.Name()), doc: commentLines(m.Comments.Leading), shape: enqMessages[full]}
		for _, jm := range jobs.messages {
			if jm.m.Desc.FullName() == full {
				em.job = jm
			}
		}
		msgs[full] = em
		fam.messages = append(fam.messages, em)
		for _, f := range m.Fields {
			ef, err := newEnqField(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Desc.FullName(), err)
			}
			if em.job != nil && ef.kind != ekString && ef.kind != ekBool && ef.kind != ekInt {
				return nil, fmt.Errorf("%s: a field of a job family message the request embeds must be a string, a bool or a 32-bit integer (the forms both families give alike)", f.Desc.FullName())
			}
			switch ef.kind {
			case ekMessage:
				if ef.msg, err = add(f.Message); err != nil {
					return nil, err
				}
			case ekEnum:
				for _, je := range jobs.enums {
					if je.e.Desc.FullName() == f.Enum.Desc.FullName() {
						ef.enum = je
					}
				}
				if ef.enum == nil {
					return nil, fmt.Errorf("%s: enum %s is not the job family's: the enqueue family takes the job family's enums alone", f.Desc.FullName(), f.Enum.Desc.FullName())
				}
				if !enums[f.Enum.Desc.FullName()] {
					enums[f.Enum.Desc.FullName()] = true
					fam.enums = append(fam.enums, ef.enum)
				}
			}
			em.fields = append(em.fields, ef)
		}
		return em, nil
	}
	if _, err := add(req); err != nil {
		return nil, err
	}
	for name := range enqFieldExceptions {
		if !fam.hasField(name) {
			return nil, fmt.Errorf("enqFieldExceptions names %s, which is no field of the enqueue family", name)
		}
	}
	for name, s := range enqMessages {
		m := msgs[name]
		if m == nil || m.job != nil {
			return nil, fmt.Errorf("enqMessages names %s, which is no message of the enqueue family's own", name)
		}
		if s.pyPositional > len(m.fields) {
			return nil, fmt.Errorf("enqMessages: %s has %d fields, fewer than %d positional", name, len(m.fields), s.pyPositional)
		}
	}
	return fam, nil
}

func (fam *enqFamily) hasField(name protoreflect.FullName) bool {
	for _, m := range fam.messages {
		for _, f := range m.fields {
			if f.f.Desc.FullName() == name {
				return true
			}
		}
	}
	return false
}

// own is the family's messages but the job family's.
func (fam *enqFamily) own() []*enqMsg {
	var out []*enqMsg
	for _, m := range fam.messages {
		if m.job == nil {
			out = append(out, m)
		}
	}
	return out
}

func newEnqField(f *protogen.Field) (*enqField, error) {
	d := f.Desc
	ef := &enqField{f: f, proto: string(d.Name()), json: d.JSONName(), native: string(d.Name()), doc: commentLines(f.Comments.Leading),
		repeated: d.IsList(), presence: d.HasOptionalKeyword(), exc: enqFieldExceptions[d.FullName()]}
	if ef.exc.note != "" {
		ef.doc = append(ef.doc, ef.exc.note)
	}
	if d.ContainingOneof() != nil && !d.HasOptionalKeyword() {
		return nil, fmt.Errorf("a oneof has no native form in the enqueue family")
	}
	if d.IsMap() {
		if d.MapKey().Kind() != protoreflect.StringKind || d.MapValue().Kind() != protoreflect.StringKind {
			return nil, fmt.Errorf("a map other than map<string, string> has no native form in the enqueue family")
		}
		ef.kind, ef.repeated = ekStringMap, false
		return ef, ef.check()
	}
	switch d.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		ef.kind, ef.signed = ekInt, true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		ef.kind = ekInt
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		ef.kind, ef.signed = ekInt64, true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		ef.kind = ekInt64
	case protoreflect.BoolKind:
		ef.kind = ekBool
	case protoreflect.StringKind:
		ef.kind = ekString
	case protoreflect.BytesKind:
		ef.kind = ekBytes
	case protoreflect.EnumKind:
		ef.kind = ekEnum
	case protoreflect.MessageKind:
		switch f.Message.Desc.FullName() {
		case timestampMessage:
			ef.kind = ekTime
		case durationMessage:
			return nil, fmt.Errorf("google.protobuf.Duration has no native form in the enqueue family: a duration is an int64 named *_ms")
		default:
			ef.kind = ekMessage
		}
	default:
		return nil, fmt.Errorf("%v has no native form in the enqueue family (see protoc-gen-sepp-sdk's rules)", d.Kind())
	}
	if strings.HasSuffix(ef.proto, "_ms") {
		if ef.kind != ekInt64 {
			return nil, fmt.Errorf("a name ending in _ms is a duration in milliseconds, which must be an int64 or uint64, not %v", d.Kind())
		}
		ef.kind, ef.native = ekDuration, strings.TrimSuffix(ef.proto, "_ms")
	}
	return ef, ef.check()
}

func (ef *enqField) check() error {
	if keyword[ef.native] {
		return fmt.Errorf("%s is a Python or Rust keyword", ef.native)
	}
	if ef.repeated && ef.kind != ekInt && ef.kind != ekInt64 && ef.kind != ekString && ef.kind != ekBool && ef.kind != ekMessage {
		return fmt.Errorf("a repeated %v has no native form in the enqueue family", ef.f.Desc.Kind())
	}
	if ef.presence && ef.kind != ekInt && ef.kind != ekInt64 && ef.kind != ekBool && ef.kind != ekString {
		return fmt.Errorf("proto3 optional is for an integer, a bool or a string in the enqueue family")
	}
	if ef.kind == ekEnum && ef.repeated {
		return fmt.Errorf("a repeated enum has no native form in the enqueue family")
	}
	x := ef.exc
	if x.rustOptional && (ef.kind != ekString || ef.repeated || ef.presence) {
		return fmt.Errorf("rustOptional is for a string field")
	}
	if x.optional && ef.kind != ekDuration {
		return fmt.Errorf("optional is for a duration (a field named *_ms)")
	}
	if (x.rustType == "") != (x.rustToWire == "") {
		return fmt.Errorf("rustType and rustToWire go together")
	}
	if x.required && (ef.kind != ekString || ef.repeated || ef.presence) {
		return fmt.Errorf("required is for a string field")
	}
	return nil
}

// tsEnqMsgFn is the TypeScript function writing a message's protojson shape.
func tsEnqMsgFn(name string) string { return lowerCamel(screamingSnake(name)) + "ToJSON" }
