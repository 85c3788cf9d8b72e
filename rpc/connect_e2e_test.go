package rpc_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/auth"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
	"github.com/sepp-io/sepp/tlsutil"
)

// connectError is Connect's error JSON.
type connectError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details []struct {
		Type  string `json:"type"`
		Value string `json:"value"`
	} `json:"details"`
}

// detailOf decodes the first detail of type T, from the binary value (what
// a client must use; "debug" is optional).
func detailOf[T proto.Message](t *testing.T, ce connectError, into T) bool {
	t.Helper()
	name := string(into.ProtoReflect().Descriptor().FullName())
	for _, d := range ce.Details {
		if d.Type != name {
			continue
		}
		raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(d.Value, "="))
		if err != nil {
			t.Fatalf("detail %s: value not base64: %v", name, err)
		}
		if err := proto.Unmarshal(raw, into); err != nil {
			t.Fatalf("detail %s: %v", name, err)
		}
		return true
	}
	return false
}

// postJSON is what curl -H 'Content-Type: application/json' -d does: an
// HTTP/1.1 POST of JSON to /<service>/<method>. It returns the status and
// the body; a non-200 body is Connect's error JSON.
func postJSON(t *testing.T, hc *http.Client, base, method, body string, header http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, base+"/"+method, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", method, err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 1 {
		t.Fatalf("POST %s answered over %s, want HTTP/1.1", method, resp.Proto)
	}
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

func mustOK(t *testing.T, code int, body []byte, into any) {
	t.Helper()
	if code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", code, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		t.Fatalf("response %s: %v", body, err)
	}
}

func mustError(t *testing.T, code int, body []byte, wantHTTP int, wantCode string) connectError {
	t.Helper()
	var ce connectError
	if err := json.Unmarshal(body, &ce); err != nil {
		t.Fatalf("HTTP %d, body %s: not Connect error JSON: %v", code, body, err)
	}
	if code != wantHTTP || ce.Code != wantCode {
		t.Fatalf("HTTP %d code %q (%s), want HTTP %d code %q", code, ce.Code, ce.Message, wantHTTP, wantCode)
	}
	return ce
}

// TestConnectJSON_Lifecycle: the API port answers Connect JSON POSTs over
// HTTP/1.1, as curl sends them: enqueue, reserve, ack, and the acked job is
// gone. The protos' JSON mapping holds (int64/uint64 as strings, bytes as
// base64, durations as "1.5s", timestamps RFC 3339).
func TestConnectJSON_Lifecycle(t *testing.T) {
	env := start(t, nil)
	base := "http://" + env.Addr
	hc := &http.Client{}
	defer hc.CloseIdleConnections()

	var enq struct {
		JobID string `json:"jobId"`
	}
	code, body := postJSON(t, hc, base, "sepp.v1.QueueService/Enqueue",
		`{"queue":"emails","jobType":"password_reset","payload":"aGVsbG8=","priority":9,"idempotencyKey":"k-1"}`, nil)
	mustOK(t, code, body, &enq)
	if enq.JobID == "" || enq.JobID == "0" {
		t.Fatalf("enqueue answered %s, want a job id (a uint64, as a JSON string)", body)
	}
	// The same key is a duplicate with the same id, as over gRPC.
	var dup struct {
		JobID     string `json:"jobId"`
		Duplicate bool   `json:"duplicate"`
	}
	code, body = postJSON(t, hc, base, "sepp.v1.QueueService/Enqueue",
		`{"queue":"emails","jobType":"password_reset","idempotencyKey":"k-1"}`, nil)
	mustOK(t, code, body, &dup)
	if !dup.Duplicate || dup.JobID != enq.JobID {
		t.Fatalf("re-enqueue with the same key answered %s, want duplicate of %s", body, enq.JobID)
	}

	var res struct {
		Jobs []struct {
			Ctx struct {
				JobID        string `json:"jobId"`
				LeaseToken   string `json:"leaseToken"`
				LeaseVersion string `json:"leaseVersion"`
			} `json:"ctx"`
			Job struct {
				JobType string `json:"jobType"`
				Payload string `json:"payload"`
			} `json:"job"`
		} `json:"jobs"`
	}
	code, body = postJSON(t, hc, base, "sepp.v1.QueueService/Reserve",
		`{"queue":"emails","workerId":"curl","max":1,"lease":"30s","requestId":"r-1"}`, nil)
	mustOK(t, code, body, &res)
	if len(res.Jobs) != 1 || res.Jobs[0].Ctx.JobID != enq.JobID || res.Jobs[0].Job.Payload != "aGVsbG8=" || res.Jobs[0].Job.JobType != "password_reset" {
		t.Fatalf("reserve answered %s, want job %s with its payload", body, enq.JobID)
	}
	// The reserved job's context goes back verbatim, as JSON.
	var raw struct {
		Jobs []struct {
			Ctx json.RawMessage `json:"ctx"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	code, body = postJSON(t, hc, base, "sepp.v1.QueueService/Ack", `{"ctx":`+string(raw.Jobs[0].Ctx)+`}`, nil)
	var ack map[string]any
	mustOK(t, code, body, &ack)

	// Acked: a second ack of the same lease is refused, and the job is gone.
	code, body = postJSON(t, hc, base, "sepp.v1.QueueService/Ack", `{"ctx":`+string(raw.Jobs[0].Ctx)+`}`, nil)
	if code == http.StatusOK {
		t.Fatalf("a second ack of the same lease answered 200: %s", body)
	}
	code, body = postJSON(t, hc, base, "sepp.v1.AdminService/GetJob", `{"jobId":"`+enq.JobID+`"}`, nil)
	mustError(t, code, body, http.StatusNotFound, "not_found")
}

// TestConnectJSON_ErrorDetails: Connect's error JSON carries the same
// details as gRPC's status: FieldViolation naming the field and the limit,
// ScheduledTooFar with the horizon, BadRequest.
func TestConnectJSON_ErrorDetails(t *testing.T) {
	env := start(t, nil)
	base := "http://" + env.Addr
	hc := &http.Client{}
	defer hc.CloseIdleConnections()

	code, body := postJSON(t, hc, base, "sepp.v1.QueueService/Enqueue", `{"queue":"q","jobType":"t","priority":99}`, nil)
	ce := mustError(t, code, body, http.StatusBadRequest, "invalid_argument")
	var fv seppv1.FieldViolation
	if !detailOf(t, ce, &fv) || fv.GetField() != "priority" || !strings.Contains(fv.GetDescription(), "0..9") {
		t.Fatalf("error %s: want a FieldViolation naming priority and its range, got %v", body, &fv)
	}
	var br errdetails.BadRequest
	if !detailOf(t, ce, &br) || len(br.GetFieldViolations()) == 0 || br.GetFieldViolations()[0].GetField() != "priority" {
		t.Fatalf("error %s: want a BadRequest naming priority", body)
	}

	far := env.Clock.Now().Add(10 * 365 * 24 * time.Hour).UTC().Format(time.RFC3339)
	code, body = postJSON(t, hc, base, "sepp.v1.QueueService/Enqueue", `{"queue":"q","jobType":"t","scheduledAt":"`+far+`"}`, nil)
	ce = mustError(t, code, body, http.StatusBadRequest, "invalid_argument")
	var stf seppv1.ScheduledTooFar
	if !detailOf(t, ce, &stf) || stf.GetHorizonMs() <= 0 || stf.GetQueue() != "q" || !stf.GetLatestAllowed().IsValid() {
		t.Fatalf("error %s: want ScheduledTooFar with the horizon and the latest time allowed, got %v", body, &stf)
	}

	// Malformed JSON is refused before any handler, naming the problem.
	code, body = postJSON(t, hc, base, "sepp.v1.QueueService/Enqueue", `{"queue":`, nil)
	mustError(t, code, body, http.StatusBadRequest, "invalid_argument")
	// An unknown method is a 404 as Connect says, not a hang.
	code, body = postJSON(t, hc, base, "sepp.v1.QueueService/Nope", `{}`, nil)
	if code != http.StatusNotFound {
		t.Fatalf("unknown method answered HTTP %d %s, want 404", code, body)
	}
}

// TestConnectJSON_UnknownFieldsRefused: a JSON field the request message
// does not have is refused with InvalidArgument naming it, as curl would
// send it, and nothing is enqueued; the proto and JSON names of a field are
// both accepted.
func TestConnectJSON_UnknownFieldsRefused(t *testing.T) {
	env := start(t, nil)
	base := "http://" + env.Addr
	hc := &http.Client{}
	defer hc.CloseIdleConnections()

	for _, tc := range []struct {
		name, body, wantField string
	}{
		{"misspelt priority", `{"queue":"q","job_type":"t","prio":1}`, `"prio"`},
		{"nested unknown", `{"queue":"q","jobType":"t","unique":{"key":"k","nope":true}}`, `"nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := postJSON(t, hc, base, "sepp.v1.QueueService/Enqueue", tc.body, nil)
			ce := mustError(t, code, body, http.StatusBadRequest, "invalid_argument")
			if !strings.Contains(ce.Message, tc.wantField) || !strings.Contains(ce.Message, "unknown field") {
				t.Fatalf("message %q does not name the unknown field %s", ce.Message, tc.wantField)
			}
		})
	}
	code, body := postJSON(t, hc, base, "sepp.v1.QueueService/Reserve", `{"queue":"q","max":10}`, nil)
	var res struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	mustOK(t, code, body, &res)
	if len(res.Jobs) != 0 {
		t.Fatalf("a refused request enqueued %d jobs: %s", len(res.Jobs), body)
	}

	// Both spellings of a known field still work.
	code, body = postJSON(t, hc, base, "sepp.v1.QueueService/Enqueue", `{"queue":"q","job_type":"t","priority":7}`, nil)
	mustOK(t, code, body, &struct{}{})
	code, body = postJSON(t, hc, base, "sepp.v1.QueueService/Reserve", `{"queue":"q","max":1}`, nil)
	var got struct {
		Jobs []struct {
			Job struct {
				Priority int `json:"priority"`
			} `json:"job"`
		} `json:"jobs"`
	}
	mustOK(t, code, body, &got)
	if len(got.Jobs) != 1 || got.Jobs[0].Job.Priority != 7 {
		t.Fatalf("reserve %s: want the one job at priority 7", body)
	}
}

// TestConnect_BinaryAndGRPCWeb: Connect's binary protobuf and gRPC-Web reach
// the same services.
func TestConnect_BinaryAndGRPCWeb(t *testing.T) {
	env := start(t, nil)
	base := "http://" + env.Addr
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	msg, err := proto.Marshal(&seppv1.EnqueueRequest{Queue: "bin", JobType: "t"})
	if err != nil {
		t.Fatal(err)
	}

	resp, err := hc.Post(base+"/sepp.v1.QueueService/Enqueue", "application/proto", bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var er seppv1.EnqueueResponse
	if resp.StatusCode != http.StatusOK || proto.Unmarshal(out, &er) != nil || er.GetJobId() == 0 {
		t.Fatalf("Connect binary enqueue: HTTP %d %q", resp.StatusCode, out)
	}

	// gRPC-Web: a length-prefixed message in, a message and a trailers
	// frame out.
	frame := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:5], uint32(len(msg)))
	copy(frame[5:], msg)
	req, _ := http.NewRequest(http.MethodPost, base+"/sepp.v1.QueueService/Enqueue", bytes.NewReader(frame))
	req.Header.Set("Content-Type", "application/grpc-web+proto")
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(out) < 5 || out[0] != 0 {
		t.Fatalf("gRPC-Web enqueue: HTTP %d %q", resp.StatusCode, out)
	}
	n := binary.BigEndian.Uint32(out[1:5])
	var ew seppv1.EnqueueResponse
	if err := proto.Unmarshal(out[5:5+n], &ew); err != nil || ew.GetJobId() != er.GetJobId()+1 {
		t.Fatalf("gRPC-Web enqueue answered job %d (%v), want %d", ew.GetJobId(), err, er.GetJobId()+1)
	}
	if trailers := strings.ToLower(string(out[5+n:])); !strings.Contains(trailers, "grpc-status: 0") {
		t.Fatalf("gRPC-Web trailers %q, want grpc-status: 0", trailers)
	}
}

// TestConnect_AuthRefused: the auth interceptor runs for Connect calls as
// for gRPC: no token is unauthenticated (401), a token without the role is
// permission_denied (403), the right one passes.
func TestConnect_AuthRefused(t *testing.T) {
	const producer, viewer = "sepp_test_producer_token_0123456789", "sepp_test_viewer_token_0123456789abc"
	var tokens []auth.Token
	for _, tk := range []struct {
		name, secret string
		role         auth.Role
	}{{"p", producer, auth.RoleProducer}, {"v", viewer, auth.RoleViewer}} {
		h, err := auth.HashToken(tk.secret)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := auth.ParseHash(h)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, auth.Token{Name: tk.name, SHA256: sum, Roles: []auth.Role{tk.role}})
	}
	a, err := auth.New(tokens, auth.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	env := rpctest.Start(t, nil, rpc.Options{UnaryInterceptors: []grpc.UnaryServerInterceptor{a.UnaryInterceptor()}})
	base := "http://" + env.Addr
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	const enq = `{"queue":"q","jobType":"t"}`
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

	code, body := postJSON(t, hc, base, "sepp.v1.QueueService/Enqueue", enq, nil)
	mustError(t, code, body, http.StatusUnauthorized, "unauthenticated")
	code, body = postJSON(t, hc, base, "sepp.v1.QueueService/Enqueue", enq, bearer(viewer))
	mustError(t, code, body, http.StatusForbidden, "permission_denied")
	var ok struct {
		JobID string `json:"jobId"`
	}
	code, body = postJSON(t, hc, base, "sepp.v1.QueueService/Enqueue", enq, bearer(producer))
	mustOK(t, code, body, &ok)
	if ok.JobID == "" {
		t.Fatalf("enqueue with the producer token: %s", body)
	}
}

// TestConnect_FollowerAnswers: a follower serves a Connect call by
// forwarding it to the leader, as for gRPC; without a forwarder it answers
// unavailable with a NotLeader detail naming the leader's address.
func TestConnect_FollowerAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	const n = 3
	nodes, lis, addrs := listenedCluster(t, n)
	leader := nodes.WaitLeader()
	forwarding, redirecting := (leader+1)%n, (leader+2)%n
	for i := range lis {
		opts := rpc.Options{MaxReserveWait: 200 * time.Millisecond}
		if i != redirecting {
			fwd := rpc.NewForwarder(fmt.Sprintf("n%d", i), grpc.WithTransportCredentials(insecure.NewCredentials()))
			t.Cleanup(func() { _ = fwd.Close() })
			opts.Forwarder = fwd
		}
		srv, err := rpc.NewAPIServer(rpc.NewGRPCServer(nodes.Node(i), opts), rpc.APIOptions{})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = srv.Serve(lis[i]) }()
		t.Cleanup(srv.Stop)
	}
	hc := &http.Client{}
	defer hc.CloseIdleConnections()

	var jobID string
	clustertest.WaitFor(t, 10*time.Second, "a Connect enqueue through the follower", func() bool {
		// Node's fetch sends Connection: keep-alive; HTTP/1.1's
		// connection headers must not reach the leader's HTTP/2.
		code, body := postJSON(t, hc, "http://"+addrs[forwarding], "sepp.v1.QueueService/Enqueue", `{"queue":"fq","jobType":"t"}`,
			http.Header{"Connection": {"keep-alive"}, "Keep-Alive": {"timeout=5"}, "Authorization": {"Bearer caller-token"}})
		if code == http.StatusServiceUnavailable {
			return false // the follower does not know the leader's address yet
		}
		var r struct {
			JobID string `json:"jobId"`
		}
		mustOK(t, code, body, &r)
		jobID = r.JobID
		return true
	})
	var got struct {
		Job struct {
			ID    string `json:"id"`
			Queue string `json:"queue"`
		} `json:"job"`
	}
	code, body := postJSON(t, hc, "http://"+addrs[leader], "sepp.v1.AdminService/GetJob", `{"jobId":"`+jobID+`"}`, nil)
	mustOK(t, code, body, &got)
	if got.Job.Queue != "fq" {
		t.Fatalf("the leader does not have the job the follower forwarded: %s", body)
	}

	clustertest.WaitFor(t, 10*time.Second, "a NotLeader naming the leader", func() bool {
		code, body := postJSON(t, hc, "http://"+addrs[redirecting], "sepp.v1.QueueService/Enqueue", `{"queue":"fq","jobType":"t"}`, nil)
		ce := mustError(t, code, body, http.StatusServiceUnavailable, "unavailable")
		var nl seppv1.NotLeader
		if !detailOf(t, ce, &nl) {
			t.Fatalf("follower's refusal %s has no NotLeader detail", body)
		}
		return nl.GetLeaderGrpcAddr() == addrs[leader]
	})
}

// TestAPIServer_TLS: over TLS, a gRPC client (ALPN h2 only) gets the native
// transport and a client offering http/1.1 (curl, fetch, browsers) gets
// Connect, both on the one port; a plaintext client gets nothing.
func TestAPIServer_TLS(t *testing.T) {
	dir := t.TempDir()
	pki, err := tlsutil.WriteDevPKI(dir, nil, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tlsutil.NewReloadable(tlsutil.Files{CertFile: pki.NodeCertFile, KeyFile: pki.NodeKeyFile})
	if err != nil {
		t.Fatal(err)
	}
	scfg, err := tlsutil.ServerConfig(r, false)
	if err != nil {
		t.Fatal(err)
	}
	env := rpctest.Start(t, nil, rpc.Options{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := rpc.NewAPIServer(rpc.NewGRPCServer(env.Backend, rpc.Options{NowFunc: env.Clock.Now, ServerOptions: []grpc.ServerOption{grpc.Creds(rpc.HandshakenTLS())}}),
		rpc.APIOptions{TLS: scfg})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	addr := lis.Addr().String()
	caPEM, err := os.ReadFile(pki.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)

	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots})))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	er, err := seppv1.NewQueueServiceClient(cc).Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "tls", JobType: "t"})
	if err != nil {
		t.Fatalf("gRPC over TLS: %v", err)
	}

	// Offering h2 and http/1.1, as curl and browsers do: HTTP/1.1 is chosen.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	defer hc.CloseIdleConnections()
	var r2 struct {
		JobID string `json:"jobId"`
	}
	code, body := postJSON(t, hc, "https://"+addr, "sepp.v1.QueueService/Enqueue", `{"queue":"tls","jobType":"t"}`, nil)
	mustOK(t, code, body, &r2)
	if r2.JobID != fmt.Sprint(er.GetJobId()+1) {
		t.Fatalf("Connect over TLS answered %s, want job %d", body, er.GetJobId()+1)
	}

	// Plaintext on the TLS port: the handshake fails and nothing is served.
	plain := &http.Client{}
	defer plain.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, "http://"+addr+"/sepp.v1.QueueService/Enqueue", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := plain.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("a plaintext request on the TLS port was served")
		}
	}
}

// gate holds every call in its interceptor until released.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func (g *gate) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	g.entered <- struct{}{}
	<-g.release
	return handler(ctx, req)
}

// TestAPIServer_GracefulStopFinishesConnectCalls: a Connect call in flight
// when GracefulStop begins is answered, not cut (grpc-go's GracefulStop
// would close a ServeHTTP stream), and no new connection is taken.
func TestAPIServer_GracefulStopFinishesConnectCalls(t *testing.T) {
	b, err := rpctest.NewLocalBackend(engine.Config{Limits: engine.DefaultLimits()}, cluster.NodeInfo{ID: "node-1"}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	srv, err := rpc.NewAPIServer(rpc.NewGRPCServer(b, rpc.Options{UnaryInterceptors: []grpc.UnaryServerInterceptor{g.intercept}}), rpc.APIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	addr := lis.Addr().String()
	hc := &http.Client{}
	defer hc.CloseIdleConnections()

	type answer struct {
		code int
		body []byte
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := hc.Post("http://"+addr+"/sepp.v1.QueueService/Enqueue", "application/json", strings.NewReader(`{"queue":"q","jobType":"t"}`))
		if err != nil {
			answered <- answer{code: -1, body: []byte(err.Error())}
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- answer{resp.StatusCode, body}
	}()
	<-g.entered
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	clustertest.WaitFor(t, 10*time.Second, "the listener to close", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	close(g.release)
	a := <-answered
	if a.code != http.StatusOK || !strings.Contains(string(a.body), "jobId") {
		t.Fatalf("the call in flight at GracefulStop answered %d %s, want 200 with the job", a.code, a.body)
	}
	<-stopped
	if err := <-served; err != nil {
		t.Fatalf("Serve after GracefulStop: %v", err)
	}
}
