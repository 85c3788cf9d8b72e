package bench

import (
	"os"
	"testing"
)

func TestFsyncLatencies_TimesEveryWriteAndLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	lat, err := fsyncLatencies(dir, 5, 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(lat) != 5 {
		t.Fatalf("got %d latencies, want 5", len(lat))
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
}

func TestFsyncLatencies_ReportsAFolderItCannotWriteTo(t *testing.T) {
	if _, err := fsyncLatencies(t.TempDir()+"/missing", 1, 64); err == nil {
		t.Fatal("no error for a folder that does not exist")
	}
}
