package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotLayoutTable: the layouts run 1..snapshotVersion in order (a
// layout number is in every snapshot on disk: a gap or a swap would be a
// bad merge), each says what it adds, and the engine reads every layout
// it knows. In the sources, no layout constant is declared outside
// snapshot_layouts.go, no version is compared with a number written out,
// and every layout's constant is used by the code that writes or reads it.
func TestSnapshotLayoutTable(t *testing.T) {
	if snapshotVersion != uint64(len(snapshotLayouts)) || snapshotVersion < 2 {
		t.Fatalf("snapshotVersion %d, table has %d rows", snapshotVersion, len(snapshotLayouts))
	}
	for i, r := range snapshotLayouts {
		if r.version != uint64(i+1) {
			t.Errorf("row %d has layout %d, want %d: rows run 1..N in order", i, r.version, i+1)
		}
		if r.adds == "" {
			t.Errorf("layout %d: say what it adds", r.version)
		}
		if !knownSnapshotLayout(r.version) {
			t.Errorf("layout %d is not read", r.version)
		}
	}
	if knownSnapshotLayout(0) || knownSnapshotLayout(snapshotVersion+1) {
		t.Errorf("layouts 0 and %d are read", snapshotVersion+1)
	}

	consts := map[string]bool{}
	used := map[string]bool{}
	lf, err := parser.ParseFile(token.NewFileSet(), "snapshot_layouts.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(lf, func(n ast.Node) bool {
		if g, ok := n.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				for _, name := range s.(*ast.ValueSpec).Names {
					if name.Name != "snapshotVersion" {
						consts[name.Name] = true
					}
				}
			}
		}
		return true
	})
	if len(consts) != len(snapshotLayouts) {
		t.Fatalf("snapshot_layouts.go declares %d layout constants for %d rows", len(consts), len(snapshotLayouts))
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || path == "snapshot_layouts.go" {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Ident:
				if consts[x.Name] {
					used[x.Name] = true
				}
			case *ast.ValueSpec:
				for _, name := range x.Names {
					if strings.HasPrefix(name.Name, "snapshotVersion") {
						t.Errorf("%s: %s is declared outside snapshot_layouts.go: add it to the table", fset.Position(name.Pos()), name.Name)
					}
				}
			case *ast.BinaryExpr:
				if isLayoutVersion(x.X) && isIntLit(x.Y) || isLayoutVersion(x.Y) && isIntLit(x.X) {
					t.Errorf("%s: a layout compared with a number written out: use its constant (snapshot_layouts.go)", fset.Position(x.Pos()))
				}
			}
			return true
		})
	}
	for name := range consts {
		if name != "snapshotVersionBase" && !used[name] {
			t.Errorf("layout constant %s is used nowhere: no code writes or reads that layout", name)
		}
	}
}

// isLayoutVersion reports whether e is a decoder's or encoder's layout
// version: an identifier or field named version.
func isLayoutVersion(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "version"
	case *ast.SelectorExpr:
		return x.Sel.Name == "version"
	}
	return false
}

func isIntLit(e ast.Expr) bool {
	l, ok := e.(*ast.BasicLit)
	return ok && l.Kind == token.INT
}
