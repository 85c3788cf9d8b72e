package rendertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/sepp-io/sepp/config"
)

// serviceMonitor is the part of the Prometheus Operator's CRD the chart
// writes; decoding is strict, so a field the chart adds must appear here.
type serviceMonitor struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
			Scheme   string `json:"scheme"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// rendered is every object of one render, decoded strictly.
type rendered struct {
	configMaps   []corev1.ConfigMap
	services     []corev1.Service
	secrets      []corev1.Secret
	statefulSets []appsv1.StatefulSet
	pdbs         []policyv1.PodDisruptionBudget
	monitors     []serviceMonitor
}

// render runs Helm's own engine over ../sepp with the values given, then
// decodes every document into its Kubernetes API type, refusing unknown
// fields (a misspelt key in a template fails here, not in a cluster).
func render(t *testing.T, values map[string]any) rendered {
	t.Helper()
	files := renderFiles(t, values)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out rendered
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for i, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			decodeInto(t, &out, name, i, doc)
		}
	}
	return out
}

// renderFiles runs Helm's own engine over ../sepp with the values given, as
// `helm template sepp` in a namespace "queues" would: the rendered text of
// each template file by its name.
func renderFiles(t *testing.T, values map[string]any) map[string]string {
	t.Helper()
	chrt, err := loader.Load("../sepp")
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{Name: "sepp", Namespace: "queues", IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatalf("values: %v", err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return files
}

// decodeInto decodes one rendered document into its Kubernetes API type in
// out, refusing unknown fields.
func decodeInto(t *testing.T, out *rendered, name string, i int, doc string) {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("%s document %d: not YAML: %v\n%s", name, i, err, doc)
	}
	var meta struct{ Kind string }
	if err := json.Unmarshal(js, &meta); err != nil {
		t.Fatal(err)
	}
	var dst any
	switch meta.Kind {
	case "ConfigMap":
		out.configMaps = append(out.configMaps, corev1.ConfigMap{})
		dst = &out.configMaps[len(out.configMaps)-1]
	case "Service":
		out.services = append(out.services, corev1.Service{})
		dst = &out.services[len(out.services)-1]
	case "Secret":
		out.secrets = append(out.secrets, corev1.Secret{})
		dst = &out.secrets[len(out.secrets)-1]
	case "StatefulSet":
		out.statefulSets = append(out.statefulSets, appsv1.StatefulSet{})
		dst = &out.statefulSets[len(out.statefulSets)-1]
	case "PodDisruptionBudget":
		out.pdbs = append(out.pdbs, policyv1.PodDisruptionBudget{})
		dst = &out.pdbs[len(out.pdbs)-1]
	case "ServiceMonitor":
		out.monitors = append(out.monitors, serviceMonitor{})
		dst = &out.monitors[len(out.monitors)-1]
	default:
		t.Fatalf("%s: unexpected kind %q", name, meta.Kind)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		t.Fatalf("%s (%s): %v\n%s", name, meta.Kind, err, doc)
	}
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func TestChart_RendersIntoValidObjects(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		check  func(t *testing.T, r rendered)
	}{
		{"Defaults", nil, func(t *testing.T, r rendered) {
			if len(r.secrets) != 0 || len(r.monitors) != 0 {
				t.Errorf("defaults: %d secrets, %d service monitors; want none", len(r.secrets), len(r.monitors))
			}
			sts := r.statefulSets[0]
			c := sts.Spec.Template.Spec.Containers[0]
			if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.StartupProbe == nil || c.StartupProbe.HTTPGet.Scheme != corev1.URISchemeHTTP {
				t.Errorf("probes: readiness %+v, startup %+v", c.ReadinessProbe, c.StartupProbe)
			}
			if sts.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution == nil {
				t.Error("no preferred anti-affinity")
			}
			if got := c.Resources.Limits.Memory().Value(); got != 1024<<20 {
				t.Errorf("memory limit %d, want 1 GiB", got)
			}
		}},
		{"SmallPod", map[string]any{"memoryLimitMiB": 256}, func(t *testing.T, r rendered) {
			for _, e := range r.statefulSets[0].Spec.Template.Spec.Containers[0].Env {
				if e.Name == "GOMEMLIMIT" && e.Value != "192MiB" {
					t.Errorf("GOMEMLIMIT %q in a 256 MiB pod, want 192MiB (64 MiB left for the page cache)", e.Value)
				}
			}
		}},
		{"FiveVotersTLSAuthMonitor", map[string]any{
			"replicas":       5,
			"memoryLimitMiB": 2048,
			"antiAffinity":   "required",
			"tls":            map[string]any{"existingSecret": "sepp-tls", "requireClientCert": true},
			"auth":           map[string]any{"enabled": true, "token": "s3cret-token"},
			"admin":          map[string]any{"auth": true, "users": []any{map[string]any{"name": "admin", "password_hash": "$2a$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234", "role": "operator"}}},
			"serviceMonitor": map[string]any{"enabled": true},
		}, func(t *testing.T, r rendered) {
			if len(r.secrets) != 1 || r.secrets[0].StringData["token"] != "s3cret-token" {
				t.Errorf("token secret: %+v", r.secrets)
			}
			if len(r.monitors) != 1 || r.monitors[0].Spec.Endpoints[0].Scheme != "https" || r.monitors[0].Spec.Selector.MatchLabels["sepp.io/service"] != "peers" {
				t.Errorf("service monitor: %+v", r.monitors)
			}
			spec := r.statefulSets[0].Spec.Template.Spec
			if spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
				t.Error("no required anti-affinity")
			}
			if spec.Containers[0].ReadinessProbe.HTTPGet.Scheme != corev1.URISchemeHTTPS || len(spec.Volumes) != 2 {
				t.Errorf("TLS: probe scheme %s, %d volumes", spec.Containers[0].ReadinessProbe.HTTPGet.Scheme, len(spec.Volumes))
			}
			for _, toml := range r.configMaps[0].Data {
				if strings.Contains(toml, "s3cret-token") {
					t.Error("the config holds the token itself, not only its hash")
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := render(t, tt.values)
			if len(r.configMaps) != 1 || len(r.statefulSets) != 1 || len(r.services) != 2 || len(r.pdbs) != 1 {
				t.Fatalf("rendered %d config maps, %d stateful sets, %d services, %d PDBs; want 1, 1, 2, 1",
					len(r.configMaps), len(r.statefulSets), len(r.services), len(r.pdbs))
			}
			replicas := 3
			if v, ok := tt.values["replicas"].(int); ok {
				replicas = v
			}
			if got := int(*r.statefulSets[0].Spec.Replicas); got != replicas {
				t.Errorf("replicas %d, want %d", got, replicas)
			}
			// One config per pod, each loading with sepp's own strict
			// parser, naming every pod as a peer and a budget below the
			// pod's memory limit.
			data := r.configMaps[0].Data
			if len(data) != replicas {
				t.Fatalf("%d configs, want one per pod (%d)", len(data), replicas)
			}
			limit := r.statefulSets[0].Spec.Template.Spec.Containers[0].Resources.Limits.Memory().Value()
			for i := range replicas {
				name := fmt.Sprintf("sepp-%d.toml", i)
				cfg, err := config.Parse([]byte(data[name]))
				if err != nil {
					t.Fatalf("%s does not load: %v\n%s", name, err, data[name])
				}
				if len(cfg.Cluster.Peers) != replicas || cfg.Server.NodeID != fmt.Sprintf("sepp-%d", i) {
					t.Errorf("%s: node %q, %d peers", name, cfg.Server.NodeID, len(cfg.Cluster.Peers))
				}
				if b := cfg.Limits.MaxMemoryBytes; b <= 0 || b >= limit {
					t.Errorf("%s: max_memory_bytes %d, want within the pod's limit %d", name, b, limit)
				}
			}
			// GOMEMLIMIT leaves the pod's page cache the room the
			// server's own "auto" leaves: the larger of a tenth and
			// 64 MiB (a quarter of a pod under 256 MiB).
			limitMiB := limit >> 20
			wantSoft := fmt.Sprintf("%dMiB", limitMiB-max((limitMiB+9)/10, min(limitMiB/4, 64)))
			var soft string
			for _, e := range r.statefulSets[0].Spec.Template.Spec.Containers[0].Env {
				if e.Name == "GOMEMLIMIT" {
					soft = e.Value
				}
			}
			if soft != wantSoft {
				t.Errorf("GOMEMLIMIT %q for a %d MiB pod, want %q", soft, limitMiB, wantSoft)
			}
			if r.pdbs[0].Spec.MaxUnavailable.IntValue() != 1 {
				t.Errorf("PDB maxUnavailable %v", r.pdbs[0].Spec.MaxUnavailable)
			}
			tt.check(t, r)
		})
	}
}

func TestChart_RefusesContradictions(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"NoReplicas":       {"replicas": 0},
		"AuthWithoutToken": {"auth": map[string]any{"enabled": true}},
	} {
		t.Run(name, func(t *testing.T) {
			chrt, err := loader.Load("../sepp")
			if err != nil {
				t.Fatal(err)
			}
			vals, err := chartutil.ToRenderValues(chrt, values, chartutil.ReleaseOptions{Name: "sepp", Namespace: "queues", IsInstall: true}, chartutil.DefaultCapabilities)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := engine.Render(chrt, vals); err == nil {
				t.Fatalf("values %v rendered; want a refusal", values)
			}
		})
	}
}
