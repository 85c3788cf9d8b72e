package fsm_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sepp-io/sepp/fsm"
)

// TestFeatures_CoverEveryCommandVersion: the capabilities GetServerInfo
// advertises come from fsm.Features; every CommandVersionXxx constant the
// package declares has a feature of its version, every feature's version
// is one of them, names are unique, and the highest is fsm.CommandVersion.
func TestFeatures_CoverEveryCommandVersion(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, de := range entries {
		if n := de.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, n, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	named := regexp.MustCompile(`^CommandVersion[A-Z]\w*$`)
	declared := map[string]uint32{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range vs.Names {
				if !named.MatchString(name.Name) || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					continue // CommandVersion = CommandVersionX: an alias
				}
				v, err := strconv.ParseUint(lit.Value, 10, 32)
				if err != nil {
					t.Fatalf("%s = %s: %v", name.Name, lit.Value, err)
				}
				declared[name.Name] = uint32(v)
			}
			return true
		})
	}
	if len(declared) < 10 {
		t.Fatalf("found only %d CommandVersion constants (%v): the parse is broken", len(declared), declared)
	}
	byVersion := map[uint32]bool{}
	names := map[string]bool{}
	for _, f := range fsm.Features {
		byVersion[f.Version] = true
		if names[f.Name] {
			t.Errorf("feature %q listed twice", f.Name)
		}
		names[f.Name] = true
	}
	values := map[uint32]bool{}
	for name, v := range declared {
		values[v] = true
		if !byVersion[v] {
			t.Errorf("%s = %d has no feature in fsm.Features", name, v)
		}
	}
	var highest uint32
	for _, f := range fsm.Features {
		if !values[f.Version] {
			t.Errorf("feature %q has version %d, which no CommandVersion constant declares", f.Name, f.Version)
		}
		highest = max(highest, f.Version)
	}
	if highest != fsm.CommandVersion {
		t.Errorf("highest feature version %d, binary applies %d", highest, fsm.CommandVersion)
	}
}
