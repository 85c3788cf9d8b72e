package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sepp-io/sepp/engine"
)

// A [[queues]] entry's tags reach the engine sorted by key, and a bad tag
// is refused naming the queue and the tag.
func TestQueueTags(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		want    []engine.Tag
		wantErr string
	}{
		{name: "none"},
		{name: "inline table", toml: `tags = { team = "payments", env = "prod" }`, want: []engine.Tag{{Key: "env", Value: "prod"}, {Key: "team", Value: "payments"}}},
		{name: "sub-table", toml: "[queues.tags]\n\"cost center\" = \"42\"", want: []engine.Tag{{Key: "cost center", Value: "42"}}},
		{name: "bad key", toml: `tags = { "a*b" = "x" }`, wantErr: `queues["q"].tags["a*b"]: the key holds '*'`},
		{name: "long value", toml: `tags = { k = "` + strings.Repeat("v", 257) + `" }`, wantErr: `queues["q"].tags["k"]: the value is 257 bytes, above the limit of 256`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Parse checks the engine's config too; either refuses.
			cfg, err := Parse([]byte("[[queues]]\nname = \"q\"\n" + tc.toml + "\n"))
			var ec engine.Config
			if err == nil {
				ec, err = cfg.EngineConfig()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ec.Queues[0].Tags; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("tags %v, want %v", got, tc.want)
			}
		})
	}
}
