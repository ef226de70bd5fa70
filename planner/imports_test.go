package planner

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowedModules are the only imports outside the standard library: the
// iceberg-go value packages and icekeeper's vocabulary.
var allowedModules = map[string]bool{
	"github.com/apache/iceberg-go":               true,
	"github.com/apache/iceberg-go/table":         true,
	"github.com/icekeeper/icekeeper/maintenance": true,
}

// forbiddenStd are standard library packages (and their subpackages) that
// reach outside a pure decision: the process, files, the network, databases.
var forbiddenStd = []string{"os", "net", "io/fs", "database", "syscall", "plugin"}

// forbiddenRefs are the values a planner must never hold, by import path
// and name: a loaded table and its scans, a file system.
var forbiddenRefs = map[string][]string{
	"github.com/apache/iceberg-go/table": {"Table", "Scan"},
	"github.com/apache/iceberg-go/io":    {"IO"},
}

// The planner stays pure: its files import the standard library (minus
// what reaches the process, files, network or databases), iceberg-go's
// value packages and maintenance only, never name a table, a scan, a
// catalog or a file system, and hold no package-level state beyond
// sentinel errors.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		checked++
		for _, problem := range impurities(t, name) {
			t.Errorf("%s: %s", name, problem)
		}
	}
	if checked == 0 {
		t.Fatal("no planner source files found")
	}
}

// impurities lists what in the file at name breaks the planner's rules.
func impurities(t *testing.T, name string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	var out []string
	imported := map[string]string{} // name in the file → import path
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatalf("%s: import %s: %v", name, imp.Path.Value, err)
		}
		if why := importProblem(p); why != "" {
			out = append(out, fmt.Sprintf("imports %s: %s", p, why))
		}
		local := path.Base(p)
		if p == "github.com/apache/iceberg-go" {
			local = "iceberg"
		}
		if imp.Name != nil {
			local = imp.Name.Name
		}
		imported[local] = p
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if n, ok := n.(*ast.SelectorExpr); ok {
			x, ok := n.X.(*ast.Ident)
			if !ok {
				return true
			}
			p := imported[x.Name]
			for _, bad := range forbiddenRefs[p] {
				if n.Sel.Name == bad {
					out = append(out, fmt.Sprintf("%s: refers to %s.%s", fset.Position(n.Pos()), x.Name, bad))
				}
			}
			if x.Name == "catalog" || strings.Contains(p, "/catalog") || (x.Name == "io" && n.Sel.Name == "IO") {
				out = append(out, fmt.Sprintf("%s: refers to %s.%s", fset.Position(n.Pos()), x.Name, n.Sel.Name))
			}
		}
		return true
	})
	// Only sentinel errors may live at package level; local state is fine.
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if !sentinel(vs, i) {
					out = append(out, fmt.Sprintf("%s: package-level variable %s (only sentinel errors.New values may be)", fset.Position(id.Pos()), id.Name))
				}
			}
		}
	}
	return out
}

// importProblem says why the import path p is not allowed, or "".
func importProblem(p string) string {
	first, _, _ := strings.Cut(p, "/")
	if !strings.Contains(first, ".") { // the standard library
		for _, bad := range forbiddenStd {
			if p == bad || strings.HasPrefix(p, bad+"/") {
				return "reaches outside the decision (process, files, network or database)"
			}
		}
		return ""
	}
	if !allowedModules[p] {
		return "not an iceberg-go value package nor maintenance"
	}
	return ""
}

// sentinel reports whether the i-th name of spec is a sentinel error,
// errors.New("…").
func sentinel(spec *ast.ValueSpec, i int) bool {
	if i >= len(spec.Values) {
		return false
	}
	call, ok := spec.Values[i].(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "errors" && sel.Sel.Name == "New"
}

// The check itself finds what it is meant to find.
func TestImportsCheck(t *testing.T) {
	for _, tc := range []struct {
		path, want string
	}{
		{"fmt", ""},
		{"time", ""},
		{"io", ""},
		{"os", "reaches"},
		{"os/exec", "reaches"},
		{"net/http", "reaches"},
		{"net", "reaches"},
		{"io/fs", "reaches"},
		{"database/sql", "reaches"},
		{"github.com/apache/iceberg-go", ""},
		{"github.com/apache/iceberg-go/table", ""},
		{"github.com/apache/iceberg-go/io", "not an iceberg-go value package"},
		{"github.com/apache/iceberg-go/catalog", "not an iceberg-go value package"},
		{"github.com/icekeeper/icekeeper/internal/state", "not an iceberg-go value package"},
		{"github.com/icekeeper/icekeeper/orphan", "not an iceberg-go value package"},
	} {
		if got := importProblem(tc.path); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("import %s: %q, want %q", tc.path, got, tc.want)
		}
	}
	dir := t.TempDir()
	src := `package planner

import (
	"errors"

	"github.com/apache/iceberg-go/table"
	icebergio "github.com/apache/iceberg-go/io"
)

var ErrX = errors.New("x")

var cache = map[string]int{}

func f(t *table.Table, fs icebergio.IO, m table.Metadata) { _ = table.Scan{} }
`
	name := filepath.Join(dir, "bad.go")
	if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(impurities(t, name), "\n")
	for _, want := range []string{"imports github.com/apache/iceberg-go/io", "refers to table.Table", "refers to table.Scan",
		"refers to icebergio.IO", "package-level variable cache"} {
		if !strings.Contains(got, want) {
			t.Errorf("missed %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ErrX") || strings.Contains(got, "Metadata") {
		t.Errorf("flagged what is allowed:\n%s", got)
	}
}
