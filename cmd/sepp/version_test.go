package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

func TestResolveBuild(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name                 string
		ldVersion, ldCommit  string
		bi                   *debug.BuildInfo
		wantVersion, wantRev string
	}{
		{name: "LinkerFlagsWin", ldVersion: "1.2.3", ldCommit: "abc",
			bi:          &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v9.9.9"}, Settings: vcs("def", "true")},
			wantVersion: "1.2.3", wantRev: "abc"},
		{name: "GoInstallOfATag",
			bi:          &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.4.0"}},
			wantVersion: "v1.4.0", wantRev: "unknown"},
		{name: "CheckoutBuildTakesTheRevision",
			bi:          &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123abcd", "false")},
			wantVersion: "dev", wantRev: "0123abcd"},
		{name: "ModifiedTreeIsDirty",
			bi:          &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123abcd", "true")},
			wantVersion: "dev", wantRev: "0123abcd-dirty"},
		{name: "LinkerVersionWithRevisionFromVCS", ldVersion: "2.0.0",
			bi:          &debug.BuildInfo{GoVersion: "go1.26.0", Settings: vcs("feed", "false")},
			wantVersion: "2.0.0", wantRev: "feed"},
		{name: "NothingKnown", wantVersion: "dev", wantRev: "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := resolveBuild(tc.ldVersion, tc.ldCommit, tc.bi)
			if b.Version != tc.wantVersion || b.Commit != tc.wantRev {
				t.Errorf("version %q commit %q, want %q %q", b.Version, b.Commit, tc.wantVersion, tc.wantRev)
			}
			wantGo := runtime.Version()
			if tc.bi != nil {
				wantGo = tc.bi.GoVersion
			}
			if b.GoVersion != wantGo || b.Platform != runtime.GOOS+"/"+runtime.GOARCH {
				t.Errorf("go %q platform %q", b.GoVersion, b.Platform)
			}
		})
	}
}

// TestVersion_LinkerFlagsReachEveryReport builds the binary as `make build`
// and `make release` do (-X main.version, -X main.commit) and checks that
// `sepp version`, `sepp --version` and a serving node's GetServerInfo all
// name that version.
func TestVersion_LinkerFlagsReachEveryReport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const wantVersion, wantCommit = "9.8.7-test", "0123456789abcdef"
	bin := filepath.Join(t.TempDir(), "sepp")
	build := exec.Command("go", "build", "-trimpath", "-o", bin,
		"-ldflags", "-X main.version="+wantVersion+" -X main.commit="+wantCommit, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	want := "sepp " + wantVersion + "\ncommit:   " + wantCommit + "\ngo:       " + runtime.Version() +
		"\nplatform: " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("sepp %s: %v", args[0], err)
		}
		if string(out) != want {
			t.Errorf("sepp %s printed\n%s\nwant\n%s", args[0], out, want)
		}
	}

	grpcAddr := freeAddr(t)
	srv := exec.Command(bin, "serve", "--grpc-addr", grpcAddr, "--http-addr", freeAddr(t),
		"--raft-addr", freeAddr(t), "--data-dir", filepath.Join(t.TempDir(), "data"), "--log-level", "warn")
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			_ = err // a signalled exit: its status says nothing about the test
		case <-time.After(30 * time.Second):
			_ = srv.Process.Kill()
			err := <-exited
			t.Errorf("sepp serve did not stop within 30s of SIGTERM (killed: %v)", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{grpcAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	info, err := c.ServerInfo(ctx)
	if err != nil {
		t.Fatalf("GetServerInfo: %v", err)
	}
	if info.Version != wantVersion {
		t.Errorf("GetServerInfo version %q, want %q", info.Version, wantVersion)
	}
	if strings.Contains(info.Version, "\n") {
		t.Errorf("GetServerInfo version %q holds more than the version", info.Version)
	}
}
