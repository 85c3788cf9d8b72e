package main

import (
	"fmt"
	"strings"
)

func (f *enqField) rustElemType() string {
	if f.exc.rustType != "" {
		return f.exc.rustType
	}
	switch f.kind {
	case ekInt, ekInt64:
		return rustInt(f.signed, f.kind == ekInt64)
	case ekBool:
		return "bool"
	case ekString:
		return "String"
	case ekBytes:
		return "Vec<u8>"
	case ekTime:
		return "SystemTime"
	case ekDuration:
		return "Duration"
	case ekEnum:
		return f.enum.native
	case ekMessage:
		return f.msg.name
	case ekStringMap:
		return "BTreeMap<String, String>"
	}
	panic(fmt.Sprintf("kind %d", f.kind))
}

func rustInt(signed, wide bool) string {
	t := "u"
	if signed {
		t = "i"
	}
	if wide {
		return t + "64"
	}
	return t + "32"
}

// rustOptionalField reports whether the field is an Option, None when not
// given.
func (f *enqField) rustOptionalField() bool {
	switch {
	case f.repeated:
		return false
	case f.presence, f.exc.optional, f.exc.rustOptional, f.kind == ekTime, f.kind == ekMessage:
		return true
	case f.kind == ekEnum:
		return f.enum.optional()
	}
	return false
}

func (f *enqField) rustType() string {
	switch {
	case f.repeated:
		return "Vec<" + f.rustElemType() + ">"
	case f.rustOptionalField():
		return "Option<" + f.rustElemType() + ">"
	}
	return f.rustElemType()
}

// rustElemTo is a closure (or function) from one native value to the
// wire's, "" when the value is the wire's as it is.
func (f *enqField) rustElemTo() string {
	if f.exc.rustToWire != "" {
		return f.exc.rustToWire
	}
	switch f.kind {
	case ekDuration:
		t := rustInt(f.signed, true)
		return "|d: Duration| d.as_millis().min(" + t + "::MAX as u128) as " + t
	case ekTime:
		return "timestamp"
	case ekEnum:
		return "|v: " + f.enum.native + "| v.to_wire() as i32"
	case ekMessage:
		return f.msg.name + "::to_wire"
	}
	return ""
}

// rustTo is the wire value of field f of self.
func (f *enqField) rustTo() string {
	x := "self." + f.native
	conv := f.rustElemTo()
	switch {
	case f.repeated && conv == "":
		return x + ".clone()"
	case f.repeated && f.kind == ekMessage:
		return x + ".iter().map(" + conv + ").collect()"
	case f.repeated:
		return x + ".iter().map(" + conv + ").collect()"
	case f.kind == ekStringMap:
		return x + ".iter().map(|(k, v)| (k.clone(), v.clone())).collect()"
	case f.kind == ekMessage:
		return x + ".as_ref().map(" + conv + ")"
	case f.exc.rustOptional:
		return x + ".clone().unwrap_or_default()"
	case f.rustOptionalField() && f.kind != ekTime && !f.presence:
		// A duration or an enum: None is the wire's zero.
		return x + ".map_or(0, " + conv + ")"
	case f.rustOptionalField() && conv == "":
		return x
	case f.rustOptionalField():
		return x + ".map(" + conv + ")"
	case f.kind == ekString || f.kind == ekBytes:
		return x + ".clone()"
	case f.exc.rustToWire != "":
		return conv + "(" + x + ")"
	case f.kind == ekDuration:
		t := rustInt(f.signed, true)
		return x + ".as_millis().min(" + t + "::MAX as u128) as " + t
	case f.kind == ekEnum:
		return x + ".to_wire() as i32"
	}
	return x
}

// rustSetter writes f's with_ method.
func (f *enqField) rustSetter(b *buf) {
	n := f.native
	rustDoc(b, "    ", f.doc)
	set := func(v string) string {
		if f.rustOptionalField() {
			return "Some(" + v + ")"
		}
		return v
	}
	switch {
	case f.repeated && f.kind == ekString:
		b.p("    pub fn with_", n, "<I, S>(mut self, ", n, ": I) -> Self")
		b.p("    where")
		b.p("        I: IntoIterator<Item = S>,")
		b.p("        S: Into<String>,")
		b.p("    {")
		b.p("        self.", n, ".extend(", n, ".into_iter().map(Into::into));")
	case f.repeated:
		b.p("    pub fn with_", n, "(mut self, ", n, ": impl IntoIterator<Item = ", f.rustElemType(), ">) -> Self {")
		b.p("        self.", n, ".extend(", n, ");")
	case f.kind == ekStringMap:
		b.p("    pub fn with_", n, "(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {")
		b.p("        self.", n, ".insert(key.into(), value.into());")
	case f.kind == ekString && f.exc.rustType == "":
		b.p("    pub fn with_", n, "(mut self, ", n, ": impl Into<String>) -> Self {")
		b.p("        self.", n, " = ", set(n+".into()"), ";")
	case f.kind == ekBytes && f.exc.rustType == "":
		b.p("    pub fn with_", n, "(mut self, ", n, ": impl Into<Vec<u8>>) -> Self {")
		b.p("        self.", n, " = ", set(n+".into()"), ";")
	default:
		b.p("    pub fn with_", n, "(mut self, ", n, ": ", f.rustElemType(), ") -> Self {")
		b.p("        self.", n, " = ", set(n), ";")
	}
	b.p("        self")
	b.p("    }")
}

// rustGetter writes f's getter, for a message of private fields.
func (f *enqField) rustGetter(b *buf) {
	n := f.native
	var typ, val string
	switch {
	case f.repeated:
		typ, val = "&["+f.rustElemType()+"]", "&self."+n
	case f.kind == ekStringMap:
		typ, val = "&BTreeMap<String, String>", "&self."+n
	case f.exc.rustOptional:
		typ, val = "Option<&str>", "self."+n+".as_deref()"
	case f.kind == ekString && !f.presence:
		typ, val = "&str", "&self."+n
	case f.kind == ekBytes:
		typ, val = "&[u8]", "&self."+n
	case f.kind == ekMessage:
		typ, val = "Option<&"+f.msg.name+">", "self."+n+".as_ref()"
	case f.kind == ekString:
		typ, val = "Option<&str>", "self."+n+".as_deref()"
	default:
		typ, val = f.rustType(), "self."+n
	}
	b.p("    pub fn ", n, "(&self) -> ", typ, " {")
	b.p("        ", val)
	b.p("    }")
}

// writeEnqueueRust writes the enqueue family's structs, their setters
// (and getters) and their conversions to prost's types (rust/src/enqueue.rs).
func writeEnqueueRust(fam *enqFamily) (string, error) {
	var body buf
	kinds := map[enqKind]bool{}
	jobNames := map[string]bool{}
	for _, m := range fam.messages {
		if m.job != nil {
			jobNames[m.name] = true
		}
		for _, f := range m.fields {
			kinds[f.kind] = true
			if f.kind == ekEnum {
				jobNames[f.enum.native] = true
			}
		}
	}
	for _, m := range fam.messages {
		if m.job != nil {
			body.p()
			body.p("impl ", m.name, " {")
			body.p("    pub(crate) fn to_wire(&self) -> pb::", m.name, " {")
			body.p("        pb::", m.name, " {")
			for _, f := range m.fields {
				body.p("            ", f.proto, ": ", f.rustTo(), ",")
			}
			body.p("        }")
			body.p("    }")
			body.p("}")
			continue
		}
		private := m.shape.rustPrivate
		body.p()
		doc := append([]string{}, m.doc...)
		if len(doc) > 0 {
			doc = append(doc, "")
		}
		doc = append(doc, "Generated from `"+string(m.m.Desc.FullName())+"` (`tools/protoc-gen-sepp-sdk` has the rules).")
		rustDoc(&body, "", doc)
		if private {
			body.p("#[derive(Clone, Debug, PartialEq, Eq)]")
		} else {
			body.p("#[derive(Clone, Debug, Default, PartialEq, Eq)]")
		}
		body.p("pub struct ", m.name, " {")
		vis := "pub"
		if private {
			vis = "pub(crate)"
		}
		var required []*enqField
		for _, f := range m.fields {
			if f.exc.required {
				required = append(required, f)
			}
			rustDoc(&body, "    ", f.doc)
			body.p("    ", vis, " ", f.native, ": ", f.rustType(), ",")
		}
		body.p("}")
		body.p()
		body.p("impl ", m.name, " {")
		first := true
		sep := func() {
			if !first {
				body.p()
			}
			first = false
		}
		if private {
			var params, names []string
			for _, f := range required {
				params = append(params, f.native+": "+f.rustType())
				names = append(names, f.native)
			}
			sep()
			body.p("    /// The request of the required fields (", strings.Join(names, ", "), "), unchecked, the")
			body.p("    /// others unset.")
			body.p("    pub(crate) fn from_required(", strings.Join(params, ", "), ") -> ", m.name, " {")
			body.p("        ", m.name, " {")
			for _, f := range m.fields {
				if f.exc.required {
					body.p("            ", f.native, ",")
				} else {
					body.p("            ", f.native, ": Default::default(),")
				}
			}
			body.p("        }")
			body.p("    }")
		}
		for _, f := range m.fields {
			if f.exc.required {
				continue
			}
			sep()
			f.rustSetter(&body)
		}
		if private {
			for _, f := range m.fields {
				sep()
				f.rustGetter(&body)
			}
		}
		sep()
		kept := m.handKept(false)
		if kept {
			body.p("    /// The wire form but of the fields the hand-kept code writes.")
			body.p("    pub(crate) fn fields_to_wire(&self) -> pb::", m.name, " {")
		} else {
			body.p("    pub(crate) fn to_wire(&self) -> pb::", m.name, " {")
		}
		body.p("        pb::", m.name, " {")
		for _, f := range m.fields {
			if f.exc.handKept {
				continue
			}
			body.p("            ", f.proto, ": ", f.rustTo(), ",")
		}
		if kept {
			body.p("            ..Default::default()")
		}
		body.p("        }")
		body.p("    }")
		body.p("}")
	}

	var b buf
	b.p("// Code generated by ", generator, ". DO NOT EDIT.")
	b.p("// source: ", fam.file.Desc.Path())
	b.p()
	b.p("//! [`EnqueueRequest`] and the types it embeds, the SDK's forms of")
	b.p("//! `sepp.v1.EnqueueRequest` and the messages it uses, with their setters and")
	b.p("//! conversions to the wire (`tools/protoc-gen-sepp-sdk` has the rules);")
	b.p("//! `sepp_rs` exports them.")
	b.p()
	if kinds[ekStringMap] {
		b.p("use std::collections::BTreeMap;")
	}
	var tm []string
	if kinds[ekDuration] {
		tm = append(tm, "Duration")
	}
	if kinds[ekTime] {
		tm = append(tm, "SystemTime")
	}
	if len(tm) == 1 {
		b.p("use std::time::", tm[0], ";")
	} else if len(tm) > 1 {
		b.p("use std::time::{", strings.Join(tm, ", "), "};")
	}
	b.p()
	if len(jobNames) > 0 {
		b.p("use crate::job::{", strings.Join(sortedKeys(jobNames), ", "), "};")
	}
	b.p("use crate::pb;")
	if kinds[ekTime] {
		b.p("use crate::types::timestamp;")
	}
	b.WriteString(body.String())
	return b.String(), nil
}
