package grpcbuf

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestMarshal_SameBytesAsProto(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
	}{
		{"BelowPooling", wrapperspb.Bytes(bytes.Repeat([]byte{1}, 10))},
		{"InATier", wrapperspb.Bytes(bytes.Repeat([]byte{2}, 40<<10))},
		{"AboveLargestTier", wrapperspb.Bytes(bytes.Repeat([]byte{3}, 2<<20))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := proto.Marshal(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			// Twice: the second marshal may get the buffer the first freed.
			for range 2 {
				data, err := Marshal(tt.msg)
				if err != nil {
					t.Fatal(err)
				}
				if got := data.Materialize(); !bytes.Equal(got, want) {
					t.Fatalf("marshalled %d bytes that differ from proto.Marshal's %d", len(got), len(want))
				}
				data.Free()
			}
		})
	}
}

func TestMarshal_RefusesANonProtoValue(t *testing.T) {
	if _, err := Marshal(struct{}{}); err == nil {
		t.Fatal("marshalled a value that is not a proto message")
	}
}
