package cluster

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

func TestSplitBatch(t *testing.T) {
	item := func(payload int) engine.EnqueueParams {
		return engine.EnqueueParams{Queue: "q", JobType: "t", Payload: make([]byte, payload)}
	}
	one := itemBytes(&engine.EnqueueParams{Queue: "q", JobType: "t"}) // an item's bytes besides its payload
	tests := []struct {
		name     string
		payloads []int
		maxBytes int
		want     []int // nil: fits whole
	}{
		{name: "Empty", payloads: nil, maxBytes: 4096},
		{name: "FitsExactly", payloads: []int{1000, 1000}, maxBytes: 2 * (1000 + one)},
		{name: "OneByteOver", payloads: []int{1000, 1001}, maxBytes: 2 * (1000 + one), want: []int{1, 2}},
		{name: "OneItemAboveTheTarget", payloads: []int{10_000}, maxBytes: 4096},
		{name: "LargeItemsAlone", payloads: []int{5000, 5000, 5000}, maxBytes: 4096, want: []int{1, 2, 3}},
		{name: "SmallAroundLarge", payloads: []int{100, 100, 9000, 100}, maxBytes: 4096, want: []int{2, 3, 4}},
		{name: "EvenChunks", payloads: []int{1000, 1000, 1000, 1000, 1000}, maxBytes: 2*(1000+one) + 10, want: []int{2, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := make([]engine.EnqueueParams, len(tt.payloads))
			for i, p := range tt.payloads {
				items[i] = item(p)
			}
			got := splitBatch(items, tt.maxBytes)
			if len(got) != len(tt.want) {
				t.Fatalf("splitBatch = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("splitBatch = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// itemBytes bounds the encoded size: chunks of at most maxBytes of
// estimates are commands of at most about maxBytes.
func TestItemBytesBoundsTheEncoding(t *testing.T) {
	p := engine.EnqueueParams{Queue: "queue", JobType: "type", Payload: make([]byte, 300), IdempotencyKey: "key",
		Custom: map[string]string{"a": "b", "long-key": string(make([]byte, 200))}}
	pr := uint32(9)
	p.Priority = &pr
	p.MaxAttempts = 1 << 31
	items := []engine.EnqueueParams{p, p, p}
	cmdSize := proto.Size(fsm.EnqueueBatchCommand(items))
	if est := 3 * itemBytes(&p); est < cmdSize-64 {
		t.Fatalf("estimate %d bytes for a command of %d (less its own fields)", est, cmdSize)
	}
}
