package main

import (
	"encoding/json"
	"errors"
	"io"
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
