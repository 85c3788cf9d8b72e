package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
)

func TestDefault_MatchesTheSpecDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Parse(nil)
	if err != nil {
		t.Fatalf("empty file: %v", err)
	}
	ec, err := cfg.EngineConfig()
	if err != nil {
		t.Fatal(err)
	}
	l := ec.Limits
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"default_priority", l.DefaultPriority, uint32(0)},          // spec: PRI-3
		{"default_max_attempts", l.DefaultMaxAttempts, uint32(3)},   // spec: ATT-3
		{"max_attempts_ceiling", l.MaxAttemptsCeiling, uint32(100)}, // spec: ATT-4
		{"retry_delay_ms", l.RetryDelay, time.Duration(0)},          // spec: NAK-3
		{"retry_backoff", l.RetryBackoff, engine.BackoffNone},
		{"max_schedule_horizon_ms", l.MaxScheduleHorizon, 30 * 24 * time.Hour}, // spec: SCH-5
		{"dead_letter_retention_ms", l.DeadLetterRetention, time.Duration(0)},  // spec: DLQ-3
		{"grpc_addr", cfg.Server.GRPCAddr, "127.0.0.1:50051"},
		{"strict", l.Strict, false},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestParse_Overrides(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`
[server]
node_id = "n2"
grpc_addr = "127.0.0.1:6002"

[cluster]
peers = [
  { id = "n1", raft_addr = "127.0.0.1:7001", grpc_addr = "127.0.0.1:6001" },
  { id = "n2", raft_addr = "127.0.0.1:7002", grpc_addr = "127.0.0.1:6002" },
  { id = "n3", raft_addr = "127.0.0.1:7003", grpc_addr = "127.0.0.1:6003" },
]

[limits]
retry_delay_ms = 5000
retry_backoff = "exponential"
retry_delay_max_ms = 3600000

[storage]
dead_letter_retention_ms = 604800000

[[queues]]
name = "alerts"
default_priority = 7

[[queues]]
name = "emails"
default_max_attempts = 5
retry_delay_ms = 30000
dead_letter_queue = "emails.dead"

[[queues]]
name = "emails.dead"
`))
	if err != nil {
		t.Fatal(err)
	}
	ec, err := cfg.EngineConfig()
	if err != nil {
		t.Fatal(err)
	}
	if ec.Limits.RetryBackoff != engine.BackoffExponential || ec.Limits.RetryDelay != 5*time.Second {
		t.Errorf("limits not applied: %+v", ec.Limits)
	}
	if ec.Limits.DeadLetterRetention != 7*24*time.Hour {
		t.Errorf("retention = %v", ec.Limits.DeadLetterRetention)
	}
	if len(ec.Queues) != 3 || *ec.Queues[0].DefaultPriority != 7 || *ec.Queues[1].DefaultMaxAttempts != 5 ||
		*ec.Queues[1].RetryDelay != 30*time.Second || ec.Queues[1].DeadLetterQueue != "emails.dead" {
		t.Errorf("queues not applied: %+v", ec.Queues)
	}
	if len(cfg.Cluster.Peers) != 3 || cfg.Server.NodeID != "n2" {
		t.Errorf("cluster not applied: %+v", cfg.Cluster)
	}
}

func TestParse_Rejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		toml string
		want string // a fragment the error must contain
	}{
		{"UnknownKeyNamesItsLine", "[limits]\ndefault_priority = 1\nmax_atempts = 3\n", "line 3"},
		{"UnknownTable", "[limitz]\nx = 1\n", "unknown key"},
		{"WrongType", "[limits]\ndefault_priority = \"high\"\n", "line 2"},
		// spec: ATT-5
		{"GlobalDefaultMaxAttemptsAboveCeiling", "[limits]\ndefault_max_attempts = 101\n", "default_max_attempts"},
		// spec: ATT-5
		{"QueueDefaultMaxAttemptsAboveCeiling", "[limits]\nmax_attempts_ceiling = 10\n[[queues]]\nname = \"q\"\ndefault_max_attempts = 11\n", "default_max_attempts"},
		{"BadBackoff", "[limits]\nretry_backoff = \"linear\"\n", "retry_backoff"},
		{"BadQueueBackoff", "[[queues]]\nname = \"q\"\nretry_backoff = \"fast\"\n", "retry_backoff"},
		{"NegativeRetryDelay", "[limits]\nretry_delay_ms = -1\n", "retry_delay"},
		{"DefaultPriorityAboveNine", "[limits]\ndefault_priority = 10\n", "priority"},
		{"BadGRPCAddr", "[server]\ngrpc_addr = \"nowhere\"\n", "server.grpc_addr"},
		{"BadLogLevel", "[server]\nlog_level = \"loud\"\n", "server.log_level"},
		{"ElectionBelowHeartbeat", "[cluster]\nheartbeat_timeout_ms = 500\nelection_timeout_ms = 100\nleader_lease_timeout_ms = 100\n", "election_timeout_ms"},
		{"PeersWithoutSelf", "[cluster]\npeers = [{ id = \"a\", raft_addr = \"127.0.0.1:1\", grpc_addr = \"127.0.0.1:2\" }]\n", "must include this node"},
		{"DuplicatePeer", "[server]\nnode_id = \"a\"\n[cluster]\npeers = [{ id = \"a\", raft_addr = \"127.0.0.1:1\", grpc_addr = \"127.0.0.1:2\" }, { id = \"a\", raft_addr = \"127.0.0.1:3\", grpc_addr = \"127.0.0.1:4\" }]\n", "appears twice"},
		{"AuthWithoutUsers", "[admin]\nauth = true\n", "admin.auth"},
		{"BadRole", "[admin]\nusers = [{ name = \"x\", password_hash = \"h\", role = \"god\" }]\n", "admin.users[0].role"},
		{"PayloadAboveMessage", "[limits]\nmax_payload_bytes = 33554432\n", "max_message_bytes"},
		{"ResultZero", "[limits]\nmax_result_bytes = 0\n", "limits.max_result_bytes"},
		{"ResultAboveBound", "[limits]\nmax_result_bytes = 16777217\n", "limits.max_result_bytes"},
		{"ResultAboveMessage", "[server]\nmax_message_bytes = 1048576\n[limits]\nmax_result_bytes = 1048576\n", "exceed limits.max_result_bytes"},
		{"MemoryShareAboveNineTenths", "[limits]\nmax_memory_share = 0.95\n", "limits.max_memory_share"},
		{"NegativeMemoryShare", "[limits]\nmax_memory_share = -0.1\n", "limits.max_memory_share"},
		{"NegativeMemoryBudget", "[limits]\nmax_memory_bytes = -1\n", "limits.max_memory_bytes"},
		{"UndeclaredDeadLetterQueue", "[[queues]]\nname = \"src\"\ndead_letter_queue = \"does-not-exist\"\n", `queues["src"].dead_letter_queue: queue "does-not-exist" is not declared in this file`},
		{"NegativeQueueMemoryBudget", "[[queues]]\nname = \"q\"\nmax_memory_bytes = -5\n", "max_memory_bytes"},
		{"TracingEndpointWithoutScheme", "[tracing]\notlp_endpoint = \"127.0.0.1:4317\"\n", "tracing.otlp_endpoint"},
		{"TracingEndpointWithoutPort", "[tracing]\notlp_endpoint = \"http://collector\"\n", "tracing.otlp_endpoint"},
		{"TracingSampleRatioAboveOne", "[tracing]\nsample_ratio = 1.5\n", "tracing.sample_ratio"},
		{"TracingEmptyServiceName", "[tracing]\nservice_name = \"\"\n", "tracing.service_name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.toml))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.toml)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func TestLoad_NamesTheFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "sepp.toml")
	if err := os.WriteFile(p, []byte("[limits]\nbogus = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error %v should name %s and line 2", err, p)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml")); err == nil {
		t.Fatal("missing file accepted")
	}
}

func TestExampleConfigLoads(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"../deploy/sepp.example.toml"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("example config %s missing: %v", p, err)
		}
		if _, err := Load(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// FuzzParse: any input either loads into a config that validates or is
// refused with an error; it never panics.
func FuzzParse(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("[limits]\ndefault_priority = 3\n"))
	f.Add([]byte("[[queues]]\nname = \"q\"\ndefault_max_attempts = 5\n"))
	f.Add([]byte("[cluster]\npeers = [{ id = \"sepp-1\", raft_addr = \"127.0.0.1:1\", grpc_addr = \"127.0.0.1:2\" }]\n"))
	f.Add([]byte("[storage]\ndead_letter_retention_ms = 1000\n"))
	f.Add([]byte("[tls]\ncert_file = \"a.pem\"\nkey_file = \"a-key.pem\"\nclient_ca_file = \"ca.pem\"\nraft_cert_file = \"a.pem\"\nraft_key_file = \"a-key.pem\"\nraft_ca_file = \"ca.pem\"\n"))
	f.Add([]byte("[auth]\nenabled = true\n[[auth.tokens]]\nname = \"ci\"\nsha256 = \"" + strings.Repeat("ab", 32) + "\"\nroles = [\"producer\", \"admin\"]\n"))
	f.Add([]byte("[server]\nmax_long_polls_per_conn = 2\n"))
	f.Add([]byte("[[queues]]\nname = \"q\"\nmax_reserved = 3\nrate_limit = 5\nrate_period_ms = 200\nconcurrency_key = \"c\"\nmax_per_key = 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that does not validate: %v", err)
		}
		if _, err := cfg.EngineConfig(); err != nil {
			t.Fatalf("Parse accepted a config the engine refuses: %v", err)
		}
	})
}

// TestLimits_MemoryBudget: the budget a node proposes, from the config and
// the memory limit it runs in.
func TestLimits_MemoryBudget(t *testing.T) {
	t.Parallel()
	share := func(v float64) *float64 { return &v }
	tests := []struct {
		name  string
		lim   Limits
		limit int64
		want  int64
	}{
		{name: "DefaultShareOfLimit", limit: 1000 << 20, want: int64(float64(1000<<20) * DefaultMaxMemoryShare)},
		{name: "NoLimitKnown", limit: 0, want: 0},
		{name: "ExplicitWins", lim: Limits{MaxMemoryBytes: 123 << 20}, limit: 1 << 30, want: 123 << 20},
		{name: "OwnShare", lim: Limits{MaxMemoryShare: share(0.5)}, limit: 1 << 30, want: 1 << 29},
		{name: "ShareZeroIsUnbounded", lim: Limits{MaxMemoryShare: share(0)}, limit: 1 << 30, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, from := tt.lim.MemoryBudget(tt.limit); got != tt.want || from == "" {
				t.Fatalf("MemoryBudget(%d) = %d (%s), want %d", tt.limit, got, from, tt.want)
			}
		})
	}
	cfg, err := Parse([]byte("[limits]\nmax_memory_bytes = 1048576\n[[queues]]\nname = \"q\"\nmax_memory_bytes = 4096\n"))
	if err != nil {
		t.Fatal(err)
	}
	ec, err := cfg.EngineConfig()
	if err != nil {
		t.Fatal(err)
	}
	if ec.Limits.MaxMemoryBytes != 1<<20 || ec.Queues[0].MaxMemoryBytes == nil || *ec.Queues[0].MaxMemoryBytes != 4096 {
		t.Fatalf("budgets not applied: %d %v", ec.Limits.MaxMemoryBytes, ec.Queues[0].MaxMemoryBytes)
	}
}
