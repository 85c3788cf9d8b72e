package devcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

const parentHelperEnv = "SEPP_DEVCLUSTER_TEST_PARENT"

// A node started by a `sepp dev` or `sepp bench` that is killed outright
// must not outlive it. The test binary re-runs itself as that parent: it
// starts a long sleep with the nodes' process attributes, prints its pid and
// waits to be killed.
func TestNodeProcAttr_NodeDiesWithItsParent(t *testing.T) {
	if os.Getenv(parentHelperEnv) == "1" {
		actAsParent()
		return
	}
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep command to stand in for a node:", err)
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestNodeProcAttr_NodeDiesWithItsParent$")
	parent.Env = append(os.Environ(), parentHelperEnv+"=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = parent.Process.Kill()
		t.Fatalf("reading the helper's child pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "child ")))
	if err != nil {
		_ = parent.Process.Kill()
		t.Fatalf("helper printed %q: %v", line, err)
	}
	if !processAlive(t, pid) {
		t.Fatalf("child %d is not running before its parent is killed", pid)
	}

	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()

	deadline := time.Now().Add(10 * time.Second)
	for processAlive(t, pid) {
		if time.Now().After(deadline) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
			t.Fatalf("child %d still running 10 s after its parent was killed", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling the condition, bounded by the deadline
	}
}

// actAsParent is the helper's side: start the stand-in node, report its pid,
// and wait for the test to kill this process.
func actAsParent() {
	child := exec.Command("sleep", "300")
	child.SysProcAttr = nodeProcAttr()
	if err := child.Start(); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Printf("child %d\n", child.Process.Pid)
	time.Sleep(5 * time.Minute)
	_ = child.Process.Kill()
	os.Exit(1)
}

// processAlive reports whether pid names a process that has not exited: a
// zombie (exited, not yet reaped by its new parent) counts as gone.
func processAlive(t *testing.T, pid int) bool {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	// The state follows the command name, which is in parentheses.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	fields := strings.Fields(rest)
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}
