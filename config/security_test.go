package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParse_TLSAndAuth(t *testing.T) {
	t.Parallel()
	hash := strings.Repeat("ab", 32)
	cfg, err := Parse([]byte(`
[server]
max_long_polls_per_conn = 8

[tls]
cert_file = "node.pem"
key_file = "node-key.pem"
client_ca_file = "ca.pem"
http = false
raft_cert_file = "node.pem"
raft_key_file = "node-key.pem"
raft_ca_file = "ca.pem"

[auth]
enabled = true

[[auth.tokens]]
name = "ci"
sha256 = "` + hash + `"
roles = ["producer", "viewer"]
`))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.TLS.APIEnabled() || !cfg.TLS.RaftEnabled() || cfg.TLS.HTTP || cfg.TLS.ClientCAFile != "ca.pem" {
		t.Errorf("tls = %+v", cfg.TLS)
	}
	if !cfg.Auth.Enabled || len(cfg.Auth.Tokens) != 1 || cfg.Auth.Tokens[0].Roles[1] != "viewer" {
		t.Errorf("auth = %+v", cfg.Auth)
	}
	if cfg.Server.MaxLongPollsPerConn != 8 {
		t.Errorf("max_long_polls_per_conn = %d", cfg.Server.MaxLongPollsPerConn)
	}
}

func TestDefault_SecurityOff(t *testing.T) {
	t.Parallel()
	d := Default()
	if d.TLS.APIEnabled() || d.TLS.RaftEnabled() || !d.TLS.HTTP || d.Auth.Enabled || d.Server.MaxLongPollsPerConn != 64 {
		t.Errorf("defaults: tls %+v auth %+v per-conn %d", d.TLS, d.Auth, d.Server.MaxLongPollsPerConn)
	}
}

func TestValidate_TLSAndAuthErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	good := strings.Repeat("0f", 32)
	cases := []struct {
		name, toml, want string
	}{
		{"cert without key", "[tls]\ncert_file = \"a.pem\"\n", "tls.cert_file and tls.key_file"},
		{"client ca without cert", "[tls]\nclient_ca_file = \"ca.pem\"\n", "tls.client_ca_file"},
		{"raft partial", "[tls]\nraft_cert_file = \"a\"\nraft_key_file = \"b\"\n", "tls.raft_cert_file"},
		{"auth on without tokens", "[auth]\nenabled = true\n", "auth.enabled"},
		{"short hash", "[[auth.tokens]]\nname = \"a\"\nsha256 = \"abc\"\nroles = [\"worker\"]\n", "auth.tokens[0].sha256"},
		{"non-hex hash", "[[auth.tokens]]\nname = \"a\"\nsha256 = \"" + strings.Repeat("zz", 32) + "\"\nroles = [\"worker\"]\n", "auth.tokens[0].sha256"},
		{"no roles", "[[auth.tokens]]\nname = \"a\"\nsha256 = \"" + good + "\"\nroles = []\n", "auth.tokens[0].roles"},
		{"unknown role", "[[auth.tokens]]\nname = \"a\"\nsha256 = \"" + good + "\"\nroles = [\"root\"]\n", "auth.tokens[0].roles[0]"},
		{"no name", "[[auth.tokens]]\nsha256 = \"" + good + "\"\nroles = [\"admin\"]\n", "auth.tokens[0].name"},
		{"same name twice", "[[auth.tokens]]\nname = \"a\"\nsha256 = \"" + good + "\"\nroles = [\"admin\"]\n[[auth.tokens]]\nname = \"a\"\nsha256 = \"" + strings.Repeat("1e", 32) + "\"\nroles = [\"admin\"]\n", "auth.tokens[1].name"},
		{"same hash twice", "[[auth.tokens]]\nname = \"a\"\nsha256 = \"" + good + "\"\nroles = [\"admin\"]\n[[auth.tokens]]\nname = \"b\"\nsha256 = \"" + good + "\"\nroles = [\"admin\"]\n", "auth.tokens[1].sha256"},
		{"a token itself", "[[auth.tokens]]\nname = \"a\"\ntoken = \"secret\"\nroles = [\"admin\"]\n", "unknown key"},
		{"per-conn zero", "[server]\nmax_long_polls_per_conn = 0\n", "server.max_long_polls_per_conn"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.toml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %q", err, c.want)
			}
		})
	}
}

// TestExampleConfigNamesEveryKey keeps deploy/sepp.example.toml complete:
// every key of Config appears in it, set or commented out.
func TestExampleConfigNamesEveryKey(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../deploy/sepp.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	example := string(data)
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			tag := f.Tag.Get("toml")
			if tag == "" || tag == "-" {
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(prefix+tag+".", ft)
				continue
			}
			if !strings.Contains(example, tag+" =") {
				t.Errorf("deploy/sepp.example.toml does not mention %s%s", prefix, tag)
			}
		}
	}
	walk("", reflect.TypeOf(Config{}))
}
