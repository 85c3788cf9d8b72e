package devcluster

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestPickRange(t *testing.T) {
	cases := []struct {
		name        string
		lo, hi, n   int
		first, last int
	}{
		{"Linux default: below the range", 32768, 60999, 9, 20000, 32767},
		{"IANA range: below it", 49152, 65535, 9, 20000, 49151},
		{"range starting low: above it", 1024, 40000, 9, 40001, 65535},
		{"just room below for 4n", 20036, 65535, 9, 20000, 20035},
		{"no room on either side: the kernel chooses", 20010, 65530, 9, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first, last := pickRange(tc.lo, tc.hi, tc.n)
			if first != tc.first || last != tc.last {
				t.Fatalf("pickRange(%d, %d, %d) = %d-%d, want %d-%d", tc.lo, tc.hi, tc.n, first, last, tc.first, tc.last)
			}
		})
	}
}

func TestEphemeralRange(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, content string
		lo, hi        int
	}{
		{"Linux format", "32768\t60999\n", 32768, 60999},
		{"custom", "10000 20000", 10000, 20000},
		{"garbage: IANA", "x y", 49152, 65535},
		{"reversed: IANA", "60999 32768", 49152, 65535},
		{"out of range: IANA", "1 70000", 49152, 65535},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, string(rune('a'+i)))
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if lo, hi := ephemeralRange(p); lo != tc.lo || hi != tc.hi {
				t.Fatalf("ephemeralRange(%q) = %d-%d, want %d-%d", tc.content, lo, hi, tc.lo, tc.hi)
			}
		})
	}
	if lo, hi := ephemeralRange(filepath.Join(dir, "missing")); lo != 49152 || hi != 65535 {
		t.Fatalf("missing file: %d-%d, want the IANA range", lo, hi)
	}
}

// The ports a cluster gets lie outside the kernel's ephemeral range, are
// distinct, and can be bound once freePorts returns.
func TestFreePorts_OutsideTheEphemeralRangeAndBindable(t *testing.T) {
	lo, hi := ephemeralRange("/proc/sys/net/ipv4/ip_local_port_range")
	ports, err := freePorts("127.0.0.1", 9)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p >= lo && p <= hi {
			t.Errorf("port %d is inside the ephemeral range %d-%d", p, lo, hi)
		}
		if seen[p] {
			t.Errorf("port %d picked twice in %v", p, ports)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d: %v", p, err)
			continue
		}
		l.Close()
	}
}

// A port another socket holds is passed over, and the scan wraps round from
// its start to the ports before it.
func TestScanPorts_SkipsAHeldPortAndWraps(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := held.Addr().(*net.TCPAddr).Port
	if _, err := scanPorts("127.0.0.1", p, p, 0, 1); err == nil {
		t.Fatalf("scanPorts took port %d, which a listener holds", p)
	}
	held.Close()
	got, err := scanPorts("127.0.0.1", p, p, 0, 1)
	if err != nil {
		t.Fatalf("port %d released: %v", p, err)
	}
	if got[0] != p {
		t.Fatalf("scanPorts = %v, want [%d]", got, p)
	}
	// From start 1 of the one-port range p-p the scan wraps to p.
	if got, err := scanPorts("127.0.0.1", p, p, 1, 1); err != nil || got[0] != p {
		t.Fatalf("scanPorts from start 1 = %v, %v; want [%d]", got, err, p)
	}
}
