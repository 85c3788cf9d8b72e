package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/config"
	"github.com/sepp-io/sepp/tlsutil"
)

// TestServe_TLSAPIPortServesGRPCAndConnect: with [tls] cert_file, key_file
// and client_ca_file, the one API port serves gRPC (ALPN h2) and Connect
// JSON (ALPN http/1.1) over TLS, both requiring a client certificate.
func TestServe_TLSAPIPortServesGRPCAndConnect(t *testing.T) {
	pki, err := tlsutil.WriteDevPKI(t.TempDir(), nil, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Server.GRPCAddr = freeAddr(t)
	cfg.Server.HTTPAddr = freeAddr(t)
	cfg.Server.RaftAddr = freeAddr(t)
	cfg.Server.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Server.LogLevel = "warn"
	cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile = pki.NodeCertFile, pki.NodeKeyFile, pki.CAFile
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s of its context ending")
		}
	})

	withCert, err := tlsutil.ClientConfig(pki.CAFile, pki.ClientCertFile, pki.ClientKeyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	noCert, err := tlsutil.ClientConfig(pki.CAFile, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()

	c, err := client.New(cctx, []string{cfg.Server.GRPCAddr}, client.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(withCert))))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Enqueue(cctx, client.NewEnqueueRequest("tls", "t"))
	if err != nil {
		t.Fatalf("gRPC enqueue over TLS: %v", err)
	}

	post := func(tc *tls.Config) (int, string, error) {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}}
		defer hc.CloseIdleConnections()
		req, _ := http.NewRequestWithContext(cctx, http.MethodPost, "https://"+cfg.Server.GRPCAddr+"/sepp.v1.AdminService/GetJob",
			strings.NewReader(`{"jobId":"`+strconv.FormatUint(res.JobID, 10)+`"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Proto + " " + string(b), nil
	}
	code, body, err := post(withCert)
	if err != nil || code != http.StatusOK || !strings.HasPrefix(body, "HTTP/1.1 ") || !strings.Contains(body, `"queue":"tls"`) {
		t.Fatalf("Connect over TLS with a client certificate: %d %s %v", code, body, err)
	}
	if code, body, err := post(noCert); err == nil {
		t.Fatalf("Connect over TLS without a client certificate was answered: %d %s", code, body)
	}
}
