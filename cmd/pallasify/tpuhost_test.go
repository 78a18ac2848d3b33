package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stackPython is the venv's interpreter with torch, torch-tpu and jax; the
// test skips without it, and fails under make (PALLASIFY_REQUIRE_STACK).
func stackPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("PALLASIFY_PYTHON")
	if py == "" {
		py, _ = filepath.Abs(filepath.Join("..", "..", ".venv", "bin", "python"))
	}
	if _, err := os.Stat(py); err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") != "" {
			t.Fatalf("PALLASIFY_REQUIRE_STACK is set but the Python stack is missing (%s)", py)
		}
		t.Skip("no Python venv (make venv)")
	}
	return py
}

// TestVerifyTPUFixtures runs `pallasify verify --tpu --against migrated
// original -- python main.py` on each case of fixtures/tpuhost and checks
// what the simulated TPU host found against the case's want.json: a CUDA-only
// branch reached on the TPU path (PTH002), an op without a TPU kernel
// (PTH001), a custom CUDA op on tpu tensors (PTH003), a tpu/CPU mix-up
// (PTH004), a jax_op Pallas kernel executing, and a clean run whose device
// checks all take the TPU branch. JSON output, exit codes and call sites.
func TestVerifyTPUFixtures(t *testing.T) {
	if testing.Short() {
		t.Skip("short: runs torch in the sandbox")
	}
	py := stackPython(t)
	cases, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "tpuhost", "*", "want.json"))
	if len(cases) < 6 {
		t.Fatalf("fixtures/tpuhost has %d cases", len(cases))
	}
	for _, wf := range cases {
		dir := filepath.Dir(wf)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var want struct {
				Same   bool              `json:"same"`
				Codes  map[string]string `json:"codes"`
				JaxOps int               `json:"jax_ops"`
			}
			b, err := os.ReadFile(wf)
			if err != nil || json.Unmarshal(b, &want) != nil {
				t.Fatalf("%s: %v", wf, err)
			}
			io, out, errOut := testStreams()
			o := &verifyOptions{IO: io, Against: filepath.Join(dir, "migrated"), Python: py, Timeout: 5 * time.Minute,
				Command: []string{"python", "main.py"}, TPU: true, TPUDevices: 1, TPUPrecision: "highest", TPUFallback: "record"}
			o.Path, o.Format, o.Target = filepath.Join(dir, "original"), "json", "tpu"
			err = runVerify(context.Background(), o)
			clean := want.Same && len(want.Codes) == 0
			if code := exitCode(err); (code == 0) != clean || code == 2 {
				t.Errorf("exit %d (%v); want %v clean\n%s", code, err, clean, errOut)
			}
			var got struct {
				Same     bool `json:"same"`
				Clean    bool `json:"clean"`
				Migrated struct {
					Stderr string `json:"stderr"`
				}
				TPU struct {
					UnsupportedOps []struct{ Op, Site string }  `json:"unsupported_ops"`
					CUDAOnlyCalls  []struct{ API, Site string } `json:"cuda_only_calls"`
					CustomCUDAOps  []struct{ Op, Site string }  `json:"custom_cuda_ops"`
					DeviceMixups   []struct{ Op, Site string }  `json:"device_mixups"`
					JaxOps         []struct {
						Name  string
						Count int
					} `json:"jax_ops"`
					Errors []string `json:"errors"`
				} `json:"tpu"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("--format json printed %q: %v", out.String(), err)
			}
			if got.Same != want.Same {
				t.Errorf("same = %v; want %v (migrated stderr: %s)", got.Same, want.Same, got.Migrated.Stderr)
			}
			sites := map[string][]string{}
			for _, u := range got.TPU.UnsupportedOps {
				sites["PTH001"] = append(sites["PTH001"], u.Site)
			}
			for _, c := range got.TPU.CUDAOnlyCalls {
				sites["PTH002"] = append(sites["PTH002"], c.Site)
			}
			for _, c := range got.TPU.CustomCUDAOps {
				sites["PTH003"] = append(sites["PTH003"], c.Site)
			}
			for _, m := range got.TPU.DeviceMixups {
				sites["PTH004"] = append(sites["PTH004"], m.Site)
			}
			for code, site := range want.Codes {
				if len(sites[code]) == 0 || sites[code][0] != site {
					t.Errorf("%s at %v; want first at %s", code, sites[code], site)
				}
			}
			for code, s := range sites {
				if _, ok := want.Codes[code]; !ok {
					t.Errorf("unexpected %s at %v", code, s)
				}
			}
			n := 0
			for _, j := range got.TPU.JaxOps {
				n += j.Count
			}
			if n != want.JaxOps {
				t.Errorf("jax_op kernels ran %d times; want %d", n, want.JaxOps)
			}
			if len(got.TPU.Errors) > 0 {
				t.Errorf("the simulated host's own errors: %v", got.TPU.Errors)
			}
		})
	}
}

// TestOpsTable: `pallasify ops` runs the original (unmigrated) command,
// lists the op TorchTPU lacks with its code and call site, and exits 1; a
// workload whose ops all have TPU kernels exits 0.
func TestOpsTable(t *testing.T) {
	if testing.Short() {
		t.Skip("short: runs torch in the sandbox")
	}
	py := stackPython(t)
	run := func(dir string, all bool) (int, string) {
		io, out, errOut := testStreams()
		o := &opsOptions{IO: io, Path: filepath.Join("..", "..", "fixtures", "tpuhost", dir, "original"), Command: []string{"python", "main.py"},
			Python: py, Timeout: 5 * time.Minute, Format: "text", All: all, TPUDevices: 1, TPUPrecision: "highest", TPUFallback: "record"}
		code := exitCode(runOps(context.Background(), o))
		return code, out.String() + errOut.String()
	}
	code, out := run("missing_op", false)
	if code != 1 || !strings.Contains(out, "aten::median") || !strings.Contains(out, "PTH001 fallback") || !strings.Contains(out, "main.py:5") {
		t.Errorf("ops on missing_op: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "aten::abs") {
		t.Errorf("ops without --all listed an op with a TPU kernel:\n%s", out)
	}
	code, out = run("clean", true)
	if code != 0 || !strings.Contains(out, "0 without a TPU kernel") || !strings.Contains(out, "aten::mm") && !strings.Contains(out, "aten::addmm") {
		t.Errorf("ops --all on clean: exit %d\n%s", code, out)
	}
}
