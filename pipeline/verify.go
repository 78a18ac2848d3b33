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
}

// Same reports whether the migrated tree behaved as the original did.
func (r *VerifyResult) Same() bool { return len(r.Differences) == 0 }

// Verify runs the command in both trees and compares the outputs. Both runs
// see their tree at the same path (one work directory, filled with each tree
// in turn), so paths the command prints agree.
func Verify(ctx context.Context, o VerifyOptions) (*VerifyResult, error) {
	if len(o.Command) == 0 {
		return nil, errors.New("verify: no command given")
	}
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
		run, err := runSide(ctx, o, tree)
		if err != nil {
			return nil, err
		}
		*side.out = run
	}
	compareRuns(res, o)
	return res, nil
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

// runSide runs the command once, in tree, under the sandbox.
func runSide(ctx context.Context, o VerifyOptions, tree string) (VerifyRun, error) {
	sb := &sandbox.Sandbox{Disabled: o.NoSandbox, Env: verifyEnv(o.Python, tree)}
	if o.Python != "" && filepath.IsAbs(o.Python) {
		env := filepath.Dir(filepath.Dir(o.Python))
		sb.ReadOnly = append(sb.ReadOnly, env)
		if real, err := filepath.EvalSymlinks(o.Python); err == nil {
			sb.ReadOnly = append(sb.ReadOnly, filepath.Dir(filepath.Dir(real)))
		}
	}
	argv := o.Command
	if len(argv) == 1 {
		argv = []string{"/bin/sh", "-c", argv[0]}
	}
	cmd, cancel, err := sb.Command(ctx, tree, sandbox.Limits{Wall: o.Timeout, FileMB: 1024}, argv...)
	if err != nil {
		return VerifyRun{}, fmt.Errorf("verify: %w", err)
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
		return r, ctx.Err()
	case time.Since(t0) >= o.Timeout:
		r.Error = fmt.Sprintf("timed out after %s", o.Timeout)
	case err != nil && cmd.ProcessState != nil && !cmd.ProcessState.Exited():
		r.Error = "killed: " + cmd.ProcessState.String()
	case err != nil && cmd.ProcessState == nil:
		return r, fmt.Errorf("verify: run %v: %w", o.Command, err)
	}
	return r, nil
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
		rel := d / math.Max(math.Abs(x), math.SmallestNonzeroFloat64)
		res.MaxAbs, res.MaxRel = math.Max(res.MaxAbs, d), math.Max(res.MaxRel, rel)
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
	return b.String()
}
