package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChooseLogStore(t *testing.T) {
	for _, tc := range []struct {
		name       string
		files      []string // created in the data dir first
		configured string
		want       string
		wantErr    string
	}{
		{name: "new dir defaults to the WAL", want: LogStoreWAL},
		{name: "new dir, bolt asked for", configured: LogStoreBolt, want: LogStoreBolt},
		{name: "new dir, wal asked for", configured: LogStoreWAL, want: LogStoreWAL},
		{name: "existing bolt kept when unset", files: []string{boltFileName}, want: LogStoreBolt},
		{name: "existing wal kept when unset", files: []string{walDirName + "/"}, want: LogStoreWAL},
		{name: "existing bolt, bolt asked for", files: []string{boltFileName}, configured: LogStoreBolt, want: LogStoreBolt},
		{name: "existing bolt, wal asked for", files: []string{boltFileName}, configured: LogStoreWAL, wantErr: `log_store: "wal" configured, but data dir`},
		{name: "existing wal, bolt asked for", files: []string{walDirName + "/"}, configured: LogStoreBolt, wantErr: `holds a "wal" log`},
		{name: "both present", files: []string{boltFileName, walDirName + "/"}, wantErr: "ambiguous"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(dir, f)
				var err error
				if strings.HasSuffix(f, "/") {
					err = os.Mkdir(p, 0o750)
				} else {
					err = os.WriteFile(p, nil, 0o600)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			got, err := chooseLogStore(dir, tc.configured)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestLockDataDir_SecondOpenerRefused(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDataDir(dir); err == nil || !strings.Contains(err.Error(), "in use by another sepp process") {
		t.Fatalf("second lock: %v, want refusal naming the other process", err)
	}
	unlock()
	unlock2, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}
