package cli

import (
	"fmt"
	"time"

	"github.com/sepp-io/sepp/client"
)

// facts is a member's facts in `sepp cluster status --json`.
type facts struct {
	BinaryVersion     string     `json:"binary_version,omitempty"`
	MinCommandVersion uint32     `json:"min_command_version,omitempty"`
	MaxCommandVersion uint32     `json:"max_command_version"`
	MemoryLimitBytes  int64      `json:"memory_limit_bytes,omitempty"`
	MemoryLimitFrom   string     `json:"memory_limit_from,omitempty"`
	GOMAXPROCS        int        `json:"gomaxprocs,omitempty"`
	Started           *time.Time `json:"started,omitempty"`
	Legacy            bool       `json:"legacy,omitempty"`
}

func factsJSON(f *client.MemberFacts) *facts {
	if f == nil {
		return nil
	}
	out := &facts{BinaryVersion: f.BinaryVersion, MinCommandVersion: f.MinCommandVersion, MaxCommandVersion: f.MaxCommandVersion,
		MemoryLimitBytes: f.MemoryLimitBytes, MemoryLimitFrom: f.MemoryLimitFrom, GOMAXPROCS: f.GOMAXPROCS, Legacy: f.Legacy}
	if !f.Started.IsZero() {
		t := f.Started
		out.Started = &t
	}
	return out
}

// factsColumns are the VERSION, COMMANDS, MEMORY and PROCS columns of
// `sepp cluster status`: "-" for what is not known.
func factsColumns(f *client.MemberFacts) (version, commands, memory, procs string) {
	if f == nil {
		return "-", "-", "-", "-"
	}
	version, commands, memory, procs = orDash(f.BinaryVersion), fmt.Sprintf("%d..%d", max(f.MinCommandVersion, 1), f.MaxCommandVersion), "-", "-"
	if f.Legacy {
		version, commands = "older (no facts)", fmt.Sprintf("..%d", f.MaxCommandVersion)
	}
	if f.MemoryLimitBytes > 0 {
		memory = fmt.Sprintf("%d MiB", f.MemoryLimitBytes>>20)
	}
	if f.GOMAXPROCS > 0 {
		procs = fmt.Sprint(f.GOMAXPROCS)
	}
	return version, commands, memory, procs
}

// msFloat is d in milliseconds, for JSON output.
func msFloat(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
