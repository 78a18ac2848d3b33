package kernels

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

const cupyOnly = `import cupy as cp
k = cp.RawKernel(r'''
extern "C" __global__ void axpy(const float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
''', "axpy")
`

const goodSpec = `name: axpy
class: elementwise
symbols: [n]
params:
  - {name: a, kind: scalar, ctype: "const float", dtype: float32, role: scalar, range: [-2, 2]}
  - {name: x, kind: pointer, ctype: "const float*", dtype: float32, role: input, shape: [n]}
  - {name: y, kind: pointer, ctype: "float*", dtype: float32, role: inout, shape: [n]}
  - {name: n, kind: scalar, ctype: int, dtype: int32, role: size, expr: n}
launch:
  grid: ["(n + 255) / 256", "1", "1"]
  block: ["256", "1", "1"]
  shared_bytes: "0"
domain:
  constraints: ["n >= 1"]
deterministic: true
`

func TestUserSpec(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ops.py"), cupyOnly)
	inv, _ := Discover(context.Background(), dir, []string{"ops.py"})
	if len(inv.Kernels) != 1 || inv.Kernels[0].SpecStatus != SpecNeedsSpec {
		t.Fatalf("want one needs-spec kernel, got %+v", inv.Kernels)
	}
	id := inv.Kernels[0].ID
	specPath := filepath.Join(dir, filepath.FromSlash(UserSpecPath(id)))

	writeFile(t, specPath, goodSpec)
	inv, probs := Discover(context.Background(), dir, []string{"ops.py"})
	k := inv.Kernels[0]
	if k.SpecStatus != SpecUser || k.Spec == nil || k.SpecFile != UserSpecPath(id) {
		t.Fatalf("good user spec not used: %s %s %v", k.SpecStatus, k.Reason, probs)
	}
	if k.Spec.ID != id || k.Spec.Schema != SpecSchema || k.Spec.Source.Origin != OriginCuPy {
		t.Errorf("defaults not filled: %+v", k.Spec)
	}

	bad := []struct {
		name, body string
		want       []string
	}{
		{"empty", "", []string{"empty"}},
		{"not yaml", "params: [", []string{"not a valid spec"}},
		{"unknown field", goodSpec + "colour: red\n", []string{"line 16", "colour"}},
		{"wrong type", strings.Replace(goodSpec, "deterministic: true", "deterministic: maybe", 1), []string{"not a valid spec"}},
		{"wrong name", strings.Replace(goodSpec, "name: axpy", "name: saxpy", 1), []string{"name: \"saxpy\" does not match"}},
		{"bad role", strings.Replace(goodSpec, "role: inout", "role: written", 1), []string{"params[2].role"}},
		{"bad dtype", strings.Replace(goodSpec, "dtype: int32", "dtype: int", 1), []string{"params[3].dtype"}},
		{"undeclared symbol", strings.Replace(goodSpec, "shape: [n]}\n  - {name: y", "shape: [m]}\n  - {name: y", 1), []string{"params[1].shape[0]: symbol \"m\""}},
		{"bad expression", strings.Replace(goodSpec, `"(n + 255) / 256"`, `"(n + 255 / 256"`, 1), []string{"launch.grid[0]", "missing )"}},
		{"constraint not comparison", strings.Replace(goodSpec, `"n >= 1"`, `"n + 1"`, 1), []string{"domain.constraints[0]", "not a comparison"}},
		{"param renamed", strings.Replace(goodSpec, "{name: x,", "{name: xs,", 1), []string{"params[1].name: \"xs\""}},
		{"kind mismatch", strings.Replace(goodSpec, "{name: n, kind: scalar", "{name: n, kind: pointer", 1), []string{"params[3].kind"}},
		{"too few params", strings.Replace(goodSpec, "  - {name: n, kind: scalar, ctype: int, dtype: int32, role: size, expr: n}\n", "", 1), []string{"3 given, the kernel axpy takes 4"}},
		{"no outputs", strings.Replace(goodSpec, "role: inout", "role: input", 1), []string{"no output or inout"}},
		{"wrong schema", "schema: pallasify.kernelspec/v0\n" + goodSpec, []string{"schema"}},
		{"tolerance without note", goodSpec + "tolerance: {rtol: 0.1, atol: 0.1}\n", []string{"justified in note"}},
		{"sweep missing symbol", strings.Replace(goodSpec, "  constraints: [\"n >= 1\"]\n", "  constraints: [\"n >= 1\"]\n  sweep: [{m: 3}]\n", 1), []string{"domain.sweep[0]: symbol \"m\" is not declared", "domain.sweep[0]: symbol \"n\" has no value"}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			writeFile(t, specPath, c.body)
			inv, probs := Discover(context.Background(), dir, []string{"ops.py"})
			k := inv.Kernels[0]
			if k.SpecStatus != SpecNeedsSpec || k.Spec != nil {
				t.Errorf("bad spec accepted: %s", k.SpecStatus)
			}
			var msgs []string
			for _, p := range probs {
				if p.Code == CodeBadSpec {
					if p.Path != UserSpecPath(id) || p.Severity != "error" || p.Kernel != id {
						t.Errorf("problem %+v", p)
					}
					msgs = append(msgs, p.Message)
				}
			}
			joined := strings.Join(msgs, "\n")
			if len(msgs) == 0 {
				t.Fatalf("no %s problem", CodeBadSpec)
			}
			for _, w := range c.want {
				if !strings.Contains(joined, w) {
					t.Errorf("messages lack %q:\n%s", w, joined)
				}
			}
		})
	}
}
