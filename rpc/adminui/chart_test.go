package adminui

import (
	"strings"
	"testing"
	"time"
)

// The charts are SVG drawn from the ring's points: one polyline per run of
// known rates (a counter reset leaves a gap), an axis rounded up to 1, 2
// or 5 times a power of ten, and the newest values under the chart.
func TestRateChartsSVG(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var pts []point
	for i := range 6 {
		p := point{At: start.Add(time.Duration(i) * 10 * time.Second), Known: i != 0 && i != 3, Enqueued: float64(i) * 3.1, Ready: 10 * i}
		pts = append(pts, p)
	}
	cs := rateCharts("q", pts)
	if len(cs) != 2 || cs[0].Empty || cs[1].Empty {
		t.Fatalf("charts: %+v", cs)
	}
	svg := string(cs[0].SVG)
	for _, want := range []string{`<svg class="chart" id="q-rates"`, `>20/s<`, `00:00:50 UTC`} {
		if !strings.Contains(svg, want) {
			t.Errorf("throughput SVG lacks %q:\n%s", want, svg)
		}
	}
	// Points 1-2 and 4-5 are two runs of the enqueued line.
	if n := strings.Count(svg, `class="line c1"`); n != 2 {
		t.Errorf("enqueued line in %d pieces, want 2 (a gap at the reset)", n)
	}
	if cs[0].Latest[0] != "16/s" || cs[1].Latest[0] != "50" {
		t.Errorf("latest values: %v %v", cs[0].Latest, cs[1].Latest)
	}
	if one := rateCharts("q", pts[:1]); !one[0].Empty {
		t.Error("a chart of one sample is drawn")
	}
	for in, want := range map[float64]float64{0: 1, 0.3: 0.5, 7: 10, 12: 20, 1000: 1000, 4100: 5000} {
		if got := niceMax(in); got != want {
			t.Errorf("niceMax(%g) = %g, want %g", in, got, want)
		}
	}
}
