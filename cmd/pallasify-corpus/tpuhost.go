package main

// The corpus TPU-host run (-tpuhost): for each whole repository of the corpus
// (timm, litgpt, dinov2), a named subset of its own CPU-runnable tests and a
// tiny training/inference step script of ours run before migration on the CPU
// and after migration on the simulated TPU host, through `pallasify verify
// --tpu`, once per target. Their dependencies live in a benchmark venv
// (.bench/tpuhost-venv) that sees the project's .venv (torch, torch_tpu, jax)
// through a .pth file, so torch is never downloaded twice.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

//go:embed tpuhost/*.py
var stepScripts embed.FS

//go:embed tpuhost-requirements.txt
var hostRequirements []byte

// stepName is where a step script lands in the repository's temporary copy:
// at its root, so `python pallasify_step.py` imports the repository's package
// and migration rewrites the script like any user code.
const stepName = "pallasify_step.py"

// hostSuite is one repository's named test subset and step script.
type hostSuite struct {
	Repo   string
	Pytest []string // pytest arguments (files, node ids, -k); none: no pytest run
	Step   string   // a file under tpuhost/; "" for none
}

// hostSuites are chosen to run in about a minute each on the CPU, with no
// network, no weights and no GPU. timm's tests take their device from
// $TORCH_DEVICE (tpu on the simulated host); litgpt's chosen tests are its
// config, prompt and RoPE tests and its model tests' CPU parametrizations
// (parity with transformers' reference models; stablelm needs the Hub and
// the multimodal Gemma ones take 5 s each); dinov2 has no unit tests, so only
// the step script.
var hostSuites = []hostSuite{
	{Repo: "timm", Step: "timm_step.py", Pytest: append(timmModelTests(),
		"tests/test_layers.py", "tests/test_layers_pool.py", "tests/test_layers_drop.py")},
	{Repo: "litgpt", Step: "litgpt_step.py", Pytest: []string{
		"tests/test_config.py", "tests/test_prompts.py", "tests/test_rope.py", "tests/test_model.py",
		"-k", "not (stablelm or multimodal or sdpa_choice or device1 or device2 or compile)"}},
	{Repo: "dinov2", Step: "dinov2_step.py"},
}

func timmModelTests() []string {
	var ids []string
	for _, m := range []string{"resnet18", "mobilenetv3_small_050", "vit_tiny_patch16_224", "convnext_atto", "efficientnet_b0"} {
		ids = append(ids, "tests/test_models.py::test_model_forward[1-"+m+"]", "tests/test_models.py::test_model_backward[2-"+m+"]")
	}
	return ids
}

// pytestTimeLine matches pytest's summary line, whose time differs run to run;
// verify drops it from the comparison (the counts are parsed from the output).
const pytestTimeLine = ` in [0-9.]+s( \([0-9:]+\))?( =+)?$`

// hostCommand is the shell command verify runs in both trees: offline, the
// device for timm's tests from whether the simulated TPU host is on, pytest
// on the suite's tests, then the step script; each exit status printed as
// "ok" or "failed, exit N" (a 0 the other run prints as 1 would be a number
// difference of infinite relative size).
func hostCommand(s hostSuite) string {
	var b strings.Builder
	b.WriteString("export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONWARNINGS=ignore COLUMNS=240; ")
	b.WriteString(`: "${TORCH_DEVICE_BACKEND_AUTOLOAD:=0}"; export TORCH_DEVICE_BACKEND_AUTOLOAD; `)
	b.WriteString(`if [ "${PALLASIFY_TPUHOST:-0}" = 1 ]; then export TORCH_DEVICE=tpu; else export TORCH_DEVICE=cpu; fi; `)
	b.WriteString("rc=0; ")
	if len(s.Pytest) > 0 {
		b.WriteString("python -m pytest -q -p no:cacheprovider -p no:warnings -rfE --tb=short --timeout=300 --color=no")
		for _, a := range s.Pytest {
			b.WriteString(" " + shellQuote(a))
		}
		b.WriteString(`; p=$?; if [ $p = 0 ]; then echo "pallasify-corpus: pytest ok"; else echo "pallasify-corpus: pytest failed, exit $p"; rc=1; fi; `)
	}
	if s.Step != "" {
		b.WriteString("python " + stepName + `; p=$?; if [ $p = 0 ]; then echo "pallasify-corpus: step ok"; else echo "pallasify-corpus: step failed, exit $p"; rc=1; fi; `)
	}
	b.WriteString("exit $rc")
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// HostVenv is the benchmark venv: where, whether it was reused, and what its
// install cost.
type HostVenv struct {
	Path     string  `json:"path"`
	Base     string  `json:"base_python"` // the venv whose site-packages it sees
	Reused   bool    `json:"reused"`
	InstallS float64 `json:"install_s,omitempty"`
	SizeMB   float64 `json:"size_mb"`
	Error    string  `json:"error,omitempty"`
}

// HostReport is the TPU-host part of the aggregate.
type HostReport struct {
	Venv   HostVenv  `json:"venv"`
	Verify string    `json:"verify"` // "tpu": verify --tpu; "cpu": verify without it (the after run on the CPU)
	Runs   []HostRun `json:"runs"`
	WallS  float64   `json:"wall_s"`
}

// HostRun is one repository and target: before on the CPU, after on the
// simulated TPU host (or the CPU while verify has no --tpu).
type HostRun struct {
	Repo         string       `json:"repo"`
	Target       string       `json:"target"`
	AfterOn      string       `json:"after_on"` // "tpu-host" or "cpu"
	Before       TestCounts   `json:"before"`
	After        TestCounts   `json:"after"`
	Same         *bool        `json:"same"`
	Differences  []string     `json:"differences"`
	NewlyFailing []string     `json:"newly_failing"` // failed after migration, passed before
	TPU          *TPUFindings `json:"tpu,omitempty"` // nil: the run printed no TPU report
	VerifyExit   int          `json:"verify_exit"`
	Seconds      float64      `json:"seconds"`
	Error        string       `json:"error,omitempty"`
}

// TestCounts are what one run's output says about its tests and steps.
type TestCounts struct {
	Known    bool     `json:"known"` // the output was parsed
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`
	Errors   int      `json:"errors"`
	Skipped  int      `json:"skipped"`
	Failures []string `json:"failures"` // pytest node ids and step:NAME, with the reason when printed
	ExitCode int      `json:"exit_code"`
}

// TPUFindings is verify --tpu's "tpu" object.
type TPUFindings struct {
	Unsupported []OpFinding       `json:"unsupported_ops"`
	CUDAOnly    []CUDAFinding     `json:"cuda_only_calls"`
	CustomCUDA  []OpFinding       `json:"custom_cuda_ops"`
	Compiles    []json.RawMessage `json:"compiles"`
	Mixups      []json.RawMessage `json:"device_mixups"`
	JaxOps      []json.RawMessage `json:"jax_ops"`
}

// OpFinding is an op without a TPU kernel, or a custom CUDA op reached.
type OpFinding struct {
	Op    string `json:"op"`
	Count int    `json:"count"`
	Class string `json:"class,omitempty"`
	Site  string `json:"site"`
}

// CUDAFinding is a CUDA-only call reached on the TPU path.
type CUDAFinding struct {
	API   string `json:"api"`
	Count int    `json:"count"`
	Site  string `json:"site"`
	Error string `json:"error"`
}

// verifyRun is the part of `pallasify verify --format json` read here.
type verifyRun struct {
	Same        *bool             `json:"same"`
	Original    verifySide        `json:"Original"`
	Migrated    verifySide        `json:"Migrated"`
	Differences []json.RawMessage `json:"Differences"`
	TPU         *TPUFindings      `json:"tpu"`
}

type verifySide struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
}

// hostRunFromVerify turns verify's JSON into a row.
func hostRunFromVerify(repo, target string, data []byte) (HostRun, error) {
	r := HostRun{Repo: repo, Target: target, AfterOn: "cpu"}
	var v verifyRun
	if err := json.Unmarshal(data, &v); err != nil {
		return r, fmt.Errorf("verify JSON: %w", err)
	}
	r.Same = v.Same
	r.Before = parseTestOutput(v.Original.Stdout, v.Original.ExitCode)
	r.After = parseTestOutput(v.Migrated.Stdout, v.Migrated.ExitCode)
	for _, d := range v.Differences {
		var s string
		if json.Unmarshal(d, &s) != nil {
			var buf bytes.Buffer
			if json.Compact(&buf, d) == nil {
				s = buf.String()
			} else {
				s = string(d)
			}
		}
		r.Differences = append(r.Differences, s)
	}
	if v.TPU != nil {
		r.TPU = v.TPU
		r.AfterOn = "tpu-host"
	}
	r.NewlyFailing = newlyFailing(r.Before, r.After)
	return r, nil
}

// newlyFailing lists the after run's failures (by name) that the before run
// did not have.
func newlyFailing(before, after TestCounts) []string {
	had := map[string]bool{}
	for _, f := range before.Failures {
		had[failureName(f)] = true
	}
	var out []string
	for _, f := range after.Failures {
		if !had[failureName(f)] {
			out = append(out, f)
		}
	}
	return out
}

func failureName(f string) string {
	name, _, _ := strings.Cut(f, " ")
	return name
}

// parseTestOutput reads pytest's summary line ("3 failed, 150 passed, 1
// skipped in 9.70s"), its short summary ("FAILED id - reason", "ERROR id"),
// the step scripts' "STEP name PASSED|FAILED ..." lines and our exit markers.
// A step script that died without a FAILED line counts as one error.
func parseTestOutput(out string, exit int) TestCounts {
	c := TestCounts{ExitCode: exit}
	stepFailed, stepExit := false, 0
	for line := range strings.SplitSeq(out, "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.HasPrefix(line, "STEP "):
			f := strings.Fields(line)
			if len(f) < 3 {
				continue
			}
			c.Known = true
			switch f[2] {
			case "PASSED":
				c.Passed++
			case "FAILED":
				c.Failed++
				stepFailed = true
				c.Failures = append(c.Failures, strings.TrimSpace("step:"+f[1]+" "+strings.Join(f[3:], " ")))
			}
		case strings.HasPrefix(line, "FAILED "), strings.HasPrefix(line, "ERROR "):
			c.Failures = append(c.Failures, strings.Replace(strings.TrimSpace(line[strings.IndexByte(line, ' ')+1:]), " - ", " ", 1))
		case strings.HasPrefix(line, "pallasify-corpus: step "):
			fmt.Sscanf(strings.TrimPrefix(line, "pallasify-corpus: step failed, exit "), "%d", &stepExit)
			c.Known = true
		case strings.HasPrefix(line, "pallasify-corpus: pytest "):
			c.Known = true
		default:
			if p, f, e, s, ok := pytestSummary(line); ok {
				c.Known = true
				c.Passed += p
				c.Failed += f
				c.Errors += e
				c.Skipped += s
			}
		}
	}
	if stepExit != 0 && !stepFailed {
		c.Errors++
		c.Failures = append(c.Failures, fmt.Sprintf("step:script exit %d", stepExit))
	}
	return c
}

// pytestSummary parses "== 1 failed, 98 passed, 1 skipped, 512 deselected, 1
// xfailed in 57.15s ==" and "3 errors in 2.45s"; xfailed counts as passed
// (expected), xpassed too.
func pytestSummary(line string) (passed, failed, errs, skipped int, ok bool) {
	s := strings.Trim(strings.TrimSpace(line), "= ")
	i := strings.LastIndex(s, " in ")
	if i < 0 {
		return 0, 0, 0, 0, false
	}
	if t := strings.Fields(s[i+4:]); len(t) == 0 || !strings.HasSuffix(t[0], "s") {
		return 0, 0, 0, 0, false
	}
	for part := range strings.SplitSeq(s[:i], ",") {
		var n int
		var word string
		if _, err := fmt.Sscanf(strings.TrimSpace(part), "%d %s", &n, &word); err != nil {
			if strings.TrimSpace(part) == "no tests ran" {
				ok = true
				continue
			}
			return 0, 0, 0, 0, false
		}
		switch word {
		case "passed", "xfailed", "xpassed":
			passed += n
		case "failed":
			failed += n
		case "error", "errors":
			errs += n
		case "skipped":
			skipped += n
		case "deselected", "warning", "warnings", "rerun", "reruns":
		default:
			return 0, 0, 0, 0, false
		}
		ok = true
	}
	return passed, failed, errs, skipped, ok
}

// verifyCaps says what the binary's verify accepts.
type verifyCaps struct {
	TPU    bool // --tpu: the after run on the simulated TPU host
	Format bool // --format json (else --json)
}

func probeVerify(ctx context.Context, bin string) verifyCaps {
	out, _ := exec.CommandContext(ctx, bin, "verify", "--help").CombinedOutput()
	s := string(out)
	return verifyCaps{TPU: strings.Contains(s, "--tpu"), Format: strings.Contains(s, "--format")}
}

// verifyArgs is the one place the verify call is spelled: with --tpu once the
// binary has it, plain verify (the after run on the CPU) until then.
func verifyArgs(caps verifyCaps, target, python, tree, command string, runLimit time.Duration) []string {
	args := []string{"verify"}
	if caps.TPU {
		args = append(args, "--tpu")
	}
	args = append(args, "--target", target, "--python", python, "--timeout", runLimit.String(),
		"--ignore-lines", pytestTimeLine)
	if caps.Format {
		args = append(args, "--format", "json")
	} else {
		args = append(args, "--json")
	}
	return append(args, tree, "--", command)
}

// hostRunOne runs verify on one prepared tree for one target.
func hostRunOne(ctx context.Context, o Options, bin string, caps verifyCaps, tree string, s hostSuite, target string) HostRun {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, verifyArgs(caps, target, o.HostPython(), tree, hostCommand(s), o.Timeout/2)...)
	// The sandbox exposes $PALLASIFY_PYTHON's venv: the base venv the
	// benchmark venv's .pth points into.
	cmd.Env = append(os.Environ(), "PALLASIFY_PYTHON="+o.HostBase)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	secs := time.Since(t0).Seconds()
	exit := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = ee.ExitCode()
	} else if err != nil {
		return HostRun{Repo: s.Repo, Target: target, Seconds: secs, VerifyExit: -1, Error: err.Error()}
	}
	r, perr := hostRunFromVerify(s.Repo, target, stdout.Bytes())
	r.VerifyExit, r.Seconds = exit, secs
	if perr != nil || exit >= 2 {
		r.Error = fmt.Sprintf("verify exit %d: %s", exit, tail(stderr.String(), 400))
	}
	return r
}

// prepareTree copies the repository to a temporary directory and puts the
// step script at its root; the corpus is never written.
func prepareTree(corpus, tmp string, s hostSuite) (string, error) {
	tree := filepath.Join(tmp, s.Repo)
	if err := os.CopyFS(tree, os.DirFS(filepath.Join(corpus, s.Repo))); err != nil {
		return "", fmt.Errorf("copy: %w", err)
	}
	if s.Step != "" {
		b, err := stepScripts.ReadFile("tpuhost/" + s.Step)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(tree, stepName), b, 0o644); err != nil {
			return "", err
		}
	}
	return tree, nil
}

// hostRun runs every selected repository for every target, one verify at a
// time (the machine has few cores and each run is two processes).
func hostRun(ctx context.Context, o Options, bin string) *HostReport {
	rep := &HostReport{Verify: "cpu"}
	t0 := time.Now()
	defer func() { rep.WallS = time.Since(t0).Seconds() }()
	fmt.Fprintf(o.Err, "corpus: tpuhost: venv %s …\n", o.HostVenv)
	rep.Venv = ensureHostVenv(ctx, o.HostVenv, o.HostBase, hostRequirements)
	if rep.Venv.Error != "" {
		return rep
	}
	caps := probeVerify(ctx, bin)
	if caps.TPU {
		rep.Verify = "tpu"
	}
	for _, s := range hostSuites {
		if len(o.Only) > 0 && !slices.Contains(o.Only, s.Repo) {
			continue
		}
		if _, err := os.Stat(filepath.Join(o.Corpus, s.Repo)); err != nil {
			rep.Runs = append(rep.Runs, HostRun{Repo: s.Repo, Error: "not in the corpus: " + err.Error()})
			continue
		}
		tmp, err := os.MkdirTemp("", "pallasify-tpuhost-")
		if err != nil {
			rep.Runs = append(rep.Runs, HostRun{Repo: s.Repo, Error: err.Error()})
			continue
		}
		tree, err := prepareTree(o.Corpus, tmp, s)
		for _, target := range o.HostTargets {
			if err != nil {
				rep.Runs = append(rep.Runs, HostRun{Repo: s.Repo, Target: target, Error: err.Error()})
				continue
			}
			fmt.Fprintf(o.Err, "corpus: tpuhost: %s --target %s …\n", s.Repo, target)
			r := hostRunOne(ctx, o, bin, caps, tree, s, target)
			fmt.Fprintf(o.Err, "corpus: tpuhost: %s --target %s done: verify exit %d, %.1f s\n", s.Repo, target, r.VerifyExit, r.Seconds)
			rep.Runs = append(rep.Runs, r)
		}
		os.RemoveAll(tmp)
	}
	return rep
}

// ensureHostVenv creates the benchmark venv unless one built from the same
// requirements and base is there: a venv of the base's interpreter, a .pth
// file putting the base venv's site-packages on its path (so pip sees torch
// installed and never downloads it), then pip install -r the requirements.
func ensureHostVenv(ctx context.Context, venv, base string, req []byte) HostVenv {
	hv := HostVenv{Path: venv, Base: base}
	fail := func(format string, a ...any) HostVenv {
		hv.Error = fmt.Sprintf(format, a...)
		return hv
	}
	sum := sha256.Sum256(append(append([]byte{}, req...), []byte("\x00"+base)...))
	stamp := hex.EncodeToString(sum[:])
	stampFile := filepath.Join(venv, ".pallasify-stamp")
	py := filepath.Join(venv, "bin", "python")
	if b, err := os.ReadFile(stampFile); err == nil && strings.TrimSpace(string(b)) == stamp && fileExists(py) {
		hv.Reused = true
		hv.SizeMB = dirMB(venv)
		return hv
	}
	t0 := time.Now()
	pyOut := func(exe, code string) (string, error) {
		out, err := exec.CommandContext(ctx, exe, "-c", code).Output()
		return strings.TrimSpace(string(out)), err
	}
	baseExe, err := pyOut(base, "import sys; print(sys._base_executable)")
	if err != nil {
		return fail("base python %s: %v", base, err)
	}
	basePure, err := pyOut(base, "import sysconfig; print(sysconfig.get_paths()['purelib'])")
	if err != nil {
		return fail("base python %s: %v", base, err)
	}
	if err := os.RemoveAll(venv); err != nil {
		return fail("%v", err)
	}
	if out, err := exec.CommandContext(ctx, baseExe, "-m", "venv", venv).CombinedOutput(); err != nil {
		return fail("python -m venv: %v: %s", err, tail(string(out), 400))
	}
	pure, err := pyOut(py, "import sysconfig; print(sysconfig.get_paths()['purelib'])")
	if err != nil {
		return fail("venv python: %v", err)
	}
	// "00-" sorts first among the .pth files; the path is appended after
	// the venv's own site-packages, so what pip installs here wins.
	if err := os.WriteFile(filepath.Join(pure, "00-pallasify-base.pth"), []byte(basePure+"\n"), 0o644); err != nil {
		return fail("%v", err)
	}
	reqFile := filepath.Join(venv, "tpuhost-requirements.txt")
	if err := os.WriteFile(reqFile, req, 0o644); err != nil {
		return fail("%v", err)
	}
	pip := exec.CommandContext(ctx, py, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-r", reqFile)
	if out, err := pip.CombinedOutput(); err != nil {
		return fail("pip install: %v: %s", err, tail(string(out), 600))
	}
	if fileExists(filepath.Join(pure, "torch")) {
		return fail("pip installed torch into %s (the .pth to %s was not seen)", venv, basePure)
	}
	hv.InstallS = time.Since(t0).Seconds()
	hv.SizeMB = dirMB(venv)
	if err := os.WriteFile(stampFile, []byte(stamp+"\n"), 0o644); err != nil {
		return fail("%v", err)
	}
	return hv
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func dirMB(dir string) float64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return float64(n) / (1 << 20)
}
