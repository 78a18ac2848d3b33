package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/pallasify/pallasify"

// layer is a package's place in the layout: cmd, pipeline, validators,
// transforms or prompts (by its first path element under the module).
func layer(pkg string) string {
	rest := strings.TrimPrefix(pkg, module+"/")
	if rest == pkg {
		return ""
	}
	first, _, _ := strings.Cut(rest, "/")
	return first
}

// allowed are the layers each layer may import (besides its own): arrows
// point down — cmd may import anything; pipeline drives validators and
// transforms; validators prove what transforms draft; transforms (the rules
// and both drafters) depend on no stage; prompts serve the LLM drafter and
// read only transforms.
var allowed = map[string][]string{
	"cmd":        {"pipeline", "validators", "transforms", "prompts"},
	"pipeline":   {"validators", "transforms", "prompts"},
	"validators": {"transforms"},
	"transforms": {"prompts"},
	"prompts":    {"transforms"},
}

// upward lists the imports of pkgs (package → its imports) that break the
// layering, and packages outside the known layers.
func upward(pkgs map[string][]string) []string {
	var bad []string
	for pkg, imps := range pkgs {
		from := layer(pkg)
		ok, known := allowed[from]
		if !known {
			bad = append(bad, pkg+": not under cmd/, pipeline/, validators/, transforms/ or prompts/")
			continue
		}
		for _, imp := range imps {
			to := layer(imp)
			if to == "" || to == from {
				continue
			}
			if !slices.Contains(ok, to) {
				bad = append(bad, pkg+" imports "+imp)
			}
		}
	}
	return bad
}

func TestLayeringCatchesUpwardImports(t *testing.T) {
	got := upward(map[string][]string{
		module + "/validators":          {module + "/pipeline", module + "/transforms/kernels"},
		module + "/transforms/llm":      {module + "/validators/sandbox", module + "/prompts"},
		module + "/prompts":             {module + "/transforms/kernels"},
		module + "/llm":                 {module + "/prompts"},
		module + "/pipeline/batch":      {module + "/cmd/pallasify"},
		module + "/cmd/pallasify":       {module + "/pipeline", module + "/validators"},
		module + "/transforms/pallas":   {module + "/transforms/kernels", "strings"},
		module + "/validators/emulator": {module + "/transforms/kernels"},
	})
	want := []string{
		module + "/validators imports " + module + "/pipeline",
		module + "/transforms/llm imports " + module + "/validators/sandbox",
		module + "/llm: not under cmd/, pipeline/, validators/, transforms/ or prompts/",
		module + "/pipeline/batch imports " + module + "/cmd/pallasify",
	}
	if strings.Join(sorted(got), "\n") != strings.Join(sorted(want), "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(sorted(got), "\n"), strings.Join(sorted(want), "\n"))
	}
}

// TestLayering: no package of the module imports upward (go list's
// non-test imports of every package).
func TestLayering(t *testing.T) {
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = p.Imports
	}
	if len(pkgs) < 10 || pkgs[module+"/pipeline"] == nil {
		t.Fatalf("go list gave %d packages", len(pkgs))
	}
	for _, b := range sorted(upward(pkgs)) {
		t.Error(b)
	}
}

func sorted(xs []string) []string {
	out := append([]string(nil), xs...)
	slices.Sort(out)
	return out
}

// TestReadmeLayout: the README's layout table names every folder (two
// levels deep) that holds a package, and every folder it names exists.
func TestReadmeLayout(t *testing.T) {
	repo := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n### Layout\n")
	if !ok {
		t.Fatal("README.md has no ### Layout section")
	}
	named := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		base := ""
		for _, tok := range strings.Split(cells[1], "`") {
			tok = strings.TrimSpace(tok)
			if tok == "" || strings.ContainsAny(tok, " ,") || tok == "folder" || strings.HasPrefix(tok, "-") {
				continue
			}
			if strings.Contains(tok, "/") {
				base = filepath.Dir(tok)
			} else if base != "" && base != "." {
				tok = base + "/" + tok
			}
			named[tok] = true
		}
	}
	for dir := range named {
		if _, err := os.Stat(filepath.Join(repo, filepath.FromSlash(dir))); err != nil {
			t.Errorf("the layout names %s, which does not exist", dir)
		}
	}
	list := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	list.Dir = repo
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	abs, _ := filepath.Abs(repo)
	if n := len(strings.Fields(string(out))); n < 10 {
		t.Fatalf("go list gave %d packages", n)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(abs, dir)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		key := strings.Join(parts[:min(2, len(parts))], "/")
		if !named[key] {
			t.Errorf("the README's layout table does not name %s (package %s)", key, rel)
		}
	}
}
