//go:build sepp_fault_inject

package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A test build's store that dies in the middle of a flush on demand
// (integration/diskfaults_test.go); never in a release build.

// injectKillInFlushFile, present in the node's data dir (the store's
// parent folder), makes the store flush its memtables and kill its own
// process with SIGKILL once half of the flush's first table is written:
// a crash with a torn table on disk and the manifest not yet naming it.
// The file is removed before the flush, so the restarted node runs on.
const injectKillInFlushFile = "inject-kill-in-flush"

type faultInjector struct {
	trigger string
	armed   atomic.Bool
	quit    chan struct{}
	done    chan struct{}
}

func injectFaults(dir string, po *pebble.Options) *faultInjector {
	fi := &faultInjector{
		trigger: filepath.Join(filepath.Dir(dir), injectKillInFlushFile),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	po.FS = &killingFS{FS: po.FS, fi: fi}
	return fi
}

// start polls for the trigger file; found, it arms the kill and flushes.
func (fi *faultInjector) start(s *Store) {
	go func() {
		defer close(fi.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-fi.quit:
				return
			case <-tick.C:
			}
			if _, err := os.Stat(fi.trigger); err != nil {
				continue
			}
			if err := os.Remove(fi.trigger); err != nil {
				continue
			}
			fi.armed.Store(true)
			_ = s.db.Flush()
		}
	}()
}

func (fi *faultInjector) stop() {
	if fi == nil { // a checkpoint opened read only (OpenCheckpoint)
		return
	}
	close(fi.quit)
	<-fi.done
}

// killingFS hands out, while armed, table files that kill the process
// halfway through their first write.
type killingFS struct {
	vfs.FS
	fi *faultInjector
}

func (k *killingFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := k.FS.Create(name, category)
	if err != nil || !k.fi.armed.Load() || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return &killingFile{File: f, name: name}, nil
}

type killingFile struct {
	vfs.File
	name string
}

func (f *killingFile) Write(p []byte) (int, error) {
	half := len(p) / 2
	_, _ = f.File.Write(p[:half])
	_ = f.File.Sync()
	fmt.Fprintf(os.Stderr, "store: killed with %d of %d bytes of table %s written (injected: %s)\n",
		half, len(p), filepath.Base(f.name), injectKillInFlushFile)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL cannot be caught: the process ends here
}

// injectKillInInstallFile, present in the node's data dir (the parent of
// the store's folder and of the install's staged folder), makes an
// install kill the process at the point the file names:
//
//   - "staging": ReadCheckpoint, once the first of the received files is
//     written and synced, the rest not;
//   - "swapping": Install, once the old store is moved aside and before
//     the staged one is renamed into its place.
//
// The file is removed before the kill, so the restarted node runs on.
const injectKillInInstallFile = "inject-kill-in-install"

func killInInstall(dir, point string) {
	trigger := filepath.Join(filepath.Dir(dir), injectKillInInstallFile)
	aim, err := os.ReadFile(trigger)
	if err != nil || strings.TrimSpace(string(aim)) != point {
		return
	}
	if err := os.Remove(trigger); err != nil {
		return
	}
	fmt.Fprintf(os.Stderr, "store: killed in install (%s) of %s (injected: %s)\n", point, dir, injectKillInInstallFile)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL cannot be caught: the process ends here
}
