package validators

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGateOnFixtureCandidates: every proven fixture candidate passes the
// static gate; each kind of bad draft is refused with its reason.
func TestGateOnFixtureCandidates(t *testing.T) {
	py := testPython(t)
	fx, err := LoadFixtures(filepath.Join("..", "fixtures", "kernels"))
	if err != nil || len(fx) == 0 {
		t.Fatalf("fixtures: %d, %v", len(fx), err)
	}
	g := &Gate{Python: py}
	var items []GateItem
	var names []string
	for _, f := range fx {
		code, err := os.ReadFile(f.Candidate)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, GateItem{Code: code, Class: f.Spec.Class, Name: f.Spec.Name})
		names = append(names, f.Name)
	}
	good := len(items)
	bad := []struct{ code, want string }{
		{"def run(args, *, interpret):\n    return {\n", "syntax error"},
		{"import jax\n", "no top-level `def run"},
		{"from jax.experimental import pallas as pl\npl.pallas_call(None, None, grid_spex=1)\ndef run(args, *, interpret):\n    pass\n", "no keyword argument 'grid_spex'"},
		{"import jax.numpy as jnp\nfrom jax.experimental import pallas as pl\ndef run(args, *, interpret):\n    return jnp.cumsum(args['x']), pl.pallas_call\n", "call to jax.numpy.cumsum"},
		{"import subprocess\nfrom jax.experimental import pallas as pl\ndef run(args, *, interpret):\n    pl.pallas_call\n", "import of 'subprocess'"},
		{"from jax.experimental.pallas import tpu as pltpu\nx = pltpu.VMEMx\ndef run(args, *, interpret):\n    pass\n", "pltpu.VMEMx does not exist"},
		{"from jax.experimental import pallas as pl\nfrom jax.experimental.pallas import BlockSpecs\ndef run(args, *, interpret):\n    pl.pallas_call\n", "BlockSpecs does not exist"},
		// issue 32: numpy.ctypeslib's ctypes, and numpy's file readers
		{"import numpy.ctypeslib as nc\nfrom jax.experimental import pallas as pl\ndef run(args, *, interpret):\n    nc.ctypes.CDLL(None).system(b'id'); pl.pallas_call\n", "banned: import of 'numpy.ctypeslib'"},
		{"import numpy as np\nfrom jax.experimental import pallas as pl\ndef run(args, *, interpret):\n    np.ctypeslib.ctypes.CDLL(None); pl.pallas_call\n", "module 'numpy.ctypeslib'"},
		{"import numpy as np\nfrom jax.experimental import pallas as pl\ndef run(args, *, interpret):\n    np.fromfile('/etc/passwd'); pl.pallas_call\n", "file I/O is not allowed"},
		{"import jax.numpy as jnp\nfrom jax.experimental import pallas as pl\ndef run(args, interpret):\n    jnp.dot(1, 2, precison=None); pl.pallas_call\n", "no keyword argument 'precison'"},
	}
	for _, b := range bad {
		items = append(items, GateItem{Code: []byte(b.code), Class: "scan", Name: "scan_kernel"})
	}
	res, err := g.CheckAll(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	for i := range good {
		if !res[i].OK() {
			t.Errorf("%s: proven candidate refused by the gate:\n%s", names[i], res[i])
		}
	}
	for i, b := range bad {
		r := res[good+i]
		if r.OK() || !strings.Contains(r.String(), b.want) {
			t.Errorf("gate on %q: %s; want %q", b.code, r, b.want)
		}
	}
	if !strings.Contains(res[len(res)-1].String(), "run must be declared exactly as") {
		t.Errorf("contract: %s", res[len(res)-1])
	}
	// Check (draft.Gate) gives the same problems as text.
	p, err := g.Check(context.Background(), items[good+4].Code, "scan", "scan_kernel")
	if err != nil || !strings.Contains(p, "import of 'subprocess'") {
		t.Errorf("Check: %q, %v", p, err)
	}
}

// Under --no-sandbox the gate passes no LLM draft (so none runs unconfined)
// unless the user opted in by name; it does not even start Python.
func TestGateRefusesUnsandboxedLLMCode(t *testing.T) {
	good := []byte("from jax.experimental import pallas as pl\ndef run(args, *, interpret):\n    return pl.pallas_call\n")
	_, err := (&Gate{NoSandbox: true, Python: "/nonexistent/python"}).Check(context.Background(), good, "elementwise", "add")
	if !errors.Is(err, ErrUnsandboxedLLM) {
		t.Fatalf("gate under --no-sandbox: %v, want ErrUnsandboxedLLM", err)
	}
	py := testPython(t)
	p, err := (&Gate{NoSandbox: true, UnsandboxedLLMCode: true, Python: py}).Check(context.Background(), good, "elementwise", "add")
	if err != nil || p != "" {
		t.Fatalf("gate with --unsandboxed-llm-code: %q, %v", p, err)
	}
}
