package transforms_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

// nameCase is one rewrite whose introduced torch names are checked.
type nameCase struct {
	Label    string   `json:"label"`
	Before   string   `json:"before"`
	After    string   `json:"after"`
	Messages []string `json:"messages"`
}

// nameReport is what testdata/tpunames.py answers.
type nameReport struct {
	Checked   [][2]string `json:"checked"` // (case label, name)
	Bound     int         `json:"bound"`
	Skipped   []string    `json:"skipped"`
	Offenders []struct {
		Label   string `json:"label"`
		Name    string `json:"name"`
		Problem string `json:"problem"`
	} `json:"offenders"`
}

// TestTorchNamesExist runs every rule's documented example for both targets
// (unsafe fixes included: the example shows the fix), plus every family
// golden input and fixture project file under all rules, and checks each
// torch/torch_tpu name the fixes introduce — prelude and helper code
// included — and each one a finding's message names, against the installed
// torch 2.15 and torch-tpu 0.2.0 (testdata/tpunames.py): it must exist, a new
// call must bind to its signature, and it must not be internal (or
// deprecated) in TorchTPU.
func TestTorchNamesExist(t *testing.T) {
	run := namesRun(t)
	rep := run.report
	seen := map[string]bool{}
	var names []string
	for _, c := range rep.Checked {
		if !strings.HasPrefix(c[0], selfTest) && !seen[c[1]] {
			seen[c[1]] = true
			names = append(names, c[1])
		}
	}
	sort.Strings(names)
	t.Logf("checked %d names (%d new call shapes bound, self-test included) over %d rewrites; skipped (not Python): %s",
		len(names), rep.Bound, len(run.rules), strings.Join(rep.Skipped, ", "))
	if testing.Verbose() {
		t.Logf("names: %s", strings.Join(names, " "))
	}
	if len(names) == 0 {
		t.Fatal("no names checked: the walk found no rewrite")
	}
	for _, o := range rep.Offenders {
		if !strings.HasPrefix(o.Label, selfTest) {
			t.Errorf("%s: %s: %s", o.Label, o.Name, o.Problem)
		}
	}
}

// TestTorchNamesCheckerCatches checks the checker on one rewrite per way a
// name can be wrong, and a few that are right, so TestTorchNamesExist cannot
// pass by checking nothing.
func TestTorchNamesCheckerCatches(t *testing.T) {
	run := namesRun(t)
	flagged := map[string]bool{}
	for _, o := range run.report.Offenders {
		label, ok := strings.CutPrefix(o.Label, selfTest)
		if !ok {
			continue
		}
		flagged[label] = true
		t.Logf("%s: %s: %s", label, o.Name, o.Problem)
		if strings.HasPrefix(label, "good ") {
			t.Errorf("%s: %s flagged: %s", label, o.Name, o.Problem)
		}
	}
	for label, code := range checkerBad {
		if !flagged["bad "+label] {
			t.Errorf("bad %s (%s) was not flagged", label, code)
		}
	}
}

// selfTest prefixes the labels of TestTorchNamesCheckerCatches's cases.
const selfTest = "checker: "

// checkerBad are introduced names the checker must flag, one per way to be
// wrong; checkerGood are ones it must accept.
var (
	checkerBad = map[string]string{
		"internal":         "torch.tpu.is_available()",
		"internal-alias":   "from torch import tpu as T\nT.synchronize()",
		"internal-class":   "torch.tpu.device(0)",
		"internal-via-mod": "torch.get_device_module(DEVICE).get_rng_state()",
		"private":          "torch.tpu._hbm_usage_summary()",
		"deprecated":       "torch.tpu.topology_aware_mesh((2, 2))",
		"missing":          "torch.tpu.is_bf16_supported()",
		"missing-module":   "torch.accelerator.nomodule.f()",
		"keyword":          "torch.accelerator.set_device_index(device=0)",
		"arity":            "torch.accelerator.synchronize(0, 1)",
		"backend":          `torch.compile(m, backend="tpux")`,
		"probe-internal":   `getattr(torch.get_device_module(DEVICE), "get_rng_state", None)`,
		"probe-missing":    `getattr(torch.accelerator, "nomodule")`,
	}
	checkerGood = map[string]string{
		"public":  `torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu"`,
		"tpu-pub": "torch.tpu.get_device_properties().total_memory\ntorch.tpu.set_rng_state(s)\ntorch.tpu.pallas.jax_op",
		"guarded": `getattr(torch.get_device_module(DEVICE), "is_bf16_supported", None)`,
		"kept":    "torch.tpu.is_available()", // in the input too: not introduced
	}
)

// checkerCases are TestTorchNamesCheckerCatches's rewrites.
func checkerCases() []nameCase {
	const before = "import torch\n"
	var cases []nameCase
	for label, code := range checkerBad {
		cases = append(cases, nameCase{Label: selfTest + "bad " + label, Before: before, After: before + code + "\n"})
	}
	for label, code := range checkerGood {
		in := before
		if label == "kept" {
			in += code + "\n"
		}
		cases = append(cases, nameCase{Label: selfTest + "good " + label, Before: in, After: before + code + "\n"})
	}
	return cases
}

// namesResult is the one checker run both tests read.
type namesResult struct {
	rules  []nameCase
	report nameReport
	err    string // why the stack is missing, or what failed
	stack  bool   // false: the stack is missing
}

var (
	namesOnce sync.Once
	namesRes  namesResult
)

// namesRun runs the checker once over the rules' rewrites and the
// self-test's, skipping (failing under PALLASIFY_REQUIRE_STACK=1) when
// torch with torch_tpu is not installed.
func namesRun(t *testing.T) namesResult {
	t.Helper()
	namesOnce.Do(func() {
		py := ruletest.Python()
		if py == "" {
			namesRes = namesResult{err: "no python interpreter"}
			return
		}
		namesRes.stack = true
		namesRes.rules = append(exampleCases(t), fileCases(t)...)
		namesRes.report, namesRes.stack, namesRes.err = checkNames(py, append(checkerCases(), namesRes.rules...))
	})
	if !namesRes.stack {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
			t.Fatalf("%s (PALLASIFY_REQUIRE_STACK=1: the real stack must be there; make venv)", namesRes.err)
		}
		t.Skipf("%s; set PALLASIFY_PYTHON to a venv with torch 2.15 and torch-tpu 0.2.0 (make venv)", namesRes.err)
	}
	if namesRes.err != "" {
		t.Fatal(namesRes.err)
	}
	return namesRes
}

// nameEnv is the environment the checker runs in: torch_tpu autoloaded, and
// its internal APIs left strict.
func nameEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TORCH_DEVICE_BACKEND_AUTOLOAD=") || strings.HasPrefix(kv, "TORCH_TPU_ALLOW_LEGACY_DEVICE_APIS=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PYTHONWARNINGS=ignore", "TF_CPP_MIN_LOG_LEVEL=3")
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// exampleCases runs each live rule's Example alone, for both targets.
func exampleCases(t *testing.T) []nameCase {
	t.Helper()
	var cases []nameCase
	for _, r := range transforms.All() {
		if r.Removed {
			continue
		}
		for _, tg := range rule.Targets {
			src := []byte(r.Example.Before)
			res := ruletest.Run(t, []*rule.Rule{r}, rule.Options{Target: tg, UnsafeFixes: true}, src)
			cases = append(cases, newCase(r.Code+" example ("+string(tg)+")", src, res))
		}
	}
	return cases
}

// fileCases runs every rule over each family's golden inputs and the
// fixture projects' Python files, for both targets.
func fileCases(t *testing.T) []nameCase {
	t.Helper()
	var files []string
	for _, fam := range []string{"device", "cudaapi", "amp", "distributed", "hf", "compile", "hazards", "tpuperf"} {
		m, _ := filepath.Glob(filepath.Join(fam, "testdata", "*", "input.py"))
		files = append(files, m...)
	}
	filepath.WalkDir(filepath.Join("..", "fixtures", "projects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".py") {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatal("no golden inputs or fixture files found")
	}
	var live []*rule.Rule
	for _, r := range transforms.All() {
		if !r.Removed {
			live = append(live, r)
		}
	}
	var cases []nameCase
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range rule.Targets {
			res := ruletest.RunPath(t, live, rule.Options{Target: tg, UnsafeFixes: true}, f, src)
			cases = append(cases, newCase(filepath.ToSlash(f)+" ("+string(tg)+")", src, res))
		}
	}
	return cases
}

func newCase(label string, src []byte, res *rule.Result) nameCase {
	c := nameCase{Label: label, Before: string(src), After: string(ruletest.Output(res, src))}
	for _, f := range res.Findings {
		c.Messages = append(c.Messages, f.Message)
	}
	return c
}

// checkNames runs testdata/tpunames.py over the cases in one call. stack is
// false when the interpreter lacks torch or torch_tpu; err says what went
// wrong.
func checkNames(py string, cases []nameCase) (rep nameReport, stack bool, err string) {
	in, jerr := json.Marshal(cases)
	if jerr != nil {
		return rep, true, jerr.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "tpunames.py"))
	cmd.Env = nameEnv()
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if rerr := cmd.Run(); rerr != nil {
		var ee *exec.ExitError
		if errors.As(rerr, &ee) && ee.ExitCode() == stackMissing {
			return rep, false, "torch with torch_tpu is not installed in " + py + ": " + lastLine(stderr.Bytes())
		}
		return rep, true, fmt.Sprintf("tpunames.py: %v\n%s", rerr, stderr.String())
	}
	if jerr := json.Unmarshal(stdout.Bytes(), &rep); jerr != nil {
		return rep, true, fmt.Sprintf("tpunames.py answered no JSON (%v):\n%s\n%s", jerr, stdout.String(), stderr.String())
	}
	return rep, true, ""
}

// stackMissing is tpunames.py's exit status when torch or torch_tpu is
// missing (STACK_MISSING there).
const stackMissing = 3
