package bench

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name, line string
		want       time.Duration
		wantErr    string
	}{
		{"plain", "4242 (sepp) S 1 4242 4242 0 -1 4194560 1 0 0 0 250 70 0 0 20 0 9 0", 3200 * time.Millisecond, ""},
		{"name with spaces and a parenthesis", "7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0", 30 * time.Millisecond, ""},
		{"truncated", "7 (x) R 1 7", 0, "fields"},
		{"no name", "7 x R", 0, "no command name"},
		{"not a number", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 u 2 0", 0, "field 14"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.line))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestProcessCPUOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc: Linux only")
	}
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn at least two of /proc's 10ms ticks of CPU, measured by the
	// process's own rusage rather than a wall clock.
	start := selfCPU()
	x := 0
	for selfCPU()-start < 30*time.Millisecond {
		for i := 0; i < 1e5; i++ {
			x += i
		}
	}
	_ = x
	after, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Fatalf("CPU time went from %v to %v after 30ms of work", before, after)
	}
}
