package config

import (
	"strings"
	"testing"
)

func TestStorageAndForwardingKeys(t *testing.T) {
	t.Parallel()
	def, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if def.Storage.LogStore != "" || def.Storage.WALSegmentMB != 64 || !def.Server.ForwardToLeader {
		t.Fatalf("defaults: log_store %q, wal_segment_mb %d, forward_to_leader %v; want \"\", 64, true",
			def.Storage.LogStore, def.Storage.WALSegmentMB, def.Server.ForwardToLeader)
	}
	for _, c := range []struct {
		name, toml, wantErr string
		check               func(Config) bool
	}{
		{name: "wal", toml: "[storage]\nlog_store = \"wal\"\n", check: func(c Config) bool { return c.Storage.LogStore == "wal" }},
		{name: "bolt", toml: "[storage]\nlog_store = \"bolt\"\n", check: func(c Config) bool { return c.Storage.LogStore == "bolt" }},
		{name: "unknown store", toml: "[storage]\nlog_store = \"rocks\"\n", wantErr: "storage.log_store"},
		{name: "segment 16", toml: "[storage]\nwal_segment_mb = 16\n", check: func(c Config) bool { return c.Storage.WALSegmentMB == 16 }},
		{name: "segment zero", toml: "[storage]\nwal_segment_mb = 0\n", wantErr: "storage.wal_segment_mb: must be 1..1024"},
		{name: "segment too big", toml: "[storage]\nwal_segment_mb = 4096\n", wantErr: "storage.wal_segment_mb"},
		{name: "no forwarding", toml: "[server]\nforward_to_leader = false\n", check: func(c Config) bool { return !c.Server.ForwardToLeader }},
		{name: "gc headroom default", toml: "", check: func(c Config) bool { n, err := c.Server.GCMinHeadroomBytes(); return err == nil && n == 128<<20 }},
		{name: "gc headroom off", toml: "[server]\ngc_min_headroom = \"0\"\n", check: func(c Config) bool { n, err := c.Server.GCMinHeadroomBytes(); return err == nil && n == 0 }},
		{name: "gc headroom 1GiB", toml: "[server]\ngc_min_headroom = \"1GiB\"\n", check: func(c Config) bool { n, err := c.Server.GCMinHeadroomBytes(); return err == nil && n == 1<<30 }},
		{name: "gc headroom garbage", toml: "[server]\ngc_min_headroom = \"lots\"\n", wantErr: "server.gc_min_headroom"},
		{name: "crash detection by default", toml: "", check: func(c Config) bool { return c.Cluster.DetectLeaderCrash }},
		{name: "no crash detection", toml: "[cluster]\ndetect_leader_crash = false\n", check: func(c Config) bool { return !c.Cluster.DetectLeaderCrash }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(c.toml))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, c.wantErr)
				}
				return
			}
			if err != nil || !c.check(cfg) {
				t.Fatalf("parse: %v, %+v %+v", err, cfg.Storage, cfg.Server)
			}
		})
	}
}
