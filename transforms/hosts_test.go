package transforms_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
	"github.com/pallasify/pallasify/transforms/ts"
)

// TestNoBehaviourChangeOffTPU migrates every case under testdata/hosts/
// (each <case>.py) with the full rule set for the portable target, safe fixes
// only, and runs the original and the migrated file on each host the case's
// "# hosts:" line names (testdata/hosts/host.py: this CPU-only machine, and
// simulated MPS and CUDA hosts). What each prints must be the same: a safe
// portable fix changes nothing on a machine that is not a TPU. A case must
// be rewritten at all (else it tests nothing).
func TestNoBehaviourChangeOffTPU(t *testing.T) {
	py := ruletest.Python()
	if py == "" || exec.Command(py, "-c", "import torch").Run() != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
			t.Fatal("no python with torch (PALLASIFY_REQUIRE_STACK=1: the real stack must be there; make venv)")
		}
		t.Skip("no python with torch (set PALLASIFY_PYTHON)")
	}
	cases, err := filepath.Glob(filepath.Join("testdata", "hosts", "*.py"))
	if err != nil {
		t.Fatal(err)
	}
	runner, err := filepath.Abs(filepath.Join("testdata", "hosts", "host.py"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		if filepath.Base(c) == "host.py" {
			continue
		}
		n++
		t.Run(strings.TrimSuffix(filepath.Base(c), ".py"), func(t *testing.T) {
			src, err := os.ReadFile(c)
			if err != nil {
				t.Fatal(err)
			}
			hosts := caseHosts(src)
			if len(hosts) == 0 {
				t.Fatal(`no "# hosts:" line`)
			}
			out := migratePortable(t, src, caseLayout(src))
			if caseLayout(src).Tree && !bytes.Contains(out, []byte("def pallasify_device():")) {
				t.Fatalf("a library case is not migrated as a library module:\n%s", out)
			}
			dir := t.TempDir()
			orig, mig := filepath.Join(dir, "original.py"), filepath.Join(dir, "migrated.py")
			if err := os.WriteFile(orig, src, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(mig, out, 0o644); err != nil {
				t.Fatal(err)
			}
			var jobs, outs []string
			for _, h := range hosts {
				for _, f := range []string{orig, mig} {
					o := f + "." + h + ".out"
					jobs, outs = append(jobs, h+":"+f+":"+o), append(outs, o)
				}
			}
			runJobs(t, py, runner, jobs)
			for i, h := range hosts {
				want, got := readOut(t, outs[2*i]), readOut(t, outs[2*i+1])
				if strings.Contains(want, "FAILED: ") {
					t.Errorf("host %s: the original fails, so the case compares nothing:\n%s", h, want)
				}
				if want != got {
					t.Errorf("host %s: the migrated file prints otherwise:\n%s\nmigrated file:\n%s", h,
						udiff.Unified("original", "migrated", want, got), out)
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no host cases in testdata/hosts")
	}
}

// caseHosts reads a case's "# hosts: cpu mps cuda" line.
func caseHosts(src []byte) []string {
	for _, l := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "# hosts:"); ok {
			return strings.Fields(rest)
		}
	}
	return nil
}

// caseLayout reads a case's "# layout: library" line: the case is migrated
// as a library module of a walked tree in no package (kit.Library), so the
// device is found on first use and its helpers are defined inline.
func caseLayout(src []byte) rule.Layout {
	for _, l := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "# layout:"); ok && strings.TrimSpace(rest) == "library" {
			return rule.Layout{Tree: true}
		}
	}
	return rule.Layout{}
}

// migratePortable applies every rule's safe fixes for the portable target.
func migratePortable(t *testing.T, src []byte, layout rule.Layout) []byte {
	t.Helper()
	p := ts.NewParser(ts.Python)
	defer p.Close()
	eng := &rule.Engine{Rules: transforms.All(), Opts: rule.Options{Target: rule.Portable, Layout: layout}}
	res, err := eng.Run(context.Background(), p, "case.py", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Fatalf("engine problems: %+v", res.Problems)
	}
	if res.Output == nil || bytes.Equal(res.Output, src) {
		t.Fatal("the case is not rewritten: it tests nothing")
	}
	return res.Output
}

// runJobs runs host.py over jobs ("HOST:FILE:OUT") in one interpreter.
// torch's device-backend autoload is off: none of the hosts simulated has
// TorchTPU, and importing it would only slow the run down.
func runJobs(t *testing.T, py, runner string, jobs []string) {
	t.Helper()
	cmd := exec.Command(py, append([]string{runner}, jobs...)...)
	cmd.Env = append(os.Environ(), "PYTHONWARNINGS=ignore", "CUDA_VISIBLE_DEVICES=", "TORCH_DEVICE_BACKEND_AUTOLOAD=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("host.py: %v\n%s", err, out)
	}
}

func readOut(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatalf("%s: the case printed nothing", path)
	}
	return string(b)
}
