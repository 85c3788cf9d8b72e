package monitoring

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// promtool finds Debian's promtool (apt-get install prometheus); without it
// the test skips saying why, or fails under SEPP_REQUIRE_ALL (CI).
func promtool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	const why = "no promtool on PATH (apt-get install prometheus provides it)"
	if os.Getenv("SEPP_REQUIRE_ALL") != "" {
		t.Fatal("SEPP_REQUIRE_ALL is set (CI) but " + why)
	}
	t.Skip("promtool test skipped: " + why)
	return ""
}

func TestAlertRules_PromtoolCheckAndTest(t *testing.T) {
	p := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", "sepp-alerts.yml"},
		{"test", "rules", "sepp-alerts.test.yml"},
	} {
		out, err := exec.Command(p, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Every alert of the rules file has a unit test that expects it to fire.
func TestAlertRules_EveryAlertIsTested(t *testing.T) {
	rules := read(t, "sepp-alerts.yml")
	tests := read(t, "sepp-alerts.test.yml")
	alerts := regexp.MustCompile(`(?m)^\s*- alert: (\S+)`).FindAllStringSubmatch(rules, -1)
	if len(alerts) == 0 {
		t.Fatal("no alerts in sepp-alerts.yml")
	}
	for _, a := range alerts {
		fires := regexp.MustCompile(`alertname: ` + a[1] + `\s*\n\s*exp_alerts:\s*\n\s*- exp_labels`)
		if !fires.MatchString(tests) {
			t.Errorf("alert %s has no test in sepp-alerts.test.yml that expects it to fire", a[1])
		}
	}
}

// The dashboard is valid JSON with panels, and every sepp_ metric it or the
// rules name is one the server registers (a typo would draw nothing).
func TestDashboardAndRules_NameExportedMetrics(t *testing.T) {
	dash := read(t, "grafana-sepp.json")
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(dash), &d); err != nil {
		t.Fatalf("grafana-sepp.json: %v", err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) < 6 {
		t.Fatalf("dashboard: title %q, uid %q, %d panels", d.Title, d.UID, len(d.Panels))
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 || p.Targets[0].Expr == "" {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
	exported := exportedMetrics(t)
	name := regexp.MustCompile(`sepp_[a-z_]+`)
	for file, text := range map[string]string{"grafana-sepp.json": dash, "sepp-alerts.yml": read(t, "sepp-alerts.yml")} {
		for _, m := range name.FindAllString(text, -1) {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
			if !exported[m] && !exported[base] {
				t.Errorf("%s names %s, which the server does not export", file, m)
			}
		}
	}
}

// exportedMetrics collects the quoted sepp_ names of the server's Go code.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	quoted := regexp.MustCompile(`"(sepp_[a-z_]+)"`)
	for _, dir := range []string{"../../rpc", "../../cluster"} {
		err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			for _, m := range quoted.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(out) < 10 {
		t.Fatalf("found only %d metric names in the server's code", len(out))
	}
	return out
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
