package rpc_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadsSeeOnlyTheView: Backend.Read hands its closures an engine.View,
// so a read handler cannot call a transition (a compile error). That holds
// only while the handlers never name *engine.Engine: a type assertion or
// conversion back to it would compile and reopen the mutating methods. The
// gRPC and admin UI handlers' sources (tests aside) must not name it at all.
func TestReadsSeeOnlyTheView(t *testing.T) {
	for _, dir := range []string{".", "adminui"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("no Go files in %s", dir)
		}
		fset := token.NewFileSet()
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if ok && sel.Sel.Name == "Engine" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "engine" {
						t.Errorf("%s names engine.Engine: read through engine.View (rpc.Backend.Read)", fset.Position(sel.Pos()))
					}
				}
				return true
			})
		}
	}
}
