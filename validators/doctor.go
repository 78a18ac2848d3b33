package validators

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pallasify/pallasify/validators/sandbox"
)

// Check statuses.
const (
	CheckOK   = "ok"
	CheckWarn = "warn"
	CheckFail = "fail"
	CheckInfo = "info"
)

// Check is one doctor finding: what validation needs and whether it is here.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Fix says what to do when the check is not ok.
	Fix string `json:"fix,omitempty"`
	// Why says what the tool needs it for.
	Why string `json:"why"`
}

// DoctorOptions tune Doctor.
type DoctorOptions struct {
	Python string // as Options.Python
}

// Doctor checks what validation needs: Python and the venv, the pinned jax
// and the interpret-mode checks it supports, libtpu and whether deviceless
// TPU compiles work for every default chip (the TPU compile gate), g++,
// bubblewrap, git; which parts of the real stack (torch, torch_tpu, triton)
// the venv holds; and reports nvcc and a GPU when present (informational).
func Doctor(ctx context.Context, opt DoctorOptions) []Check {
	var checks []Check
	py, err := findPython(opt.Python)
	pyCheck := Check{Name: "python", Why: "runs the validation harness (JAX TPU interpret mode)"}
	if err != nil {
		pyCheck.Status, pyCheck.Detail, pyCheck.Fix = CheckFail, err.Error(), "run `make venv` or set PALLASIFY_PYTHON"
		checks = append(checks, pyCheck)
	} else {
		out, err := run(ctx, 20*time.Second, py, "-c", "import sys; print(sys.version.split()[0])")
		if err != nil {
			pyCheck.Status, pyCheck.Detail, pyCheck.Fix = CheckFail, fmt.Sprintf("%s: %v", py, err), "run `make venv`"
		} else {
			pyCheck.Status, pyCheck.Detail = CheckOK, fmt.Sprintf("%s (Python %s)", py, strings.TrimSpace(out))
			if !strings.Contains(py, ".venv") && os.Getenv("PALLASIFY_PYTHON") == "" {
				pyCheck.Status, pyCheck.Fix = CheckWarn, "not the project venv: run `make venv` (pinned jax)"
			}
		}
		checks = append(checks, pyCheck)
		checks = append(checks, jaxChecks(ctx, py)...)
	}
	checks = append(checks, toolCheck(ctx, "g++", []string{"--version"}, true,
		"compiles the CUDA-on-CPU reference (emulator, C++20)", "apt-get install g++ (12 or newer)"))
	sb := &sandbox.Sandbox{}
	bw := Check{Name: "bubblewrap", Why: "confines the reference build and both runs (no network, read-only system)"}
	if err := sb.Check(ctx); err != nil {
		bw.Status, bw.Detail = CheckFail, err.Error()
		bw.Fix = "apt-get install bubblewrap and allow unprivileged user namespaces; or pass --no-sandbox (unconfined)"
	} else {
		bw.Status, bw.Detail = CheckOK, "bwrap starts a sandbox"
	}
	checks = append(checks, bw)
	checks = append(checks, toolCheck(ctx, "git", []string{"--version"}, true,
		"reads repositories and creates branches", "apt-get install git"))
	checks = append(checks, toolCheck(ctx, "nvcc", []string{"--version"}, false,
		"optional: compare the emulator with the real GPU", ""))
	checks = append(checks, toolCheck(ctx, "nvidia-smi", []string{"--query-gpu=name", "--format=csv,noheader"}, false,
		"optional: a GPU for cross-checking references", ""))
	return checks
}

func jaxChecks(ctx context.Context, py string) []Check {
	c := Check{Name: "jax", Why: "runs Pallas candidates in TPU interpret mode"}
	want := PinnedJAX()
	dir, err := os.MkdirTemp("", "pallasify-doctor-")
	if err != nil {
		c.Status, c.Detail = CheckFail, err.Error()
		return []Check{c}
	}
	defer os.RemoveAll(dir)
	if err := writeHarness(filepath.Join(dir, "harness")); err != nil {
		c.Status, c.Detail = CheckFail, err.Error()
		return []Check{c}
	}
	cmd := exec.CommandContext(ctx, py, "-m", "pallasify_harness", "--probe", "--probe-tpu")
	cmd.Env = append(harnessEnv(dir), "HOME="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		c.Status, c.Detail, c.Fix = CheckFail, fmt.Sprintf("cannot import jax: %v: %s", err, lastLine(errb.String())), "run `make venv`"
		return []Check{c}
	}
	var probe harnessProbe
	if err := json.Unmarshal(out.Bytes(), &probe); err != nil {
		c.Status, c.Detail = CheckFail, "unexpected probe output: "+lastLine(out.String())
		return []Check{c}
	}
	c.Status, c.Detail = CheckOK, "jax "+probe.JAXVersion
	if want != "" && probe.JAXVersion != want {
		c.Status = CheckWarn
		c.Detail += " (pinned: " + want + ")"
		c.Fix = "run `make venv` to install the pinned version"
	}
	ic := Check{Name: "interpret-mode checks", Why: "race detection, NaN-filled uninitialised memory, raising out-of-bounds reads"}
	if probe.InterpretParams == nil {
		ic.Status, ic.Detail = CheckWarn, "no pltpu.InterpretParams: only interpret=True (no race/poison/bounds checks)"
	} else {
		var on, off []string
		for _, k := range []string{"detect_races", "uninitialized_memory", "out_of_bounds_reads", "random_seed"} {
			if probe.Checks[k] {
				on = append(on, k)
			} else {
				off = append(off, k)
			}
		}
		ic.Status = CheckOK
		ic.Detail = *probe.InterpretParams + ": " + strings.Join(on, ", ")
		if len(off) > 0 {
			ic.Status = CheckWarn
			ic.Detail += "; missing: " + strings.Join(off, ", ")
		}
	}
	return append([]Check{c, ic}, stackChecks(probe)...)
}

// harnessProbe is the harness's --probe --probe-tpu output.
type harnessProbe struct {
	JAXVersion      string             `json:"jax_version"`
	InterpretParams *string            `json:"interpret_params"`
	Checks          map[string]bool    `json:"checks"`
	Packages        map[string]*string `json:"packages"`
	TPU             struct {
		LibTPU  *string  `json:"libtpu"`
		Chips   []string `json:"chips"`
		Default []string `json:"default"`
		Error   string   `json:"error"`
		Compile map[string]struct {
			OK    bool    `json:"ok"`
			S     float64 `json:"s"`
			Error string  `json:"error"`
		} `json:"compile"`
	} `json:"tpu"`
}

// stackChecks reports libtpu and the deviceless TPU compile (the compile
// gate needs both), and which other parts of the real stack are installed.
func stackChecks(p harnessProbe) []Check {
	lt := Check{Name: "libtpu", Why: "the TPU compile gate: deviceless Mosaic lowering and XLA:TPU compiles"}
	if p.TPU.LibTPU == nil {
		lt.Status, lt.Detail = CheckFail, "not installed"
		lt.Fix = "run `make venv` (pins libtpu), or validate with --tpu-chips none (no TPU compile gate)"
	} else {
		lt.Status, lt.Detail = CheckOK, "libtpu "+*p.TPU.LibTPU
	}
	tc := Check{Name: "tpu compile", Why: "proves a candidate compiles for real TPU chips (" + strings.Join(DefaultTPUChips, ", ") + ") without one"}
	switch {
	case p.TPU.LibTPU == nil:
		tc.Status, tc.Detail, tc.Fix = CheckFail, "cannot run without libtpu", lt.Fix
	case p.TPU.Error != "":
		tc.Status, tc.Detail, tc.Fix = CheckFail, p.TPU.Error, "check the libtpu install (`make venv`)"
	default:
		var parts, bad []string
		for _, c := range DefaultTPUChips {
			r, ok := p.TPU.Compile[c]
			switch {
			case !ok:
				bad = append(bad, c+": not tried")
			case !r.OK:
				bad = append(bad, c+": "+r.Error)
			default:
				parts = append(parts, fmt.Sprintf("%s %.2fs", c, r.S))
			}
		}
		tc.Status, tc.Detail = CheckOK, "deviceless compile of a Pallas kernel: "+strings.Join(parts, ", ")
		if len(bad) > 0 {
			tc.Status, tc.Detail = CheckFail, strings.Join(bad, "; ")
			tc.Fix = "check the libtpu install (`make venv`), or pass --tpu-chips with the chips that work"
		}
	}
	checks := []Check{lt, tc}
	for _, pk := range []struct{ dist, name, why string }{
		{"torch", "torch", "the migrated code's PyTorch (real-stack tests, op registration checks)"},
		{"torch-tpu", "torch_tpu", "TorchTPU: checks the tpu target's names and registers Pallas ops with jax_op"},
		{"triton", "triton", "runs Triton kernels in its interpreter (Triton references)"},
	} {
		c := Check{Name: pk.name, Why: pk.why}
		if v := p.Packages[pk.dist]; v != nil {
			c.Status, c.Detail = CheckOK, pk.name+" "+*v
		} else {
			c.Status, c.Detail, c.Fix = CheckWarn, "not installed in this Python", "run `make venv` (the real stack, pinned)"
		}
		checks = append(checks, c)
	}
	return checks
}

func toolCheck(ctx context.Context, name string, args []string, required bool, why, fix string) Check {
	c := Check{Name: name, Why: why}
	p, err := exec.LookPath(name)
	if err != nil {
		if required {
			c.Status, c.Detail, c.Fix = CheckFail, "not found on PATH", fix
		} else {
			c.Status, c.Detail = CheckInfo, "not present"
		}
		return c
	}
	out, err := run(ctx, 15*time.Second, p, args...)
	first := strings.TrimSpace(out)
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	switch {
	case err != nil && required:
		c.Status, c.Detail, c.Fix = CheckFail, fmt.Sprintf("%s: %v", p, err), fix
	case err != nil:
		c.Status, c.Detail = CheckInfo, fmt.Sprintf("%s present but failed: %v", p, err)
	case required:
		c.Status, c.Detail = CheckOK, first
	default:
		c.Status, c.Detail = CheckInfo, first
	}
	return c
}

func run(ctx context.Context, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}
