package transforms_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
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
	Checked   []string `json:"checked"`
	Bound     int      `json:"bound"`
	Skipped   []string `json:"skipped"`
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
	py := stackPython(t)
	cases := exampleCases(t)
	cases = append(cases, fileCases(t)...)
	rep := checkNames(t, py, cases)
	t.Logf("checked %d names (%d call shapes bound) over %d rewrites; skipped (not Python): %s",
		len(rep.Checked), rep.Bound, len(cases), strings.Join(rep.Skipped, ", "))
	if testing.Verbose() {
		t.Logf("names: %s", strings.Join(rep.Checked, " "))
	}
	if len(rep.Checked) == 0 {
		t.Fatal("no names checked: the walk found no rewrite")
	}
	for _, o := range rep.Offenders {
		t.Errorf("%s: %s: %s", o.Label, o.Name, o.Problem)
	}
}

// stackPython returns the interpreter with torch and torch_tpu, skipping
// (failing under PALLASIFY_REQUIRE_STACK=1) when there is none.
func stackPython(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
			t.Fatalf("%s (PALLASIFY_REQUIRE_STACK=1: the real stack must be there; make venv)", why)
		}
		t.Skipf("%s; set PALLASIFY_PYTHON to a venv with torch 2.15 and torch-tpu 0.2.0 (make venv)", why)
	}
	py := ruletest.Python()
	if py == "" {
		missing("no python interpreter")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	probe := `import sys, torch, torch_tpu; sys.exit(0 if hasattr(torch, "tpu") and hasattr(torch, "accelerator") else 3)`
	cmd := exec.CommandContext(ctx, py, "-c", probe)
	cmd.Env = nameEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		missing("torch with torch_tpu does not import in " + py + ": " + lastLine(out))
	}
	return py
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
	for _, fam := range []string{"device", "cudaapi", "amp", "distributed", "hf", "compile", "hazards"} {
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

// checkNames runs testdata/tpunames.py over the cases in one call.
func checkNames(t *testing.T, py string, cases []nameCase) nameReport {
	t.Helper()
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "tpunames.py"))
	cmd.Env = nameEnv()
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tpunames.py: %v\n%s", err, stderr.String())
	}
	var rep nameReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("tpunames.py answered no JSON (%v):\n%s\n%s", err, stdout.String(), stderr.String())
	}
	return rep
}
