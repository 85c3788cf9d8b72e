package auth

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// allMethods lists every method of the three sepp services from their
// generated descriptors, so a method added to the API shows up here.
func allMethods() []string {
	var out []string
	for _, sd := range []grpc.ServiceDesc{seppv1.QueueService_ServiceDesc, seppv1.AdminService_ServiceDesc, seppv1.ClusterService_ServiceDesc} {
		for _, m := range sd.Methods {
			out = append(out, "/"+sd.ServiceName+"/"+m.MethodName)
		}
		for _, s := range sd.Streams {
			out = append(out, "/"+sd.ServiceName+"/"+s.StreamName)
		}
	}
	return out
}

func TestMethodRoles_CoverEveryMethodExactly(t *testing.T) {
	t.Parallel()
	methods := allMethods()
	seen := map[string]bool{}
	for _, m := range methods {
		seen[m] = true
		if isOpen(m) {
			if _, ok := MethodRoles[m]; ok {
				t.Errorf("%s is open and has a rule in MethodRoles", m)
			}
			continue
		}
		if _, ok := MethodRoles[m]; !ok {
			t.Errorf("%s has no rule in MethodRoles: every new RPC needs a role", m)
		}
	}
	for m := range MethodRoles {
		if !seen[m] {
			t.Errorf("MethodRoles names %s, which no service has", m)
		}
	}
}

// wantRole is the brief's table, written out independently of MethodRoles.
var wantRole = map[string]Role{
	"Enqueue": RoleProducer, "EnqueueBatch": RoleProducer, "WaitJob": RoleProducer,
	"Reserve": RoleWorker, "Ack": RoleWorker, "AckBatch": RoleWorker, "Nack": RoleWorker, "Release": RoleWorker, "ExtendLease": RoleWorker,
	"GetServerInfo": RoleViewer, "ListQueues": RoleViewer, "ListJobs": RoleViewer, "GetJob": RoleViewer,
	"ListDeadLetters": RoleViewer, "GetDeadLetter": RoleViewer, "Status": RoleViewer, "GetQueue": RoleViewer,
	"DrainDeadLetters": RoleOperator, "RequeueDeadLetters": RoleOperator, "DeleteDeadLetters": RoleOperator,
	"DeadLetterJobs": RoleOperator, "PauseQueue": RoleOperator, "ResumeQueue": RoleOperator,
	"CreateQueue": RoleOperator, "UpdateQueue": RoleOperator, "DeleteQueue": RoleOperator, "PurgeQueue": RoleOperator,
	"DeleteJobs": RoleOperator, "RunJobsNow": RoleOperator, "RescheduleJobs": RoleOperator, "SetJobsPriority": RoleOperator, "CancelJobs": RoleOperator,
	"ListRedrives": RoleViewer, "GetRedrive": RoleViewer, "PreviewRedrive": RoleViewer,
	"StartRedrive": RoleOperator, "PauseRedrive": RoleOperator, "ResumeRedrive": RoleOperator, "CancelRedrive": RoleOperator,
	"GetSchedule": RoleViewer, "ListSchedules": RoleViewer,
	"CreateSchedule": RoleOperator, "UpdateSchedule": RoleOperator, "DeleteSchedule": RoleOperator, "PauseSchedule": RoleOperator, "ResumeSchedule": RoleOperator,
	"Join": RoleAdmin, "Remove": RoleAdmin, "TransferLeadership": RoleAdmin,
}

type testServer struct {
	conn *grpc.ClientConn
	logs *syncBuffer
	reg  *prometheus.Registry
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServer serves the three services (unimplemented: a call that passes
// authorization answers Unimplemented) and health behind an Authorizer.
func startServer(t *testing.T, tokens []Token) *testServer {
	t.Helper()
	ts := &testServer{logs: &syncBuffer{}, reg: prometheus.NewRegistry()}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: ts.logs})
	a, err := New(tokens, Options{Logger: log, Registerer: ts.reg})
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(a.UnaryInterceptor()), grpc.ChainStreamInterceptor(a.StreamInterceptor()))
	seppv1.RegisterQueueServiceServer(gs, seppv1.UnimplementedQueueServiceServer{})
	seppv1.RegisterAdminServiceServer(gs, seppv1.UnimplementedAdminServiceServer{})
	seppv1.RegisterClusterServiceServer(gs, seppv1.UnimplementedClusterServiceServer{})
	healthpb.RegisterHealthServer(gs, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ts.conn = conn
	return ts
}

// call invokes method with an empty message; every sepp request decodes
// from zero bytes, and the interceptor runs before the handler.
func (ts *testServer) call(t *testing.T, method, token string) codes.Code {
	t.Helper()
	ctx := context.Background()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	err := ts.conn.Invoke(ctx, method, &emptypb.Empty{}, &emptypb.Empty{})
	return status.Code(err)
}

func mustToken(t *testing.T, name string, roles ...Role) (string, Token) {
	t.Helper()
	tok, err := GenerateToken()
	if err != nil {
		t.Fatal(err)
	}
	h, err := HashToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := ParseHash(h)
	if err != nil {
		t.Fatal(err)
	}
	return tok, Token{Name: name, SHA256: sum, Roles: roles}
}

func TestAuthorizer_EveryRoleAllowedExactlyItsCalls(t *testing.T) {
	t.Parallel()
	secrets := map[Role]string{}
	var tokens []Token
	for _, r := range Roles() {
		tok, cfg := mustToken(t, "tok-"+string(r), r)
		secrets[r] = tok
		tokens = append(tokens, cfg)
	}
	ts := startServer(t, tokens)
	for _, m := range allMethods() {
		name := m[strings.LastIndex(m, "/")+1:]
		if name == "GetMemberFacts" {
			// Open: the leader asks every member and holds no token.
			for _, tok := range []string{"", secrets[RoleProducer], "sepp_not-a-configured-token-at-all"} {
				if got := ts.call(t, m, tok); got != codes.Unimplemented {
					t.Errorf("%s with token %q: %v, want it let through (open)", m, tok, got)
				}
			}
			continue
		}
		want, ok := wantRole[name]
		if !ok {
			t.Errorf("%s is missing from this test's table", m)
			continue
		}
		for _, r := range Roles() {
			got := ts.call(t, m, secrets[r])
			switch {
			case r == want && got != codes.Unimplemented:
				t.Errorf("%s with role %s: %v, want it let through (Unimplemented from the stub)", m, r, got)
			case r != want && got != codes.PermissionDenied:
				t.Errorf("%s with role %s: %v, want PermissionDenied", m, r, got)
			}
		}
		if got := ts.call(t, m, ""); got != codes.Unauthenticated {
			t.Errorf("%s without a token: %v, want Unauthenticated", m, got)
		}
		if got := ts.call(t, m, "sepp_not-a-configured-token-at-all"); got != codes.Unauthenticated {
			t.Errorf("%s with an unknown token: %v, want Unauthenticated", m, got)
		}
	}
}

func TestAuthorizer_MultipleRolesAndMalformedHeaders(t *testing.T) {
	t.Parallel()
	tok, cfg := mustToken(t, "both", RoleProducer, RoleWorker)
	ts := startServer(t, []Token{cfg})
	if got := ts.call(t, seppv1.QueueService_Enqueue_FullMethodName, tok); got != codes.Unimplemented {
		t.Errorf("producer call: %v", got)
	}
	if got := ts.call(t, seppv1.QueueService_Ack_FullMethodName, tok); got != codes.Unimplemented {
		t.Errorf("worker call: %v", got)
	}
	if got := ts.call(t, seppv1.AdminService_PauseQueue_FullMethodName, tok); got != codes.PermissionDenied {
		t.Errorf("operator call: %v", got)
	}
	for _, hdr := range []string{tok, "Basic " + tok, "Bearer", "Bearer  "} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", hdr)
		err := ts.conn.Invoke(ctx, seppv1.QueueService_Enqueue_FullMethodName, &emptypb.Empty{}, &emptypb.Empty{})
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("header %q: %v, want Unauthenticated", hdr, err)
		}
	}
}

func TestAuthorizer_HealthStaysOpen(t *testing.T) {
	t.Parallel()
	_, cfg := mustToken(t, "x", RoleAdmin)
	ts := startServer(t, []Token{cfg})
	resp, err := healthpb.NewHealthClient(ts.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health without a token: %v %v", resp, err)
	}
	// The stream interceptor lets the health Watch stream through too.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := healthpb.NewHealthClient(ts.conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil {
		t.Fatalf("health watch without a token: %v", err)
	}
}

func TestAuthorizer_TokenNeverLoggedAndDecisionsCounted(t *testing.T) {
	t.Parallel()
	tok, cfg := mustToken(t, "ci-producer", RoleProducer)
	ts := startServer(t, []Token{cfg})
	ts.call(t, seppv1.QueueService_Enqueue_FullMethodName, tok)     // allowed
	ts.call(t, seppv1.AdminService_PauseQueue_FullMethodName, tok)  // denied
	ts.call(t, seppv1.QueueService_Enqueue_FullMethodName, tok+"x") // unknown
	ts.call(t, seppv1.QueueService_Enqueue_FullMethodName, "")      // missing
	logs := ts.logs.String()
	if !strings.Contains(logs, "call refused") {
		t.Fatalf("refusals were not logged at all (the test would prove nothing): %q", logs)
	}
	if strings.Contains(logs, tok) || strings.Contains(logs, tok[len(TokenPrefix):len(TokenPrefix)+12]) {
		t.Fatalf("the token reached the log: %s", logs)
	}
	mf, err := ts.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range mf {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), tok) {
					t.Fatalf("the token reached a metric label: %v", l)
				}
			}
		}
	}
	n := 0
	for _, f := range mf {
		if f.GetName() == "sepp_auth_decisions_total" {
			n = len(f.GetMetric())
		}
	}
	if n < 3 {
		t.Fatalf("sepp_auth_decisions_total has %d series, want allowed, denied and unauthenticated", n)
	}
}

func TestNew_RejectsBadTokens(t *testing.T) {
	t.Parallel()
	_, a := mustToken(t, "a", RoleAdmin)
	b := a
	b.Name = "b"
	cases := map[string][]Token{
		"no name":       {{SHA256: a.SHA256, Roles: []Role{RoleAdmin}}},
		"same name":     {a, {Name: "a", Roles: []Role{RoleAdmin}}},
		"same hash":     {a, b},
		"without roles": {{Name: "c"}},
	}
	for name, toks := range cases {
		if _, err := New(toks, Options{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestHashToken(t *testing.T) {
	t.Parallel()
	h, err := HashToken("0123456789abcdef")
	if err != nil || h != "9f9f5111f7b27a781f1f1ddde5ebc2dd2b796bfc7365c9c28b548e564176929f" {
		t.Fatalf("hash %s, %v", h, err)
	}
	for _, bad := range []string{"short", "has a space in it ok"} {
		if _, err := HashToken(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseHash("zz"); err == nil {
		t.Error("bad hash parsed")
	}
	if _, err := ParseRole("root"); err == nil {
		t.Error("unknown role parsed")
	}
}
