package main

import (
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name           string
		live, headroom uint64
		base, want     int
	}{
		{"small heap gets the headroom", 64 * mib, 128 * mib, 50, 200},
		{"tiny heap is capped", 1 * mib, 128 * mib, 50, gcMaxPercent},
		{"large heap keeps the base", 400 * mib, 128 * mib, 50, 50},
		{"at the crossover", 256 * mib, 128 * mib, 50, 50},
		{"no headroom", 64 * mib, 0, 50, 50},
		{"nothing measured yet", 0, 128 * mib, 50, 50},
		{"base above the cap stays", 1 * mib, 128 * mib, 2000, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := gcPercentFor(tt.live, tt.headroom, tt.base); got != tt.want {
				t.Fatalf("gcPercentFor(%d MiB, %d MiB, %d) = %d, want %d", tt.live/mib, tt.headroom/mib, tt.base, got, tt.want)
			}
		})
	}
}

func TestGCTunerSetsOnlyOnRealChange(t *testing.T) {
	const mib = 1 << 20
	var live uint64
	var sets []int
	tu := &gcTuner{base: 50, headroom: 128 * mib, current: 50,
		readLive: func() uint64 { return live },
		setGC:    func(p int) int { sets = append(sets, p); return 0 },
		log:      hclog.NewNullLogger()}
	for _, step := range []struct {
		liveMiB uint64
		want    []int
	}{
		{64, []int{200}},           // small heap: raised
		{62, []int{200}},           // 206: within a tenth, left alone
		{32, []int{200, 400}},      // halved heap: raised again
		{400, []int{200, 400, 50}}, // large heap: back to the base
		{500, []int{200, 400, 50}},
	} {
		live = step.liveMiB * mib
		tu.step()
		if len(sets) != len(step.want) {
			t.Fatalf("live %d MiB: sets %v, want %v", step.liveMiB, sets, step.want)
		}
		for i := range sets {
			if sets[i] != step.want[i] {
				t.Fatalf("live %d MiB: sets %v, want %v", step.liveMiB, sets, step.want)
			}
		}
	}
}
