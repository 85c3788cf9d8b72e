package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// CPU accounting: a throughput figure on a shared 2-core machine moves with
// whatever else runs, but the CPU time the servers and the client spend per
// job moves much less, so it is what an optimisation is judged by.

// userHZ is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, which
// Linux fixes at 100 for user space whatever the kernel's tick.
const userHZ = 100

// processCPU is the user plus system CPU time a process has used so far.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	d, err := parseStatCPU(data)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return d, nil
}

// parseStatCPU reads utime plus stime from a /proc/<pid>/stat line.
func parseStatCPU(data []byte) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces;
	// the fields after its closing parenthesis start at field 3.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name")
	}
	fields := bytes.Fields(data[i+1:])
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("%d fields, want at least %d", len(fields), stime+1)
	}
	var ticks int64
	for _, f := range [...]int{utime, stime} {
		v, err := strconv.ParseInt(string(fields[f]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("field %d: %w", f+3, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// selfCPU is the CPU time this process (the bench's client) has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type cpuSample struct {
	servers time.Duration // all local nodes together; 0 without a local cluster
	client  time.Duration
	ok      bool // servers was measured
}

func (r *runner) sampleCPU() cpuSample {
	s := cpuSample{client: selfCPU()}
	if r.cluster == nil {
		return s
	}
	s.ok = true
	for i := range r.cluster.Nodes {
		pid := r.cluster.Pid(i)
		if pid == 0 {
			s.ok = false
			continue
		}
		d, err := processCPU(pid)
		if err != nil {
			s.ok = false
			continue
		}
		s.servers += d
	}
	return s
}

// nodesCPU is each local node's CPU time so far (0 for a node that is
// down or unreadable).
func (r *runner) nodesCPU() []time.Duration {
	if r.cluster == nil {
		return nil
	}
	out := make([]time.Duration, len(r.cluster.Nodes))
	for i := range r.cluster.Nodes {
		if pid := r.cluster.Pid(i); pid != 0 {
			if d, err := processCPU(pid); err == nil {
				out[i] = d
			}
		}
	}
	return out
}

// addCPUPerJob reports the CPU time spent per job between two samples:
// name_server_cpu_per_job (the three nodes together, local cluster only)
// and name_client_cpu_per_job.
func (r *runner) addCPUPerJob(name string, before, after cpuSample, jobs int64) {
	if jobs <= 0 {
		return
	}
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(jobs) }
	if before.ok && after.ok {
		r.add(name+"_server_cpu_per_job", us(after.servers-before.servers), "us")
	}
	r.add(name+"_client_cpu_per_job", us(after.client-before.client), "us")
}
