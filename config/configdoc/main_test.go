package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed reference must be exactly what the generator writes from
// the config package as it is: a new key, a changed default or an edited
// doc comment without `go generate ./config/...` fails here.
func TestConfigurationPageUpToDate(t *testing.T) {
	t.Parallel()
	want, err := render("..")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "configuration.md")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go generate ./config/...)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go generate ./config/... (or make generate) and commit it", path)
	}
}

func TestRenderEveryTableAndKey(t *testing.T) {
	t.Parallel()
	page, err := render("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## [server]", "## [cluster]", "## [[cluster.peers]]", "## [limits]", "## [storage]",
		"## [[queues]]", "## [admin]", "## [[admin.users]]", "## [tls]", "## [auth]", "## [[auth.tokens]]",
		"| `default_priority` | `0` |", "| `heartbeat_timeout_ms` | `500` |",
		"| `dead_letter_retention_ms` | `0` |", "| `retry_delay_ms` | [limits]'s |",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// A field without a doc comment would leave its row without a meaning:
// the generator refuses it, naming the field.
func TestRenderRefusesUndocumentedField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := "package config\n\ntype Server struct {\n\t// NodeID names the node.\n\tNodeID string `toml:\"node_id\"`\n\tGRPCAddr string `toml:\"grpc_addr\"`\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "config.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := render(dir)
	if err == nil || !strings.Contains(err.Error(), "Server.GRPCAddr") {
		t.Fatalf("render = %v, want an error naming Server.GRPCAddr", err)
	}
}

func TestKeyNamesAndSubject(t *testing.T) {
	t.Parallel()
	goToKey := map[string]string{"MaxLeaseMS": "max_lease_ms", "DefaultLeaseMS": "default_lease_ms"}
	tests := []struct{ name, in, want string }{
		{"subject dropped", "MaxLeaseMS is the longest lease.", "The longest lease."},
		{"other key named", "MaxLeaseMS is at least DefaultLeaseMS.", "At least `default_lease_ms`."},
		{"no subject", "Clamps MaxLeaseMS.", "Clamps `max_lease_ms`."},
		{"unknown word kept", "MaxLeaseMS is the Raft lease.", "The Raft lease."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := withoutSubject(keyNames(tt.in, goToKey), "max_lease_ms"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
