package kernels

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// repoRoot is the module root, where fixtures/ lives.
const repoRoot = "../.."

func fixtureFiles(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(repoRoot, "fixtures/kernels/*/kernel.cu"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no fixture kernels: %v", err)
	}
	var out []string
	for _, p := range m {
		rel, _ := filepath.Rel(repoRoot, p)
		out = append(out, filepath.ToSlash(rel))
	}
	sort.Strings(out)
	return out
}

// TestFixtureSpecs infers a spec for every fixture kernel and compares it with
// the hand-written spec.json on what matters: params (name, kind, ctype,
// dtype, role, shape, expr), template args, launch, symbols, constraints (as
// domains), determinism, class and source. Symbol names may differ (a
// bijection is derived from the size parameters and shapes); the sweep may
// differ. A kernel may come out needs-spec, never wrong.
func TestFixtureSpecs(t *testing.T) {
	files := fixtureFiles(t)
	inv, _ := Discover(context.Background(), repoRoot, files)
	exact, needs := 0, 0
	for _, f := range files {
		dir := filepath.Dir(f)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(repoRoot, dir, "spec.json"))
			if err != nil {
				t.Fatalf("every fixture kernel has a spec.json: %v", err)
			}
			var want Spec
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("spec.json: %v", err)
			}
			var k *Kernel
			for _, x := range inv.Kernels {
				if x.Path == f && x.Name == want.Name {
					k = x
				}
			}
			if k == nil {
				t.Fatalf("kernel %s not discovered in %s", want.Name, f)
			}
			if k.SpecStatus == SpecNeedsSpec {
				needs++
				t.Logf("needs-spec: %s", k.Reason)
				return
			}
			if diffs := compareSpecs(k.Spec, &want); len(diffs) > 0 {
				t.Errorf("inferred spec differs from spec.json:\n  %s", strings.Join(diffs, "\n  "))
				js, _ := json.MarshalIndent(k.Spec, "", "  ")
				t.Logf("inferred:\n%s", js)
				return
			}
			exact++
		})
	}
	t.Logf("fixture specs inferred exactly: %d of %d (needs-spec: %d)", exact, len(files), needs)
	// all eleven are inferred today; a regression to needs-spec must be seen
	if exact < 11 {
		t.Errorf("only %d of %d fixture specs inferred exactly, want 11", exact, len(files))
	}
}

// compareSpecs lists the differences that matter between got and want.
func compareSpecs(got, want *Spec) []string {
	var d []string
	diff := func(format string, a ...any) { d = append(d, fmt.Sprintf(format, a...)) }
	if got.Name != want.Name {
		diff("name %q, want %q", got.Name, want.Name)
	}
	if got.Class != want.Class {
		diff("class %q, want %q", got.Class, want.Class)
	}
	if got.Source.Path != want.Source.Path || got.Source.Line != want.Source.Line || got.Source.Origin != want.Source.Origin {
		diff("source %+v, want %+v", got.Source, want.Source)
	}
	if !reflect.DeepEqual(got.TemplateArgs, want.TemplateArgs) {
		diff("template_args %v, want %v", got.TemplateArgs, want.TemplateArgs)
	}
	if got.Deterministic != want.Deterministic {
		diff("deterministic %v, want %v", got.Deterministic, want.Deterministic)
	}
	if got.FastMath != want.FastMath {
		diff("fast_math %v, want %v", got.FastMath, want.FastMath)
	}
	if len(got.Params) != len(want.Params) {
		diff("%d params, want %d", len(got.Params), len(want.Params))
		return d
	}
	ren, err := symbolMap(got, want)
	if err != nil {
		diff("symbols: %v", err)
		return d
	}
	var gs []string
	for _, s := range got.Symbols {
		gs = append(gs, ren[s])
	}
	ws := append([]string(nil), want.Symbols...)
	sort.Strings(gs)
	sort.Strings(ws)
	if !reflect.DeepEqual(gs, ws) {
		diff("symbols %v (renamed), want %v", gs, ws)
	}
	same := func(field, a, b string) {
		ea, err1 := ParseExpr(a)
		eb, err2 := ParseExpr(b)
		if err1 != nil || err2 != nil {
			diff("%s: %q vs %q: %v %v", field, a, b, err1, err2)
			return
		}
		if !Equivalent(ea.Rename(ren), eb) {
			diff("%s = %q, want %q", field, ea.Rename(ren), b)
		}
	}
	for i := range want.Params {
		g, w := got.Params[i], want.Params[i]
		f := "params." + w.Name
		if g.Name != w.Name || g.Kind != w.Kind || g.CType != w.CType || g.DType != w.DType || g.Role != w.Role {
			diff("%s: {%s %s %q %s %s}, want {%s %s %q %s %s}", f, g.Name, g.Kind, g.CType, g.DType, g.Role, w.Name, w.Kind, w.CType, w.DType, w.Role)
		}
		if len(g.Shape) != len(w.Shape) {
			diff("%s.shape %v, want %v", f, g.Shape, w.Shape)
		} else {
			for j := range w.Shape {
				same(fmt.Sprintf("%s.shape[%d]", f, j), g.Shape[j], w.Shape[j])
			}
		}
		if (g.Expr == "") != (w.Expr == "") {
			diff("%s.expr %q, want %q", f, g.Expr, w.Expr)
		} else if w.Expr != "" {
			same(f+".expr", g.Expr, w.Expr)
		}
		if w.Value != nil && (g.Value == nil || *g.Value != *w.Value) {
			diff("%s.value %v, want %v", f, g.Value, *w.Value)
		}
	}
	for i := range 3 {
		same(fmt.Sprintf("launch.grid[%d]", i), got.Launch.Grid[i], want.Launch.Grid[i])
		same(fmt.Sprintf("launch.block[%d]", i), got.Launch.Block[i], want.Launch.Block[i])
	}
	same("launch.shared_bytes", got.Launch.SharedBytes, want.Launch.SharedBytes)
	gc, err1 := conjunction(got.Domain.Constraints)
	wc, err2 := conjunction(want.Domain.Constraints)
	if err1 != nil || err2 != nil {
		diff("constraints: %v %v", err1, err2)
	} else if !Equivalent(gc.Rename(ren), wc) {
		diff("constraints %v define another domain than %v", got.Domain.Constraints, want.Domain.Constraints)
	}
	return d
}

func conjunction(cs []string) (*Expr, error) {
	e := Lit(1)
	for _, c := range cs {
		x, err := ParseExpr(c)
		if err != nil {
			return nil, err
		}
		e = &Expr{Op: "&&", L: e, R: x}
	}
	return e, nil
}

// symbolMap derives the renaming got-symbol -> want-symbol from size
// parameters and single-symbol shape dimensions; it must be a bijection.
func symbolMap(got, want *Spec) (map[string]string, error) {
	m := map[string]string{}
	inv := map[string]string{}
	bind := func(a, b string) error {
		ea, err1 := ParseExpr(a)
		eb, err2 := ParseExpr(b)
		if err1 != nil || err2 != nil || ea.Op != "sym" || eb.Op != "sym" {
			return nil
		}
		if x, ok := m[ea.Name]; ok && x != eb.Name {
			return fmt.Errorf("%s maps to both %s and %s", ea.Name, x, eb.Name)
		}
		if x, ok := inv[eb.Name]; ok && x != ea.Name {
			return fmt.Errorf("%s is the image of both %s and %s", eb.Name, x, ea.Name)
		}
		m[ea.Name], inv[eb.Name] = eb.Name, ea.Name
		return nil
	}
	for i := range want.Params {
		if i >= len(got.Params) {
			break
		}
		if err := bind(got.Params[i].Expr, want.Params[i].Expr); err != nil {
			return nil, err
		}
		if len(got.Params[i].Shape) == len(want.Params[i].Shape) {
			for j := range want.Params[i].Shape {
				if err := bind(got.Params[i].Shape[j], want.Params[i].Shape[j]); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, s := range got.Symbols {
		if _, ok := m[s]; !ok {
			if _, taken := inv[s]; taken {
				return nil, fmt.Errorf("symbol %s has no image", s)
			}
			m[s], inv[s] = s, s
		}
	}
	return m, nil
}

// TestCompareSpecsCatchesErrors makes sure the comparison can fail.
func TestCompareSpecsCatchesErrors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "fixtures/kernels/matmul_tiled/spec.json"))
	if err != nil {
		t.Fatalf("fixture missing: %v", err)
	}
	var want Spec
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	mutate := []func(s *Spec){
		func(s *Spec) { s.Params[2].Role = "inout" },
		func(s *Spec) { s.Params[0].Shape = []string{"k", "m"} },
		func(s *Spec) { s.Launch.Grid[0] = "n / 16" },
		func(s *Spec) { s.Domain.Constraints = append(s.Domain.Constraints, "k % 16 == 0") },
		func(s *Spec) { s.Params[1].DType = "float16" },
		func(s *Spec) { s.Launch.Block[1] = "8" },
		func(s *Spec) { s.Params[3].Expr = "n" },
	}
	for i, mut := range mutate {
		var got Spec
		_ = json.Unmarshal(b, &got)
		mut(&got)
		if d := compareSpecs(&got, &want); len(d) == 0 {
			t.Errorf("mutation %d not detected", i)
		}
	}
	var same Spec
	_ = json.Unmarshal(b, &same)
	if d := compareSpecs(&same, &want); len(d) != 0 {
		t.Errorf("identical specs differ: %v", d)
	}
}
