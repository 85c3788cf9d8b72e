package integration

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sepp-io/sepp/config"
)

// TestDeployFiles checks what deploy/ ships without running it: every node
// config loads and validates (strict: unknown keys fail), the compose file
// and the Kubernetes manifests parse as YAML and hold what the guide says,
// and each pod of the StatefulSet has a config of its own.
func TestDeployFiles(t *testing.T) {
	requireLong(t)
	deploy := filepath.Join(repoRoot, "deploy")

	t.Run("NodeConfigsLoad", func(t *testing.T) {
		for _, name := range []string{"sepp.example.toml", "docker-single.toml", "compose-node1.toml", "compose-node2.toml", "compose-node3.toml"} {
			loadConfig(t, name, filepath.Join(deploy, name))
		}
	})

	t.Run("ComposeFile", func(t *testing.T) {
		docs := yamlDocs(t, filepath.Join(deploy, "compose.yaml"))
		services, _ := docs[0]["services"].(map[string]any)
		for i, name := range []string{"sepp-1", "sepp-2", "sepp-3"} {
			svc, ok := services[name].(map[string]any)
			if !ok {
				t.Fatalf("compose.yaml has no service %s", name)
			}
			for _, key := range []string{"healthcheck", "volumes", "ports"} {
				if svc[key] == nil {
					t.Errorf("service %s has no %s", name, key)
				}
			}
			// The advertised gRPC address must be the port published on
			// the host, or host clients cannot follow leader hints.
			cfg := loadConfig(t, name, filepath.Join(deploy, "compose-node"+string(rune('1'+i))+".toml"))
			port := cfg.Server.GRPCAdvertise[strings.LastIndexByte(cfg.Server.GRPCAdvertise, ':')+1:]
			want := "127.0.0.1:" + port + ":" + port
			if ports, _ := svc["ports"].([]any); !slices.Contains(ports, any(want)) {
				t.Errorf("service %s publishes %v; want %s to match grpc_advertise %s", name, svc["ports"], want, cfg.Server.GRPCAdvertise)
			}
		}
	})

	t.Run("KubernetesManifests", func(t *testing.T) {
		docs := yamlDocs(t, filepath.Join(deploy, "k8s", "sepp.yaml"))
		byKind := map[string][]map[string]any{}
		for _, d := range docs {
			kind, _ := d["kind"].(string)
			byKind[kind] = append(byKind[kind], d)
		}
		for _, kind := range []string{"StatefulSet", "Service", "ConfigMap", "PodDisruptionBudget"} {
			if len(byKind[kind]) == 0 {
				t.Errorf("deploy/k8s/sepp.yaml has no %s", kind)
			}
		}
		if t.Failed() {
			return
		}
		sts := byKind["StatefulSet"][0]
		spec := sts["spec"].(map[string]any)
		headless := ""
		for _, svc := range byKind["Service"] {
			if svc["spec"].(map[string]any)["clusterIP"] == "None" {
				headless = svc["metadata"].(map[string]any)["name"].(string)
			}
		}
		if headless == "" || spec["serviceName"] != headless {
			t.Errorf("StatefulSet serviceName %v must name the headless Service (%q)", spec["serviceName"], headless)
		}
		container := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		for _, probe := range []string{"readinessProbe", "livenessProbe"} {
			if container[probe] == nil {
				t.Errorf("container has no %s", probe)
			}
		}
		replicas := spec["replicas"].(int)
		data := byKind["ConfigMap"][0]["data"].(map[string]any)
		dir := t.TempDir()
		for i := 0; i < replicas; i++ {
			pod := sts["metadata"].(map[string]any)["name"].(string) + "-" + string(rune('0'+i))
			body, ok := data[pod+".toml"].(string)
			if !ok {
				t.Errorf("ConfigMap has no %s.toml for pod %s", pod, pod)
				continue
			}
			path := filepath.Join(dir, pod+".toml")
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := loadConfig(t, "ConfigMap "+pod+".toml", path)
			if cfg.Server.NodeID != pod || !strings.HasPrefix(cfg.Server.RaftAdvertise, pod+"."+headless+":") {
				t.Errorf("%s.toml: node_id %q, raft_advertise %q; want %s and %s.%s:port", pod, cfg.Server.NodeID, cfg.Server.RaftAdvertise, pod, pod, headless)
			}
		}
	})
}

func loadConfig(t *testing.T, name, path string) config.Config {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cfg
}

func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, len(docs)+1, err)
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no YAML documents", path)
	}
	return docs
}
