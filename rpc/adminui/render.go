package adminui

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sepp-io/sepp/engine"
)

// payloadView is a payload made readable: pretty JSON when it parses, text
// when it is printable UTF-8, a hex dump otherwise.
type payloadView struct {
	Kind      string // "json", "text", "hex" or "empty"
	Body      string
	Size      int
	Truncated bool // the hex dump shows only the first maxHexBytes
}

// maxHexBytes bounds the hex dump: four characters of page per byte adds up.
const maxHexBytes = 64 << 10

func renderPayload(b []byte) payloadView {
	v := payloadView{Size: len(b)}
	switch {
	case len(b) == 0:
		v.Kind = "empty"
	case json.Valid(b):
		var buf bytes.Buffer
		_ = json.Indent(&buf, b, "", "  ") // cannot fail on valid JSON
		v.Kind, v.Body = "json", buf.String()
	case printable(b):
		v.Kind, v.Body = "text", string(b)
	default:
		shown := b
		if len(shown) > maxHexBytes {
			shown, v.Truncated = shown[:maxHexBytes], true
		}
		v.Kind, v.Body = "hex", hex.Dump(shown)
	}
	return v
}

// printable reports whether b is UTF-8 text: graphic characters, spaces,
// tabs and line breaks only.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !unicode.IsGraphic(r) && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}

// preview is a one-line glimpse of a payload for a list row.
func preview(b []byte) string {
	const max = 90
	var s string
	switch {
	case len(b) == 0:
		return "(empty)"
	case json.Valid(b):
		var buf bytes.Buffer
		_ = json.Compact(&buf, b) // cannot fail on valid JSON
		s = buf.String()
	case printable(b):
		s = strings.Join(strings.Fields(string(b)), " ")
	default:
		return fmt.Sprintf("(%s binary)", byteSize(len(b)))
	}
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max]) + "…"
	}
	return s
}

func byteSize(n int) string {
	switch {
	case n < 1024:
		return strconv.Itoa(n) + " B"
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// timestamp formats t for display in UTC; the zero time is a dash.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// relative says how long before (or after) now t is, in the largest two units.
func relative(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + humanDuration(-d)
	}
	if d < time.Second {
		return "just now"
	}
	return humanDuration(d) + " ago"
}

// humanDuration prints d in its two largest units: "3d 4h", "5m 12s", "800ms".
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	units := []struct {
		name string
		d    time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	for i, u := range units {
		if d < u.d {
			continue
		}
		n := d / u.d
		out := strconv.FormatInt(int64(n), 10) + u.name
		if i+1 < len(units) {
			if m := (d - n*u.d) / units[i+1].d; m > 0 {
				out += " " + strconv.FormatInt(int64(m), 10) + units[i+1].name
			}
		}
		return out
	}
	return "0s"
}

var templateFuncs = template.FuncMap{
	"ts":        timestamp,
	"rel":       relative,
	"dur":       humanDuration,
	"preview":   preview,
	"bytes":     byteSize,
	"pair":      func(a, b string) []string { return []string{a, b} },
	"bytes64":   func(n int64) string { return byteSize(int(n)) },
	"qpath":     queuePath,
	"jobID":     func(id engine.JobID) string { return strconv.FormatUint(uint64(id), 10) },
	"cause":     func(c engine.Cause) string { return c.String() },
	"state":     func(s engine.State) string { return s.String() },
	"isZero":    func(t time.Time) bool { return t.IsZero() },
	"sumCause":  sumCauses,
	"count":     func(m map[engine.Cause]uint64, c engine.Cause) uint64 { return m[c] },
	"causes":    engine.Causes,
	"causeText": causeText,
	// pendingParents counts the parents a job still waits for.
	"pendingParents": func(ps []engine.ParentLink) int {
		n := 0
		for _, p := range ps {
			if !p.Ended {
				n++
			}
		}
		return n
	},
	// age is how long the oldest ready job has waited: a dash when none waits.
	"age": func(ready int, d time.Duration) string {
		switch {
		case ready == 0:
			return "—"
		case d < time.Second:
			return "<1s"
		}
		return humanDuration(d)
	},
	"tsShort": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
}

// parseTemplates builds one template set per page: the shared layout and
// partials plus that page's "content".
func parseTemplates() (map[string]*template.Template, error) {
	base, err := template.New("base").Funcs(templateFuncs).ParseFS(templateFS, "templates/_*.html")
	if err != nil {
		return nil, fmt.Errorf("adminui: parse layout: %w", err)
	}
	pages, err := fs.Glob(templateFS, "templates/[a-z]*.html")
	if err != nil {
		return nil, fmt.Errorf("adminui: list templates: %w", err)
	}
	out := make(map[string]*template.Template, len(pages))
	for _, p := range pages {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, p)
		if err != nil {
			return nil, fmt.Errorf("adminui: parse %s: %w", p, err)
		}
		out[strings.TrimSuffix(path.Base(p), ".html")] = t
	}
	return out, nil
}

// causeText explains a dead-letter cause in words.
func causeText(c engine.Cause) string {
	switch c {
	case engine.CauseAttemptsExhausted:
		return "the failing attempt reached max_attempts"
	case engine.CauseRejected:
		return "a worker nacked it with DeadLetter"
	case engine.CauseLeaseExpired:
		return "its lease expired on the final attempt"
	case engine.CauseAdmin:
		return "an operator dead-lettered it"
	case engine.CauseCancelled:
		return "an operator cancelled it while a worker ran it, or a job it waited for did not complete"
	case engine.CauseExpired:
		return "it was not reserved by its deadline (ttl, expires_at or the queue's max_wait_ms)"
	}
	return ""
}
