package rendertest

import (
	"flag"
	"os"
	"sort"
	"strings"
	"testing"
)

var updateManifests = flag.Bool("update-manifests", false, "rewrite deploy/k8s/sepp.yaml from the chart's default render")

// plainManifestsPath is the manifest set for `kubectl apply` without Helm.
const plainManifestsPath = "../../k8s/sepp.yaml"

const plainManifestsHeader = `# sepp on Kubernetes without Helm: a three-node cluster (see README.md here).
#
# Generated from the Helm chart deploy/helm/sepp with its default values,
# as "helm template sepp deploy/helm/sepp" prints it, by
# "make k8s-manifests". Do not edit: change the chart (or render it with your
# own values) instead; the chart's render test fails when this file differs.
`

// plainManifests is the chart's default render as one multi-document file,
// its templates in name order.
func plainManifests(t *testing.T) string {
	t.Helper()
	files := renderFiles(t, nil)
	names := make([]string, 0, len(files))
	for n := range files {
		if strings.HasSuffix(n, ".yaml") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(plainManifestsHeader)
	for _, name := range names {
		for _, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			b.WriteString("---\n")
			b.WriteString(strings.Trim(doc, "\n"))
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestPlainManifests_AreTheChartsDefaultRender keeps deploy/k8s/sepp.yaml
// from drifting from the chart: one source for both ways of deploying.
func TestPlainManifests_AreTheChartsDefaultRender(t *testing.T) {
	want := plainManifests(t)
	if *updateManifests {
		if err := os.WriteFile(plainManifestsPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(plainManifestsPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("deploy/k8s/sepp.yaml differs from the chart's default render; run `make k8s-manifests` (it is generated, not edited)")
	}
	// The plain manifests hold the objects a cluster needs, decoded strictly.
	var r rendered
	for i, doc := range strings.Split(want, "\n---") {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		decodeInto(t, &r, "deploy/k8s/sepp.yaml", i, doc)
	}
	if len(r.statefulSets) != 1 || len(r.configMaps) != 1 || len(r.pdbs) != 1 || len(r.services) != 2 {
		t.Errorf("deploy/k8s/sepp.yaml: %d StatefulSets, %d ConfigMaps, %d PodDisruptionBudgets, %d Services; want 1, 1, 1, 2",
			len(r.statefulSets), len(r.configMaps), len(r.pdbs), len(r.services))
	}
}
