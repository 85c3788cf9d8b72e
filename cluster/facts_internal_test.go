package cluster

import "testing"

func TestMemoryBudgetFrom(t *testing.T) {
	t.Parallel()
	const gib = int64(1) << 30
	tests := []struct {
		name      string
		share     float64
		limits    []memberLimit
		want      int64
		wantSetBy string
	}{
		{"no share: unbounded", 0, []memberLimit{{"a", 8 * gib, "cgroup"}}, 0, ""},
		{"no limit known: unbounded", 0.33, []memberLimit{{"a", 0, ""}, {"b", 0, ""}}, 0, ""},
		{"one member", 0.5, []memberLimit{{"a", 8 * gib, "cgroup"}}, 4 * gib, "a"},
		{"the smallest member, not the leader", 0.5, []memberLimit{{"a", 8 * gib, "cgroup"}, {"b", 512 << 20, "cgroup"}, {"c", 4 * gib, "physical"}}, 256 << 20, "b"},
		{"a member with no limit known is left out", 0.5, []memberLimit{{"a", 8 * gib, "cgroup"}, {"b", 0, ""}}, 4 * gib, "a"},
		{"a tie goes to the first", 0.25, []memberLimit{{"a", gib, "x"}, {"b", gib, "y"}}, gib / 4, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, by := memoryBudgetFrom(tt.share, tt.limits)
			if got != tt.want || by.id != tt.wantSetBy {
				t.Fatalf("memoryBudgetFrom = %d set by %q, want %d by %q", got, by.id, tt.want, tt.wantSetBy)
			}
		})
	}
}
