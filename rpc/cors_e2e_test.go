package rpc_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// serveAPIWith serves a one-node backend on 127.0.0.1:0 with apiOpts and
// returns its base URL; it stops at cleanup.
func serveAPIWith(t *testing.T, apiOpts rpc.APIOptions) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The node names its own address as the leader's, as a served node does.
	b, err := rpctest.NewLocalBackend(engine.Config{Limits: engine.DefaultLimits()}, cluster.NodeInfo{ID: "node-1", GRPCAddr: lis.Addr().String()}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	apiOpts.Logger = rpctest.TestLogger(t)
	srv, err := rpc.NewAPIServer(rpc.NewGRPCServer(b, rpc.Options{Logger: apiOpts.Logger}), apiOpts)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return "http://" + lis.Addr().String()
}

// TestAPIServer_CORS: with api.cors_allowed_origins set, the API port
// answers the preflights of those origins, and only of those, with the
// methods and headers Connect and gRPC-Web need, and marks their answers
// readable; with none set it answers no preflight at all.
func TestAPIServer_CORS(t *testing.T) {
	const app, evil = "http://app.example:8081", "http://evil.example"
	servers := map[string]string{
		"allow":       serveAPIWith(t, rpc.APIOptions{CORSAllowedOrigins: []string{app, "https://other.example"}}),
		"credentials": serveAPIWith(t, rpc.APIOptions{CORSAllowedOrigins: []string{app}, CORSAllowCredentials: true}),
		"off":         serveAPIWith(t, rpc.APIOptions{}),
	}
	const path = "/sepp.v1.QueueService/GetServerInfo"
	// As browsers send them: lower case, sorted, no spaces.
	connectHeaders := "authorization,connect-protocol-version,connect-timeout-ms,content-type"
	type want struct {
		status      int
		allowOrigin string // "" means absent
		credentials bool
		preflight   bool // Allow-Methods, Allow-Headers and Max-Age present
		exposed     bool // Expose-Headers names the gRPC-Web trailers and the leader header
	}
	for _, tc := range []struct {
		name, server, method, origin, reqHeaders string
		want                                     want
	}{
		{"PreflightAllowedOrigin", "allow", http.MethodOptions, app, connectHeaders,
			want{status: http.StatusNoContent, allowOrigin: app, preflight: true}},
		{"PreflightSecondAllowedOrigin", "allow", http.MethodOptions, "https://other.example", "content-type,grpc-timeout,x-grpc-web,x-user-agent",
			want{status: http.StatusNoContent, allowOrigin: "https://other.example", preflight: true}},
		{"PreflightOtherOriginGetsNoCORSHeaders", "allow", http.MethodOptions, evil, connectHeaders,
			want{status: http.StatusNoContent}},
		{"PreflightOriginMatchesExactlyNotByPrefix", "allow", http.MethodOptions, "http://app.example:80812", connectHeaders,
			want{status: http.StatusNoContent}},
		{"PreflightSchemeMatters", "allow", http.MethodOptions, "https://app.example:8081", connectHeaders,
			want{status: http.StatusNoContent}},
		{"PreflightUnlistedHeaderRefused", "allow", http.MethodOptions, app, "content-type,x-custom",
			want{status: http.StatusNoContent}},
		{"PreflightWithCredentials", "credentials", http.MethodOptions, app, connectHeaders,
			want{status: http.StatusNoContent, allowOrigin: app, credentials: true, preflight: true}},
		{"CallAllowedOriginReadable", "allow", http.MethodPost, app, "",
			want{status: http.StatusOK, allowOrigin: app, exposed: true}},
		{"CallWithCredentials", "credentials", http.MethodPost, app, "",
			want{status: http.StatusOK, allowOrigin: app, credentials: true, exposed: true}},
		{"CallOtherOriginNotReadable", "allow", http.MethodPost, evil, "",
			want{status: http.StatusOK}},
		{"CallWithoutOriginUnchanged", "allow", http.MethodPost, "", "",
			want{status: http.StatusOK}},
		{"OffPreflightNotAnswered", "off", http.MethodOptions, app, connectHeaders,
			want{status: http.StatusNotFound}},
		{"OffCallNotReadable", "off", http.MethodPost, app, "",
			want{status: http.StatusOK}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader
			if tc.method == http.MethodPost {
				body = strings.NewReader("{}")
			}
			req, err := http.NewRequest(tc.method, servers[tc.server]+path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.method == http.MethodOptions {
				req.Header.Set("Access-Control-Request-Method", "POST")
				req.Header.Set("Access-Control-Request-Headers", tc.reqHeaders)
			} else {
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Connect-Protocol-Version", "1")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			h := resp.Header
			if resp.StatusCode != tc.want.status {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, tc.want.status, got)
			}
			if tc.want.status == http.StatusOK && !strings.Contains(string(got), `"nodeId":"node-1"`) {
				t.Errorf("body %s: not GetServerInfo's answer", got)
			}
			if v := h.Get("Access-Control-Allow-Origin"); v != tc.want.allowOrigin {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", v, tc.want.allowOrigin)
			}
			if v := h.Get("Access-Control-Allow-Credentials"); (v == "true") != tc.want.credentials {
				t.Errorf("Access-Control-Allow-Credentials %q, want it %v", v, tc.want.credentials)
			}
			methods, headers, maxAge := h.Get("Access-Control-Allow-Methods"), strings.ToLower(h.Get("Access-Control-Allow-Headers")), h.Get("Access-Control-Max-Age")
			if tc.want.preflight {
				if methods != "POST" || maxAge != "7200" {
					t.Errorf("Allow-Methods %q (want the requested POST), Max-Age %q (want 7200)", methods, maxAge)
				}
				for _, hd := range strings.Split(tc.reqHeaders, ",") {
					if !strings.Contains(headers, hd) {
						t.Errorf("Allow-Headers %q lacks %s", headers, hd)
					}
				}
			} else if methods != "" || headers != "" || maxAge != "" {
				t.Errorf("preflight headers on a refused or plain request: methods %q headers %q max-age %q", methods, headers, maxAge)
			}
			exposed := strings.ToLower(h.Get("Access-Control-Expose-Headers"))
			if tc.want.exposed {
				for _, hd := range []string{"grpc-status", "grpc-message", "grpc-status-details-bin", rpc.LeaderAddrHeader} {
					if !strings.Contains(exposed, hd) {
						t.Errorf("Expose-Headers %q lacks %s", exposed, hd)
					}
				}
			} else if exposed != "" {
				t.Errorf("Expose-Headers %q on a request that must not be readable", exposed)
			}
			if tc.server != "off" && tc.origin != "" && !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
				t.Errorf("Vary %q: caches must key on Origin", h.Values("Vary"))
			}
		})
	}
}
