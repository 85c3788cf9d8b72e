package client_test

import (
	"bytes"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// exampleServer runs `sepp serve` as a cluster of one with dead-letter
// retention, on free loopback ports, its data in a temporary folder,
// standing in for a cluster at localhost:50051. The binary is $SEPP_BIN,
// or, in a checkout of sepp, built from it once per test run. The client's
// module cannot run a server in the test's process (that needs the
// server's module, as package sepptest does), so its examples talk to a
// real one, as the other SDKs' tests do.
func exampleServer() (addr string, stop func()) {
	bin, err := seppBinary()
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "sepp-example-")
	if err != nil {
		log.Fatal(err)
	}
	config := filepath.Join(dir, "sepp.toml")
	if err := os.WriteFile(config, []byte("[storage]\ndead_letter_retention_ms = 3600000\n\n[[queues]]\nname = \"thumbnails\"\ncompleted_retention_ms = 3600000\n\n[[queues]]\nname = \"tiles\"\ncompleted_retention_ms = 3600000\n"), 0o600); err != nil {
		log.Fatal(err)
	}
	for attempt := 1; ; attempt++ {
		ports := freePorts(3)
		addr = "127.0.0.1:" + ports[0]
		httpAddr := "127.0.0.1:" + ports[1]
		var out bytes.Buffer
		cmd := exec.Command(bin, "serve", "--config", config, "--data-dir", filepath.Join(dir, fmt.Sprint("data", attempt)),
			"--grpc-addr", addr, "--http-addr", httpAddr, "--raft-addr", "127.0.0.1:"+ports[2])
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			log.Fatal(err)
		}
		exited := make(chan struct{})
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(exited) }()
		stop = func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
			_ = os.RemoveAll(dir)
		}
		switch err := waitReady(httpAddr, exited, &waitErr); {
		case err == nil:
			return addr, stop
		case strings.Contains(out.String(), "address already in use") && attempt < 3:
			// Another process took a port between choosing and binding it.
			continue
		default:
			_ = cmd.Process.Kill()
			_ = os.RemoveAll(dir)
			log.Fatalf("sepp serve: %v\n%s", err, out.String())
		}
	}
}

// waitReady polls the node's /readyz until it answers 200, the process
// exits or 30 s pass.
func waitReady(httpAddr string, exited <-chan struct{}, waitErr *error) error {
	deadline := time.Now().Add(30 * time.Second)
	hc := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("exited before it was ready: %v", *waitErr)
		default:
		}
		if r, err := hc.Get("http://" + httpAddr + "/readyz"); err == nil {
			_ = r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready within 30 s")
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) []string {
	ports := make([]string, n)
	for i := range ports {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		defer lis.Close()
		_, ports[i], _ = net.SplitHostPort(lis.Addr().String())
	}
	return ports
}

// sharedServer is one exampleServer for the examples that can share it,
// started by the first of them: a server start is most of an example's
// time. Each sharing example uses queues of its own, so none sees
// another's jobs, whichever order they run in.
var sharedServer struct {
	once sync.Once
	addr string
	stop func()
}

// sharedExampleServer is sharedServer's address; TestMain stops it.
func sharedExampleServer() string {
	sharedServer.once.Do(func() { sharedServer.addr, sharedServer.stop = exampleServer() })
	return sharedServer.addr
}

// TestMain stops the shared server and removes the binary seppBinary
// built, once every example ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if sharedServer.stop != nil {
		sharedServer.stop()
	}
	if builtSepp.path != "" {
		_ = os.RemoveAll(filepath.Dir(builtSepp.path))
	}
	os.Exit(code)
}

var builtSepp struct {
	once sync.Once
	path string
	err  error
}

// seppBinary is $SEPP_BIN, or the sepp binary built from the checkout
// this module sits in (its parent folder).
func seppBinary() (string, error) {
	if bin := os.Getenv("SEPP_BIN"); bin != "" {
		return bin, nil
	}
	builtSepp.once.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			builtSepp.err = err
			return
		}
		if mod, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !bytes.HasPrefix(mod, []byte("module github.com/sepp-io/sepp\n")) {
			builtSepp.err = fmt.Errorf("no sepp binary: set SEPP_BIN to its path (in a checkout of sepp, make build writes bin/sepp)")
			return
		}
		out, err := os.MkdirTemp("", "sepp-bin-")
		if err != nil {
			builtSepp.err = err
			return
		}
		builtSepp.path = filepath.Join(out, "sepp")
		build := exec.Command("go", "build", "-o", builtSepp.path, "./cmd/sepp")
		build.Dir = root
		if msg, err := build.CombinedOutput(); err != nil {
			builtSepp.err = fmt.Errorf("building sepp from %s: %v\n%s", root, err, msg)
		}
	})
	return builtSepp.path, builtSepp.err
}
