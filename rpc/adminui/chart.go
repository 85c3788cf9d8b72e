package adminui

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"
)

// Charts are drawn on the server as inline SVG: no script, no library, no
// build step. Colours come from style.css classes (the page's CSP allows no
// inline styles).

const (
	chartW, chartH = 560.0, 140.0
	chartPadL      = 44.0 // room for the y-axis labels
	chartPadB      = 18.0 // room for the time labels
	chartPadT      = 8.0
)

// chartLine is one series: a label, a CSS class (c1..c5) and a value per
// point; NaN is a gap (no rate across it).
type chartLine struct {
	Label  string
	Class  string
	Values []float64
}

// chart is one drawn chart with its legend.
type chart struct {
	ID     string
	Title  string
	Unit   string // "/s" or "" (a count)
	Lines  []chartLine
	SVG    template.HTML
	Empty  bool // fewer than two samples: nothing to draw yet
	Latest []string
}

// rateCharts turns a queue's series into its two charts: rates and depths.
func rateCharts(id string, s []point) []chart {
	n := len(s)
	rate := func(f func(p point) float64) []float64 {
		v := make([]float64, n)
		for i, p := range s {
			if p.Known {
				v[i] = f(p)
			} else {
				v[i] = math.NaN()
			}
		}
		return v
	}
	depth := func(f func(p point) int) []float64 {
		v := make([]float64, n)
		for i, p := range s {
			v[i] = float64(f(p))
		}
		return v
	}
	times := make([]time.Time, n)
	for i, p := range s {
		times[i] = p.At
	}
	rates := chart{ID: id + "-rates", Title: "Throughput", Unit: "/s", Lines: []chartLine{
		{"enqueued", "c1", rate(func(p point) float64 { return p.Enqueued })},
		{"reserved", "c2", rate(func(p point) float64 { return p.Reserved })},
		{"acked", "c3", rate(func(p point) float64 { return p.Acked })},
		{"nacked", "c4", rate(func(p point) float64 { return p.Nacked })},
		{"dead-lettered", "c5", rate(func(p point) float64 { return p.Dead })},
	}}
	depths := chart{ID: id + "-depth", Title: "Depth", Lines: []chartLine{
		{"ready", "c1", depth(func(p point) int { return p.Ready })},
		{"reserved", "c2", depth(func(p point) int { return p.InFlight })},
	}}
	out := []chart{rates, depths}
	for i := range out {
		out[i].draw(times)
	}
	return out
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func formatAxis(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

func formatValue(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case unit == "":
		return fmt.Sprintf("%.0f", v)
	case v == 0:
		return "0" + unit
	case v < 10:
		return fmt.Sprintf("%.2f%s", v, unit)
	}
	return fmt.Sprintf("%.0f%s", v, unit)
}

func (c *chart) draw(times []time.Time) {
	n := len(times)
	if n < 2 {
		c.Empty = true
		return
	}
	top := 0.0
	for _, l := range c.Lines {
		for _, v := range l.Values {
			if !math.IsNaN(v) {
				top = math.Max(top, v)
			}
		}
		last := math.NaN()
		if len(l.Values) > 0 {
			last = l.Values[len(l.Values)-1]
		}
		c.Latest = append(c.Latest, formatValue(last, c.Unit))
	}
	top = niceMax(top)
	t0, t1 := times[0], times[n-1]
	span := t1.Sub(t0).Seconds()
	if span <= 0 {
		span = 1
	}
	plotW, plotH := chartW-chartPadL-4, chartH-chartPadT-chartPadB
	x := func(t time.Time) float64 { return chartPadL + t.Sub(t0).Seconds()/span*plotW }
	y := func(v float64) float64 { return chartPadT + plotH - v/top*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="%s" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s over the last %s">`,
		template.HTMLEscapeString(c.ID), chartW, chartH, template.HTMLEscapeString(c.Title), humanDuration(t1.Sub(t0)))
	// Grid: 0, half, top.
	for _, f := range []float64{0, 0.5, 1} {
		yy := y(top * f)
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, chartPadL, yy, chartW-4, yy)
		fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%.1f" text-anchor="end">%s%s</text>`, chartPadL-4, yy+3, formatAxis(top*f), template.HTMLEscapeString(c.Unit))
	}
	fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%.1f">%s</text>`, chartPadL, chartH-4, t0.UTC().Format("15:04:05"))
	fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, chartW-4, chartH-4, t1.UTC().Format("15:04:05 UTC"))
	for _, l := range c.Lines {
		// One polyline per run of known values.
		var pts []string
		flush := func() {
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline class="line %s" points="%s"/>`, l.Class, strings.Join(pts, " "))
			} else if len(pts) == 1 {
				var px, py float64
				_, _ = fmt.Sscanf(pts[0], "%f,%f", &px, &py)
				fmt.Fprintf(&b, `<circle class="dot %s" cx="%.1f" cy="%.1f" r="1.5"/>`, l.Class, px, py)
			}
			pts = pts[:0]
		}
		for i, v := range l.Values {
			if math.IsNaN(v) {
				flush()
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(times[i]), y(v)))
		}
		flush()
	}
	b.WriteString(`</svg>`)
	c.SVG = template.HTML(b.String()) //nolint:gosec // built here from numbers and escaped labels
}

// sparkline is a small chart of one series without axes (the Queues table).
func sparkline(values []float64) template.HTML {
	if len(values) < 2 {
		return ""
	}
	const w, h = 120.0, 24.0
	top := 0.0
	for _, v := range values {
		if !math.IsNaN(v) {
			top = math.Max(top, v)
		}
	}
	if top == 0 {
		top = 1
	}
	var pts []string
	for i, v := range values {
		if math.IsNaN(v) {
			continue
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", float64(i)/float64(len(values)-1)*w, h-1-v/top*(h-2)))
	}
	return template.HTML(fmt.Sprintf(`<svg class="spark" viewBox="0 0 %.0f %.0f" aria-hidden="true"><polyline class="line c1" points="%s"/></svg>`, w, h, strings.Join(pts, " "))) //nolint:gosec // numbers only
}
