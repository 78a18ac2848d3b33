// Package validators proves a Pallas draft against the original CUDA kernel:
// it runs the Python harness (validators/harness, embedded in the binary)
// under the bubblewrap sandbox with the reference (a ref.so built by the
// CUDA-on-CPU emulator, or a plain-Python reference.py) and the candidate,
// and returns the harness's verdict. Verdicts are cached by content hash.
package validators

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sourcegraph/conc/iter"

	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// VerdictSchema is the verdict JSON schema tag (validators/CONTRACTS.md).
const VerdictSchema = "pallasify.verdict/v1"

// Verdict values.
const (
	Proven   = "proven"
	Rejected = "rejected"
	Error    = "error"
)

// Options tune one validation.
type Options struct {
	// NoSandbox runs the harness unconfined (the user passed --no-sandbox).
	NoSandbox bool
	// Seeds per shape (default 5; fewer is not a proof).
	Seeds int
	// Quick tests fewer shapes (screening, mutants).
	Quick bool
	// CacheDir holds cached verdicts; "" disables the cache.
	CacheDir string
	// NoCache skips reading the cache (results are still written).
	NoCache bool
	// Python is the interpreter with the pinned jax; "" looks up
	// $PALLASIFY_PYTHON, then .venv/bin/python above the working directory,
	// then python3.
	Python string
	// Timeout bounds one harness run (default DefaultTimeout).
	Timeout time.Duration
	// Limits override the sandbox limits (zero fields keep the defaults).
	Limits sandbox.Limits
	// UnsafeSkipASTBan disables the static ban (tests of the sandbox only).
	UnsafeSkipASTBan bool
	// TPUChips are the chips the TPU compile gate compiles a proven
	// candidate for (nil: DefaultTPUChips; names from KnownTPUChips).
	TPUChips []string
	// NoTPUCompile turns the TPU compile gate off (the verdict says so and
	// records no chip).
	NoTPUCompile bool
}

// Request is one candidate to validate.
type Request struct {
	Spec kernels.Spec
	// ReferenceSO is the compiled reference library (pallasify_launch ABI);
	// ReferencePy a plain-Python reference (def reference(args) -> dict).
	// Exactly one is set.
	ReferenceSO string
	ReferencePy string
	// ReferenceNote is recorded in the verdict (e.g. why reference.py is used).
	ReferenceNote string
	// KernelTU is the isolated translation unit the reference was built from
	// (part of the cache key; when empty the reference file's bytes are used).
	KernelTU string
	// Candidate is the candidate module's source.
	Candidate []byte
	// Captured, when set, is the original's captured launches
	// (pallasify.captured/v1 JSON, harness captured.py): the candidate and
	// the reference must reproduce their outputs before the sweep runs.
	Captured []byte
	// Shapes, when set, is how many of the spec's sweep entries are
	// validated (the harness's --shapes; default 4, spread over the sweep):
	// a sweep led by captured sizes validates every entry.
	Shapes int
}

// Case is one compared output of one test case.
type Case struct {
	Sizes           map[string]int64 `json:"sizes"`
	Seed            int              `json:"seed"`
	Distribution    string           `json:"distribution"`
	Output          string           `json:"output"`
	MaxAbs          float64          `json:"max_abs"`
	MaxRel          float64          `json:"max_rel"`
	ULPP50          float64          `json:"ulp_p50"`
	ULPP99          float64          `json:"ulp_p99"`
	ULPMax          float64          `json:"ulp_max"`
	Mismatches      int              `json:"mismatches"`
	FirstMismatches [][]int          `json:"first_mismatches"`
	NaNMaskOK       bool             `json:"nan_mask_ok"`
	Degenerate      *string          `json:"degenerate,omitempty"`

	// Scalars are the scalar and size parameters' values in this case.
	Scalars map[string]float64 `json:"scalars,omitempty"`

	// DType and Shape are the output's dtype and array shape in this case.
	DType string  `json:"dtype,omitempty"`
	Shape []int64 `json:"shape,omitempty"`
	// RTol and ATol are the tolerance the output was compared with;
	// TolRatio is its largest error over its element's tolerance (above 1:
	// a mismatch; nil from a harness that did not report it).
	RTol     float64  `json:"rtol"`
	ATol     float64  `json:"atol"`
	TolRatio *float64 `json:"tol_ratio,omitempty"`
}

// Stats aggregates all cases.
type Stats struct {
	MaxAbs     float64 `json:"max_abs"`
	MaxRel     float64 `json:"max_rel"`
	ULPP50     float64 `json:"ulp_p50"`
	ULPP99     float64 `json:"ulp_p99"`
	ULPMax     float64 `json:"ulp_max"`
	Mismatches int     `json:"mismatches"`
	Cases      int     `json:"cases"`
}

// Verdict mirrors the harness's JSON verdict (validators/CONTRACTS.md).
type Verdict struct {
	Schema          string             `json:"schema"`
	Kernel          string             `json:"kernel"`
	Verdict         string             `json:"verdict"`
	Reason          string             `json:"reason"`
	HarnessVersion  string             `json:"harness_version,omitempty"`
	JAXVersion      string             `json:"jax_version"`
	Backend         string             `json:"backend,omitempty"`
	InterpretChecks map[string]any     `json:"interpret_checks"`
	Gates           map[string]*bool   `json:"gates"`
	Reference       map[string]any     `json:"reference,omitempty"`
	Subnormals      string             `json:"subnormals,omitempty"`
	Cases           []Case             `json:"cases"`
	DegenerateCases int                `json:"degenerate_cases"`
	Stats           Stats              `json:"stats"`
	DurationS       float64            `json:"duration_s"`
	Shapes          []map[string]int64 `json:"shapes,omitempty"`
	Seeds           int                `json:"seeds,omitempty"`
	Distributions   []string           `json:"distributions,omitempty"`
	SpecialValues   bool               `json:"special_values,omitempty"`
	// Failures lists the first failure on each failing shape (the reason is
	// the most specific of them).
	Failures  []string `json:"failures,omitempty"`
	Precision string   `json:"precision,omitempty"`
	// PhasesS is the wall time of each kind of phase ("candidate run 1",
	// "reference", "forced", "tpu compile", ...): where a slow validation spent it.
	PhasesS map[string]float64 `json:"phases_s,omitempty"`
	// Sandboxed says whether the harness ran under bubblewrap.
	Sandboxed bool `json:"sandboxed"`
	// Cached is true when the verdict came from the cache.
	Cached bool `json:"cached,omitempty"`
	// Output is the tail of the harness's own output (diagnostics).
	Output string `json:"output,omitempty"`
	// TPU is the TPU compile gate's result per chip ("v5e", "v6e", "tpu7x"):
	// the candidate lowered and compiled deviceless for that chip over the
	// validated shapes, after the numeric proof.
	TPU map[string]ChipCompile `json:"tpu,omitempty"`
	// TPUGate says why the gate did not run ("off (--tpu-chips none)").
	TPUGate string `json:"tpu_gate,omitempty"`
	// LibTPUVersion is the libtpu that compiled for the chips.
	LibTPUVersion string `json:"libtpu_version,omitempty"`
	// Forms is the run-time forms the harness forced (forms.py): absent for a
	// candidate without _form decisions.
	Forms *Forms `json:"forms,omitempty"`
}

// Forms is a proven candidate's run-time decisions (validators/CONTRACTS.md,
// "Forced forms"): the choices the validated shapes made, and each other form
// forced over the cases, in interpret mode and (fallbacks) compiled for TPU.
type Forms struct {
	// Natural maps each decision to the shape indices' choices (true: its
	// first form).
	Natural map[string]map[string][]bool `json:"natural"`
	Forced  []ForcedForm                 `json:"forced"`
	// ForcedS is the seconds the forced runs took, traces included.
	ForcedS     float64     `json:"forced_s"`
	TPUCompiled *FormsOnTPU `json:"tpu_compiled,omitempty"`
}

// ForcedForm is one forced context and the cases run under it per shape index.
type ForcedForm struct {
	Forms string         `json:"forms"`
	Cases map[string]int `json:"cases"`
}

// FormsOnTPU is the forced fallbacks' TPU compile: how many contexts, for
// which chips, in how many seconds.
type FormsOnTPU struct {
	Contexts int      `json:"contexts"`
	Chips    []string `json:"chips"`
	CompileS float64  `json:"compile_s"`
	// Skipped says why the forced forms were not compiled (time spent).
	Skipped string `json:"skipped,omitempty"`
}

// ChipCompile is one chip's outcome of the TPU compile gate.
type ChipCompile struct {
	// Topology is the deviceless topology compiled for ("v5e:2x2").
	Topology string `json:"topology"`
	// Compiled is true when every validated shape lowered and compiled.
	Compiled bool `json:"compiled"`
	// Error is the compiler's message (first lines) when Compiled is false.
	Error string `json:"error,omitempty"`
	// Shape is the validated case the numbers below are for (the largest).
	Shape map[string]int64 `json:"shape,omitempty"`
	// BytesAccessed is "bytes accessed" from the compiled program's cost analysis.
	BytesAccessed float64 `json:"bytes_accessed,omitempty"`
	// MinBytes is the minimum traffic: each input read once, each output written once.
	MinBytes float64 `json:"min_bytes,omitempty"`
	// LayoutMinBytes is the minimum measured the way BytesAccessed is: per
	// input and output array, its operand bytes in a compiled program that
	// reads it once, so in its own HBM layout (whole tiles: a (130, 97)
	// float32 array counts as (136, 128)). No draft can move less.
	LayoutMinBytes float64 `json:"layout_min_bytes,omitempty"`
	// RooflineS is BytesAccessed over the chip's HBM bandwidth (seconds).
	RooflineS float64 `json:"roofline_s,omitempty"`
	// CompileS is the wall time of lowering and compiling every shape.
	CompileS float64 `json:"compile_s,omitempty"`
}

// Proven reports whether the candidate was proven.
func (v *Verdict) Proven() bool { return v != nil && v.Verdict == Proven }

// Code is the reason code ("V-MISMATCH"), "" when proven.
func (v *Verdict) Code() string {
	code, _, _ := strings.Cut(v.Reason, ":")
	return strings.TrimSpace(code)
}

// ErrorStats converts the verdict's statistics for the run model.
func (v *Verdict) ErrorStats() draft.ErrorStats {
	return draft.ErrorStats{
		MaxAbs: v.Stats.MaxAbs, MaxRel: v.Stats.MaxRel,
		ULPP50: v.Stats.ULPP50, ULPP99: v.Stats.ULPP99, ULPMax: v.Stats.ULPMax,
		Mismatches: v.Stats.Mismatches, Cases: v.Stats.Cases,
	}
}

// CaseResults converts the verdict's cases for the run model: each
// compared output's sizes, dtype, shape and errors.
func (v *Verdict) CaseResults() []draft.CaseResult {
	if len(v.Cases) == 0 {
		return nil
	}
	out := make([]draft.CaseResult, len(v.Cases))
	for i, c := range v.Cases {
		out[i] = draft.CaseResult{Sizes: c.Sizes, Output: c.Output, DType: c.DType, Shape: c.Shape,
			Seed: c.Seed, Distribution: c.Distribution, MaxAbs: c.MaxAbs, MaxRel: c.MaxRel, ULPMax: c.ULPMax,
			Mismatches: c.Mismatches, NaNMaskOK: c.NaNMaskOK, RTol: c.RTol, ATol: c.ATol, TolRatio: c.TolRatio,
			Degenerate: c.Degenerate != nil && *c.Degenerate != ""}
	}
	return out
}

// ShapeStrings renders the tested size assignments, e.g. "n=257".
func (v *Verdict) ShapeStrings() []string {
	var out []string
	for _, s := range v.Shapes {
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + strconv.FormatInt(s[k], 10)
		}
		out = append(out, strings.Join(parts, ","))
	}
	return out
}

// Validate runs the protocol for one candidate. An error means validation
// could not run at all (no sandbox, no Python, bad request); a verdict of
// "error" means it ran but could not decide (reference failed, degenerate).
func Validate(ctx context.Context, req Request, opt Options) (*Verdict, error) {
	if (req.ReferenceSO == "") == (req.ReferencePy == "") {
		return nil, errors.New("validate: exactly one of ReferenceSO and ReferencePy must be set")
	}
	if len(req.Candidate) == 0 {
		return nil, errors.New("validate: empty candidate")
	}
	opt = withDefaults(opt)
	refPath := req.ReferenceSO
	if refPath == "" {
		refPath = req.ReferencePy
	}
	refBytes, err := os.ReadFile(refPath)
	if err != nil {
		return nil, fmt.Errorf("validate: read reference: %w", err)
	}
	specJSON, err := json.Marshal(req.Spec)
	if err != nil {
		return nil, fmt.Errorf("validate: encode spec: %w", err)
	}
	key := CacheKey(req, specJSON, refBytes, opt)
	if opt.CacheDir != "" && !opt.NoCache {
		if v, ok := readCache(opt.CacheDir, key); ok {
			return v, nil
		}
	}
	sb, py, work, err := harnessWork(ctx, opt.NoSandbox, opt.Python, "validate", "pallasify-validate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	refName := "ref.so"
	refFlag := "--reference"
	if req.ReferencePy != "" {
		refName, refFlag = "reference.py", "--reference-py"
	}
	files := map[string][]byte{"spec.json": specJSON, "candidate.py": req.Candidate, refName: refBytes}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(work, name), data, 0o644); err != nil {
			return nil, fmt.Errorf("validate: %w", err)
		}
	}
	argv := []string{py, "-m", "pallasify_harness",
		"--spec", filepath.Join(work, "spec.json"),
		refFlag, filepath.Join(work, refName),
		"--candidate", filepath.Join(work, "candidate.py"),
		"--out", filepath.Join(work, "verdict.json"),
		"--kernel", req.Spec.ID,
		"--seeds", strconv.Itoa(opt.Seeds),
		"--timeout", strconv.FormatFloat(opt.Timeout.Seconds(), 'f', 0, 64),
	}
	if len(req.Captured) > 0 {
		if err := os.WriteFile(filepath.Join(work, "captured.json"), req.Captured, 0o644); err != nil {
			return nil, fmt.Errorf("validate: %w", err)
		}
		argv = append(argv, "--captured", filepath.Join(work, "captured.json"))
	}
	if opt.Quick {
		argv = append(argv, "--quick")
	}
	if req.Shapes > 0 {
		argv = append(argv, "--shapes", strconv.Itoa(req.Shapes))
	}
	if req.ReferenceNote != "" {
		argv = append(argv, "--reference-note", req.ReferenceNote)
	}
	if opt.UnsafeSkipASTBan {
		argv = append(argv, "--unsafe-skip-ast-ban")
	}
	argv = append(argv, "--tpu-chips", tpuChipsArg(opt))
	lim := opt.Limits
	if lim.Wall <= 0 {
		lim.Wall = opt.Timeout + 30*time.Second
	}
	if lim.CPUSeconds == 0 {
		lim.CPUSeconds = int(4*opt.Timeout.Seconds()) + 60
	}
	if lim.MemoryMB == 0 {
		lim.MemoryMB = 6144
	}
	if lim.FileMB == 0 {
		lim.FileMB = 256
	}
	sb.Env = harnessEnv(work)
	sb.ReadOnly = append(sb.ReadOnly, libtpuReadOnly...)
	start := time.Now()
	cmd, cancel, err := sb.Command(ctx, work, lim, argv...)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	defer cancel()
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	elapsed := time.Since(start)
	why := sb.Violation(cmd)
	v, perr := readVerdict(filepath.Join(work, "verdict.json"))
	switch {
	case perr != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case perr != nil, why != "" && v.Verdict != Proven:
		// A sandbox limit is the cause of whatever the harness then wrote
		// (a candidate that failed on its full /tmp).
		v = killedVerdict(req.Spec.ID, cmd, runErr, elapsed, lim, out.String(), why)
	}
	v.Sandboxed = !opt.NoSandbox
	if v.Verdict != Proven {
		v.Output = out.String()
	}
	if opt.CacheDir != "" && cacheable(v) {
		if err := writeCache(opt.CacheDir, key, v); err != nil {
			return v, fmt.Errorf("validate: write cache: %w", err)
		}
	}
	return v, nil
}

// DefaultTimeout is the wall limit of one kernel validation unless a caller
// (--kernel-timeout) sets another. A resource bound, not a speed check:
// mmcv carafe_naive's windowed draft (fixture float32_instance) takes
// 204-369 s on a 2-core machine depending on its load, and a validation that
// runs out of time is a V-TIMEOUT verdict, a kernel never wired.
const DefaultTimeout = 10 * time.Minute

func withDefaults(opt Options) Options {
	if opt.Seeds <= 0 {
		opt.Seeds = 5
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	return opt
}

func harnessEnv(work string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		"PYTHONPATH=" + filepath.Join(work, "harness"),
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONNOUSERSITE=1",
		"PYTHONHASHSEED=0",
		"JAX_PLATFORMS=cpu",
		"JAX_ENABLE_X64=0",
		"TF_CPP_MIN_LOG_LEVEL=2",
		"MALLOC_ARENA_MAX=2",
	}
}

// killedVerdict explains a harness run that wrote no verdict; violation is
// the sandbox's coded reason for stopping it ("" when none).
func killedVerdict(id string, cmd *exec.Cmd, runErr error, elapsed time.Duration, lim sandbox.Limits, output, violation string) *Verdict {
	v := &Verdict{Schema: VerdictSchema, Kernel: id, Verdict: Rejected, DurationS: elapsed.Seconds()}
	st := cmd.ProcessState
	switch {
	case strings.HasPrefix(violation, sandbox.ViolationTime):
		v.Reason = "V-TIMEOUT: " + violation
	case violation != "":
		v.Reason = "V-SANDBOX: " + violation
	case elapsed >= lim.Wall-time.Second:
		v.Reason = fmt.Sprintf("V-TIMEOUT: killed after the %s wall limit", lim.Wall)
	case st != nil && !st.Exited():
		sig := ""
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = ws.Signal().String()
			if ws.Signal() == syscall.SIGXCPU {
				sig += fmt.Sprintf(" (CPU limit %ds)", lim.CPUSeconds)
			}
		}
		v.Reason = "V-SANDBOX: harness killed by " + sig
	case st != nil && st.ExitCode() == 125:
		v.Verdict, v.Reason = Error, "V-SANDBOX: could not apply the sandbox limits"
	default:
		v.Verdict = Error
		v.Reason = fmt.Sprintf("V-HARNESS: the harness wrote no verdict (%v): %s", runErr, lastLine(output))
	}
	return v
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

func readVerdict(path string) (*Verdict, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v Verdict
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("decode verdict: %w", err)
	}
	if v.Schema != VerdictSchema {
		return nil, fmt.Errorf("verdict schema %q, want %q", v.Schema, VerdictSchema)
	}
	return &v, nil
}

// tail keeps the last 16 KiB written to it.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 16<<10 {
		t.b = append([]byte(nil), t.b[len(t.b)-16<<10:]...)
	}
	return len(p), nil
}
func (t *tail) String() string { return string(t.b) }

var _ io.Writer = (*tail)(nil)

// findPython picks the interpreter that has the pinned jax.
func findPython(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if p := os.Getenv("PALLASIFY_PYTHON"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if dir, err := os.Getwd(); err == nil {
		for d := dir; ; d = filepath.Dir(d) {
			p := filepath.Join(d, ".venv", "bin", "python")
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if p, err := exec.LookPath("python3"); err == nil {
		return p, nil
	}
	return "", errors.New("validate: no Python found: run `make venv` or set PALLASIFY_PYTHON")
}

// CacheKey hashes everything a verdict depends on: the kernel (its TU, or
// the reference file), the spec, the candidate, the harness version (the
// hash of its embedded sources) and the options that change the protocol.
func CacheKey(req Request, specJSON, refBytes []byte, opt Options) string {
	h := sha256.New()
	part := func(name string, b []byte) {
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	if req.KernelTU != "" {
		part("tu", []byte(req.KernelTU))
	} else {
		part("ref", refBytes)
	}
	part("refkind", []byte(strconv.FormatBool(req.ReferencePy != "")))
	part("spec", specJSON)
	part("candidate", req.Candidate)
	if len(req.Captured) > 0 {
		part("captured", req.Captured)
	}
	if req.Shapes > 0 {
		part("shapes", []byte(strconv.Itoa(req.Shapes)))
	}
	part("harness", []byte(HarnessHash()))
	part("opts", []byte(fmt.Sprintf("seeds=%d quick=%v skipban=%v tpu=%s", opt.Seeds, opt.Quick, opt.UnsafeSkipASTBan, tpuChipsArg(opt))))
	return hex.EncodeToString(h.Sum(nil))
}

func cacheable(v *Verdict) bool {
	if v.Verdict == Error {
		return false
	}
	switch v.Code() {
	case "V-TIMEOUT", "V-SANDBOX":
		return false // depend on the machine and its load
	}
	return true
}

func readCache(dir, key string) (*Verdict, bool) {
	v, err := readVerdict(filepath.Join(dir, key+".json"))
	if err != nil {
		return nil, false
	}
	v.Cached = true
	return v, true
}

func writeCache(dir, key string, v *Verdict) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, key+".tmp*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, key+".json"))
}

// Result is one ValidateAll outcome.
type Result struct {
	Verdict *Verdict
	Err     error
}

// ValidateAll validates many requests concurrently (at most one per CPU, or
// limit when > 0) and returns the results in input order.
func ValidateAll(ctx context.Context, reqs []Request, opt Options, limit int) []Result {
	if limit <= 0 {
		limit = runtime.NumCPU()
	}
	m := iter.Mapper[Request, Result]{MaxGoroutines: limit}
	return m.Map(reqs, func(r *Request) Result {
		if err := ctx.Err(); err != nil {
			return Result{Err: err}
		}
		v, err := Validate(ctx, *r, opt)
		return Result{Verdict: v, Err: err}
	})
}
