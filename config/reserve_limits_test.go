package config

import (
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
)

func TestQueueReserveLimits(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		want    engine.QueueConfig
		wantErr string
	}{
		{name: "none", want: engine.QueueConfig{Name: "q"}},
		{
			name: "every limit",
			toml: "max_reserved = 10\nrate_limit = 50\nrate_period_ms = 60000\nrate_burst = 5\nconcurrency_key = \"customer\"\nmax_per_key = 2",
			want: engine.QueueConfig{Name: "q", MaxReserved: 10, RateLimit: 50, RatePeriod: time.Minute, RateBurst: 5, ConcurrencyKey: "customer", MaxPerKey: 2},
		},
		{name: "period above an hour", toml: "rate_limit = 1\nrate_period_ms = 3600001", wantErr: `queues["q"].rate_period_ms: must be 0..3600000`},
		{name: "period that would overflow", toml: "rate_limit = 1\nrate_period_ms = 9223372036854775", wantErr: `queues["q"].rate_period_ms: must be 0..3600000`},
		{name: "key without a cap", toml: `concurrency_key = "customer"`, wantErr: `queues["q"].max_per_key: must be at least 1`},
		{name: "negative cap", toml: "max_reserved = -2", wantErr: `queues["q"].max_reserved: must be 0..1000000`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte("[[queues]]\nname = \"q\"\n" + tc.toml + "\n"))
			if err == nil {
				var ec engine.Config
				if ec, err = cfg.EngineConfig(); err == nil {
					if tc.wantErr != "" {
						t.Fatalf("accepted, want an error naming %s", tc.wantErr)
					}
					if got := ec.Queues[0]; got.MaxReserved != tc.want.MaxReserved || got.RateLimit != tc.want.RateLimit ||
						got.RatePeriod != tc.want.RatePeriod || got.RateBurst != tc.want.RateBurst ||
						got.ConcurrencyKey != tc.want.ConcurrencyKey || got.MaxPerKey != tc.want.MaxPerKey {
						t.Fatalf("engine queue %+v, want %+v", got, tc.want)
					}
					return
				}
			}
			if tc.wantErr == "" || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want one naming %q", err, tc.wantErr)
			}
		})
	}
}
