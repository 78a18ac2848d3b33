package tpuhost_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/validators/tpuhost"
)

// python is the venv's Python (PALLASIFY_PYTHON) with torch and torch_tpu, or the test skips (fails
// under PALLASIFY_REQUIRE_STACK=1).
func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("PALLASIFY_PYTHON")
	if py == "" || exec.Command(py, "-c", "import importlib.metadata as m; m.version('torch-tpu')").Run() != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
			t.Fatal("no python with torch and torch-tpu (PALLASIFY_REQUIRE_STACK=1: the real stack must be there; make venv)")
		}
		t.Skip("no python with torch and torch-tpu (set PALLASIFY_PYTHON)")
	}
	return py
}

// TestRunScriptOnSimulatedHost runs one script end to end through the wrapper: the coverage
// computed once and cached, the environment from Prepare, the report read back.
func TestRunScriptOnSimulatedHost(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	cache := t.TempDir()
	cov, err := tpuhost.Coverage(ctx, py, cache)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(cov)
	if err != nil {
		t.Fatal(err)
	}
	again, err := tpuhost.Coverage(ctx, py, cache)
	if err != nil || again != cov {
		t.Fatalf("second Coverage: %q, %v; want the cached %q", again, err, cov)
	}
	if st2, _ := os.Stat(again); !st2.ModTime().Equal(st.ModTime()) {
		t.Fatal("the cached coverage JSON was rewritten")
	}
	pyDir, err := tpuhost.Install(cache)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	script := `import torch
x = torch.randn(4, 4, device="tpu")
print(x.device, torch.accelerator.current_accelerator().type, torch.cuda.is_available())
print(torch.median(x).device.type)
try:
    torch.cuda.synchronize()
except Exception as e:
    print("sync", type(e).__name__)
`
	if err := os.WriteFile(filepath.Join(work, "run.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(work, "report.json")
	cmd := exec.CommandContext(ctx, py, "run.py")
	cmd.Dir = work
	cmd.Env = tpuhost.Prepare(os.Environ(), pyDir, tpuhost.Options{Coverage: cov, Report: report, Devices: 2})
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "tpu:0 tpu False\ntpu\nsync RuntimeError\n") {
		t.Fatalf("output:\n%s", out)
	}
	r, err := tpuhost.ReadReport(report)
	if err != nil {
		t.Fatal(err)
	}
	if r.Devices != 2 || len(r.UnsupportedOps) != 1 || r.UnsupportedOps[0].Op != "aten::median" ||
		r.UnsupportedOps[0].Class != "fallback" || r.UnsupportedOps[0].Site != "run.py:4" {
		t.Fatalf("report: %+v", r)
	}
	if len(r.CUDAOnlyCalls) != 1 || r.CUDAOnlyCalls[0].API != "torch.cuda.synchronize" || r.CUDAOnlyCalls[0].Site != "run.py:6" {
		t.Fatalf("cuda-only calls: %+v", r.CUDAOnlyCalls)
	}
	if r.Findings() != 2 {
		t.Fatalf("findings %d, want 2", r.Findings())
	}
}

// TestPrepareKeepsUserPythonPath: the runtime's directory goes first, the command's own
// PYTHONPATH after it, and earlier values of the host's variables are replaced.
func TestPrepareKeepsUserPythonPath(t *testing.T) {
	env := tpuhost.Prepare([]string{"PYTHONPATH=/user/src", "PALLASIFY_TPUHOST_DEVICES=9", "HOME=/h"}, "/rt",
		tpuhost.Options{Coverage: "/c.json"})
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Fatalf("%s set twice in %v", k, env)
		}
		got[k] = v
	}
	if got["PYTHONPATH"] != "/rt"+string(os.PathListSeparator)+"/user/src" || got["PALLASIFY_TPUHOST_DEVICES"] != "1" ||
		got["PALLASIFY_TPUHOST"] != "1" || got["HOME"] != "/h" || got["TPU_SKIP_MDS_QUERY"] != "1" {
		t.Fatalf("env: %v", got)
	}
}

// TestReadReportsMerges: a command that starts several Python processes
// leaves one report each; ReadReports adds their counts, keeps the first
// site, and gives empty lists (not nulls) where none reported anything.
func TestReadReportsMerges(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("report-1.json", `{"unsupported_ops":[{"op":"aten::median","count":2,"class":"fallback","site":""}],"cuda_only_calls":[{"api":"torch.cuda.Stream","count":1,"site":"a.py:3","error":"x"}],"devices":1,"precision":"highest"}`)
	write("report-2.json", `{"unsupported_ops":[{"op":"aten::median","count":3,"class":"fallback","site":"b.py:9"}],"cuda_only_calls":[{"api":"torch.cuda.Stream","count":4,"site":"a.py:3","error":"x"}],"devices":2}`)
	r, err := tpuhost.ReadReports(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Processes != 2 || len(r.UnsupportedOps) != 1 || r.UnsupportedOps[0].Count != 5 || r.UnsupportedOps[0].Site != "b.py:9" {
		t.Errorf("ops: %+v (processes %d)", r.UnsupportedOps, r.Processes)
	}
	if len(r.CUDAOnlyCalls) != 1 || r.CUDAOnlyCalls[0].Count != 5 || r.Devices != 2 || r.Precision != "highest" {
		t.Errorf("calls %+v devices %d precision %q", r.CUDAOnlyCalls, r.Devices, r.Precision)
	}
	if r.CustomCUDAOps == nil || r.DeviceMixups == nil || r.Findings() != 2 {
		t.Errorf("empty lists or findings: %+v", r)
	}
}
