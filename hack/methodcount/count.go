package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// typeInfo is one named type: where it is declared, its doc comment and its
// methods (on T and *T together).
type typeInfo struct {
	Dir     string // slash-separated, relative to the module root
	Name    string
	Doc     string
	Methods int
}

func (t *typeInfo) id() string {
	if t.Dir == "." {
		return t.Name
	}
	return t.Dir + "." + t.Name
}

// count walks the module under root: directories holding their own go.mod
// (another module), testdata, vendor and hidden directories are skipped.
func count(root string, tests bool) ([]*typeInfo, error) {
	var all []*typeInfo
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root {
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		types, err := countDir(path, filepath.ToSlash(rel), tests)
		if err != nil {
			return err
		}
		all = append(all, types...)
		return nil
	})
	return all, err
}

// countDir counts one directory's types. A receiver's type is found by name
// in the same directory, as the compiler requires; a method whose type is in
// a _test.go file we skip is dropped with it.
func countDir(dir, rel string, tests bool) ([]*typeInfo, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	byName := map[string]*typeInfo{}
	methods := map[string]int{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || (!tests && strings.HasSuffix(n, "_test.go")) {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(rel, n), err)
		}
		// Packages x and x_test may share a directory: keep them apart.
		pkg := f.Name.Name + "\x00"
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.GenDecl:
				if decl.Tok != token.TYPE {
					continue
				}
				for _, spec := range decl.Specs {
					ts := spec.(*ast.TypeSpec)
					doc := ts.Doc
					if doc == nil && len(decl.Specs) == 1 {
						doc = decl.Doc
					}
					byName[pkg+ts.Name.Name] = &typeInfo{Dir: rel, Name: ts.Name.Name, Doc: doc.Text()}
				}
			case *ast.FuncDecl:
				if decl.Recv == nil || len(decl.Recv.List) == 0 {
					continue
				}
				if name := receiverName(decl.Recv.List[0].Type); name != "" {
					methods[pkg+name]++
				}
			}
		}
	}
	var out []*typeInfo
	for key, t := range byName {
		t.Methods = methods[key]
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// receiverName is T for the receivers T, *T, T[K] and *T[K, V].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
