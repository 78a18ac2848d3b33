package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/repofs"
	"github.com/pallasify/pallasify/transforms/triton"
	"github.com/pallasify/pallasify/validators/hostbuild"
)

// The capture stage runs the ORIGINAL extension on the CPU: it builds each
// extension the repository defines (setup.py CUDAExtension, load,
// load_inline, an mmcv-style pybind tree) with the CUDA-on-CPU emulator,
// runs the repository's own tests (or, for KernelBench-style files, a driver
// calling ModelNew(*get_init_inputs())(*get_inputs())) with every launch
// captured, and turns each kernel's launches into its spec and validator
// cases. Inputs come, in order, from the tests, then from a user spec file
// for the call sites, then from static inference (Kernel.SpecSource).

// Capture codes (the reasons a kernel has no captured spec).
const (
	CodeCaptureNoExtension = "CAP-NO-EXTENSION"  // no build call or pybind tree compiles the kernel
	CodeCaptureExtension   = "CAP-EXTENSION"     // the build call cannot be read fully (computed name or sources)
	CodeCaptureBuild       = hostbuild.CodeBuild // the CPU build failed (the builder's code wins when it gives one)
	CodeCaptureNoTests     = "CAP-NO-TESTS"      // nothing in the repository exercises the extension
	CodeCaptureNotLaunched = "CAP-NOT-LAUNCHED"  // the tests ran but never launched the kernel
	CodeCaptureUnreadable  = "CAP-UNREADABLE"    // launches were recorded but do not make a spec
)

// HostBuild builds an extension for the CPU and runs Python entries against
// it with capture on, inside the sandbox (validators/hostbuild through
// pipeline/hostcap is the real one; tests use a fake).
type HostBuild interface {
	Build(ctx context.Context, req BuildRequest) (*BuiltExtension, error)
	Run(ctx context.Context, req CaptureRun) (*CaptureResult, error)
	// ReadCaptures reads the launches of a capture dir.
	ReadCaptures(dir string) ([]kernels.CapturedLaunch, error)
	// Preprocess runs the C preprocessor with the emulator's defines over an
	// isolated unit (system includes kept as they are).
	Preprocess(ctx context.Context, src string) (string, error)
}

// BuildRequest names an extension as the repository builds it.
type BuildRequest struct {
	Root        string
	Module      string
	Sources     []string
	IncludeDirs []string
	Defines     map[string]string
	Inline      *InlineSources
}

// InlineSources are load_inline's arguments.
type InlineSources struct {
	Name      string
	CPP, CUDA []string
	Functions []string
}

// BuiltExtension is a built extension module; Handle is the builder's own
// value (hostbuild.Built).
type BuiltExtension struct {
	Module string
	Key    string // content hash of what was built
	Cached bool
	Handle any
}

// BuildFailure is a build refused or failed with a code (EMU-UNSUPPORTED,
// EMU-BUILD, ...) and the construct or first error, one line.
type BuildFailure struct {
	Code, Construct string
}

func (e *BuildFailure) Error() string { return e.Code + ": " + e.Construct }

// CaptureRun is one Python entry run with capture on.
type CaptureRun struct {
	Root                 string
	Built                []*BuiltExtension
	Entry                []string // argv after python
	CaptureDir           string
	Timeout              time.Duration
	MaxLaunchesPerKernel int
	// Shims are directories appended to sys.path: stand-ins for what the
	// repository's tests import but the tree lacks (shims.go).
	Shims []string
}

// CaptureResult is what the entry did.
type CaptureResult struct {
	ExitCode                int
	Stopped                 string // the sandbox's coded reason when it stopped the entry
	Passed, Failed, Skipped int
	Output                  string
	// Dir is the capture dir the run's launches were read from.
	Dir string `json:"-"`
}

// CaptureStage fills kernels' specs from captured launches. Set it on a
// KernelStage (KernelStage.Capture); nil turns it off.
type CaptureStage struct {
	Host HostBuild
	// CacheDir holds capture dirs by content hash, so a second run does no
	// re-capture ("" disables the cache; the builder caches builds itself).
	CacheDir string
	// Timeout bounds one entry (default 3 min); MaxEntries the entries run
	// per extension (default 16); MaxLaunches the launches kept per kernel
	// per entry (default 4).
	Timeout     time.Duration
	MaxEntries  int
	MaxLaunches int
	// Triton runs the tests that reach Triton kernels under the
	// interpreter (triton_capture.go); nil leaves Triton kernels to their
	// static specs. python and noSandbox are the run's.
	Triton    triton.TestRunner
	python    string
	noSandbox bool
	// NoTests runs none of the repository's tests (the default path without
	// --capture): specs come from the op driver alone. NoDrive turns the op
	// driver (drive.go) off: only the tests' launches count.
	NoTests, NoDrive bool
	// DriveOpTime and DriveTime bound the op driver per op and per
	// extension (defaults 60 s and 4 min).
	DriveOpTime, DriveTime time.Duration

	mu    sync.Mutex
	Stats CaptureStats
}

// CaptureStats counts what the last runs did.
type CaptureStats struct {
	Builds, BuildsCached, Runs, RunsCached, Preprocessed int
	// Drives counts the op-driver runs (cached ones included).
	Drives int
}

// KernelCapture is the capture stage's result for one kernel.
type KernelCapture struct {
	BuiltCPU     bool
	BuildReason  *BuildReason
	Captured     int // launches recorded
	TestsPassed  int
	TestsFailed  int
	Preprocessed bool
	// Driven: the spec came from the op driver's launches (SpecDriven).
	Driven bool
}

func (c *CaptureStage) count(f func(*CaptureStats)) {
	c.mu.Lock()
	f(&c.Stats)
	c.mu.Unlock()
}

// Run builds, runs and captures every extension of inv, replaces the specs
// of the kernels the tests launched, preprocesses the units of kernels with
// a spec, and returns what happened per kernel id.
func (c *CaptureStage) Run(ctx context.Context, root string, files []string, inv *kernels.Inventory) map[string]*KernelCapture {
	out := map[string]*KernelCapture{}
	for _, k := range inv.Kernels {
		if k.Origin != kernels.OriginTriton && k.Origin != kernels.OriginCuPy {
			out[k.ID] = &KernelCapture{BuildReason: &BuildReason{Code: CodeCaptureNoExtension,
				Text: "no setup.py CUDAExtension, load, load_inline or PYBIND11_MODULE source compiles " + k.Path}}
		}
	}
	for _, ext := range kernels.FindExtensions(root, inv, files) {
		if ctx.Err() != nil {
			break
		}
		var mine []*kernels.Kernel
		for _, k := range inv.Kernels {
			if out[k.ID] != nil && ext.Owns(root, k) {
				mine = append(mine, k)
			}
		}
		if len(mine) == 0 {
			continue
		}
		c.extension(ctx, root, files, ext, mine, out)
	}
	for _, k := range inv.Kernels {
		kc := out[k.ID]
		if kc == nil || k.Spec == nil || k.Unit == nil || len(k.Unit.Unsupported) > 0 {
			continue
		}
		if src, err := c.preprocess(ctx, k.Unit.Source); err == nil && src != k.Unit.Source {
			k.Unit.SetPreprocessed(src)
			kc.Preprocessed = true
		}
		if k.Captured != nil {
			kernels.ClassifyCaptured(k) // the access pattern the launches showed
		}
	}
	return out
}

func (c *CaptureStage) extension(ctx context.Context, root string, files []string, ext *kernels.Extension, mine []*kernels.Kernel, out map[string]*KernelCapture) {
	setReason := func(code, text string) {
		for _, k := range mine {
			out[k.ID].BuildReason = &BuildReason{Code: code, Text: text}
		}
	}
	req, problem := buildRequest(root, ext)
	if problem != "" {
		setReason(CodeCaptureExtension, problem)
		return
	}
	built, err := c.Host.Build(ctx, req)
	if err != nil {
		var bf *BuildFailure
		if errors.As(err, &bf) {
			setReason(bf.Code, bf.Construct)
		} else {
			setReason(CodeCaptureBuild, oneLine(err.Error()))
		}
		return
	}
	c.count(func(s *CaptureStats) {
		s.Builds++
		if built.Cached {
			s.BuildsCached++
		}
	})
	for _, k := range mine {
		out[k.ID].BuiltCPU, out[k.ID].BuildReason = true, nil
	}
	var entries [][]string
	if !c.NoTests {
		entries = testEntries(root, files, ext)
	}
	if max := c.maxEntries(); len(entries) > max {
		entries = entries[:max]
	}
	if len(entries) == 0 && c.NoDrive {
		setReason(CodeCaptureNoTests, "no test imports "+strings.Join(ext.Wrappers, ", ")+" and no get_inputs() drives it")
		return
	}
	var tests []string
	for _, e := range entries {
		if e[0] == "-m" {
			tests = append(tests, e[len(e)-1])
		}
	}
	var shims []string
	if sf := shimFiles(root, files, ext, tests); len(sf) > 0 {
		dir := c.CacheDir
		if dir == "" {
			dir = os.TempDir()
		}
		if err := os.MkdirAll(dir, 0o755); err == nil {
			if d, err := writeShims(dir, sf); err == nil {
				shims = append(shims, d)
			}
		}
	}
	var launches []kernels.CapturedLaunch
	var passed, failed int
	var runs []entryRun
	for _, e := range entries {
		ls, res, err := c.capture(ctx, root, files, built, e, shims)
		if err != nil {
			runs = append(runs, entryRun{entryLabel(e), oneLine(err.Error())})
			continue
		}
		if res.ExitCode == 0 && res.Failed == 0 {
			passed++
			runs = append(runs, entryRun{label: entryLabel(e)})
		} else {
			failed++
			why := lastErrorLine(res.Output)
			if res.Stopped != "" {
				why = res.Stopped // coded: SBX-TIME, SBX-DISK, SBX-PROCS, ...
			}
			runs = append(runs, entryRun{entryLabel(e), entryLabel(e) + " failed: " + why})
		}
		launches = append(launches, ls...)
	}
	d := c.drive(ctx, root, files, built, ext, mine, launches)
	for _, k := range mine {
		kc := out[k.ID]
		kc.TestsPassed, kc.TestsFailed = passed, failed
		spec, cp, err := kernels.SpecFromLaunches(k, launches)
		kc.Captured = cp.Launches
		if err != nil && d != nil {
			dspec, dcp, derr := kernels.SpecFromLaunches(k, d.launches)
			switch {
			case derr == nil:
				kc.Captured, kc.Driven = dcp.Launches, true
				k.UseCapture(dspec, dcp)
			case dcp.Launches > 0:
				kc.Captured = dcp.Launches
				kc.BuildReason = &BuildReason{Code: CodeCaptureUnreadable, Text: oneLine(derr.Error())}
			default:
				code, text := d.reason(k.Name)
				if len(entries) > 0 {
					text = fmt.Sprintf("%d test entr%s ran, none launched %s; %s", len(entries), plural(len(entries), "y", "ies"), k.Name, text)
				}
				kc.BuildReason = &BuildReason{Code: code, Text: oneLine(text)}
			}
			continue
		}
		switch {
		case err == nil:
			k.UseCapture(spec, cp)
		case cp.Launches == 0 && len(k.Specializes) > 0:
			kc.BuildReason = &BuildReason{Code: CodeCaptureNotLaunched, Text: oneLine(err.Error())}
		case cp.Launches == 0:
			why := fmt.Sprintf("%d test entr%s ran, none launched %s", len(entries), plural(len(entries), "y", "ies"), k.Name)
			if w := notLaunchedWhy(k, runs); w != "" {
				why += " (" + w + ")"
			}
			kc.BuildReason = &BuildReason{Code: CodeCaptureNotLaunched, Text: why}
		default:
			kc.BuildReason = &BuildReason{Code: CodeCaptureUnreadable, Text: oneLine(err.Error())}
		}
	}
}

// entryRun is how one test entry ended: failure is "" when it passed.
type entryRun struct {
	label, failure string
}

// notLaunchedWhy names the entry that explains why k was never launched:
// the test of k's own op (its file stem, letters and digits only, is part of
// the kernel's file or name: test_psa_mask.py for psamask_cuda_kernel.cuh),
// failed or passed without reaching the kernel; else the first failure.
func notLaunchedWhy(k *kernels.Kernel, runs []entryRun) string {
	subject := alnum(path.Base(k.Path)) + " " + alnum(k.Name)
	first := ""
	var passedOwn string
	for _, r := range runs {
		if first == "" && r.failure != "" {
			first = r.failure
		}
		op := alnum(strings.TrimSuffix(strings.TrimPrefix(path.Base(r.label), "test_"), ".py"))
		op = strings.TrimSuffix(op, "test")
		if len(op) < 3 || !strings.Contains(subject, op) {
			continue
		}
		if r.failure != "" {
			return r.failure
		}
		if passedOwn == "" {
			passedOwn = r.label + " passed without launching it"
		}
	}
	if passedOwn != "" {
		return passedOwn
	}
	return first
}

// alnum lowercases s and keeps its letters and digits.
func alnum(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (c *CaptureStage) maxEntries() int {
	if c.MaxEntries > 0 {
		return c.MaxEntries
	}
	return 16
}

// buildRequest turns an extension into what the builder needs, or says why
// it cannot.
func buildRequest(root string, ext *kernels.Extension) (BuildRequest, string) {
	req := BuildRequest{Root: root, Module: ext.Module, Sources: ext.Sources, IncludeDirs: ext.IncludeDirs, Defines: ext.Defines}
	if ext.Module == "" {
		return req, ext.Problem
	}
	if ext.Origin == kernels.OriginLoadInline {
		if len(ext.CUDA) == 0 {
			return req, "load_inline " + ext.Module + ": cuda_sources cannot be read (" + ext.Problem + ")"
		}
		req.Sources = nil
		req.Inline = &InlineSources{Name: ext.Module, CPP: ext.CPP, CUDA: ext.CUDA, Functions: ext.Functions}
		return req, ""
	}
	if len(ext.Sources) == 0 {
		return req, ext.Origin + " " + ext.Module + ": no source list can be read (" + ext.Problem + ")"
	}
	return req, ""
}

var testFileRE = regexp.MustCompile(`(^|/)(test_[^/]*|[^/]*_test)\.py$`)

// testEntries are the Python entries that exercise ext: the repository's
// test files importing one of its wrapper modules (or their package), each
// run with pytest, and, for a KernelBench-style module defining ModelNew, a
// driver that calls ModelNew(*get_init_inputs())(*get_inputs()) and checks
// it against Model where the reference module has one.
func testEntries(root string, files []string, ext *kernels.Extension) [][]string {
	var out [][]string
	if d := kernelBenchDriver(root, files, ext); d != "" {
		out = append(out, []string{"-c", d})
	}
	var mods []string
	for _, w := range ext.Wrappers {
		mods = appendUniqStr(mods, kernels.ModuleName(w))
		if pkg := kernels.ModuleName(path.Dir(w)); pkg != "." && pkg != "" {
			mods = appendUniqStr(mods, pkg)
		}
	}
	if len(mods) == 0 {
		return out
	}
	var pats []*regexp.Regexp
	for _, m := range mods {
		q := regexp.QuoteMeta(m)
		pats = append(pats, regexp.MustCompile(`(?m)^\s*(from\s+`+q+`(\.\w+)*\s+import\b|import\s+`+q+`\b)`))
	}
	var tests []string
	for _, f := range files {
		if !testFileRE.MatchString(f) {
			continue
		}
		b, err := repofs.ReadFile(root, f, DefaultMaxFileBytes)
		if err != nil {
			continue
		}
		for _, re := range pats {
			if re.Match(b) {
				tests = append(tests, f)
				break
			}
		}
	}
	sort.Strings(tests)
	for _, t := range tests {
		out = append(out, []string{"-m", "pytest", "-q", "-p", "no:cacheprovider", t})
	}
	return out
}

func appendUniqStr(xs []string, s string) []string {
	for _, x := range xs {
		if x == s {
			return xs
		}
	}
	return append(xs, s)
}

var (
	modelNewRE  = regexp.MustCompile(`(?m)^class\s+ModelNew\b`)
	getInputsRE = regexp.MustCompile(`(?m)^def\s+get_inputs\s*\(`)
	modelRE     = regexp.MustCompile(`(?m)^class\s+Model\b`)
)

// kernelBenchDriver is the driver source for a load_inline extension whose
// file defines ModelNew, with get_inputs() from the same file or from its
// reference (model_new_ex_X.py ↔ model_ex_X.py); "" when there is none.
func kernelBenchDriver(root string, files []string, ext *kernels.Extension) string {
	if ext.Origin != kernels.OriginLoadInline {
		return ""
	}
	read := func(rel string) string {
		b, err := repofs.ReadFile(root, rel, DefaultMaxFileBytes)
		if err != nil {
			return ""
		}
		return string(b)
	}
	src := read(ext.By)
	if !modelNewRE.MatchString(src) {
		return ""
	}
	ref := ""
	base := path.Base(ext.By)
	if cand := path.Join(path.Dir(ext.By), strings.Replace(base, "new_", "", 1)); cand != ext.By {
		if s := read(cand); getInputsRE.MatchString(s) {
			ref = cand
		}
	}
	if !getInputsRE.MatchString(src) && ref == "" {
		return ""
	}
	refHasModel := ref != "" && modelRE.MatchString(read(ref))
	return fmt.Sprintf(kernelBenchTemplate, pyStr(ext.By), pyStr(ref), pyBool(refHasModel))
}

func pyStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// kernelBenchTemplate drives a KernelBench-style module: ModelNew on the
// reference's inputs, compared with Model (the operator-level check) when
// the reference defines it. Both models are built after the same seed.
const kernelBenchTemplate = `# pallasify capture driver (generated)
import importlib.util, sys
import torch

def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod

NEW, REF, REF_HAS_MODEL = %s, %s, %s
new = _load(NEW, "pallasify_model_new")
ref = _load(REF, "pallasify_model_ref") if REF else None
src = new if hasattr(new, "get_inputs") else ref
gen = torch.random.default_generator  # the CPU generator: every tensor lives on the CPU here
gen.manual_seed(0)
init = list(src.get_init_inputs()) if hasattr(src, "get_init_inputs") else []
inputs = list(src.get_inputs())
with torch.no_grad():
    gen.manual_seed(1)
    out = new.ModelNew(*init)(*inputs)
    if REF_HAS_MODEL:
        gen.manual_seed(1)
        want = ref.Model(*init)(*inputs)
        torch.testing.assert_close(out, want, rtol=1e-3, atol=1e-3)
        print("pallasify-driver: ModelNew matches Model")
print("pallasify-driver: ok")
`

// capture runs one entry (or takes its capture dir from the cache) and
// returns its launches, each tagged with the entry.
func (c *CaptureStage) capture(ctx context.Context, root string, files []string, built *BuiltExtension, entry, shims []string) ([]kernels.CapturedLaunch, *CaptureResult, error) {
	return c.captureFor(ctx, root, files, built, entry, shims, 0)
}

// captureFor is capture with a wall limit for the entry (0: the stage's);
// the result's Dir is the capture dir the launches were read from.
func (c *CaptureStage) captureFor(ctx context.Context, root string, files []string, built *BuiltExtension, entry, shims []string, limit time.Duration) ([]kernels.CapturedLaunch, *CaptureResult, error) {
	label := entryLabel(entry)
	key := c.captureKey(root, files, built, append(append([]string(nil), entry...), shims...))
	var dir string
	if c.CacheDir != "" {
		dir = filepath.Join(c.CacheDir, key)
		if res, ok := readCaptureResult(dir); ok {
			c.count(func(s *CaptureStats) { s.RunsCached++ })
			res.Dir = dir
			ls, err := c.Host.ReadCaptures(dir)
			return tag(ls, label), res, err
		}
	}
	tmp, err := c.tempDir(key)
	if err != nil {
		return nil, nil, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	if limit > 0 {
		timeout = limit
	}
	maxL := c.MaxLaunches
	if maxL <= 0 {
		maxL = 4
	}
	c.count(func(s *CaptureStats) { s.Runs++ })
	res, err := c.Host.Run(ctx, CaptureRun{Root: root, Built: []*BuiltExtension{built}, Entry: entry, CaptureDir: tmp,
		Timeout: timeout, MaxLaunchesPerKernel: maxL, Shims: shims})
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("%s: %w", label, err)
	}
	if err := writeCaptureResult(tmp, res); err != nil {
		return nil, nil, err
	}
	if c.CacheDir != "" {
		os.RemoveAll(dir)
		if err := os.Rename(tmp, dir); err == nil {
			tmp = dir
		}
	}
	res.Dir = tmp
	ls, err := c.Host.ReadCaptures(tmp)
	return tag(ls, label), res, err
}

func (c *CaptureStage) tempDir(key string) (string, error) {
	if c.CacheDir != "" {
		if err := os.MkdirAll(c.CacheDir, 0o755); err != nil {
			return "", err
		}
		return os.MkdirTemp(c.CacheDir, key[:12]+".tmp")
	}
	return os.MkdirTemp("", "pallasify-capture-")
}

func tag(ls []kernels.CapturedLaunch, label string) []kernels.CapturedLaunch {
	for i := range ls {
		ls[i].Entry = label
	}
	return ls
}

func entryLabel(entry []string) string {
	if isDriverEntry(entry) {
		return "op driver"
	}
	if len(entry) == 2 && entry[0] == "-c" {
		if m := regexp.MustCompile(`NEW, REF, REF_HAS_MODEL = "([^"]*)"`).FindStringSubmatch(entry[1]); m != nil {
			return "driver " + m[1]
		}
		return "driver"
	}
	return entry[len(entry)-1]
}

// captureKey hashes what a capture depends on: the built extension, the
// entry, the Python files of the tree (tests, wrappers, the models they
// import) and the launch limit.
func (c *CaptureStage) captureKey(root string, files []string, built *BuiltExtension, entry []string) string {
	h := sha256.New()
	// the runtime the run uses and the shims' generator are inputs too
	fmt.Fprintf(h, "capture/v2\nbuilt %s\nmax %d\nruntime %s\nshims %s\n", built.Key, c.MaxLaunches,
		hostbuild.RuntimeDigest(), shimsDigest())
	for _, a := range entry {
		fmt.Fprintf(h, "arg %d %s\n", len(a), a)
	}
	py := append([]string(nil), files...)
	sort.Strings(py)
	for _, f := range py {
		if !strings.HasSuffix(f, ".py") {
			continue
		}
		b, err := repofs.ReadFile(root, f, DefaultMaxFileBytes)
		if err != nil {
			continue
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "py %s %x\n", f, sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}

const captureResultFile = "pallasify-result.json"

func writeCaptureResult(dir string, res *CaptureResult) error {
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, captureResultFile), b, 0o644)
}

func readCaptureResult(dir string) (*CaptureResult, bool) {
	b, err := repofs.ReadFile(dir, captureResultFile, 0) // the sandbox wrote dir: no link out of it is followed
	if err != nil {
		return nil, false
	}
	var res CaptureResult
	if json.Unmarshal(b, &res) != nil {
		return nil, false
	}
	return &res, true
}

// preprocess runs the host's preprocessor, cached by the source's hash.
func (c *CaptureStage) preprocess(ctx context.Context, src string) (string, error) {
	sum := sha256.Sum256([]byte("pp/v1\n" + src))
	key := hex.EncodeToString(sum[:])
	var file string
	if c.CacheDir != "" {
		file = filepath.Join(c.CacheDir, "pp", key+".cu")
		if b, err := os.ReadFile(file); err == nil {
			return string(b), nil
		}
	}
	out, err := c.Host.Preprocess(ctx, src)
	if err != nil {
		return "", err
	}
	c.count(func(s *CaptureStats) { s.Preprocessed++ })
	if file != "" && os.MkdirAll(filepath.Dir(file), 0o755) == nil {
		_ = os.WriteFile(file, []byte(out), 0o644)
	}
	return out, nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 240 {
		s = s[:239] + "…"
	}
	return s
}

// CaptureCodes documents the CAP family: why a kernel got no captured spec
// (the build's own EMU- codes come from validators/hostbuild).
func CaptureCodes() []CodeDoc {
	return []CodeDoc{
		{CodeCaptureNoExtension, "no-extension", SevInfo, "No extension build compiles the kernel",
			"No setup.py CUDAExtension, torch.utils.cpp_extension.load or load_inline call, and no PYBIND11_MODULE source " +
				"tree, names the kernel's file, so the original cannot be built for the CPU and run. Its spec comes from a user " +
				"spec file or static inference."},
		{CodeCaptureExtension, "unreadable-extension", SevWarning, "The extension's build call cannot be read",
			"The module name or the source list of the build call is computed (an f-string, a glob, a variable the analysis " +
				"cannot follow), so the extension cannot be rebuilt as the repository builds it."},
		{CodeCaptureNoTests, "no-tests", SevInfo, "Nothing in the repository exercises the extension",
			"No test file imports a Python module that loads the extension, and no KernelBench-style get_inputs() drives " +
				"its ModelNew. Write a test, or a spec file for the kernel."},
		{CodeCaptureNotLaunched, "not-launched", SevInfo, "The tests ran but never launched the kernel",
			"The repository's tests ran against the CPU-built original (or failed before reaching the op) without " +
				"launching this kernel, so no launch could be captured. The reason names the kernel's own op test (the test " +
				"file whose stem is part of the kernel's file or name: test_psa_mask.py for psamask_cuda_kernel.cuh), failed " +
				"or passed without launching it, else the first failure."},
		{CodeCaptureUnreadable, "capture-unreadable", SevWarning, "The captured launches do not make a spec",
			"The kernel was launched, but its launches could not be turned into a spec: buffers missing, an extent that is " +
				"not a whole number of elements, arguments that do not match the kernel's signature."},
	}
}

// lastErrorLine is the last line of a run's output that names an error (the
// exception a traceback ends with, pytest's "E   ..." lines), else its last
// line.
func lastErrorLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "E ") || strings.Contains(l, "Error:") || strings.Contains(l, "Error ") {
			return oneLine(l)
		}
	}
	if len(lines) > 0 {
		return oneLine(lines[len(lines)-1])
	}
	return ""
}
