package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// buf is a text being written, line by line.
type buf struct{ strings.Builder }

func (b *buf) p(parts ...string) {
	for _, s := range parts {
		b.WriteString(s)
	}
	b.WriteString("\n")
}

// tsQuote is a TypeScript (and Python) string literal; JSON's escapes are
// valid in both.
func tsQuote(s string) string {
	out, err := json.Marshal(s)
	if err != nil {
		panic(err) // a Go string always marshals
	}
	return string(out)
}

// tsDoc writes lines as a JSDoc comment at indent.
func tsDoc(b *buf, indent string, lines []string) {
	if len(lines) == 0 {
		return
	}
	esc := make([]string, len(lines))
	for i, l := range lines {
		esc[i] = strings.ReplaceAll(l, "*/", "*\\/")
	}
	if len(esc) == 1 {
		b.p(indent, "/** ", esc[0], " */")
		return
	}
	b.p(indent, "/**")
	for _, l := range esc {
		if l == "" {
			b.p(indent, " *")
		} else {
			b.p(indent, " * ", l)
		}
	}
	b.p(indent, " */")
}

// tsJSONName is the type protoc-gen-sepp-ts gives a top-level message or
// enum, and the module it is in (relative to src/gen).
func tsJSONName(d protoreflect.Descriptor) (name, module string) {
	return string(d.Name()) + "JSON", "./" + strings.TrimSuffix(d.ParentFile().Path(), ".proto") + "_json.js"
}

func tsEnumUnion(e *enumModel) string {
	names := make([]string, len(e.values))
	for i, v := range e.values {
		names[i] = tsQuote(v.lower)
	}
	return strings.Join(names, " | ")
}

// orList is "a", "b" or "c".
func orList(e *enumModel) string {
	names := make([]string, len(e.values))
	for i, v := range e.values {
		names[i] = tsQuote(v.lower)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func (s *setting) tsType() string {
	switch s.kind {
	case kindInt, kindDuration:
		return "number"
	case kindBool:
		return "boolean"
	case kindString:
		return "string"
	case kindEnum:
		return tsEnumUnion(s.enum)
	case kindStringMap:
		return "Record<string, string>"
	}
	panic(fmt.Sprintf("kind %d", s.kind))
}

// tsFromJSON is the native value of a JSON value x (a setting's own or
// its QueueLimits field's).
func (s *setting) tsFromJSON(x string) string {
	switch s.kind {
	case kindInt, kindDuration:
		return "num(" + x + ")"
	case kindBool:
		return x + " === true"
	case kindString:
		return "str(" + x + ")"
	case kindEnum:
		return lowerCamel(screamingSnake(s.enum.name)) + "FromJSON(" + x + ")"
	case kindStringMap:
		return "stringMapFromJSON(" + x + "?." + s.mapJSON() + ")"
	}
	panic(fmt.Sprintf("kind %d", s.kind))
}

func (s *setting) mapJSON() string { return s.wrapper.Fields[0].Desc.JSONName() }

func writeTypeScript(m *model) (string, error) {
	var body buf
	imports := map[string]map[string]bool{} // module -> names
	typeImports := map[string]map[string]bool{}
	use := func(to map[string]map[string]bool, module, name string) {
		if to[module] == nil {
			to[module] = map[string]bool{}
		}
		to[module][name] = true
	}
	settingsJSON, settingsModule := tsJSONName(m.msg.Desc)
	limitsJSON, limitsModule := tsJSONName(m.limits.Desc)
	use(typeImports, settingsModule, settingsJSON)
	use(typeImports, limitsModule, limitsJSON)
	use(imports, "../wire.js", "message")
	var needWhole, needSafe, needMap bool
	for _, s := range m.fields {
		switch s.kind {
		case kindInt, kindDuration:
			use(imports, "../wire.js", "num")
			if s.bits == 64 {
				if s.signed && s.kind == kindInt {
					needSafe = true
				} else {
					needWhole = true
				}
			}
		case kindString:
			use(imports, "../wire.js", "str")
		case kindStringMap:
			use(imports, "../wire.js", "str")
			needMap = true
		}
	}
	for _, e := range m.enums {
		n, mod := tsJSONName(e.e.Desc)
		use(typeImports, mod, n)
	}

	// The native interface.
	body.p()
	doc := append([]string{}, m.docLines()...)
	doc = append(doc, "",
		"Generated from "+string(m.msg.Desc.FullName())+": a field left undefined is unset, and inherits",
		"(on update: stays as it is). Fields ending in Ms are whole milliseconds.")
	tsDoc(&body, "", doc)
	body.p("export interface QueueSettings {")
	for _, s := range m.fields {
		tsDoc(&body, "  ", s.doc)
		body.p("  ", s.json, "?: ", s.tsType(), ";")
	}
	body.p("}")

	body.p()
	effDoc := []string{"What a queue runs with (" + string(m.limits.Desc.FullName()) + "): every setting set."}
	if len(m.omitted) > 0 {
		effDoc = append(effDoc, "Not among them, as "+string(m.limits.Desc.Name())+" lacks them: "+joinJSON(m.omitted, ", ")+".")
	}
	tsDoc(&body, "", effDoc)
	if len(m.omitted) > 0 {
		quoted := make([]string, len(m.omitted))
		for i, s := range m.omitted {
			quoted[i] = tsQuote(s.json)
		}
		body.p("export type EffectiveQueueSettings = Required<Omit<QueueSettings, ", strings.Join(quoted, " | "), ">>;")
	} else {
		body.p("export type EffectiveQueueSettings = Required<QueueSettings>;")
	}

	// The guard: it does not compile when the wire type (written by
	// protoc-gen-sepp-ts) and this one disagree, as when only one was
	// regenerated.
	body.p()
	tsDoc(&body, "", []string{
		"The wire's " + settingsJSON + " (protoc-gen-sepp-ts) and QueueSettings, field by field:",
		"it does not compile when the two generated types disagree.",
	})
	body.p("export const queueSettingsFields: {")
	body.p("  [K in keyof Required<", settingsJSON, ">]: K extends keyof QueueSettings ? true : never;")
	body.p("} = {")
	for _, s := range m.fields {
		body.p("  ", s.json, ": true,")
	}
	body.p("};")

	// Helpers, those used only.
	if needWhole {
		body.p()
		body.p("function whole(field: string, v: number): string {")
		body.p("  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${field} must be a whole number >= 0, got ${v}`);")
		body.p("  return String(v);")
		body.p("}")
	}
	if needSafe {
		body.p()
		body.p("function safeInteger(field: string, v: number): string {")
		body.p("  if (!Number.isSafeInteger(v)) throw new RangeError(`${field} must be a whole number, got ${v}`);")
		body.p("  return String(v);")
		body.p("}")
	}
	if needMap {
		body.p()
		body.p("function stringMapFromJSON(v: unknown): Record<string, string> {")
		body.p("  const out: Record<string, string> = {};")
		body.p("  if (v !== null && typeof v === \"object\") {")
		body.p("    for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = str(x);")
		body.p("  }")
		body.p("  return out;")
		body.p("}")
	}
	for _, e := range m.enums {
		wireName, _ := tsJSONName(e.e.Desc)
		fn := lowerCamel(screamingSnake(e.name))
		union := tsEnumUnion(e)
		body.p()
		body.p("function ", fn, "ToJSON(field: string, v: ", union, "): ", wireName, " {")
		body.p("  switch (v) {")
		for _, v := range e.values {
			body.p("    case ", tsQuote(v.lower), ":")
			body.p("      return ", tsQuote(v.wire), ";")
		}
		body.p("  }")
		body.p("  throw new RangeError(`${field} must be ", strings.ReplaceAll(orList(e), "`", "\\`"), ", got ${String(v)}`);")
		body.p("}")
		body.p()
		tsDoc(&body, "", []string{"An unknown value (a newer server's), or none, reads as " + tsQuote(e.values[0].lower) + "."})
		if len(e.values) == 1 {
			body.p("function ", fn, "FromJSON(_v: unknown): ", union, " {")
		} else {
			body.p("function ", fn, "FromJSON(v: unknown): ", union, " {")
			body.p("  switch (v) {")
			for _, v := range e.values[1:] {
				body.p("    case ", tsQuote(v.wire), ":")
				body.p("    case ", fmt.Sprint(int32(v.v.Desc.Number())), ":")
				body.p("      return ", tsQuote(v.lower), ";")
			}
			body.p("  }")
		}
		body.p("  return ", tsQuote(e.values[0].lower), ";")
		body.p("}")
	}

	// To the wire.
	body.p()
	tsDoc(&body, "", []string{"The wire form of settings: what is undefined stays unset."})
	body.p("export function queueSettingsToJSON(s: QueueSettings = {}): ", settingsJSON, " {")
	body.p("  const m: ", settingsJSON, " = {};")
	for _, s := range m.fields {
		var v string
		x := "s." + s.json
		switch s.kind {
		case kindInt, kindDuration:
			switch {
			case s.bits == 32:
				v = x
			case s.signed && s.kind == kindInt:
				v = "safeInteger(" + tsQuote(s.json) + ", " + x + ")"
			default:
				v = "whole(" + tsQuote(s.json) + ", " + x + ")"
			}
		case kindBool, kindString:
			v = x
		case kindEnum:
			v = lowerCamel(screamingSnake(s.enum.name)) + "ToJSON(" + tsQuote(s.json) + ", " + x + ")"
		case kindStringMap:
			// Present (even {}) replaces; absent leaves.
			v = "{ " + s.mapJSON() + ": { ..." + x + " } }"
		}
		body.p("  if (", x, " !== undefined) m.", s.json, " = ", v, ";")
	}
	body.p("  return m;")
	body.p("}")

	// From the wire.
	body.p()
	tsDoc(&body, "", []string{"The settings of their wire form: what is unset stays undefined."})
	body.p("export function queueSettingsFromJSON(v: unknown): QueueSettings {")
	body.p("  const m = message<", settingsJSON, ">(v);")
	body.p("  const s: QueueSettings = {};")
	for _, s := range m.fields {
		x := "m." + s.json
		body.p("  if (", x, " !== undefined && ", x, " !== null) s.", s.json, " = ", s.tsFromJSON(x), ";")
	}
	body.p("  return s;")
	body.p("}")

	body.p()
	tsDoc(&body, "", []string{"The effective settings of their wire form (" + string(m.limits.Desc.FullName()) + "): every one set."})
	body.p("export function queueLimitsFromJSON(v: unknown): EffectiveQueueSettings {")
	body.p("  const l = message<", limitsJSON, ">(v);")
	body.p("  return {")
	for _, s := range m.fields {
		if s.limit == nil {
			continue
		}
		body.p("    ", s.json, ": ", s.tsFromJSON("l."+s.limit.Desc.JSONName()), ",")
	}
	body.p("  };")
	body.p("}")

	var out buf
	out.p("// Code generated by ", generator, ". DO NOT EDIT.")
	out.p("// source: ", m.msg.Desc.ParentFile().Path())
	out.p("//")
	out.p("// QueueSettings, the SDK's form of ", string(m.msg.Desc.FullName()), ", and its conversions to")
	out.p("// and from the protojson shapes (tools/protoc-gen-sepp-sdk has the rules).")
	out.p()
	for _, mod := range sortedKeys(imports) {
		out.p("import { ", strings.Join(sortedKeys(imports[mod]), ", "), " } from ", tsQuote(mod), ";")
	}
	for _, mod := range sortedKeys(typeImports) {
		out.p("import type { ", strings.Join(sortedKeys(typeImports[mod]), ", "), " } from ", tsQuote(mod), ";")
	}
	out.WriteString(body.String())
	return out.String(), nil
}

func (m *model) docLines() []string {
	if d := commentLines(m.msg.Comments.Leading); d != nil {
		return d
	}
	return []string{string(m.msg.Desc.FullName()) + "."}
}

func joinJSON(ss []*setting, sep string) string {
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.json
	}
	return strings.Join(names, sep)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
