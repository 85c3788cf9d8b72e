// Package wire holds the protobuf wire-format helpers that sepp's two
// hand-written decoders share: the state machine's log-entry decoder
// (fsm/enqueue_decode.go) and the Go client's Reserve-response decoder
// (client/decode.go). Each decodes exactly what proto.Unmarshal would, or
// reports that it cannot, so that its caller can fall back to
// proto.Unmarshal. Why only these two remain is in fsm/DESIGN.md
// ("Hand-written codecs, measured").
package wire

import (
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// SharedString is the last value of a string field, reused by the messages
// of a batch that repeat it: one allocation and one UTF-8 check per
// distinct value in a row, not per message.
type SharedString struct{ last string }

// Of returns v as a string, or false when v is not UTF-8, which
// proto.Unmarshal refuses in a proto3 string field.
func (s *SharedString) Of(v []byte) (string, bool) {
	if s.last != string(v) { // no allocation: the conversion is only compared
		if !utf8.Valid(v) {
			return "", false
		}
		s.last = string(v)
	}
	return s.last, true
}

// StringMapEntry decodes one entry of a map<string, string> field: its key
// (field 1) and value (field 2), each optional, each at most once, both
// UTF-8. ok is false for anything else.
func StringMapEntry(b []byte) (key, val []byte, ok bool) {
	var seen uint8
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 || (num != 1 && num != 2) || typ != protowire.BytesType || seen&(1<<num) != 0 {
			return nil, nil, false
		}
		seen |= 1 << num
		v, vl := protowire.ConsumeBytes(b[l:])
		if vl < 0 || !utf8.Valid(v) {
			return nil, nil, false
		}
		b = b[l+vl:]
		if num == 1 {
			key = v
		} else {
			val = v
		}
	}
	return key, val, true
}

// AddStringMapEntry decodes one map<string, string> entry into *m, making
// the map on first use. A later entry with the same key replaces an earlier
// one, as in proto.Unmarshal; keys and values get memory of their own.
func AddStringMapEntry(m *map[string]string, b []byte) bool {
	key, val, ok := StringMapEntry(b)
	if !ok {
		return false
	}
	if *m == nil {
		*m = make(map[string]string)
	}
	(*m)[string(key)] = string(val)
	return true
}

// Slab hands out the values of one message kind (or field) of a batch from
// one allocation of n, made on first use, so a field no message carries
// costs nothing. Each message holds a field at most once (decoders refuse
// a repeat), so a slab of n, the number of messages, never runs out and
// never moves: the pointers it hands out stay valid.
type Slab[T any] struct{ items []T }

// Next returns a pointer to a fresh zero value.
func (s *Slab[T]) Next(n int) *T {
	if s.items == nil {
		s.items = make([]T, 0, n)
	}
	s.items = s.items[:len(s.items)+1]
	return &s.items[len(s.items)-1]
}

// Timestamp decodes a google.protobuf.Timestamp into ts: seconds (field 1)
// and nanos (field 2), varints, each at most once. ok is false for anything
// else.
func Timestamp(ts *timestamppb.Timestamp, b []byte) bool {
	var seen uint8
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 || (num != 1 && num != 2) || typ != protowire.VarintType || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		v, vl := protowire.ConsumeVarint(b[l:])
		if vl < 0 {
			return false
		}
		b = b[l+vl:]
		if num == 1 {
			ts.Seconds = int64(v)
		} else {
			ts.Nanos = int32(v)
		}
	}
	return true
}

// CountRepeated counts the values of raw when it holds nothing but field 1
// as length-delimited values: a message whose only field is one repeated
// message, as the hot requests and answers the decoders take are. ok is
// false on any other field or wire type, or a malformed tag or length.
// The decoders size their slabs with it before a second pass over
// NextRepeated.
func CountRepeated(raw []byte) (n int, ok bool) {
	for b := raw; len(b) > 0; n++ {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 || num != 1 || typ != protowire.BytesType {
			return 0, false
		}
		_, vl := protowire.ConsumeBytes(b[l:])
		if vl < 0 {
			return 0, false
		}
		b = b[l+vl:]
	}
	return n, true
}

// NextRepeated splits the first value off b, which CountRepeated accepted:
// v is the value's bytes, rest what follows it.
func NextRepeated(b []byte) (v, rest []byte) {
	_, _, l := protowire.ConsumeTag(b)
	v, vl := protowire.ConsumeBytes(b[l:])
	return v, b[l+vl:]
}
