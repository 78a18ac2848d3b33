package kernels_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators/emulator"
)

// TestFixtureUnitsCompileAgainstEmulator type-checks every isolated fixture
// TU, prepared by emulator.Prepare and instantiated as KernelFromSpec names
// it from the inferred spec, against cudaemu.h (g++ -fsyntax-only, one run;
// the validators' tests build and run the references).
func TestFixtureUnitsCompileAgainstEmulator(t *testing.T) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("g++ not installed")
	}
	m, _ := filepath.Glob("../../fixtures/kernels/*/kernel.cu")
	var files []string
	for _, p := range m {
		rel, _ := filepath.Rel("../..", p)
		files = append(files, filepath.ToSlash(rel))
	}
	sort.Strings(files)
	inv, _ := kernels.Discover(context.Background(), "../..", files)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, emulator.HeaderName), []byte(emulator.Header()), 0o644); err != nil {
		t.Fatal(err)
	}
	// One compiler run for all units: includes hoisted, each unit in its own
	// namespace, its macros undefined after it.
	var incs, body strings.Builder
	for i, k := range inv.Kernels {
		if k.Spec == nil && k.SpecStatus == kernels.SpecNeedsSpec {
			// A kernel whose spec cannot be inferred (leaky_relu_vec4: float4
			// pointers) is compiled with the fixture's hand-written spec, as a
			// user's .pallasify/kernels/<id>.yaml would supply it.
			k.Spec = fixtureSpec(t, k.Path)
		}
		if k.Unit == nil || k.Spec == nil {
			t.Errorf("%s: no unit or spec", k.Name)
			continue
		}
		tu, probs := emulator.Prepare(k.Unit.Source)
		if emulator.HasErrors(probs) {
			t.Errorf("%s: emulator.Prepare: %+v", k.Name, probs)
			continue
		}
		ek, err := emulator.KernelFromSpec(tu, k.Spec)
		if err != nil {
			t.Errorf("%s: %v", k.Name, err)
			continue
		}
		if ek.Instance() != k.Unit.Entry {
			t.Errorf("%s: emulator instance %q, unit entry %q", k.Name, ek.Instance(), k.Unit.Entry)
		}
		var undef []string
		var lines []string
		for _, l := range strings.Split(tu, "\n") {
			tl := strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(tl, "#include"):
				incs.WriteString(tl + "\n")
				l = ""
			case strings.HasPrefix(tl, "#define "):
				name := strings.Fields(tl)[1]
				if j := strings.IndexByte(name, '('); j >= 0 {
					name = name[:j]
				}
				undef = append(undef, "#undef "+name)
			}
			lines = append(lines, l)
		}
		fmt.Fprintf(&body, "namespace unit%d {\n%s\nvoid* use%d = (void*)&%s;\n}\n%s\n", i, strings.Join(lines, "\n"), i, ek.Instance(), strings.Join(undef, "\n"))
	}
	p := filepath.Join(dir, "units.cc")
	if err := os.WriteFile(p, []byte("#include \"cudaemu.h\"\n"+incs.String()+body.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cxx, "-std=c++20", "-fsyntax-only", "-I", dir, p).CombinedOutput()
	if err != nil {
		t.Errorf("isolated units do not compile against the emulator:\n%s", emulator.TrimLog(string(out)))
	}
}

func fixtureSpec(t *testing.T, kernelPath string) *kernels.Spec {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../..", filepath.Dir(kernelPath), "spec.json"))
	if err != nil {
		t.Errorf("needs-spec fixture without spec.json: %v", err)
		return nil
	}
	var s kernels.Spec
	if err := json.Unmarshal(data, &s); err != nil {
		t.Errorf("%s: %v", kernelPath, err)
		return nil
	}
	return &s
}
