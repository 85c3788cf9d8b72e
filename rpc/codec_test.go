package rpc

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

func TestReplaceInvalidUTF8(t *testing.T) {
	bad := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.ReplaceAll(b, []byte("@@"), []byte{0xc3, 0x28})
	}
	tests := []struct {
		name  string
		msg   []byte
		md    proto.Message
		field string
	}{
		{"TopLevel", bad(&seppv1.EnqueueRequest{Queue: "q", JobType: "@@"}), &seppv1.EnqueueRequest{}, "job_type"},
		{"MapKey", bad(&seppv1.EnqueueRequest{Queue: "q", Custom: map[string]string{"@@": "v"}}), &seppv1.EnqueueRequest{}, "custom.key"},
		{"RepeatedNested", bad(&seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{{Queue: "a"}, {Queue: "b"}, {Queue: "@@"}}}), &seppv1.EnqueueBatchRequest{}, "jobs[2].queue"},
		{"Valid", bad(&seppv1.EnqueueRequest{Queue: "q", Payload: []byte{0xff}}), &seppv1.EnqueueRequest{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field, fixed, ok := replaceInvalidUTF8(tt.msg, tt.md.ProtoReflect().Descriptor(), "")
			if !ok || field != tt.field {
				t.Fatalf("field = %q, ok = %v; want %q", field, ok, tt.field)
			}
			if err := proto.Unmarshal(fixed, tt.md); err != nil {
				t.Errorf("the repaired message does not decode: %v", err)
			}
		})
	}
	if _, _, ok := replaceInvalidUTF8([]byte{0xff, 0xff, 0xff}, (&seppv1.EnqueueRequest{}).ProtoReflect().Descriptor(), ""); ok {
		t.Error("garbage wire bytes reported ok")
	}
}
