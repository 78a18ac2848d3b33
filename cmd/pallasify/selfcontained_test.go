package main

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/codes"
)

// outsideRef is text that points a reader at a file outside the repository:
// the project's reference notes (../shared/reference/torchtpu.md and its
// siblings), a section of them ("§7"), or a relative path that climbs out of
// the tree. A rule doc or a message states the fact itself instead.
var outsideRef = regexp.MustCompile(`torchtpu\.md|shared/reference|\b(?:pallas|validation|expectations|style|go-stack)\.md\b|§|\.\./shared\b`)

// outsideRefAllowed are the occurrences of outsideRef that are not
// references: the corpus tool's input, which lives beside the checkout by
// design (cmd/pallasify-corpus, make corpus).
var outsideRefAllowed = []string{"../shared/corpus"}

// climbsOut is a relative path that leaves the directory it starts from
// ("../x"; an ellipsis such as ".../whl" is not one).
var climbsOut = regexp.MustCompile(`(?:^|[^.])\.\./`)

func outsideRefs(s string) []string {
	for _, a := range outsideRefAllowed {
		s = strings.ReplaceAll(s, a, "")
	}
	return outsideRef.FindAllString(s, -1)
}

// TestDocsSelfContained prints every code's doc (`pallasify rules CODE`, the
// list, and the bot's explain) and fails where one cites a file outside the
// repository or climbs out of it with "../": a user reading `pallasify rules`
// has only the binary and the repository.
func TestDocsSelfContained(t *testing.T) {
	io, list, _ := testStreams()
	if err := rulesRun(context.Background(), &rulesOptions{IO: io}); err != nil {
		t.Fatal(err)
	}
	if m := outsideRefs(list.String()); len(m) > 0 || climbsOut.MatchString(list.String()) {
		t.Errorf("`pallasify rules` cites outside the repository: %q", m)
	}
	explain := explainer(nil)
	all := codes.All()
	if len(all) < 100 {
		t.Fatalf("%d codes registered", len(all))
	}
	for _, e := range all {
		id := e.Code.Code
		io, out, _ := testStreams()
		if err := rulesRun(context.Background(), &rulesOptions{IO: io, Code: id}); err != nil {
			t.Errorf("rules %s: %v", id, err)
			continue
		}
		doc, _ := explain(id)
		for what, text := range map[string]string{"rules " + id: out.String(), "explain " + id: doc, id + " Doc": e.Doc} {
			if m := outsideRefs(text); len(m) > 0 {
				t.Errorf("%s cites outside the repository: %q; state the fact in the doc", what, m)
			}
			for _, line := range strings.Split(text, "\n") {
				if climbsOut.MatchString(line) {
					t.Errorf("%s has a path outside the repository: %q", what, line)
				}
			}
		}
	}
}

// TestSourceSelfContained scans the comments and string literals of every
// non-test Go file of the module, the Python the product runs and the LLM
// prompts for references to files outside the repository (outsideRef): the
// messages, rule docs and the code's own documentation must state what those
// notes said.
func TestSourceSelfContained(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	goFiles, otherFiles := 0, 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".venv", "testdata", "node_modules", "bin", ".bench":
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			goFiles++
			for _, cg := range f.Comments {
				for _, c := range cg.List {
					if m := outsideRefs(c.Text); len(m) > 0 {
						t.Errorf("%s: comment cites outside the repository: %q", fset.Position(c.Pos()), m)
					}
				}
			}
			for _, lit := range stringLiterals(f) {
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					continue
				}
				if m := outsideRefs(s); len(m) > 0 {
					t.Errorf("%s: string cites outside the repository: %q", fset.Position(lit.Pos()), m)
				}
			}
		case (strings.HasPrefix(rel, "validators"+string(filepath.Separator)) && strings.HasSuffix(path, ".py") &&
			!strings.HasPrefix(d.Name(), "test_")) ||
			(strings.HasPrefix(rel, "prompts"+string(filepath.Separator)) && !strings.HasSuffix(path, ".go")):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			otherFiles++
			for i, line := range strings.Split(string(b), "\n") {
				if m := outsideRefs(line); len(m) > 0 {
					t.Errorf("%s:%d cites outside the repository: %q", rel, i+1, m)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if goFiles < 100 || otherFiles < 5 {
		t.Fatalf("scanned %d Go files and %d Python/prompt files: the walk missed the module", goFiles, otherFiles)
	}
}

// stringLiterals are the string literals of f.
func stringLiterals(f *ast.File) []*ast.BasicLit {
	var lits []*ast.BasicLit
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			lits = append(lits, lit)
		}
		return true
	})
	return lits
}
