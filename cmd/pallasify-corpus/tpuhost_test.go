package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A canned `pallasify verify --tpu --format json` result in the shape the
// command prints: pytest's output with a summary line and short summary, the
// step script's STEP lines and exit markers, and the tpu object.
const verifyTPU = `{"same": false,
 "Original": {"stdout": "....s.\n=========================== short test summary info ============================\n1 passed, 1 skipped, 3 deselected, 1 xfailed in 2.31s\npallasify-corpus: pytest ok\ndevice cpu\nSTEP train PASSED loss 1.2345 1.0000\nSTEP infer PASSED shapes 2x3\npallasify-corpus: step ok\n", "stderr": "", "exit_code": 0},
 "Migrated": {"stdout": "F.s.\n=========================== short test summary info ============================\nFAILED tests/test_a.py::test_x[1-resnet18] - RuntimeError: boom\nERROR tests/test_b.py\n========= 1 failed, 1 passed, 1 skipped, 1 error in 3.02s =========\npallasify-corpus: pytest failed, exit 1\ndevice tpu\nSTEP train FAILED NotImplementedError: aten::median (at x.py:3)\nSTEP infer PASSED shapes 2x3\npallasify-corpus: step failed, exit 1\n", "stderr": "", "exit_code": 1},
 "Differences": ["exit code: original 0, migrated 1", "line 3: original \"STEP train PASSED\", migrated \"STEP train FAILED\""],
 "tpu": {"unsupported_ops": [{"op": "aten::median", "count": 3, "class": "fallback", "site": "timm/layers/x.py:12"}],
  "cuda_only_calls": [{"api": "torch.cuda.Stream", "count": 1, "site": "train.py:40", "error": "Torch not compiled with CUDA enabled"}],
  "custom_cuda_ops": [], "compiles": [{"backend": "tpu"}],
  "device_mixups": [{"op": "aten::addmm", "devices": "tpu:0,cpu", "count": 2, "site": "timm/layers/attention_pool2d.py:169", "error": "RuntimeError: Expected all tensors to be on the same device"}], "jax_ops": []}}`

// The same run by verify without --tpu: no tpu object, the after run on the CPU.
const verifyCPU = `{"same": true,
 "Original": {"stdout": "3 passed in 1.00s\npallasify-corpus: pytest ok\n", "stderr": "", "exit_code": 0},
 "Migrated": {"stdout": "3 passed in 1.10s\npallasify-corpus: pytest ok\n", "stderr": "", "exit_code": 0},
 "Lines": 2, "Differences": null}`

func TestHostRunFromVerifyTPU(t *testing.T) {
	r, err := hostRunFromVerify("timm", "tpu", []byte(verifyTPU))
	if err != nil {
		t.Fatal(err)
	}
	if r.AfterOn != "tpu-host" || r.Same == nil || *r.Same {
		t.Errorf("after on %q, same %v", r.AfterOn, r.Same)
	}
	// xfailed counts as passed; the steps add to pytest's counts.
	b := TestCounts{Known: true, Passed: 4, Skipped: 1}
	if r.Before.Passed != b.Passed || r.Before.Failed != 0 || r.Before.Errors != 0 || r.Before.Skipped != 1 || !r.Before.Known {
		t.Errorf("before = %+v", r.Before)
	}
	if a := r.After; a.Passed != 2 || a.Failed != 2 || a.Errors != 1 || a.Skipped != 1 || a.ExitCode != 1 {
		t.Errorf("after = %+v", a)
	}
	want := []string{"tests/test_a.py::test_x[1-resnet18] RuntimeError: boom", "tests/test_b.py",
		"step:train NotImplementedError: aten::median (at x.py:3)"}
	if strings.Join(r.NewlyFailing, "|") != strings.Join(want, "|") {
		t.Errorf("newly failing = %q", r.NewlyFailing)
	}
	if len(r.Differences) != 2 || r.TPU == nil || len(r.TPU.Unsupported) != 1 || r.TPU.Unsupported[0].Count != 3 ||
		len(r.TPU.CUDAOnly) != 1 || len(r.TPU.Compiles) != 1 {
		t.Errorf("differences %q, tpu %+v", r.Differences, r.TPU)
	}
}

func TestHostRunFromVerifyCPU(t *testing.T) {
	r, err := hostRunFromVerify("litgpt", "portable", []byte(verifyCPU))
	if err != nil {
		t.Fatal(err)
	}
	if r.AfterOn != "cpu" || r.TPU != nil || r.Before.Passed != 3 || r.After.Passed != 3 || len(r.NewlyFailing) != 0 {
		t.Errorf("%+v", r)
	}
	if _, err := hostRunFromVerify("x", "tpu", []byte("not json")); err == nil {
		t.Error("bad JSON accepted")
	}
}

func TestParseTestOutputStepScriptDied(t *testing.T) {
	// The step script died at import: no STEP line, a non-zero exit; it
	// counts as one error, never as nothing.
	c := parseTestOutput("Traceback ...\nImportError: x\npallasify-corpus: step failed, exit 1\n", 1)
	if !c.Known || c.Errors != 1 || len(c.Failures) != 1 || c.Failures[0] != "step:script exit 1" {
		t.Errorf("%+v", c)
	}
	// Output we do not understand is unknown, not zero.
	if c := parseTestOutput("sh: python: not found\n", 127); c.Known {
		t.Errorf("%+v", c)
	}
	for _, s := range []string{"collected 3 items in the tests", "= warnings summary in 3s =", "no tests ran in 0.01s"} {
		_, _, _, _, ok := pytestSummary(s)
		if ok != (s == "no tests ran in 0.01s") {
			t.Errorf("pytestSummary(%q) ok = %v", s, ok)
		}
	}
}

func TestWriteHost(t *testing.T) {
	tpuRun, _ := hostRunFromVerify("timm", "tpu", []byte(verifyTPU))
	cpuRun, _ := hostRunFromVerify("timm", "portable", []byte(verifyCPU))
	tpuRun.VerifyExit, tpuRun.Seconds = 1, 84.4
	rep := &HostReport{Verify: "tpu", WallS: 200, Venv: HostVenv{Path: ".bench/tpuhost-venv", Base: ".venv/bin/python", InstallS: 41.7, SizeMB: 232},
		Runs: []HostRun{cpuRun, tpuRun, {Repo: "dinov2", Target: "tpu", VerifyExit: 2, Error: "verify exit 2: json: unsupported value: +Inf"}}}
	var b bytes.Buffer
	writeHost(&b, rep)
	out := b.String()
	for _, want := range []string{
		"installed from PyPI in 41.7 s, 232 MB",
		"### timm",
		"| portable | CPU (no --tpu) | 3 | 3 | 0 | - | - | - | - | exit 0, 0 s |",
		"| tpu | TPU host | 4 | 2 (2 failed, 1 errors) | 2 | 1 (3 calls) | 1 | 0 | 1 (2 calls) | exit 1, 84 s |",
		"- tpu: device mix-ups (1): `aten::addmm` on tpu:0,cpu ×2 at timm/layers/attention_pool2d.py:169: RuntimeError: Expected all tensors to be on the same device",
		"- tpu: failing after migration only (3): `tests/test_a.py::test_x[1-resnet18] RuntimeError: boom`",
		"- tpu: unsupported ops (1): `aten::median` ×3, fallback at timm/layers/x.py:12",
		"- tpu: CUDA-only calls (1): `torch.cuda.Stream` ×1 at train.py:40: Torch not compiled with CUDA enabled",
		"### dinov2",
		"| tpu | - | - | - | - | - | - | - | - | error, 0 s |",
		"- tpu: error: verify exit 2: json: unsupported value: +Inf",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	// The aggregate's JSON holds the runs.
	js, err := jsonAggregate(&Aggregate{TPUHost: rep})
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		TPUHost HostReport `json:"tpuhost"`
	}
	if err := json.Unmarshal(js, &back); err != nil || len(back.TPUHost.Runs) != 3 || back.TPUHost.Runs[1].TPU.Unsupported[0].Op != "aten::median" {
		t.Errorf("json: %v %s", err, js)
	}
}

func TestVerifyArgsAndCommand(t *testing.T) {
	args := strings.Join(verifyArgs(verifyCaps{TPU: true, Format: true}, "tpu", "/v/bin/python", "/t/timm", "CMD", 15*time.Minute), " ")
	if !strings.HasPrefix(args, "verify --tpu --target tpu --python /v/bin/python --timeout 15m0s") || !strings.HasSuffix(args, "--format json /t/timm -- CMD") {
		t.Errorf("args: %s", args)
	}
	if a := strings.Join(verifyArgs(verifyCaps{}, "portable", "p", "t", "C", time.Minute), " "); strings.Contains(a, "--tpu") || !strings.Contains(a, "--json t -- C") {
		t.Errorf("args without --tpu: %s", a)
	}
	cmd := hostCommand(hostSuites[0])
	for _, want := range []string{"'tests/test_models.py::test_model_forward[1-resnet18]'", "python pallasify_step.py", "HF_HUB_OFFLINE=1", "TORCH_DEVICE=tpu"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command lacks %q: %s", want, cmd)
		}
	}
	if shellQuote("it's") != `'it'\''s'` {
		t.Error(shellQuote("it's"))
	}
	for _, s := range hostSuites {
		if s.Step != "" {
			if _, err := stepScripts.ReadFile("tpuhost/" + s.Step); err != nil {
				t.Errorf("%s: %v", s.Repo, err)
			}
		}
	}
}

// TestPytestTimeLine: the pattern verify drops matches pytest's summary in
// -q form (no '=' fence: the first run compared "in 59.89s" with "in 110.65s
// (0:01:50)" as a difference) and in the fenced form, and nothing else.
func TestPytestTimeLine(t *testing.T) {
	re := regexp.MustCompile(pytestTimeLine)
	for _, l := range []string{"324 passed, 2 skipped in 59.89s", "324 passed in 110.65s (0:01:50)",
		"===== 1 failed, 3 passed in 2.01s =====", "3 passed, 1 warning in 0.5s"} {
		if !re.MatchString(l) {
			t.Errorf("does not match %q", l)
		}
	}
	for _, l := range []string{"STEP pythia PASSED tokens 1 2 3", "loss 0.5 in 3 steps", "took 2s"} {
		if re.MatchString(l) {
			t.Errorf("matches %q", l)
		}
	}
}
