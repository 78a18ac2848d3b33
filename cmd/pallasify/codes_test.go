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
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/codes"
)

// codeLiteral is a Go string literal that is a code, or starts with one
// followed by ": " (a reason such as "L-GATE: " + detail).
var codeLiteral = regexp.MustCompile(`^(P[A-Z]{2}\d{3}|[A-Z]{1,4}-[A-Z][A-Z0-9-]+)(: .*)?$`)

// codeInText is a code inside a longer literal, followed by ": " (a message
// such as "pallasify hostbuild: EMU-MISSING-SYMBOL: ...").
var codeInText = regexp.MustCompile(`\b(P[A-Z]{2}\d{3}|[A-Z]{1,4}-[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*): `)

// pyQuoted is a code quoted whole in Python source ("V-MISMATCH").
var pyQuoted = regexp.MustCompile(`["'](P[A-Z]{2}\d{3}|[A-Z]{1,4}-[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*)["']`)

// notCodes are literals of that shape that are not diagnostic codes, with
// why (none today: add one only for a literal that is no code).
var notCodes = map[string]string{}

// TestEveryRaisedCodeIsRegistered scans every non-test Go file of the module
// and the validators' Python
// (go/parser, string literals) for literals that look like codes, or hold
// one followed by ": ", and fails
// for any that the code registry, as this binary links it, does not hold.
func TestEveryRaisedCodeIsRegistered(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	seen := map[string]string{}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".venv", "testdata", "node_modules", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			found := codeInText.FindAllStringSubmatch(s, -1)
			if m := codeLiteral.FindStringSubmatch(s); m != nil {
				found = append(found, m)
			}
			for _, m := range found {
				if _, ok := seen[m[1]]; !ok {
					seen[m[1]] = fset.Position(lit.Pos()).String()
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The Python the product runs (the harness, the host runtime) raises
	// codes too: quoted whole, or in a message followed by ": ".
	pyFiles := 0
	err = filepath.WalkDir(filepath.Join(root, "validators"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "tests" || d.Name() == "testdata" || d.Name() == "fixtures" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".py") || strings.HasPrefix(d.Name(), "test_") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pyFiles++
		for i, line := range strings.Split(string(b), "\n") {
			found := codeInText.FindAllStringSubmatch(line, -1)
			found = append(found, pyQuoted.FindAllStringSubmatch(line, -1)...)
			for _, m := range found {
				if _, ok := seen[m[1]]; !ok {
					seen[m[1]] = path + ":" + strconv.Itoa(i+1)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pyFiles < 5 {
		t.Fatalf("scanned %d Python files under validators/", pyFiles)
	}
	if files < 100 || len(seen) < 100 {
		t.Fatalf("scanned %d files, %d code literals: the walk missed the module", files, len(seen))
	}
	var missing []string
	for code, where := range seen {
		if _, ok := notCodes[code]; ok {
			continue
		}
		if _, ok := codes.Lookup(code); !ok {
			missing = append(missing, code+" ("+where+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("code %s is raised but not in the code registry (transforms/codes)", m)
	}
	for code := range notCodes {
		if _, ok := codes.Lookup(code); ok {
			t.Errorf("%s is on the not-a-code list but registered", code)
		}
	}
}

// TestEveryCodeDocumented: every registered code has a name, a title and a
// doc, `pallasify rules` lists it and `pallasify rules CODE` prints its doc,
// as does the bot's explain.
func TestEveryCodeDocumented(t *testing.T) {
	all := codes.All()
	io, list, _ := testStreams()
	if err := rulesRun(context.Background(), &rulesOptions{IO: io}); err != nil {
		t.Fatal(err)
	}
	explain := explainer(nil)
	families := map[string]int{}
	for _, e := range all {
		families[e.Family()]++
		id := e.Code.Code
		if strings.TrimSpace(e.Name) == "" || strings.TrimSpace(e.Title) == "" || strings.TrimSpace(e.Doc) == "" {
			t.Errorf("%s: empty name, title or doc", id)
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + `\s`).MatchString(list.String()) {
			t.Errorf("`pallasify rules` does not list %s", id)
		}
		io, out, _ := testStreams()
		if err := rulesRun(context.Background(), &rulesOptions{IO: io, Code: strings.ToLower(id)}); err != nil {
			t.Errorf("rules %s: %v", id, err)
			continue
		}
		first, _, _ := strings.Cut(strings.TrimSpace(e.Doc), "\n")
		if e.Rule {
			first = e.Title // a rule's page prints the title in its header line
		}
		if !strings.HasPrefix(out.String(), id+" ") || !strings.Contains(out.String(), first) {
			t.Errorf("rules %s prints %q, not its doc", id, strings.SplitN(out.String(), "\n", 2)[0])
		}
		if doc, ok := explain(id); !ok || !strings.Contains(doc, first) {
			t.Errorf("explain %s: %q", id, doc)
		}
	}
	for _, f := range []string{"PDV", "PIO", "PKN", "PPL", "PTR", "PDR", "CAP-", "EMU-", "SBX-", "L-", "V-"} {
		if families[f] == 0 {
			t.Errorf("no %s code registered", f)
		}
	}
	t.Logf("%d codes: %v", len(all), families)
}
