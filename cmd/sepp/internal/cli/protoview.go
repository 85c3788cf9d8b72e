package cli

import (
	"encoding/base64"
	"strings"
	"unicode"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// protoView turns a proto message into plain JSON values for --json:
// every field under its proto name, numbers as numbers (protojson would
// quote 64-bit ones) and enums by name ("exponential", not 1), so that a
// field added to the message shows up without a change here.
func protoView(m proto.Message) map[string]any {
	if m == nil {
		return nil
	}
	r := m.ProtoReflect()
	if !r.IsValid() {
		return nil
	}
	fields := r.Descriptor().Fields()
	out := make(map[string]any, fields.Len())
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.ContainingOneof() != nil && !r.Has(fd) {
			continue
		}
		out[string(fd.Name())] = protoValue(fd, r.Get(fd))
	}
	return out
}

func protoValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch {
	case fd.IsList():
		l := v.List()
		items := make([]any, 0, l.Len())
		for i := range l.Len() {
			items = append(items, protoScalar(fd, l.Get(i)))
		}
		return items
	case fd.IsMap():
		m := map[string]any{}
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			m[k.String()] = protoScalar(fd.MapValue(), mv)
			return true
		})
		return m
	default:
		return protoScalar(fd, v)
	}
}

func protoScalar(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.EnumKind:
		return enumName(fd.Enum(), v.Enum())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if !v.Message().IsValid() {
			return nil
		}
		return protoView(v.Message().Interface())
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	default:
		return v.Interface()
	}
}

// enumName is a value's name without its type's prefix, lower case:
// RetryBackoff RETRY_BACKOFF_EXPONENTIAL is "exponential", as in the config.
func enumName(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) any {
	vd := ed.Values().ByNumber(n)
	if vd == nil {
		return int32(n)
	}
	return strings.ToLower(strings.TrimPrefix(string(vd.Name()), upperSnake(string(ed.Name()))+"_"))
}

func upperSnake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}
