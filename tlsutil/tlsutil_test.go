package tlsutil

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

var now = time.Now()

func write(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type pair struct{ cert, key string }

func issue(t *testing.T, ca *CA, dir, name string, spec CertSpec) pair {
	t.Helper()
	if spec.NotBefore.IsZero() {
		spec.NotBefore, spec.NotAfter = now.Add(-time.Hour), now.Add(time.Hour)
	}
	spec.CommonName = name
	is, err := ca.Issue(spec)
	if err != nil {
		t.Fatal(err)
	}
	return pair{write(t, dir, name+".pem", is.CertPEM), write(t, dir, name+"-key.pem", is.KeyPEM)}
}

func newCA(t *testing.T, dir, name string) (*CA, string) {
	t.Helper()
	ca, err := NewCA(name, now.Add(-time.Hour), now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return ca, write(t, dir, name+".pem", ca.CertPEM)
}

// startMTLS serves gRPC health over TLS requiring client certificates.
func startMTLS(t *testing.T, r *Reloadable) string {
	t.Helper()
	cfg, err := ServerConfig(r, true)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String()
}

func check(t *testing.T, addr string, cfg *tls.Config) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

func TestGRPC_MutualTLSRefusesBadClients(t *testing.T) {
	dir := t.TempDir()
	ca, caFile := newCA(t, dir, "ca")
	other, otherFile := newCA(t, dir, "other")
	srv := issue(t, ca, dir, "server", CertSpec{Hosts: []string{"127.0.0.1"}, Server: true})
	good := issue(t, ca, dir, "client", CertSpec{Client: true})
	wrongCA := issue(t, other, dir, "stranger", CertSpec{Client: true})
	expired := issue(t, ca, dir, "expired", CertSpec{Client: true, NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(-24 * time.Hour)})

	r, err := NewReloadable(Files{CertFile: srv.cert, KeyFile: srv.key, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	addr := startMTLS(t, r)

	cases := []struct {
		name       string
		ca, c, k   string
		wantRefuse bool
	}{
		{"valid client certificate", caFile, good.cert, good.key, false},
		{"no client certificate", caFile, "", "", true},
		{"client certificate from another CA", caFile, wrongCA.cert, wrongCA.key, true},
		{"expired client certificate", caFile, expired.cert, expired.key, true},
		{"client trusting another CA", otherFile, good.cert, good.key, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ClientConfig(c.ca, c.c, c.k, "")
			if err != nil {
				t.Fatal(err)
			}
			err = check(t, addr, cfg)
			if c.wantRefuse && err == nil {
				t.Fatal("accepted")
			}
			if !c.wantRefuse && err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

func TestReloadable_ReloadSwapsCertificateAndKeepsOldOnError(t *testing.T) {
	dir := t.TempDir()
	ca, caFile := newCA(t, dir, "ca")
	srv := issue(t, ca, dir, "server", CertSpec{Hosts: []string{"127.0.0.1"}, Server: true})
	cli := issue(t, ca, dir, "client", CertSpec{Client: true})
	r, err := NewReloadable(Files{CertFile: srv.cert, KeyFile: srv.key, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	addr := startMTLS(t, r)
	first := r.Certificate().Leaf.SerialNumber

	// A half-written file fails the reload and keeps serving the old pair.
	if err := os.WriteFile(srv.cert, []byte("-----BEGIN CERT"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(); err == nil {
		t.Fatal("reload of a broken file succeeded")
	}
	if r.Certificate().Leaf.SerialNumber.Cmp(first) != 0 {
		t.Fatal("a failed reload changed the certificate")
	}
	// A new pair is served to new connections without a restart.
	issue(t, ca, dir, "server", CertSpec{Hosts: []string{"127.0.0.1"}, Server: true})
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	second := r.Certificate().Leaf.SerialNumber
	if second.Cmp(first) == 0 {
		t.Fatal("reload kept the old certificate")
	}
	cfg, _ := ClientConfig(caFile, cli.cert, cli.key, "")
	var served []byte
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		served = cs.PeerCertificates[0].SerialNumber.Bytes()
		return nil
	}
	if err := check(t, addr, cfg); err != nil {
		t.Fatal(err)
	}
	if string(served) != string(second.Bytes()) {
		t.Fatal("new connections were not served the reloaded certificate")
	}
}

// raftPair starts a NetworkTransport over a StreamLayer for each identity.
func raftTransport(t *testing.T, r *Reloadable) *raft.NetworkTransport {
	t.Helper()
	sl, err := NewStreamLayer("127.0.0.1:0", nil, r)
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransportWithLogger(sl, 2, 2*time.Second, hclog.NewNullLogger())
	t.Cleanup(func() { tr.Close() })
	return tr
}

func TestStreamLayer_OnlyClusterCertificatesReplicate(t *testing.T) {
	dir := t.TempDir()
	ca, caFile := newCA(t, dir, "cluster-ca")
	other, otherFile := newCA(t, dir, "other-ca")
	nodeA := issue(t, ca, dir, "a", CertSpec{Server: true, Client: true})
	nodeB := issue(t, ca, dir, "b", CertSpec{Server: true, Client: true})
	intruder := issue(t, other, dir, "intruder", CertSpec{Server: true, Client: true})

	load := func(p pair, caf string) *Reloadable {
		r, err := NewReloadable(Files{CertFile: p.cert, KeyFile: p.key, CAFile: caf})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := raftTransport(t, load(nodeA, caFile))
	b := raftTransport(t, load(nodeB, caFile))
	bad := raftTransport(t, load(intruder, otherFile))
	// The intruder trusting the cluster CA does not help it: its own
	// certificate is still not signed by it.
	bad2 := raftTransport(t, load(intruder, caFile))

	// answer makes tr answer every AppendEntries it receives until the test
	// ends: a transport's Close does not close its consumer channel, so the
	// goroutine stops on done instead.
	done := make(chan struct{})
	var answering sync.WaitGroup
	t.Cleanup(func() { close(done); answering.Wait() })
	answer := func(tr *raft.NetworkTransport, resp *raft.AppendEntriesResponse) {
		answering.Go(func() {
			for {
				select {
				case rpc := <-tr.Consumer():
					rpc.Respond(resp, nil)
				case <-done:
					return
				}
			}
		})
	}
	answer(a, &raft.AppendEntriesResponse{Success: true, Term: 1})
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("x"), Addr: []byte("x")}, Term: 1}
	var resp raft.AppendEntriesResponse
	if err := b.AppendEntries("a", a.LocalAddr(), req, &resp); err != nil || !resp.Success {
		t.Fatalf("cluster member refused: %v", err)
	}
	for name, tr := range map[string]*raft.NetworkTransport{"other CA": bad, "cluster CA trusted, foreign cert": bad2} {
		var r raft.AppendEntriesResponse
		if err := tr.AppendEntries("a", a.LocalAddr(), req, &r); err == nil {
			t.Errorf("%s: a node without the cluster certificate replicated", name)
		}
	}
	// And a member never completes a dial to the intruder's listener.
	answer(bad2, &raft.AppendEntriesResponse{Success: true})
	if err := b.AppendEntries("i", bad2.LocalAddr(), req, &resp); err == nil {
		t.Error("a member dialled a listener without the cluster certificate")
	}
}

func TestWriteDevPKI(t *testing.T) {
	p, err := WriteDevPKI(t.TempDir(), nil, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReloadable(Files{CertFile: p.NodeCertFile, KeyFile: p.NodeKeyFile, CAFile: p.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	addr := startMTLS(t, r)
	cfg, err := ClientConfig(p.CAFile, p.ClientCertFile, p.ClientKeyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t, addr, cfg); err != nil {
		t.Fatalf("dev client refused by dev node: %v", err)
	}
	if fi, _ := os.Stat(p.NodeKeyFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", fi.Mode())
	}
}
