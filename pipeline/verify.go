package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pallasify/pallasify/transforms/safefs"
	"github.com/pallasify/pallasify/validators/sandbox"
	"github.com/pallasify/pallasify/validators/tpuhost"
)

// Verify runs a user's own short command (a test, a few training steps) in
// the original tree and in the migrated tree, on the CPU and in the
// sandbox, and compares what it prints: the text line by line and every
// number in it, bit-identical as printed or within the tolerance given.

// VerifyOptions configure one behaviour check.
type VerifyOptions struct {
	Original string   // the tree as it was
	Migrated string   // the migrated tree (WriteTree's output)
	Command  []string // one element: run by /bin/sh -c; more: the argv itself
	// Python is the interpreter the command's `python` resolves to (its
	// directory first on PATH; its environment exposed read-only); default
	// $PALLASIFY_PYTHON, else python3 on PATH.
	Python  string
	Timeout time.Duration // per run; default 5 minutes
	RTol    float64       // relative tolerance for numbers (0: identical)
	ATol    float64       // absolute tolerance for numbers (0: identical)
	// IgnoreLines drops the output lines that match (timings, addresses,
	// paths) from both sides before comparing.
	IgnoreLines []*regexp.Regexp
	// NoSandbox runs the command directly (the user passed --no-sandbox).
	NoSandbox bool
	// Baseline, when set, is the original tree's run from an earlier Verify
	// of the same command: the original is not run again.
	Baseline *VerifyRun
	// TPUHost, when set, runs the migrated tree on the simulated TPU host
	// (validators/tpuhost) instead of the plain CPU; the original still runs
	// on the CPU.
	TPUHost *TPUHost
}

// TPUHost is how a command runs on the simulated TPU host.
type TPUHost struct {
	Dir      string // tpuhost.Install's directory (first on PYTHONPATH, read-only in the sandbox)
	Coverage string // tpuhost.Coverage's JSON: TorchTPU's registrations
	// Devices, Precision, Fallback and AllOps are tpuhost.Options'.
	Devices   int
	Precision string
	Fallback  string
	AllOps    bool
}

// VerifyRun is what one side printed.
type VerifyRun struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error,omitempty"` // killed, timed out, sandbox violation
	Seconds  float64
}

// VerifyResult is the comparison of the two runs.
type VerifyResult struct {
	Original, Migrated VerifyRun
	Lines              int      // output lines compared
	Numbers            int      // numbers compared
	Identical          int      // numbers printed identically
	MaxAbs, MaxRel     float64  // the largest differences among the numbers
	Differences        []string // one line each, in output order; empty when the behaviour is the same
	// TPU is what the simulated TPU host saw in the migrated run (with
	// VerifyOptions.TPUHost): ops without a TPU kernel, CUDA-only calls and
	// custom CUDA ops reached, device mix-ups, compiles, jax_op kernels.
	TPU *tpuhost.Report `json:"tpu,omitempty"`
}

// Same reports whether the migrated tree behaved as the original did.
func (r *VerifyResult) Same() bool { return len(r.Differences) == 0 }

// Clean reports whether the migrated tree behaved as the original did and,
// on the simulated TPU host, reached nothing that fails or differs on a
// real one.
func (r *VerifyResult) Clean() bool { return r.Same() && (r.TPU == nil || r.TPU.Findings() == 0) }

// Verify runs the command in both trees and compares the outputs. Both runs
// see their tree at the same path (one work directory, filled with each tree
// in turn), so paths the command prints agree.
func Verify(ctx context.Context, o VerifyOptions) (*VerifyResult, error) {
	if len(o.Command) == 0 {
		return nil, errors.New("verify: no command given")
	}
	o = verifyDefaults(o)
	work, err := sandbox.MkdirTemp("pallasify-verify-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	tree := filepath.Join(work, "tree")
	res := &VerifyResult{}
	for _, side := range []struct {
		src string
		out *VerifyRun
	}{{o.Original, &res.Original}, {o.Migrated, &res.Migrated}} {
		if side.out == &res.Original && o.Baseline != nil {
			res.Original = *o.Baseline
			continue
		}
		if err := os.RemoveAll(tree); err != nil {
			return nil, err
		}
		if err := copyPlain(side.src, tree); err != nil {
			return nil, fmt.Errorf("verify: copy %s: %w", side.src, err)
		}
		var host *TPUHost
		if side.out == &res.Migrated {
			host = o.TPUHost
		}
		run, rep, err := runSide(ctx, o, work, host)
		if err != nil {
			return nil, err
		}
		*side.out = run
		if host != nil {
			res.TPU = rep
		}
	}
	compareRuns(res, o)
	return res, nil
}

// Ops runs the command once in tree (as it is, not migrated) on the
// simulated TPU host with every aten op recorded (TPUHost.AllOps): the op
// coverage table of a workload before any migration.
func Ops(ctx context.Context, o VerifyOptions) (*tpuhost.Report, VerifyRun, error) {
	if len(o.Command) == 0 {
		return nil, VerifyRun{}, errors.New("ops: no command given")
	}
	if o.TPUHost == nil {
		return nil, VerifyRun{}, errors.New("ops: no simulated TPU host")
	}
	o = verifyDefaults(o)
	host := *o.TPUHost
	host.AllOps = true
	work, err := sandbox.MkdirTemp("pallasify-ops-*")
	if err != nil {
		return nil, VerifyRun{}, err
	}
	defer os.RemoveAll(work)
	if err := copyPlain(o.Original, filepath.Join(work, "tree")); err != nil {
		return nil, VerifyRun{}, fmt.Errorf("ops: copy %s: %w", o.Original, err)
	}
	run, rep, err := runSide(ctx, o, work, &host)
	return rep, run, err
}

// verifyDefaults fills the time limit and the interpreter.
func verifyDefaults(o VerifyOptions) VerifyOptions {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Python == "" {
		o.Python = os.Getenv("PALLASIFY_PYTHON")
	}
	if o.Python == "" {
		if p, err := exec.LookPath("python3"); err == nil {
			o.Python = p
		}
	}
	return o
}

// verifyEnv is the command's environment: the CPU only (no CUDA device, JAX
// and TorchTPU on the CPU), a fixed hash seed, the interpreter first on PATH.
func verifyEnv(python, home string) []string {
	path := "/usr/local/bin:/usr/bin:/bin"
	if python != "" {
		path = filepath.Dir(python) + ":" + path
	}
	env := []string{"PATH=" + path, "LANG=C.UTF-8", "PYTHONHASHSEED=0", "PYTHONDONTWRITEBYTECODE=1",
		"CUDA_VISIBLE_DEVICES=", "JAX_PLATFORMS=cpu", "PJRT_DEVICE=CPU", "OMP_NUM_THREADS=1",
		"ALLOW_MULTIPLE_LIBTPU_LOAD=1", "TPU_SKIP_MDS_QUERY=1"}
	if python != "" {
		env = append(env, "PALLASIFY_PYTHON="+python)
	}
	return env
}

// runSide runs the command once, in work/tree, under the sandbox; with
// host, on the simulated TPU host, whose merged report it returns. The
// sandbox's work directory is work (so the host's report directory,
// work/tpuhost, is writable and outside the tree); the command starts in
// work/tree.
func runSide(ctx context.Context, o VerifyOptions, work string, host *TPUHost) (VerifyRun, *tpuhost.Report, error) {
	tree := filepath.Join(work, "tree")
	env := verifyEnv(o.Python, work)
	sb := &sandbox.Sandbox{Disabled: o.NoSandbox}
	reports := filepath.Join(work, "tpuhost")
	if host != nil {
		if err := os.RemoveAll(reports); err != nil {
			return VerifyRun{}, nil, err
		}
		if err := os.Mkdir(reports, 0o777); err != nil {
			return VerifyRun{}, nil, err
		}
		os.Chmod(reports, 0o777) // the sandboxed process may be another user
		env = tpuhost.Prepare(env, host.Dir, tpuhost.Options{Coverage: host.Coverage, Report: reports,
			Devices: host.Devices, Precision: host.Precision, Fallback: host.Fallback, AllOps: host.AllOps})
		sb.ReadOnly = append(sb.ReadOnly, host.Dir)
		if host.Coverage != "" {
			sb.ReadOnly = append(sb.ReadOnly, host.Coverage)
		}
	}
	sb.Env = env
	if o.Python != "" && filepath.IsAbs(o.Python) {
		penv := filepath.Dir(filepath.Dir(o.Python))
		sb.ReadOnly = append(sb.ReadOnly, penv)
		if real, err := filepath.EvalSymlinks(o.Python); err == nil {
			sb.ReadOnly = append(sb.ReadOnly, filepath.Dir(filepath.Dir(real)))
		}
	}
	argv := o.Command
	if len(argv) == 1 {
		argv = []string{"/bin/sh", "-c", argv[0]}
	}
	argv = append([]string{"/bin/sh", "-c", `cd "$0" && exec "$@"`, tree}, argv...)
	cmd, cancel, err := sb.Command(ctx, work, sandbox.Limits{Wall: o.Timeout, FileMB: 1024}, argv...)
	if err != nil {
		return VerifyRun{}, nil, fmt.Errorf("verify: %w", err)
	}
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err = cmd.Run()
	r := VerifyRun{Stdout: stdout.String(), Stderr: stderr.String(), Seconds: time.Since(t0).Seconds()}
	if cmd.ProcessState != nil {
		r.ExitCode = cmd.ProcessState.ExitCode()
	}
	switch {
	case sb.Violation(cmd) != "":
		r.Error = "sandboxed process stopped: " + sb.Violation(cmd)
	case ctx.Err() != nil:
		return r, nil, ctx.Err()
	case time.Since(t0) >= o.Timeout:
		r.Error = fmt.Sprintf("timed out after %s", o.Timeout)
	case err != nil && cmd.ProcessState != nil && !cmd.ProcessState.Exited():
		r.Error = "killed: " + cmd.ProcessState.String()
	case err != nil && cmd.ProcessState == nil:
		return r, nil, fmt.Errorf("verify: run %v: %w", o.Command, err)
	}
	if host == nil {
		return r, nil, nil
	}
	rep, err := tpuhost.ReadReports(reports)
	if err != nil {
		return r, nil, err
	}
	if rep.Processes == 0 {
		rep.Errors = append(rep.Errors, "no Python process of the command reported from the simulated TPU host (did it run python?)")
	}
	return r, rep, nil
}

// numberRE matches a number as programs print them (ints, decimals,
// exponents, nan and inf).
var numberRE = regexp.MustCompile(`[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\b(?:nan|inf|NaN|Inf)\b`)

// compareRuns fills res's comparison of the two runs' stdout.
func compareRuns(res *VerifyResult, o VerifyOptions) {
	a, b := res.Original, res.Migrated
	diff := func(format string, args ...any) {
		res.Differences = append(res.Differences, fmt.Sprintf(format, args...))
	}
	if a.Error != "" || b.Error != "" {
		if a.Error != b.Error {
			diff("run: original %q, migrated %q", orNone(a.Error), orNone(b.Error))
		}
	}
	if a.ExitCode != b.ExitCode {
		diff("exit code: original %d, migrated %d", a.ExitCode, b.ExitCode)
	}
	al, bl := keptLines(a.Stdout, o.IgnoreLines), keptLines(b.Stdout, o.IgnoreLines)
	if len(al) != len(bl) {
		diff("output: original %d lines, migrated %d lines", len(al), len(bl))
	}
	for i := 0; i < len(al) && i < len(bl); i++ {
		res.Lines++
		compareLine(res, i+1, al[i], bl[i], o, diff)
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func keptLines(out string, ignore []*regexp.Regexp) []string {
	var kept []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		drop := false
		for _, re := range ignore {
			drop = drop || re.MatchString(l)
		}
		if !drop {
			kept = append(kept, strings.TrimRight(l, "\r"))
		}
	}
	return kept
}

// compareLine compares one line: its text with the numbers taken out must
// be equal, and each number pair identical or within tolerance.
func compareLine(res *VerifyResult, n int, a, b string, o VerifyOptions, diff func(string, ...any)) {
	an, bn := numberRE.FindAllString(a, -1), numberRE.FindAllString(b, -1)
	at, bt := numberRE.ReplaceAllString(a, "#"), numberRE.ReplaceAllString(b, "#")
	if at != bt || len(an) != len(bn) {
		diff("line %d: original %q, migrated %q", n, a, b)
		return
	}
	for i := range an {
		res.Numbers++
		if an[i] == bn[i] {
			res.Identical++
			continue
		}
		x, errA := strconv.ParseFloat(an[i], 64)
		y, errB := strconv.ParseFloat(bn[i], 64)
		if errA != nil || errB != nil {
			diff("line %d: number %d: original %s, migrated %s", n, i+1, an[i], bn[i])
			continue
		}
		d := math.Abs(x - y)
		rel := math.Inf(1)
		if x != 0 {
			rel = d / math.Abs(x)
		}
		// The maxima are finite (the JSON report holds them): a difference
		// from 0, nan or inf shows in its own line, not in them.
		if !math.IsInf(d, 0) && !math.IsNaN(d) {
			res.MaxAbs = math.Max(res.MaxAbs, d)
		}
		if !math.IsInf(rel, 0) && !math.IsNaN(rel) {
			res.MaxRel = math.Max(res.MaxRel, rel)
		}
		if !(d <= o.ATol+o.RTol*math.Abs(x)) {
			diff("line %d: number %d: original %s, migrated %s (|diff| %.3g, relative %.3g)", n, i+1, an[i], bn[i], d, rel)
		}
	}
}

// copyPlain copies the tree src to dst as a plain copy would, less version
// control, virtual environments and caches (copySkipDir); symlinks stay
// links.
func copyPlain(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	tree, err := safefs.OpenTree(dst)
	if err != nil {
		return err
	}
	defer tree.Close()
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			if p != src && copySkipDir(d.Name()) {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return tree.Symlink(l, rel)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return tree.CopyFrom(p, rel, info.Mode().Perm())
		}
		return nil
	})
}

// Summary is the one-paragraph verdict the CLI prints.
func (r *VerifyResult) Summary() string {
	var b strings.Builder
	if r.Same() {
		fmt.Fprintf(&b, "same behaviour: %d output lines, %d numbers (%d printed identically", r.Lines, r.Numbers, r.Identical)
		if r.Identical < r.Numbers {
			fmt.Fprintf(&b, ", the others within tolerance: max |diff| %.3g, max relative %.3g", r.MaxAbs, r.MaxRel)
		}
		fmt.Fprintf(&b, "), exit code %d both\n", r.Original.ExitCode)
		return b.String()
	}
	fmt.Fprintf(&b, "DIFFERENT behaviour: %d difference(s)\n", len(r.Differences))
	for i, d := range r.Differences {
		if i == 20 {
			fmt.Fprintf(&b, "  ... %d more\n", len(r.Differences)-i)
			break
		}
		fmt.Fprintf(&b, "  %s\n", d)
	}
	for _, side := range []struct {
		name string
		run  VerifyRun
	}{{"original", r.Original}, {"migrated", r.Migrated}} {
		if side.run.ExitCode != 0 || side.run.Error != "" {
			fmt.Fprintf(&b, "  the %s run ended with exit code %d%s; its stderr ends:\n", side.name, side.run.ExitCode,
				map[bool]string{true: " (" + side.run.Error + ")", false: ""}[side.run.Error != ""])
			lines := strings.Split(strings.TrimRight(side.run.Stderr, "\n"), "\n")
			if len(lines) > 6 {
				lines = lines[len(lines)-6:]
			}
			for _, l := range lines {
				fmt.Fprintf(&b, "    | %s\n", l)
			}
		}
	}
	return b.String()
}

// TPUSummary is what the simulated TPU host saw, for the CLI ("" without a
// TPU run). Each finding names its code (codes.go: PTH001-PTH004).
func (r *VerifyResult) TPUSummary() string {
	if r.TPU == nil {
		return ""
	}
	return TPUReportText(r.TPU)
}

// TPUReportText renders a simulated TPU host's report: one line per
// finding, with its code and first call site.
func TPUReportText(t *tpuhost.Report) string {
	var b strings.Builder
	if t.Findings() == 0 {
		fmt.Fprintf(&b, "simulated TPU host: nothing reached that fails on a TPU (%d device(s), precision %s", t.Devices, orNone(t.Precision))
		if len(t.JaxOps) > 0 {
			fmt.Fprintf(&b, "; %d jax_op kernel(s) ran", len(t.JaxOps))
		}
		b.WriteString(")\n")
	} else {
		fmt.Fprintf(&b, "simulated TPU host: %d finding(s)\n", t.Findings())
	}
	site := func(s string) string {
		if s == "" {
			return "(no Python frame)"
		}
		return s
	}
	for _, u := range t.UnsupportedOps {
		fmt.Fprintf(&b, "  %s: %s %s has no TPU kernel (%s), %d call(s)\n", site(u.Site), CodeTPUOp, u.Op, u.Class, u.Count)
	}
	for _, c := range t.CUDAOnlyCalls {
		fmt.Fprintf(&b, "  %s: %s CUDA-only call %s reached on the TPU path, %d time(s): %s\n", site(c.Site), CodeTPUCUDACall, c.API, c.Count, c.Error)
	}
	for _, c := range t.CustomCUDAOps {
		fmt.Fprintf(&b, "  %s: %s custom CUDA op %s called with tpu tensors, %d time(s)\n", site(c.Site), CodeTPUCustomOp, c.Op, c.Count)
	}
	for _, m := range t.DeviceMixups {
		fmt.Fprintf(&b, "  %s: %s %s mixes %s, %d time(s)\n", site(m.Site), CodeTPUMixup, m.Op, m.Devices, m.Count)
	}
	for _, e := range t.Errors {
		fmt.Fprintf(&b, "  note: %s\n", e)
	}
	return b.String()
}

// DefaultTPUHostCacheDir is where the simulated TPU host's runtime and
// coverage table are kept.
func DefaultTPUHostCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "pallasify", "tpuhost")
}

// NewTPUHost installs the simulated TPU host's runtime and reads TorchTPU's
// op coverage from python's environment (torch_tpu must be installed
// there; cached by version in cacheDir, default DefaultTPUHostCacheDir).
func NewTPUHost(ctx context.Context, python, cacheDir string) (*TPUHost, error) {
	if cacheDir == "" {
		cacheDir = DefaultTPUHostCacheDir()
	}
	if python == "" {
		python = verifyDefaults(VerifyOptions{}).Python
	}
	dir, err := tpuhost.Install(cacheDir)
	if err != nil {
		return nil, fmt.Errorf("simulated TPU host: %w", err)
	}
	cov, err := tpuhost.Coverage(ctx, python, cacheDir)
	if err != nil {
		return nil, fmt.Errorf("simulated TPU host: TorchTPU's op coverage (is torch-tpu installed for %s?): %w", python, err)
	}
	return &TPUHost{Dir: dir, Coverage: cov}, nil
}
