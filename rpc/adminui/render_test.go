package adminui

import (
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sepp-io/sepp/cluster"
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

func TestRates(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rt := newRateTracker()
	if r := rt.observe(start, "q", counters{enqueued: 100}); r.Known {
		t.Fatalf("first sample gave a rate: %+v", r)
	}
	if r := rt.observe(start.Add(time.Second), "q", counters{enqueued: 150}); r.Known {
		t.Fatalf("a one-second span gave a rate: %+v", r)
	}
	r := rt.observe(start.Add(10*time.Second), "q", counters{enqueued: 300, acked: 50, dead: 10})
	if !r.Known || r.Enqueued != 20 || r.Acked != 5 || r.Dead != 1 || r.Span != 10*time.Second {
		t.Fatalf("rates over 10s = %+v, want 20/5/1 per second", r)
	}
	if got := r.Format(r.Enqueued); got != "20/s" {
		t.Errorf("Format(20) = %q", got)
	}
	if got := r.Format(r.Dead); got != "1.00/s" {
		t.Errorf("Format(1) = %q", got)
	}
	// Counters going backwards (a restore) start over instead of going negative.
	if r := rt.observe(start.Add(20*time.Second), "q", counters{enqueued: 5}); r.Known {
		t.Fatalf("rate across a counter reset: %+v", r)
	}
	// Samples older than the window are dropped.
	rt.observe(start.Add(25*time.Second), "q", counters{enqueued: 10})
	if r := rt.observe(start.Add(25*time.Second+rateWindow+time.Second), "q", counters{enqueued: 20}); r.Known {
		t.Fatalf("rate from samples outside the window: %+v", r)
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
