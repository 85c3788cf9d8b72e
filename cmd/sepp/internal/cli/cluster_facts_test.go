package cli

import (
	"testing"

	"github.com/sepp-io/sepp/client"
)

func TestFactsColumns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                           string
		f                              *client.MemberFacts
		version, commands, memory, cpu string
	}{
		{"not heard from yet", nil, "-", "-", "-", "-"},
		{"this binary", &client.MemberFacts{BinaryVersion: "v1.4.0", MinCommandVersion: 1, MaxCommandVersion: 12, MemoryLimitBytes: 512 << 20, GOMAXPROCS: 2}, "v1.4.0", "1..12", "512 MiB", "2"},
		{"no memory limit known", &client.MemberFacts{BinaryVersion: "dev", MinCommandVersion: 1, MaxCommandVersion: 12}, "dev", "1..12", "-", "-"},
		{"an older binary", &client.MemberFacts{MaxCommandVersion: 9, Legacy: true}, "older (no facts)", "..9", "-", "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, c, m, p := factsColumns(tt.f)
			if v != tt.version || c != tt.commands || m != tt.memory || p != tt.cpu {
				t.Fatalf("factsColumns = %q %q %q %q, want %q %q %q %q", v, c, m, p, tt.version, tt.commands, tt.memory, tt.cpu)
			}
		})
	}
}
