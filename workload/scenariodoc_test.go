package workload

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestScenariosDocNamesEveryField: docs/scenarios.md has a section for
// every kind of mapping the scenario reader accepts (every call of
// yamlReader.mapping in this package names the kind and its known fields)
// and a table row for each of its fields, so a field added to the reader
// and not documented fails here.
func TestScenariosDocNamesEveryField(t *testing.T) {
	data, err := os.ReadFile("../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := docSections(string(data))
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	kinds := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "mapping" || len(call.Args) < 3 {
				return true
			}
			var words []string
			for _, a := range call.Args[1:] {
				lit, ok := a.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Errorf("%s: mapping called with a field name that is not a literal", fset.Position(call.Pos()))
					return true
				}
				s, _ := strconv.Unquote(lit.Value)
				words = append(words, s)
			}
			kinds++
			kind, fields := words[0], words[1:]
			section, ok := sections[kind]
			if !ok {
				t.Errorf("docs/scenarios.md has no section %q (%s)", kind, fset.Position(call.Pos()))
				return true
			}
			for _, field := range fields {
				if !strings.Contains(section, "| `"+field+"` |") {
					t.Errorf("docs/scenarios.md, section %q, has no row for the field `%s`", kind, field)
				}
			}
			return true
		})
	}
	// scenario, node pool, taint, queue, job, failure, task, toleration,
	// affinity term, match expression.
	if kinds < 10 {
		t.Errorf("only %d kinds of mapping found in the reader, want 10", kinds)
	}
}

// docSections splits a Markdown document at its "##" and "###" headings and
// returns each section's text by its heading, lowercased, without a leading
// "the ".
func docSections(doc string) map[string]string {
	out := map[string]string{}
	var name string
	var body strings.Builder
	flush := func() {
		if name != "" {
			out[name] = body.String()
		}
		body.Reset()
	}
	for _, line := range strings.Split(doc, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			flush()
			name = strings.TrimPrefix(strings.ToLower(h), "the ")
			continue
		}
		if h, ok := strings.CutPrefix(line, "### "); ok {
			flush()
			name = strings.TrimPrefix(strings.ToLower(h), "the ")
			continue
		}
		body.WriteString(line + "\n")
	}
	flush()
	return out
}
