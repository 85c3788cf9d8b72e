package main

import (
	"fmt"
	"go/format"
	"strings"
)

// goName is the Go client's field name: the native name (a duration's _ms
// dropped) in upper camel case, the word id as ID, unless
// enqFieldExceptions says otherwise.
func (f *enqField) goName() string {
	if f.exc.goName != "" {
		return f.exc.goName
	}
	return goFieldName(f.native)
}

// goProtoElemType is the Go type protoc-gen-go gives the field (its
// element), for conversions to it.
func (f *enqField) goProtoElemType() string {
	switch f.kind {
	case ekInt, ekInt64, ekDuration:
		t := "uint"
		if f.signed {
			t = "int"
		}
		if f.kind == ekInt {
			return t + "32"
		}
		return t + "64"
	}
	return f.goElemType()
}

func (f *enqField) goElemType() string {
	if f.exc.goType != "" {
		return f.exc.goType
	}
	switch f.kind {
	case ekInt, ekInt64:
		return f.goProtoElemType()
	case ekBool:
		return "bool"
	case ekString:
		return "string"
	case ekBytes:
		return "[]byte"
	case ekTime:
		return "time.Time"
	case ekDuration:
		return "time.Duration"
	case ekEnum:
		return f.enum.native
	case ekMessage:
		return f.msg.name
	case ekStringMap:
		return "map[string]string"
	}
	panic(fmt.Sprintf("kind %d", f.kind))
}

// goPointer reports whether the Go field is a pointer, nil when unset.
func (f *enqField) goPointer() bool {
	return !f.repeated && (f.presence || f.kind == ekMessage)
}

func (f *enqField) goType() string {
	switch {
	case f.repeated:
		return "[]" + f.goElemType()
	case f.goPointer():
		return "*" + f.goElemType()
	}
	return f.goElemType()
}

func goEnqToProtoFn(name string) string { return lowerCamel(screamingSnake(name)) + "ToProto" }

// goElemTo is the wire value of one native value x (not a pointer).
func (f *enqField) goElemTo(x, alias string) string {
	switch {
	case f.kind == ekDuration:
		return f.goProtoElemType() + "(" + x + " / time.Millisecond)"
	case f.kind == ekEnum:
		return alias + "." + f.enum.e.GoIdent.GoName + "(" + x + ")"
	case f.kind == ekMessage:
		return goEnqToProtoFn(f.msg.name) + "(&" + x + ")"
	case f.exc.goType != "":
		return f.goProtoElemType() + "(" + x + ")"
	}
	return x
}

// goTo writes the statements that set field f of m from r.
func (f *enqField) goTo(b *buf, alias string) {
	x, m := "r."+f.goName(), "m."+f.f.GoName
	switch {
	case f.repeated:
		if f.goElemTo("v", alias) == "v" {
			b.p(m, " = slices.Clone(", x, ")")
			return
		}
		if f.kind == ekMessage {
			b.p("for i := range ", x, " {")
			b.p(m, " = append(", m, ", ", goEnqToProtoFn(f.msg.name), "(&", x, "[i]))")
			b.p("}")
			return
		}
		b.p("for _, v := range ", x, " {")
		b.p(m, " = append(", m, ", ", f.goElemTo("v", alias), ")")
		b.p("}")
	case f.kind == ekStringMap:
		b.p(m, " = maps.Clone(", x, ")")
	case f.kind == ekMessage:
		b.p("if ", x, " != nil {")
		b.p(m, " = ", goEnqToProtoFn(f.msg.name), "(", x, ")")
		b.p("}")
	case f.presence:
		b.p("if ", x, " != nil {")
		b.p("v := ", f.goElemTo("*"+x, alias))
		b.p(m, " = &v")
		b.p("}")
	case f.kind == ekTime:
		b.p("if !", x, ".IsZero() {")
		b.p(m, " = timestamppb.New(", x, ")")
		b.p("}")
	default:
		b.p(m, " = ", f.goElemTo(x, alias))
	}
}

// goWith writes f's With method on the message's pointer.
func (f *enqField) goWith(b *buf, recv string) {
	n := f.goName()
	b.p()
	b.p("// With", n, " sets ", n, ".")
	if len(f.doc) > 0 {
		b.p("//")
		goDoc(b, "", f.doc)
	}
	switch {
	case f.kind == ekStringMap:
		b.p("func (r *", recv, ") With", n, "(key, value string) *", recv, " {")
		b.p("if r.", n, " == nil {")
		b.p("r.", n, " = make(map[string]string)")
		b.p("}")
		b.p("r.", n, "[key] = value")
	case f.repeated:
		b.p("func (r *", recv, ") With", n, "(v ...", f.goElemType(), ") *", recv, " {")
		b.p("r.", n, " = append(r.", n, ", v...)")
	case f.goPointer():
		b.p("func (r *", recv, ") With", n, "(v ", f.goElemType(), ") *", recv, " {")
		b.p("r.", n, " = &v")
	default:
		b.p("func (r *", recv, ") With", n, "(v ", f.goElemType(), ") *", recv, " {")
		b.p("r.", n, " = v")
	}
	b.p("return r")
	b.p("}")
}

// writeEnqueueGo writes the Go client's enqueue family (package client):
// one struct per message of its own with With methods where enqMessages
// says, and xToProto per message, over protoc-gen-go's types.
func writeEnqueueGo(fam *enqFamily) (string, error) {
	req := fam.messages[0].m
	pb := string(req.GoIdent.GoImportPath)
	alias := "seppv1"
	if parts := strings.Split(string(req.Desc.ParentFile().Package()), "."); len(parts) >= 2 {
		alias = parts[len(parts)-2] + parts[len(parts)-1]
	}
	var body buf
	imports := map[string]bool{}
	for _, m := range fam.messages {
		if m.job == nil {
			body.p()
			goDoc(&body, "", m.doc)
			if len(m.doc) > 0 {
				body.p("//")
			}
			body.p("// Generated from ", string(m.m.Desc.FullName()), " (tools/protoc-gen-sepp-sdk has the rules).")
			body.p("type ", m.name, " struct {")
			for _, f := range m.fields {
				if f.kind == ekTime || f.kind == ekDuration {
					imports["time"] = true
				}
				goDoc(&body, "\t", f.doc)
				body.p("\t", f.goName(), " ", f.goType())
			}
			body.p("}")
			if m.shape.goWith {
				for _, f := range m.fields {
					if !f.exc.required {
						f.goWith(&body, m.name)
					}
				}
			}
		}

		body.p()
		fn := goEnqToProtoFn(m.name)
		if m.handKept(false) {
			var kept []string
			for _, f := range m.fields {
				if f.exc.handKept {
					kept = append(kept, f.goName())
				}
			}
			body.p("// ", fn, " is r's wire form but ", strings.Join(kept, " and "), ", which the hand-kept code sets.")
		} else {
			body.p("// ", fn, " is r's wire form.")
		}
		body.p("func ", fn, "(r *", m.name, ") *", alias, ".", m.m.GoIdent.GoName, " {")
		body.p("m := &", alias, ".", m.m.GoIdent.GoName, "{}")
		for _, f := range m.fields {
			if f.exc.handKept {
				continue
			}
			switch {
			case f.kind == ekTime:
				imports["time"], imports["google.golang.org/protobuf/types/known/timestamppb"] = true, true
			case f.kind == ekDuration:
				imports["time"] = true
			case f.kind == ekStringMap:
				imports["maps"] = true
			case f.repeated && f.goElemTo("v", alias) == "v":
				imports["slices"] = true
			}
			f.goTo(&body, alias)
		}
		body.p("return m")
		body.p("}")
	}

	var b buf
	b.p("// Code generated by ", generator, ". DO NOT EDIT.")
	b.p("// source: ", fam.file.Desc.Path())
	b.p()
	b.p("package client")
	b.p()
	b.p("import (")
	var std, other []string
	for _, imp := range sortedKeys(imports) {
		if strings.Contains(imp, ".") {
			other = append(other, imp)
		} else {
			std = append(std, imp)
		}
	}
	for _, imp := range std {
		b.p(fmt.Sprintf("%q", imp))
	}
	b.p()
	for _, imp := range other {
		b.p(fmt.Sprintf("%q", imp))
	}
	b.p()
	b.p(alias, " ", fmt.Sprintf("%q", pb))
	b.p(")")
	b.WriteString(body.String())
	out, err := format.Source([]byte(b.String()))
	if err != nil {
		return "", fmt.Errorf("gofmt of the Go output: %w\n%s", err, b.String())
	}
	return string(out), nil
}
