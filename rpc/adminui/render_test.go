package adminui

import (
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
)

func TestRenderPayload(t *testing.T) {
	tests := []struct {
		name     string
		in       []byte
		kind     string
		contains string
	}{
		{"Empty", nil, "empty", ""},
		{"JSONObject", []byte(`{"a":1,"b":[true,null]}`), "json", "{\n  \"a\": 1,\n  \"b\": [\n    true,"},
		{"JSONString", []byte(`"hello"`), "json", `"hello"`},
		{"Text", []byte("line one\nline two\ttabbed"), "text", "line one\nline two\ttabbed"},
		{"UnicodeText", []byte("grüße, 世界"), "text", "grüße, 世界"},
		{"BrokenJSONIsText", []byte(`{"a":`), "text", `{"a":`},
		{"ControlCharIsBinary", []byte("abc\x00def"), "hex", "61 62 63 00 64 65 66"},
		{"InvalidUTF8IsBinary", []byte{0xff, 0xfe, 0x41}, "hex", "ff fe 41"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := renderPayload(tc.in)
			if v.Kind != tc.kind || !strings.Contains(v.Body, tc.contains) || v.Size != len(tc.in) {
				t.Fatalf("renderPayload(%q) = %+v, want kind %s containing %q", tc.in, v, tc.kind, tc.contains)
			}
		})
	}
	big := make([]byte, maxHexBytes+10)
	if v := renderPayload(big); v.Kind != "hex" || !v.Truncated {
		t.Fatalf("large binary payload: kind %s truncated %v", v.Kind, v.Truncated)
	}
}

func TestPreview(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "(empty)"},
		{"{ \"a\" :  1 }", `{"a":1}`},
		{"two\n  lines", "two lines"},
		{"\x00\x01", "(2 B binary)"},
		{strings.Repeat("é", 100), strings.Repeat("é", 90) + "…"},
	}
	for _, tc := range tests {
		if got := preview([]byte(tc.in)); got != tc.want {
			t.Errorf("preview(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestHumanDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0ms"},
		{800 * time.Millisecond, "800ms"},
		{42 * time.Second, "42s"},
		{5*time.Minute + 12*time.Second, "5m 12s"},
		{2 * time.Hour, "2h"},
		{2*time.Hour + 59*time.Second, "2h"},
		{7 * 24 * time.Hour, "7d"},
		{3*24*time.Hour + 4*time.Hour + 5*time.Minute, "3d 4h"},
	}
	for _, tc := range tests {
		if got := humanDuration(tc.d); got != tc.want {
			t.Errorf("humanDuration(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := relative(now, now.Add(-90*time.Second)); got != "1m 30s ago" {
		t.Errorf("relative past = %q", got)
	}
	if got := relative(now, now.Add(time.Hour)); got != "in 1h" {
		t.Errorf("relative future = %q", got)
	}
}

func statsAt(name string, enq, acked, dead uint64, ready int) []engine.QueueStats {
	return []engine.QueueStats{{Name: name, Enqueued: enq, Acked: acked, Ready: ready,
		DeadLettered: map[engine.Cause]uint64{engine.CauseAttemptsExhausted: dead}}}
}

func TestRates(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rg := NewRateRing(10*time.Second, time.Hour)
	if r := rg.rates("q", start, ringCounters{enqueued: 100}); r.Known {
		t.Fatalf("no sample gave a rate: %+v", r)
	}
	rg.Sample(start, statsAt("q", 100, 0, 0, 0))
	if r := rg.rates("q", start.Add(time.Second), ringCounters{enqueued: 150}); r.Known {
		t.Fatalf("a one-second span gave a rate: %+v", r)
	}
	r := rg.rates("q", start.Add(10*time.Second), ringCounters{enqueued: 300, acked: 50, dead: 10})
	if !r.Known || r.Enqueued != 20 || r.Acked != 5 || r.Dead != 1 || r.Span != 10*time.Second {
		t.Fatalf("rates over 10s = %+v, want 20/5/1 per second", r)
	}
	if got := r.Format(r.Enqueued); got != "20/s" {
		t.Errorf("Format(20) = %q", got)
	}
	if got := r.Format(r.Dead); got != "1.00/s" {
		t.Errorf("Format(1) = %q", got)
	}
	// Counters going backwards (a restore) give no rate instead of a negative one.
	if r := rg.rates("q", start.Add(20*time.Second), ringCounters{enqueued: 5}); r.Known {
		t.Fatalf("rate across a counter reset: %+v", r)
	}
	// Samples older than the rate span are not used.
	if r := rg.rates("q", start.Add(rateSpan+time.Second), ringCounters{enqueued: 200}); r.Known {
		t.Fatalf("rate from a sample outside the span: %+v", r)
	}
}

// The ring is bounded, keeps samples oldest first, forgets a queue that is
// gone, and gives no rate across a counter that went backwards.
func TestRateRingSeries(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rg := NewRateRing(10*time.Second, time.Minute) // 6 samples
	for i := range 10 {
		rg.Sample(start.Add(time.Duration(i)*10*time.Second), statsAt("q", uint64(100*i), uint64(50*i), 0, i))
	}
	s := rg.series("q")
	if len(s) != 6 {
		t.Fatalf("ring holds %d samples, want 6", len(s))
	}
	if s[0].At != start.Add(40*time.Second) || s[5].At != start.Add(90*time.Second) {
		t.Fatalf("ring spans %v..%v, want +40s..+90s", s[0].At, s[5].At)
	}
	if s[0].Known {
		t.Errorf("the oldest sample has a rate: %+v", s[0])
	}
	for _, p := range s[1:] {
		if !p.Known || p.Enqueued != 10 || p.Acked != 5 {
			t.Errorf("point %v = %+v, want 10/s enqueued, 5/s acked", p.At, p)
		}
	}
	if s[5].Ready != 9 {
		t.Errorf("newest depth = %d, want 9", s[5].Ready)
	}
	// A restore to older state: the counters go back.
	rg.Sample(start.Add(100*time.Second), statsAt("q", 3, 0, 0, 0))
	if p := rg.series("q"); p[len(p)-1].Known {
		t.Errorf("rate across a counter reset: %+v", p[len(p)-1])
	}
	rg.Sample(start.Add(110*time.Second), statsAt("other", 0, 0, 0, 0))
	if s := rg.series("q"); s != nil {
		t.Errorf("a deleted queue keeps its ring: %d samples", len(s))
	}
	// maybeSample keeps at most one sample per interval.
	rg.maybeSample(start.Add(111*time.Second), statsAt("other", 1, 0, 0, 0))
	if n := len(rg.series("other")); n != 1 {
		t.Errorf("maybeSample within the interval added a sample: %d", n)
	}
}

func TestHashPassword(t *testing.T) {
	h, err := HashPassword("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if bcrypt.CompareHashAndPassword([]byte(h), []byte("correct horse")) != nil {
		t.Fatal("hash does not verify its password")
	}
	if _, err := HashPassword(""); err == nil || !strings.Contains(err.Error(), "password: must not be empty") {
		t.Errorf("empty password: %v", err)
	}
	if _, err := HashPassword(strings.Repeat("x", 73)); err == nil || !strings.Contains(err.Error(), "at most 72 bytes") {
		t.Errorf("long password: %v", err)
	}
}

// nilBackend satisfies rpc.Backend for option checks that never reach it.
type nilBackend struct{ rpc.Backend }

func (nilBackend) Self() cluster.NodeInfo { return cluster.NodeInfo{} }

func TestNewRejectsBadOptions(t *testing.T) {
	good, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	user := func(name, role, hash string) User { return User{Name: name, Role: Role(role), PasswordHash: hash} }
	tests := []struct {
		name  string
		opts  Options
		field string
	}{
		{"AuthWithoutUsers", Options{Auth: true}, "users: auth is on but no user"},
		{"NoName", Options{Users: []User{user("", "viewer", string(good))}}, "users[0].name: must be set"},
		{"Duplicate", Options{Users: []User{user("a", "viewer", string(good)), user("a", "operator", string(good))}}, `users[1].name: "a" appears twice`},
		{"BadRole", Options{Users: []User{user("a", "admin", string(good))}}, `users[0].role: must be "viewer" or "operator", got "admin"`},
		{"PlainPassword", Options{Users: []User{user("a", "viewer", "hunter2")}}, "users[0].password_hash: not a bcrypt hash"},
		{"ShortKey", Options{SessionKey: []byte("short")}, "session_key: at least 32 bytes, got 5"},
		{"NegativeTTL", Options{SessionTTL: -time.Second}, "session_ttl: must not be negative"},
		{"BadScheme", Options{ForwardScheme: "ftp"}, `forward_scheme: must be "http" or "https", got "ftp"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(nilBackend{}, tc.opts)
			if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("New: %v, want ErrOptions naming %q", err, tc.field)
			}
		})
	}
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New(nil backend) succeeded")
	}
	if _, err := New(nilBackend{}, Options{Auth: true, Users: []User{user("a", "operator", string(good))}}); err != nil {
		t.Errorf("good options: %v", err)
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "/",
		"/queues/a?tab=dead":    "/queues/a?tab=dead",
		"//evil.example/":       "/",
		"https://evil.example/": "/",
		"/\\evil.example":       "/",
		"queues":                "/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}
