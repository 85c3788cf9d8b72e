package main

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// tsName is the TypeScript field name: the JSON name, but a duration's,
// which is in milliseconds and says so (runTime: runTimeMs).
func (f *jobField) tsName() string {
	if f.kind == jkDuration {
		return f.json + "Ms"
	}
	return f.json
}

// tsOptional reports whether the TypeScript field is optional: it is
// absent when unset.
func (f *jobField) tsOptionalField() bool {
	switch {
	case f.repeated:
		return false
	case f.kind == jkTime, f.kind == jkDuration, f.kind == jkMessage:
		return true
	case f.kind == jkEnum:
		return f.enum.optional()
	}
	return f.exc.tsOptional
}

func (f *jobField) tsElemType() string {
	switch f.kind {
	case jkInt, jkDuration:
		return "number"
	case jkInt64, jkString:
		return "string"
	case jkBool:
		return "boolean"
	case jkBytes:
		return "Uint8Array"
	case jkTime:
		return "Date"
	case jkEnum:
		return f.enum.name
	case jkMessage:
		return f.msg.name
	case jkStringMap:
		return "Record<string, string>"
	}
	panic(fmt.Sprintf("kind %d", f.kind))
}

func (f *jobField) tsType() string {
	if f.repeated {
		return f.tsElemType() + "[]"
	}
	return f.tsElemType()
}

// tsFrom is the native value of one JSON value x (an element, for a
// repeated field); for an optional field, undefined when unset.
func (f *jobField) tsFrom(x string) string {
	switch f.kind {
	case jkInt:
		return "num(" + x + ")"
	case jkInt64:
		return "u64(" + x + ")"
	case jkBool:
		return x + " === true"
	case jkString:
		return "str(" + x + ")"
	case jkBytes:
		return "base64ToBytes(str(" + x + "))"
	case jkTime:
		return "timeFrom(" + x + ")"
	case jkDuration:
		return "typeof " + x + " === \"string\" ? durationFrom(" + x + ") : undefined"
	case jkEnum:
		return tsEnumFn(f.enum) + "(" + x + ")"
	case jkMessage:
		return tsMsgFn(f.msg) + "(" + x + ")"
	case jkStringMap:
		return "stringMapFromJSON(" + x + ")"
	}
	panic(fmt.Sprintf("kind %d", f.kind))
}

func tsEnumFn(e *jobEnum) string { return lowerCamel(screamingSnake(e.name)) + "FromJSON" }
func tsMsgFn(m *jobMsg) string   { return lowerCamel(screamingSnake(m.name)) + "FromJSON" }

func tsUnion(vs []enumValue) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = tsQuote(v.lower)
	}
	return strings.Join(names, " | ")
}

// writeJobTypeScript writes the job family's interfaces, the enums' unions
// and the decoders from the protojson shapes (src/gen/job.ts).
func writeJobTypeScript(fam *jobFamily) (string, error) {
	var body buf
	wire := map[string]bool{"message": true}
	typeImports := map[string]map[string]bool{}
	useType := func(module, name string) {
		if typeImports[module] == nil {
			typeImports[module] = map[string]bool{}
		}
		typeImports[module][name] = true
	}
	needMap, needSet := false, false
	for _, m := range fam.messages {
		for _, f := range m.fields {
			if f.repeated {
				wire["arr"] = true
			}
			switch f.kind {
			case jkInt:
				wire["num"] = true
			case jkInt64:
				wire["u64"] = true
			case jkString:
				wire["str"] = true
			case jkBytes:
				wire["str"], wire["base64ToBytes"] = true, true
			case jkTime:
				wire["timeFrom"] = true
			case jkDuration:
				wire["durationFrom"] = true
			case jkStringMap:
				wire["str"], wire["obj"], needMap = true, true, true
			}
		}
	}

	for _, e := range fam.enums {
		jsonName, mod := tsJSONName(e.e.Desc)
		useType(mod, jsonName)
		body.p()
		doc := append([]string{}, e.doc...)
		doc = append(doc, "", "Generated from "+string(e.e.Desc.FullName())+", by the lower-case names of its values:")
		for _, v := range e.named() {
			line := "- " + tsQuote(v.lower)
			if len(v.doc) > 0 {
				line += ": " + strings.Join(v.doc, " ")
			}
			doc = append(doc, wrap(line, "  ", 76)...)
		}
		if !e.zero {
			doc = append(doc, "", "A field of it is undefined when unset ("+e.zeroV.wire+").")
		}
		tsDoc(&body, "", doc)
		body.p("export type ", e.name, " = ", tsUnion(e.named()), ";")
		body.p()
		ret := e.name
		if !e.zero {
			ret += " | undefined"
			tsDoc(&body, "", []string{
				"The " + e.name + " of its wire form: undefined for " + e.zeroV.wire + " (or none);",
				"a value this SDK does not know (a newer server's) reads as " + tsQuote(e.fallback().lower) + ".",
			})
		} else {
			tsDoc(&body, "", []string{
				"The " + e.name + " of its wire form; a value this SDK does not know (a newer",
				"server's), or none, reads as " + tsQuote(e.fallback().lower) + ".",
			})
		}
		// The cases are the generated JSON union's (a value renamed in the
		// proto fails the build) and the numbers a lenient peer may send.
		body.p("export function ", tsEnumFn(e), "(v: ", jsonName, " | number | null | undefined): ", ret, " {")
		body.p("  switch (v) {")
		if !e.zero {
			body.p("    case undefined:")
			body.p("    case null:")
			body.p("    case ", tsQuote(e.zeroV.wire), ":")
			body.p("    case 0:")
			body.p("      return undefined;")
		}
		for _, v := range e.values {
			body.p("    case ", tsQuote(v.wire), ":")
			body.p("    case ", fmt.Sprint(int32(v.v.Desc.Number())), ":")
			body.p("      return ", tsQuote(v.lower), ";")
		}
		body.p("  }")
		body.p("  return ", tsQuote(e.fallback().lower), ";")
		body.p("}")
	}

	for _, m := range fam.messages {
		jsonName, mod := tsJSONName(m.m.Desc)
		useType(mod, jsonName)
		body.p()
		doc := append([]string{}, m.doc...)
		if len(doc) > 0 {
			doc = append(doc, "")
		}
		doc = append(doc, "Generated from "+string(m.m.Desc.FullName())+" (tools/protoc-gen-sepp-sdk has the rules).")
		tsDoc(&body, "", doc)
		body.p("export interface ", m.name, " {")
		for _, f := range m.fields {
			tsDoc(&body, "  ", f.doc)
			opt := ""
			if f.tsOptionalField() {
				opt = "?"
			}
			body.p("  ", f.tsName(), opt, ": ", f.tsType(), ";")
		}
		body.p("}")

		body.p()
		tsDoc(&body, "", []string{"The " + m.name + " of its protojson form."})
		body.p("export function ", tsMsgFn(m), "(v: unknown): ", m.name, " {")
		body.p("  const m = message<", jsonName, ">(v);")
		body.p("  const out: ", m.name, " = {")
		var optional []*jobField
		for _, f := range m.fields {
			x := "m." + f.json
			switch {
			case f.repeated:
				body.p("    ", f.tsName(), ": arr(", x, ").map((x) => ", f.tsFrom("x"), "),")
			case f.kind == jkTime || f.kind == jkDuration || f.kind == jkMessage || (f.kind == jkEnum && f.enum.optional()) || f.exc.tsOmitEmpty:
				optional = append(optional, f)
			default:
				body.p("    ", f.tsName(), ": ", f.tsFrom(x), ",")
			}
		}
		body.p("  };")
		for _, f := range optional {
			x := "m." + f.json
			if w := f.exc.setWith; w != "" {
				body.p("  if (out.", f.f.Parent.Desc.Fields().ByName(protoreflect.Name(w)).JSONName(), ".length > 0) out.", f.tsName(), " = ", f.tsFrom(x), " ?? ", tsQuote(f.enum.fallback().lower), ";")
				continue
			}
			if f.exc.tsOmitEmpty {
				body.p("  if (typeof ", x, " === \"string\" && ", x, " !== \"\") out.", f.tsName(), " = ", x, ";")
				continue
			}
			if f.kind == jkMessage {
				body.p("  if (", x, " !== undefined && ", x, " !== null) out.", f.tsName(), " = ", f.tsFrom(x), ";")
				continue
			}
			body.p("  set(out, ", tsQuote(f.tsName()), ", ", f.tsFrom(x), ");")
			needSet = true
		}
		body.p("  return out;")
		body.p("}")
	}

	if needSet {
		body.p()
		body.p("/** Sets an optional field when there is a value: unset stays absent. */")
		body.p("function set<T, K extends keyof T>(o: T, k: K, v: T[K] | undefined): void {")
		body.p("  if (v !== undefined) o[k] = v;")
		body.p("}")
	}
	if needMap {
		body.p()
		body.p("function stringMapFromJSON(v: unknown): Record<string, string> {")
		body.p("  const out: Record<string, string> = {};")
		body.p("  for (const [k, x] of Object.entries(obj(v))) out[k] = str(x);")
		body.p("  return out;")
		body.p("}")
	}

	var out buf
	out.p("// Code generated by ", generator, ". DO NOT EDIT.")
	out.p("// source: ", fam.file.Desc.Path())
	out.p("//")
	out.p("// Job and the types it embeds, the SDK's forms of ", string(jobMessage), " and the messages")
	out.p("// and enums it uses, with their decoders from the protojson shapes")
	out.p("// (tools/protoc-gen-sepp-sdk has the rules).")
	out.p()
	out.p("import { ", strings.Join(sortedKeys(wire), ", "), " } from \"../wire.js\";")
	for _, mod := range sortedKeys(typeImports) {
		out.p("import type { ", strings.Join(sortedKeys(typeImports[mod]), ", "), " } from ", tsQuote(mod), ";")
	}
	out.WriteString(body.String())
	return out.String(), nil
}

// wrap breaks text into lines of at most width (a longer word stands
// alone), the second and later lines indented.
func wrap(text, indent string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) > width:
			lines = append(lines, line)
			line = indent + w
		default:
			line += " " + w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
