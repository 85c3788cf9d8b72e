package wire

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestSharedString(t *testing.T) {
	t.Parallel()
	var s SharedString
	first, ok := s.Of([]byte("queue"))
	if !ok || first != "queue" {
		t.Fatalf("Of = %q, %v", first, ok)
	}
	again, _ := s.Of([]byte("queue"))
	if again != first {
		t.Fatal("a repeated value was not shared")
	}
	if got, ok := s.Of([]byte("other")); !ok || got != "other" {
		t.Fatalf("a new value: %q, %v", got, ok)
	}
	if _, ok := s.Of([]byte{0xc3, 0x28}); ok {
		t.Fatal("invalid UTF-8 accepted")
	}
	if got, ok := s.Of(nil); !ok || got != "" {
		t.Fatalf("empty: %q, %v", got, ok)
	}
}

func TestStringMapEntry(t *testing.T) {
	t.Parallel()
	field := func(num protowire.Number, v string) []byte {
		b := protowire.AppendTag(nil, num, protowire.BytesType)
		return protowire.AppendString(b, v)
	}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	tests := []struct {
		name     string
		b        []byte
		key, val string
		ok       bool
	}{
		{"KeyAndValue", cat(field(1, "k"), field(2, "v")), "k", "v", true},
		{"ValueFirst", cat(field(2, "v"), field(1, "k")), "k", "v", true},
		{"Empty", nil, "", "", true},
		{"KeyOnly", field(1, "k"), "k", "", true},
		{"KeyTwice", cat(field(1, "k"), field(1, "j")), "", "", false},
		{"UnknownField", field(3, "x"), "", "", false},
		{"WrongWireType", protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1), "", "", false},
		{"InvalidUTF8", cat(field(1, "k"), field(2, "\xc3\x28")), "", "", false},
		{"Truncated", field(1, "key")[:3], "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, v, ok := StringMapEntry(tt.b)
			if ok != tt.ok || (ok && (string(k) != tt.key || string(v) != tt.val)) {
				t.Fatalf("StringMapEntry = %q, %q, %v; want %q, %q, %v", k, v, ok, tt.key, tt.val, tt.ok)
			}
		})
	}
}

func TestAddStringMapEntry(t *testing.T) {
	t.Parallel()
	entry := func(k, v string) []byte {
		b := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), k)
		return protowire.AppendString(protowire.AppendTag(b, 2, protowire.BytesType), v)
	}
	var m map[string]string
	for _, b := range [][]byte{entry("a", "1"), entry("b", "2"), entry("a", "3")} {
		if !AddStringMapEntry(&m, b) {
			t.Fatalf("entry %q refused", b)
		}
	}
	if len(m) != 2 || m["a"] != "3" || m["b"] != "2" {
		t.Fatalf("map = %v, want a=3 (the later entry) and b=2", m)
	}
	if AddStringMapEntry(&m, []byte{0xff}) {
		t.Fatal("a malformed entry was added")
	}
}

func TestSlab_HandsOutStablePointersFromOneAllocation(t *testing.T) {
	t.Parallel()
	var s Slab[int]
	a, b := s.Next(2), s.Next(2)
	*a, *b = 1, 2
	if a == b || *a != 1 || *b != 2 {
		t.Fatalf("got %d and %d from the same slot", *a, *b)
	}
	if cap(s.items) != 2 {
		t.Fatalf("capacity %d, want the one allocation of 2", cap(s.items))
	}
}

func TestTimestamp(t *testing.T) {
	t.Parallel()
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	both := append(varint(1, 1_800_000_000), varint(2, 5)...)
	tests := []struct {
		name        string
		b           []byte
		secs, nanos int64
		ok          bool
	}{
		{"SecondsAndNanos", both, 1_800_000_000, 5, true},
		{"Empty", nil, 0, 0, true},
		{"SecondsTwice", append(varint(1, 1), varint(1, 2)...), 0, 0, false},
		{"UnknownField", varint(3, 1), 0, 0, false},
		{"WrongWireType", protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "x"), 0, 0, false},
		{"Truncated", both[:len(both)-1], 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ts timestamppb.Timestamp
			ok := Timestamp(&ts, tt.b)
			if ok != tt.ok || (ok && (ts.Seconds != tt.secs || int64(ts.Nanos) != tt.nanos)) {
				t.Fatalf("Timestamp = %v, %v; want %d.%d, %v", &ts, ok, tt.secs, tt.nanos, tt.ok)
			}
		})
	}
}

func TestCountRepeated(t *testing.T) {
	t.Parallel()
	field1 := func(vs ...string) []byte {
		var b []byte
		for _, v := range vs {
			b = protowire.AppendTag(b, 1, protowire.BytesType)
			b = protowire.AppendString(b, v)
		}
		return b
	}
	tests := []struct {
		name string
		raw  []byte
		n    int
		ok   bool
	}{
		{"empty", nil, 0, true},
		{"one", field1("a"), 1, true},
		{"three, one empty", field1("a", "", "ccc"), 3, true},
		{"another field", protowire.AppendString(protowire.AppendTag(field1("a"), 2, protowire.BytesType), "b"), 0, false},
		{"field 1 as a varint", protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 7), 0, false},
		{"length past the end", append(protowire.AppendTag(nil, 1, protowire.BytesType), 5, 'a'), 0, false},
		{"truncated tag", []byte{0x80}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := CountRepeated(tc.raw)
			if n != tc.n || ok != tc.ok {
				t.Fatalf("CountRepeated = %d, %v; want %d, %v", n, ok, tc.n, tc.ok)
			}
		})
	}
	b := field1("a", "", "ccc")
	for _, want := range []string{"a", "", "ccc"} {
		var v []byte
		v, b = NextRepeated(b)
		if string(v) != want {
			t.Fatalf("NextRepeated = %q, want %q", v, want)
		}
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes left after the last value", len(b))
	}
}
