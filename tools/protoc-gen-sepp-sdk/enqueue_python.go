package main

import (
	"fmt"
	"sort"
	"strings"
)

func (f *enqField) pyElemType() string {
	switch f.kind {
	case ekInt, ekInt64:
		return "int"
	case ekBool:
		return "bool"
	case ekString:
		return "str"
	case ekBytes:
		return "bytes"
	case ekTime:
		return "datetime"
	case ekDuration:
		return "timedelta"
	case ekEnum:
		return f.enum.native
	case ekMessage:
		return f.msg.name
	case ekStringMap:
		return "dict[str, str]"
	}
	panic(fmt.Sprintf("kind %d", f.kind))
}

// pyOptional reports whether the field is Optional, None when not given.
func (f *enqField) pyOptional() bool {
	switch {
	case f.repeated:
		return false
	case f.presence, f.exc.optional, f.kind == ekTime, f.kind == ekMessage:
		return true
	case f.kind == ekEnum:
		return f.enum.optional()
	}
	return false
}

func (f *enqField) pyType() string {
	switch {
	case f.repeated:
		return "Sequence[" + f.pyElemType() + "]"
	case f.pyOptional():
		return "Optional[" + f.pyElemType() + "]"
	}
	return f.pyElemType()
}

// pyDefault is the field's default: its zero value, None, ().
func (f *enqField) pyDefault() string {
	switch {
	case f.exc.required:
		return ""
	case f.repeated:
		return "()"
	case f.pyOptional():
		return "None"
	}
	switch f.kind {
	case ekInt, ekInt64:
		return "0"
	case ekBool:
		return "False"
	case ekString:
		return `""`
	case ekBytes:
		return `b""`
	case ekDuration:
		return "timedelta(0)"
	case ekEnum:
		return f.enum.native + "." + pyEnumMember(f.enum, f.enum.zeroV)
	case ekStringMap:
		return "field(default_factory=dict)"
	}
	panic(fmt.Sprintf("kind %d", f.kind))
}

func pyEnqToProtoName(m *enqMsg) string {
	if m.job != nil {
		return "_" + strings.ToLower(screamingSnake(m.name)) + "_to_proto"
	}
	if m.handKept(false) {
		return "_to_proto"
	}
	return "to_proto"
}

func pyEnqEnumMap(e *jobEnum) string { return "_" + screamingSnake(e.name) + "_TO_WIRE" }

// pyElemTo is the wire value of one native value x.
func (f *enqField) pyElemTo(x string) string {
	switch f.kind {
	case ekDuration:
		return "_whole_ms(" + x + ")"
	case ekBytes:
		return "bytes(" + x + ")"
	case ekEnum:
		return pyEnqEnumMap(f.enum) + "[" + x + "]"
	case ekMessage:
		if f.msg.job != nil {
			return pyEnqToProtoName(f.msg) + "(" + x + ")"
		}
		return x + "." + pyEnqToProtoName(f.msg) + "()"
	}
	return x
}

// pyTo is the statements writing field f of x (self or v) to m.
func (f *enqField) pyTo(x string) []string {
	v := x + "." + f.native
	m := "m." + f.proto
	switch {
	case f.repeated && f.kind == ekMessage:
		return []string{m + ".extend(" + f.pyElemTo("x") + " for x in " + v + ")"}
	case f.repeated:
		return []string{m + ".extend(" + v + ")"}
	case f.kind == ekStringMap:
		return []string{m + ".update(" + v + ")"}
	case f.kind == ekTime:
		return []string{"if " + v + " is not None:", "    " + m + ".CopyFrom(_to_ts(" + v + "))"}
	case f.kind == ekMessage:
		return []string{"if " + v + " is not None:", "    " + m + ".CopyFrom(" + f.pyElemTo(v) + ")"}
	case f.pyOptional():
		return []string{"if " + v + " is not None:", "    " + m + " = " + f.pyElemTo(v)}
	}
	return []string{m + " = " + f.pyElemTo(v)}
}

// writeEnqueuePython writes the enqueue family's dataclasses with their
// conversions to the wire (python/src/sepp/_enqueue.py).
func writeEnqueuePython(fam *enqFamily) (string, error) {
	var body buf
	kinds := map[enqKind]bool{}
	kwOnly, repeated, optional := false, false, false
	var bases []string
	jobNames := map[string]bool{}
	modules := map[string]bool{}
	for _, m := range fam.messages {
		_, mod := pyModule(m.m.Desc)
		modules[mod] = true
		if m.job != nil {
			jobNames[m.name] = true
		}
		for _, f := range m.fields {
			kinds[f.kind] = true
			repeated = repeated || f.repeated
			optional = optional || f.pyOptional()
			if f.kind == ekEnum {
				jobNames[f.enum.native] = true
				_, mod := pyModule(f.enum.e.Desc)
				modules[mod] = true
			}
		}
	}

	for _, e := range fam.enums {
		_, mod := pyModule(e.e.Desc)
		body.p()
		body.p()
		body.p(pyEnqEnumMap(e), ": dict[int, ", mod, ".", e.name, "] = {")
		for _, v := range e.named() {
			body.p("    ", e.native, ".", pyEnumMember(e, v), ": ", mod, ".", v.wire, ",")
		}
		body.p("}")
	}

	var all []string
	for _, m := range fam.messages {
		_, mod := pyModule(m.m.Desc)
		if m.job != nil {
			body.p()
			body.p()
			body.p("def ", pyEnqToProtoName(m), "(v: ", m.name, ") -> ", mod, ".", m.name, ":")
			body.p("    m = ", mod, ".", m.name, "()")
			for _, f := range m.fields {
				for _, l := range f.pyTo("v") {
					body.p("    ", l)
				}
			}
			body.p("    return m")
			continue
		}
		all = append(all, m.name)
		body.p()
		body.p()
		if m.shape.pyFrozen {
			body.p("@dataclass(frozen=True)")
		} else {
			body.p("@dataclass")
		}
		if m.shape.pyBase != "" {
			bases = append(bases, m.shape.pyBase)
			body.p("class ", m.name, "(", m.shape.pyBase, "):")
		} else {
			body.p("class ", m.name, ":")
		}
		doc := append([]string{}, m.doc...)
		if len(doc) > 0 {
			doc = append(doc, "")
		}
		doc = append(doc, "Generated from "+string(m.m.Desc.FullName())+" (tools/protoc-gen-sepp-sdk has the rules).")
		if m.shape.pyBase != "" {
			doc = append(doc, "Validated on construction; see "+m.shape.pyBase+".")
		}
		pyDocstring(&body, "    ", doc)
		body.p()
		fields := make([]*enqField, len(m.fields))
		copy(fields, m.fields)
		sort.SliceStable(fields, func(i, j int) bool { return fields[i].f.Desc.Number() < fields[j].f.Desc.Number() })
		for i, f := range fields {
			if i == m.shape.pyPositional && !f.exc.required {
				body.p("    _: KW_ONLY")
				kwOnly = true
			}
			pyComment(&body, "    ", f.doc)
			if d := f.pyDefault(); d != "" {
				body.p("    ", f.native, ": ", f.pyType(), " = ", d)
			} else {
				body.p("    ", f.native, ": ", f.pyType())
			}
		}
		body.p()
		name := pyEnqToProtoName(m)
		body.p("    def ", name, "(self) -> ", mod, ".", m.name, ":")
		if name == "_to_proto" {
			body.p(`        """The wire form but of what the base class writes."""`)
		}
		body.p("        m = ", mod, ".", m.name, "()")
		for _, f := range m.fields {
			if f.exc.handKept {
				continue
			}
			for _, l := range f.pyTo("self") {
				body.p("        ", l)
			}
		}
		body.p("        return m")
	}

	var b buf
	b.p("# Code generated by ", generator, ". DO NOT EDIT.")
	b.p("# source: ", fam.file.Desc.Path())
	b.p(`"""EnqueueRequest and the types it embeds, the SDK's forms of sepp.v1.EnqueueRequest`)
	b.p("and the messages it uses, with their conversions to the wire (tools/protoc-gen-sepp-sdk")
	b.p(`has the rules); sepp.types exports them."""`)
	b.p()
	b.p("from __future__ import annotations")
	b.p()
	dc := "dataclass"
	if kwOnly {
		dc = "KW_ONLY, " + dc
	}
	if kinds[ekStringMap] {
		dc += ", field"
	}
	b.p("from dataclasses import ", dc)
	var dt []string
	if kinds[ekTime] {
		dt = append(dt, "datetime")
	}
	if kinds[ekDuration] {
		dt = append(dt, "timedelta")
	}
	if kinds[ekTime] {
		dt = append(dt, "timezone")
	}
	if len(dt) > 0 {
		b.p("from datetime import ", strings.Join(dt, ", "))
	}
	var typing []string
	if optional {
		typing = append(typing, "Optional")
	}
	if repeated {
		typing = append(typing, "Sequence")
	}
	if len(typing) > 0 {
		b.p("from typing import ", strings.Join(typing, ", "))
	}
	if kinds[ekTime] {
		b.p()
		b.p("from google.protobuf import timestamp_pb2")
	}
	b.p()
	if len(bases) > 0 {
		sort.Strings(bases)
		b.p("from sepp._enqueue_methods import ", strings.Join(bases, ", "))
	}
	if len(jobNames) > 0 {
		b.p("from sepp._job import ", strings.Join(sortedKeys(jobNames), ", "))
	}
	b.p("from sepp.v1 import ", strings.Join(sortedKeys(modules), ", "))
	b.p()
	b.p("__all__ = [")
	for _, n := range all {
		b.p("    ", tsQuote(n), ",")
	}
	b.p("]")
	if kinds[ekTime] {
		b.p()
		b.p()
		b.p("def _to_ts(t: datetime) -> timestamp_pb2.Timestamp:")
		b.p("    ts = timestamp_pb2.Timestamp()")
		b.p("    ts.FromDatetime(t.astimezone(timezone.utc).replace(tzinfo=None))")
		b.p("    return ts")
	}
	if kinds[ekDuration] {
		b.p()
		b.p()
		b.p("def _whole_ms(d: timedelta) -> int:")
		b.p(`    """d in whole milliseconds, rounded down."""`)
		b.p("    return d // timedelta(milliseconds=1)")
	}
	b.WriteString(body.String())
	return b.String(), nil
}
