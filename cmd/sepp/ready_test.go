package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sepp-io/sepp/cluster"
)

type fakeReadiness struct {
	r      cluster.Readiness
	maxLag uint64
}

func (f *fakeReadiness) Readiness(maxLag uint64) cluster.Readiness {
	f.maxLag = maxLag
	return f.r
}

func TestReadyzHandler(t *testing.T) {
	tests := []struct {
		name     string
		r        cluster.Readiness
		code     int
		wantBody []string
	}{
		{name: "Ready", r: cluster.Readiness{Ready: true, Reason: "ready", State: "Follower", Leader: "n1", Term: 4, CommitIndex: 10, AppliedIndex: 9},
			code: http.StatusOK, wantBody: []string{"ready\n", "state=Follower leader=n1 term=4 commit_index=10 applied_index=9"}},
		{name: "Candidate", r: cluster.Readiness{Reason: "Candidate of term 5: no leader", State: "Candidate", Term: 5},
			code: http.StatusServiceUnavailable, wantBody: []string{"not ready: Candidate of term 5: no leader", "leader=none"}},
		{name: "Replaying", r: cluster.Readiness{Reason: "applied index 10 is 5000 entries behind commit index 5010 (more than 1000): catching up",
			State: "Follower", Leader: "n1", CommitIndex: 5010, AppliedIndex: 10},
			code: http.StatusServiceUnavailable, wantBody: []string{"not ready: applied index 10", "catching up"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeReadiness{r: tt.r}
			rec := httptest.NewRecorder()
			readyzHandler(f, 1000)(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if rec.Code != tt.code {
				t.Errorf("code = %d, want %d", rec.Code, tt.code)
			}
			for _, w := range tt.wantBody {
				if !strings.Contains(rec.Body.String(), w) {
					t.Errorf("body %q does not contain %q", rec.Body.String(), w)
				}
			}
			if f.maxLag != 1000 {
				t.Errorf("asked with max lag %d, want the configured 1000", f.maxLag)
			}
		})
	}
}

func TestProbeCommand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = w.Write([]byte(r.URL.Path))
	}))
	defer srv.Close()
	for _, tt := range []struct {
		path string
		ok   bool
	}{{"/healthz", true}, {"/readyz", false}} {
		cmd := probeCommand()
		cmd.SilenceUsage, cmd.SilenceErrors = true, true // as the root command sets them
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetArgs([]string{srv.URL + tt.path})
		err := cmd.Execute()
		if (err == nil) != tt.ok || out.String() != tt.path {
			t.Errorf("probe %s: err %v, out %q; want ok=%v and the body", tt.path, err, out.String(), tt.ok)
		}
	}
}
