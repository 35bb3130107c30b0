package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLinesGoThroughText: every line contain writes of its own ("contain:
// ...", "contain[PID]: ...") whose arguments are not constants goes
// through internal/text (Fprintf, Logger, Line), which shows each
// argument Printable: a process's name, argv, tag or path can carry a
// terminal's escape or a newline that forges a line (SECURITY.md). A
// fmt.Fprintf or fmt.Printf of such a line, a logger that hands its
// format and arguments to fmt, or a Write of "contain: " + a string fails
// here, so a new line cannot forget to escape.
func TestLinesGoThroughText(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "bench", ".git", "tests":
				return filepath.SkipDir
			}
			if path == filepath.Join("internal", "text") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if why := rawLine(call); why != "" {
				t.Errorf("%s: %s: write it with text.Fprintf, text.Logger or text.Line, which escape what other processes say", fset.Position(call.Pos()), why)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rawLine says why call writes one of contain's lines with an argument
// that is not escaped, or "".
func rawLine(call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	pkg, _ := sel.X.(*ast.Ident)
	switch {
	case pkg != nil && pkg.Name == "fmt" && (sel.Sel.Name == "Fprintf" || sel.Sel.Name == "Printf" || sel.Sel.Name == "Fprintln" || sel.Sel.Name == "Println" || sel.Sel.Name == "Fprint" || sel.Sel.Name == "Print"):
		args := call.Args
		if strings.HasPrefix(sel.Sel.Name, "F") && len(args) > 0 {
			args = args[1:]
		}
		if len(args) == 0 {
			return ""
		}
		if lit, ok := args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s, _ := strconv.Unquote(lit.Value)
			if strings.HasPrefix(s, "contain") && len(args) > 1 {
				return "fmt." + sel.Sel.Name + " of a contain line with arguments"
			}
			return ""
		}
		// A logger's body: fmt.Fprintf(w, prefix+format+"\n", args...).
		if mentions(args[0], "format") && call.Ellipsis.IsValid() {
			return "fmt." + sel.Sel.Name + " of a logger's format and arguments"
		}
	case sel.Sel.Name == "Write" || sel.Sel.Name == "WriteString":
		for _, a := range call.Args {
			if containConcat(a) {
				return sel.Sel.Name + " of \"contain...\" joined to a string"
			}
		}
	}
	return ""
}

// mentions reports whether e names ident anywhere.
func mentions(e ast.Expr, ident string) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == ident {
			found = true
		}
		return !found
	})
	return found
}

// containConcat reports whether e holds "contain..." + something.
func containConcat(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryExpr)
		if !ok || b.Op != token.ADD {
			return !found
		}
		l := b.X
		for {
			if bb, ok := l.(*ast.BinaryExpr); ok && bb.Op == token.ADD {
				l = bb.X
				continue
			}
			break
		}
		if lit, ok := l.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s, _ := strconv.Unquote(lit.Value)
			found = found || strings.HasPrefix(s, "contain")
		}
		return !found
	})
	return found
}
