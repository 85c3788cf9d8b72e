package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFsyncLatencies_TimesEveryWriteAndLeavesNothingBehind(t *testing.T) {
	for _, tc := range []struct {
		name             string
		writers, n, size int
		gap              time.Duration
	}{
		{"one writer, small records", 1, 5, 64, 0},
		{"three writers at once, entry-sized records", 3, 4, 80 << 10, 0},
		{"one writer, small records 5ms apart", 1, 4, 1024, 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			start := time.Now()
			lat, err := fsyncLatencies(dir, tc.writers, tc.n, tc.size, tc.gap)
			if err != nil {
				t.Fatal(err)
			}
			// A lower bound only: the gaps are waited out between appends.
			if took, least := time.Since(start), time.Duration(tc.n-1)*tc.gap; took < least {
				t.Errorf("the probe took %v, less than its %d gaps of %v", took, tc.n-1, tc.gap)
			}
			if want := tc.writers * tc.n; len(lat) != want {
				t.Fatalf("got %d latencies, want %d", len(lat), want)
			}
			for i, d := range lat {
				if d <= 0 {
					t.Errorf("latency %d is %v, want > 0", i, d)
				}
			}
			left, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Errorf("probe left %d files in %s", len(left), dir)
			}
		})
	}
}

func TestFsyncLatencies_ReportsAFolderItCannotWriteTo(t *testing.T) {
	for _, writers := range []int{1, 3} {
		if _, err := fsyncLatencies(t.TempDir()+"/missing", writers, 1, 64, 0); err == nil {
			t.Fatalf("%d writers: no error for a folder that does not exist", writers)
		}
	}
}

func TestRequireEmptyDir(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T) string
		wantErr bool
	}{
		{"no --dir: a temporary folder", func(*testing.T) string { return "" }, false},
		{"a folder not made yet", func(t *testing.T) string {
			t.Helper()
			return t.TempDir() + "/new"
		}, false},
		{"an empty folder", func(t *testing.T) string {
			t.Helper()
			return t.TempDir()
		}, false},
		{"an earlier run's folder", func(t *testing.T) string {
			t.Helper()
			dir := t.TempDir()
			if err := os.Mkdir(dir+"/sepp-1", 0o755); err != nil {
				t.Fatal(err)
			}
			return dir
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := requireEmptyDir(tc.prepare(t))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "sepp-1") {
				t.Errorf("err = %v, want it to name what the folder holds", err)
			}
		})
	}
}

// A latency is also printed as a multiple of the same run's fsync, when
// the bench timed the disk; against a cluster it did not start there is no
// floor and no ratio.
func TestAddFsyncRatio(t *testing.T) {
	for _, tc := range []struct {
		name    string
		figures []Figure
		want    float64 // 0: no ratio reported
	}{
		{"both figures", []Figure{{Name: "disk_fsync_p50", Value: 0.5}, {Name: "sync_enqueue_p50", Value: 1.5}}, 3},
		{"no disk figure", []Figure{{Name: "sync_enqueue_p50", Value: 1.5}}, 0},
		{"a floor of 0", []Figure{{Name: "disk_fsync_p50", Value: 0}, {Name: "sync_enqueue_p50", Value: 1.5}}, 0},
		{"no latency figure", []Figure{{Name: "disk_fsync_p50", Value: 0.5}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			r := &runner{opts: Options{Out: &out}}
			r.report.Figures = tc.figures
			r.addFsyncRatio("sync_enqueue_p50", "disk_fsync_p50")
			got, ok := r.figure("sync_enqueue_p50_per_fsync")
			if tc.want == 0 {
				if ok {
					t.Fatalf("reported a ratio %v", got)
				}
				return
			}
			if !ok || got != tc.want {
				t.Fatalf("ratio %v (reported %v), want %v", got, ok, tc.want)
			}
			if line := "sync_enqueue_p50_per_fsync: 3 x\n"; out.String() != line {
				t.Fatalf("printed %q, want %q", out.String(), line)
			}
		})
	}
}

func TestDiskWriteRate(t *testing.T) {
	dir := t.TempDir()
	rate, err := diskWriteRate(dir, 3<<20+5)
	if err != nil {
		t.Fatal(err)
	}
	if rate <= 0 {
		t.Fatalf("rate %v, want > 0", rate)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("the probe left %d files behind", len(left))
	}
	if _, err := diskWriteRate(filepath.Join(dir, "missing"), 1<<20); err == nil {
		t.Fatal("a probe in a missing folder reported no error")
	}
}
