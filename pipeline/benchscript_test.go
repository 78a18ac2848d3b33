package pipeline

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline/bench"
	"github.com/pallasify/pallasify/validators/tpuhost"
)

// TestBenchScriptRuns migrates two fixture projects with the benchmark
// script asked for, writes each migrated tree, and runs the script with the
// venv's Python on the CPU and on the simulated TPU host: each run prints
// the table with finite numbers on its device, the simulated host records
// nothing that fails on a TPU, and ruff passes the script. device_pkg's
// model is a class its package exports, built from its config class
// (Net(NetConfig())), on a linear layer's feature vectors; ddp_amp_train's
// a CIFAR network its train script builds, on images.
func TestBenchScriptRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python")
	}
	py := python(t)
	if out, err := exec.Command(py, "-c", "import torch, torch_tpu").CombinedOutput(); err != nil {
		t.Skipf("%s has no torch and torch_tpu: %v %s", py, err, out)
	}
	ctx := context.Background()
	host, err := NewTPUHost(ctx, py, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fixture, model, unit string
		args                 []string
	}{
		{"device_pkg", "mypkg.model:Net", "samples", nil},
		{"ddp_amp_train", "model:ConvNet", "images", []string{"--batch-size", "2", "--input-shape", "3,32,32"}},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			run, err := Migrate(ctx, Options{Root: filepath.Join("..", "fixtures", "projects", c.fixture), Bench: &BenchOptions{}})
			if err != nil {
				t.Fatal(err)
			}
			if run.Bench != bench.FileName {
				t.Fatalf("run.Bench = %q, want %s", run.Bench, bench.FileName)
			}
			tree := filepath.Join(t.TempDir(), "tree")
			if err := WriteTree(ctx, run, tree); err != nil {
				t.Fatal(err)
			}
			args := append([]string{bench.FileName, "--steps", "3", "--warmup", "1", "--price-per-hour", "4.20"}, c.args...)
			cpu := runBench(t, tree, py, args, []string{"TORCH_DEVICE_BACKEND_AUTOLOAD=0"})
			checkTable(t, cpu, "cpu", c.model, c.unit, false)
			report := filepath.Join(t.TempDir(), "tpuhost.json")
			env := tpuhost.Prepare(os.Environ(), host.Dir, tpuhost.Options{Coverage: host.Coverage, Report: report})
			tpu := runBench(t, tree, py, args, env)
			checkTable(t, tpu, "tpu", c.model, c.unit, true)
			rep, err := tpuhost.ReadReport(report)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Findings() != 0 || len(rep.Errors) != 0 {
				t.Errorf("the simulated TPU host recorded %d findings, errors %v", rep.Findings(), rep.Errors)
			}
			ruff := exec.Command(filepath.Join(filepath.Dir(py), "ruff"), "check", "--no-cache", bench.FileName)
			ruff.Dir = tree
			if out, err := ruff.CombinedOutput(); err != nil {
				t.Errorf("ruff check: %v\n%s", err, out)
			}
		})
	}
}

// runBench runs the script in tree; env nil: the test's, else os.Environ
// with env's entries added (when env is not already a whole environment).
func runBench(t *testing.T, tree, py string, args, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Dir = tree
	if len(env) > 0 && !strings.Contains(strings.Join(env, "\n"), "PATH=") {
		env = append(os.Environ(), env...)
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

var tableRow = regexp.MustCompile(`(?m)^(\S+)\s+(train|infer)\s+(\S+)\s+(\S+)\s+(\S+)\s+(n/a|\S+ MiB)\s+\$(\S+)$`)

// checkTable checks the script's output: the model, the header with the
// unit, and one row on device with finite, positive numbers.
func checkTable(t *testing.T, out, device, model, unit string, memoryNA bool) {
	t.Helper()
	if !strings.Contains(out, "model   "+model+"\n") || !strings.Contains(out, unit+"/s") ||
		!strings.Contains(out, "cost per 1M "+unit) {
		t.Errorf("on %s: no model line for %s or no %s columns:\n%s", device, model, unit, out)
	}
	m := tableRow.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("on %s: no table row:\n%s", device, out)
	}
	if m[1] != device || m[2] != "train" {
		t.Errorf("row on %s %s, want %s train:\n%s", m[1], m[2], device, out)
	}
	for _, s := range []string{m[3], m[4], m[5], m[7]} {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v <= 0 {
			t.Errorf("on %s: %q is no finite positive number:\n%s", device, s, out)
		}
	}
	if memoryNA && m[6] != "n/a" {
		t.Errorf("on %s: peak memory %q, want n/a (the simulated host reports none)", device, m[6])
	}
}

// TestBenchScriptFiles: the script is a generated file in the run (at the
// root, or in the directory asked for); a tree with no model gets PBN001; a
// pallasify_bench.py already there is left as it is (PBN002); a directory
// outside the tree is refused.
func TestBenchScriptFiles(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("net.py", "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n")
	run, err := Migrate(ctx, Options{Root: root, Bench: &BenchOptions{Dir: "tools"}})
	if err != nil {
		t.Fatal(err)
	}
	var script *File
	for _, f := range run.Files {
		if f.Path == "tools/"+bench.FileName {
			script = f
		}
	}
	if run.Bench != "tools/"+bench.FileName || script == nil || !script.Generated || !script.Changed() ||
		!strings.Contains(string(script.Updated), "\"net:Net\",") || !strings.Contains(string(script.Updated), "IMPORT_ROOTS = [\"..\"]") {
		t.Fatalf("run.Bench %q, script %+v", run.Bench, script)
	}
	if len(run.Diagnostics) != 0 {
		t.Errorf("diagnostics %v", run.Diagnostics)
	}

	write("net.py", "x = 1\n")
	run, err = Migrate(ctx, Options{Root: root, Bench: &BenchOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Diagnostics) != 1 || run.Diagnostics[0].Code != CodeBenchNoModel {
		t.Errorf("no model: diagnostics %v, want one %s", run.Diagnostics, CodeBenchNoModel)
	}

	write(bench.FileName, "print('mine')\n")
	run, err = Migrate(ctx, Options{Root: root, Bench: &BenchOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range run.Files {
		if f.Path == bench.FileName && (f.Changed() || len(f.Diagnostics) != 1 || f.Diagnostics[0].Code != CodeBenchKept) {
			t.Errorf("the user's %s: changed %v, diagnostics %v", f.Path, f.Changed(), f.Diagnostics)
		}
	}
	if run.Bench != bench.FileName {
		t.Errorf("run.Bench = %q", run.Bench)
	}

	for _, dir := range []string{"../out", "/tmp"} {
		if _, err := Migrate(ctx, Options{Root: root, Bench: &BenchOptions{Dir: dir}}); err == nil {
			t.Errorf("bench dir %q accepted", dir)
		}
	}
	if _, err := Migrate(ctx, Options{Root: root, Bench: &BenchOptions{Config: bench.Config{Model: "not a ref"}}}); err == nil {
		t.Error("bench model \"not a ref\" accepted")
	}
}
