package config

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"1048576", 1 << 20, false},
		{"768MiB", 768 << 20, false},
		{"768 MiB", 768 << 20, false},
		{"2GiB", 2 << 30, false},
		{"2gib", 2 << 30, false},
		{"500MB", 500e6, false},
		{"1TB", 1e12, false},
		{"64KiB", 64 << 10, false},
		{"10B", 10, false},
		{"", 0, true},
		{"MiB", 0, true},
		{"1.5GiB", 0, true},
		{"-1GiB", 0, true},
		{"12 parsecs", 0, true},
		{"99999999999TiB", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestMemorySettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		toml      string
		wantLimit int64
		wantAuto  bool
		wantGC    int
		wantErr   string
	}{
		{name: "defaults", wantAuto: true, wantGC: DefaultGCPercent},
		{name: "explicit auto", toml: `memory_limit = "auto"`, wantAuto: true, wantGC: DefaultGCPercent},
		{name: "off", toml: `memory_limit = "off"`, wantGC: DefaultGCPercent},
		{name: "a size", toml: "memory_limit = \"768MiB\"\ngc_percent = 100", wantLimit: 768 << 20, wantGC: 100},
		{name: "gc off", toml: `gc_percent = -1`, wantAuto: true, wantGC: -1},
		{name: "too small", toml: `memory_limit = "1MiB"`, wantErr: "server.memory_limit"},
		{name: "not a size", toml: `memory_limit = "lots"`, wantErr: "server.memory_limit"},
		{name: "gc zero", toml: `gc_percent = 0`, wantErr: "server.gc_percent"},
		{name: "gc below -1", toml: `gc_percent = -5`, wantErr: "server.gc_percent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte("[server]\n" + tc.toml + "\n"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse: %v, want an error naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			limit, auto, err := cfg.Server.MemoryLimitBytes()
			if err != nil || limit != tc.wantLimit || auto != tc.wantAuto || cfg.Server.GCPercent != tc.wantGC {
				t.Fatalf("limit %d auto %v gc %d (err %v); want %d %v %d", limit, auto, cfg.Server.GCPercent, err, tc.wantLimit, tc.wantAuto, tc.wantGC)
			}
		})
	}
}
