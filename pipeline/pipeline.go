package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sourcegraph/conc/pool"

	"github.com/pallasify/pallasify/transforms/files"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/repofs"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// DefaultMaxFileBytes is the size above which a source file is not read.
const DefaultMaxFileBytes = 10 << 20

// DefaultFileTimeout is how long the rules may take on one file: a safety
// net far beyond what any file within the other limits needs (the largest
// real files take seconds), so the result never depends on the machine's
// speed in practice.
const DefaultFileTimeout = 5 * time.Minute

// Options configure a run. The zero value of every field but Root is usable.
type Options struct {
	Root        string      // the tree to migrate (a local path: the acquire stage)
	Target      rule.Target // default portable
	UnsafeFixes bool        // also apply fixes marked unsafe
	Mark        bool        // insert "# pallasify: CODE …" comments at sites left to a human
	Select      []string    // rule codes (or prefixes) to run; empty = all
	Ignore      []string    // rule codes (or prefixes) not to run
	Include     []string    // globs; when set, only matching files are processed
	Exclude     []string    // globs of files and directories to leave out
	Concurrency int         // files processed at once; default runtime.NumCPU()
	// Progress, when set, is called after each source file, never concurrently.
	Progress     func(done, total int)
	MaxFileBytes int64 // default DefaultMaxFileBytes
	// Limits bound the rules' work on one file (syntax tree depth and
	// size); a file over them gets PIO012 and is left untouched.
	Limits rule.Limits
	// FileTimeout bounds the time the rules take on one file (default
	// DefaultFileTimeout, negative: none); a file that takes longer gets
	// PIO012 and is left untouched, and the run goes on.
	FileTimeout time.Duration
	Version     string

	// Rules overrides the rule set (default: the full registry, then
	// Select/Ignore). Tests use it to run one rule.
	Rules []*rule.Rule
	// Files overrides the rules for non-Python files (default: the files
	// family, then Select/Ignore; an empty non-nil list runs none).
	Files []*files.Rule
	// Notebook, when set, inspects a .ipynb file and returns its diagnostics
	// instead of the default: code cells rewritten with the rules, cell by
	// cell (notebook.go).
	Notebook func(path string, src []byte) []Diagnostic

	// Kernel stages, run in this order after rewrite when set: Discover fills
	// Run.Kernels (default: the kernel inventory stage when the build has
	// one), Draft drafts Pallas replacements, Validate proves them (and
	// wires the proven ones). Delivery (a PR, a patch) is the caller's,
	// after the run.
	Discover, Draft, Validate Stage
	// Emulator, when set, compiles every discovered kernel's isolated unit
	// against the CUDA-on-CPU emulator so the report gives its emulator
	// status (compiled, unsupported: …, compile-error: …); when nil the
	// status is not-run. It applies to a *KernelStage Discover stage.
	Emulator *EmulatorCheck
	// Capture, when set, builds the tree's extensions for the CPU, runs its
	// tests with every kernel launch captured and takes kernel specs from the
	// captures (capture.go). It applies to a *KernelStage Discover stage.
	Capture *CaptureConfig
	// TritonDrive, when set, drives the Triton launchers whose kernels no
	// test captured under Triton's interpreter and takes their specs from
	// the launches (triton_drive.go). It applies to a *KernelStage Discover
	// stage.
	TritonDrive *TritonDriveConfig
	// Bench, when set, adds pallasify_bench.py to a Migrate run: a script
	// that times a step of the tree's model on the host's device
	// (benchscript.go).
	Bench *BenchOptions
}

// ErrNotDir is returned when Options.Root is not a directory.
var ErrNotDir = errors.New("not a directory")

// Migrate runs acquire → analyze → rewrite (→ discover → draft → validate →
// deliver when set) over opts.Root. Changed files carry Original and Updated;
// nothing is written: see WriteInPlace, WriteTree and Patch.
func Migrate(ctx context.Context, opts Options) (*Run, error) {
	return execute(ctx, opts, true)
}

// Analyze runs the same walk and rules as Migrate but keeps no file contents:
// the Run holds findings (with Applied telling which would be fixed), kernels
// and timings.
func Analyze(ctx context.Context, opts Options) (*Run, error) {
	return execute(ctx, opts, false)
}

func execute(ctx context.Context, opts Options, rewrite bool) (*Run, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	st := &state{opts: opts, rewrite: rewrite}
	run := &Run{Root: opts.Root, Target: string(opts.Target), Version: opts.Version}
	stages := []Stage{
		funcStage{StageAcquire, st.acquire},
		funcStage{StageAnalyze, st.analyze},
	}
	if rewrite {
		stages = append(stages, funcStage{StageRewrite, st.applyRewrites})
	}
	if opts.Discover == nil {
		opts.Discover = kernelStage(opts)
	}
	_, st.scanKernels = opts.Discover.(*KernelStage)
	attachEmulator(opts)
	attachCapture(opts)
	attachTritonDrive(opts)
	for _, s := range []Stage{opts.Discover, opts.Draft, opts.Validate} {
		if s != nil {
			stages = append(stages, s)
		}
	}
	for _, s := range stages {
		t0 := time.Now()
		if err := s.Run(ctx, run); err != nil {
			return run, fmt.Errorf("%s stage: %w", s.Name(), err)
		}
		run.Timings = append(run.Timings, Timing{Stage: s.Name(), Duration: time.Since(t0)})
	}
	return run, nil
}

// kernelStage is the one place the kernel inventory stage is wired in.
func kernelStage(Options) Stage { return NewKernelStage() }

func (o Options) normalize() (Options, error) {
	if o.Root == "" {
		return o, fmt.Errorf("no root given")
	}
	abs, err := filepath.Abs(o.Root)
	if err != nil {
		return o, fmt.Errorf("root %s: %w", o.Root, err)
	}
	o.Root = filepath.Clean(abs)
	if o.Target == "" {
		o.Target = rule.Portable
	}
	if _, err := rule.ParseTarget(string(o.Target)); err != nil {
		return o, err
	}
	if o.Concurrency <= 0 {
		o.Concurrency = runtime.NumCPU()
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.FileTimeout == 0 {
		o.FileTimeout = DefaultFileTimeout
	}
	if o.Rules == nil {
		o.Rules = defaultRules()
	}
	o.Rules, err = selectRules(o.Rules, o.Select, o.Ignore)
	if err != nil {
		return o, err
	}
	if o.Files == nil {
		o.Files = selectFiles(o.Select, o.Ignore)
	}
	if o.Bench != nil {
		if _, err := benchDir(o.Bench.Dir); err != nil {
			return o, err
		}
		if probs := o.Bench.Check(); len(probs) > 0 {
			return o, fmt.Errorf("bench.%s: %s", probs[0].Key, probs[0].Message)
		}
	}
	return o, nil
}

// funcStage adapts a method to the Stage interface.
type funcStage struct {
	name string
	fn   func(ctx context.Context, r *Run) error
}

func (s funcStage) Name() string                          { return s.name }
func (s funcStage) Run(ctx context.Context, r *Run) error { return s.fn(ctx, r) }

// state is what the built-in stages of one run share.
type state struct {
	opts    Options
	rewrite bool
	// scanKernels: the kernel stage discovers (a *KernelStage), so a Python
	// file holding a kernel needle is scanned for kernels from the rules'
	// parse (File.kernelPy) rather than parsed again by discovery.
	scanKernels bool
	entries     []entry
	pending     map[int][2][]byte        // file index -> original, updated
	pkgs        map[string]bool          // directories holding an __init__.py
	shared      map[string][]rule.Shared // helper module path -> definitions imported from it
	created     createdFiles             // files the project rules create (project.go)
	lineLength  int                      // the repository's line limit (linelength.go)
}

func (st *state) acquire(ctx context.Context, r *Run) error {
	fi, err := os.Stat(st.opts.Root)
	if err != nil {
		return fmt.Errorf("acquire %s: %w", st.opts.Root, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("acquire %s: %w", st.opts.Root, ErrNotDir)
	}
	return nil
}

// analyze walks the tree and runs the rules over every source file; one
// parse per file yields both the findings and the candidate rewrite.
func (st *state) analyze(ctx context.Context, r *Run) error {
	entries, err := walkTree(ctx, st.opts.Root, st.opts.Include, st.opts.Exclude)
	if err != nil {
		return fmt.Errorf("walk %s: %w", st.opts.Root, err)
	}
	r.Files = make([]*File, len(entries))
	var work []int
	for i, e := range entries {
		f := &File{Path: e.rel, Lang: langOf(e.rel), Bytes: e.size, Mode: e.mode}
		r.Files[i] = f
		if e.diag != nil {
			f.Skipped = e.diag.Code
			f.Diagnostics = append(f.Diagnostics, *e.diag)
			continue
		}
		if e.mode.IsRegular() && (f.Lang == LangPython || f.Lang == LangNotebook || f.Lang == LangProject) {
			work = append(work, i)
		}
	}
	// The largest files first: the last file to finish is then a small one,
	// so no core idles at the end while another parses a big file. The
	// results land in r.Files by index, whatever the order.
	sort.SliceStable(work, func(a, b int) bool { return entries[work[a]].size > entries[work[b]].size })
	st.entries = entries
	st.pending = map[int][2][]byte{}
	st.pkgs, st.shared = packageDirs(entries), map[string][]rule.Shared{}
	st.lineLength = lineLength(st.opts.Root)
	pf := newPrefilter(st.opts.Rules, kernels.PythonNeedles)
	parsers := ts.NewPool(ts.Python)
	defer parsers.Close()
	var mu sync.Mutex // guards pending and progress
	done := 0
	p := pool.New().WithContext(ctx).WithMaxGoroutines(st.opts.Concurrency)
	for _, i := range work {
		p.Go(func(ctx context.Context) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			out, orig, shared := st.processFile(ctx, parsers, pf, entries[i], r.Files[i])
			mu.Lock()
			defer mu.Unlock()
			if out != nil && st.rewrite {
				st.pending[i] = [2][]byte{orig, out}
				if len(shared) > 0 {
					_, helper := layoutOf(entries[i].rel, st.pkgs)
					st.shared[helper] = append(st.shared[helper], shared...)
				}
			}
			done++
			if st.opts.Progress != nil {
				st.opts.Progress(done, len(work))
			}
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// processFile fills f and returns the rewritten contents (and the original)
// when the file changes, with the shared definitions the rewrite imports from
// its package's helper module (helpers.go). A file whose rules run past the
// per-file time limit is reported (PIO012) and left untouched.
func (st *state) processFile(ctx context.Context, parsers *ts.Pool, pf *prefilter, e entry, f *File) (out, orig []byte, shared []rule.Shared) {
	fctx, stop := st.fileContext(ctx)
	defer stop()
	out, orig, shared = st.processWithin(fctx, parsers, pf, e, f)
	if ctx.Err() == nil && errors.Is(context.Cause(fctx), errFileTimeout) {
		st.overTime(f)
		return nil, nil, nil
	}
	return out, orig, shared
}

// processWithin is processFile's work, under the file's context.
func (st *state) processWithin(ctx context.Context, parsers *ts.Pool, pf *prefilter, e entry, f *File) (out, orig []byte, shared []rule.Shared) {
	skip := func(code string, sev Severity, msg string) {
		f.Skipped = code
		f.Diagnostics = append(f.Diagnostics, Diagnostic{Code: code, Severity: sev, Path: f.Path, Message: msg})
	}
	if e.size > st.opts.MaxFileBytes {
		skip(CodeTooLarge, SevWarning, fmt.Sprintf("file is %d bytes, over the %d-byte limit; not read, left untouched", e.size, st.opts.MaxFileBytes))
		return nil, nil, nil
	}
	// Most files are read only to be scanned (no rule can report on them):
	// their buffer goes back to srcBuffers for the next file, so the run
	// does not allocate, zero and collect the whole tree's bytes.
	buf := srcBuffers.Get().(*[]byte)
	src, err := readLimitedInto(e.abs, st.opts.MaxFileBytes, *buf)
	if err != nil {
		skip(CodeUnreadable, SevError, "file could not be read: "+err.Error())
		return nil, nil, nil
	}
	f.Bytes = int64(len(src))
	f.Lines = countLines(src)
	head := src
	if len(head) > 8000 {
		head = head[:8000]
	}
	if bytes.IndexByte(head, 0) >= 0 {
		skip(CodeBinary, SevWarning, "file holds a NUL byte (binary); left untouched")
		return nil, nil, nil
	}
	if !utf8.Valid(src) {
		skip(CodeNotUTF8, SevWarning, "file is not valid UTF-8; left untouched")
		return nil, nil, nil
	}
	if f.Lang == LangProject {
		if out = st.processProject(ctx, f, src); out != nil {
			return out, src, nil
		}
		return nil, nil, nil
	}
	if files.KindOf(f.Path) == files.SetupPy {
		st.processProject(ctx, f, src) // its install_requires: reported, never edited
	}
	if f.Lang == LangNotebook {
		if st.opts.Notebook != nil {
			f.Diagnostics = append(f.Diagnostics, st.opts.Notebook(f.Path, src)...)
			return nil, nil, nil
		}
		if out = st.processNotebook(ctx, parsers, pf, f, src); out != nil {
			return out, src, nil
		}
		return nil, nil, nil
	}
	rules, sets := pf.selectPython(src)
	rules = onPath(rules, f.Path)
	f.kernelScan = scanKnown | scanOf(sets[0])
	scanKernels := func(t *ts.Tree) {
		if ps, ok := kernels.ScanPythonTree(ctx, st.opts.Root, f.Path, t); ok {
			f.kernelPy = ps
		}
	}
	if len(rules) == 0 {
		if sets[0] && st.scanKernels {
			st.kernelScanOnly(ctx, parsers, src, scanKernels)
			return nil, nil, nil // the scan may hold slices of src
		}
		*buf = src
		srcBuffers.Put(buf)
		return nil, nil, nil
	}
	layout, _ := layoutOf(e.rel, st.pkgs)
	eng := &rule.Engine{Rules: rules, Opts: rule.Options{Target: st.opts.Target, UnsafeFixes: st.opts.UnsafeFixes, Mark: st.opts.Mark,
		Layout: layout, Limits: st.opts.Limits, LineLength: st.lineLength}}
	if sets[0] && st.scanKernels {
		eng.Inspect = scanKernels
	}
	parser := parsers.Get()
	res, err := eng.Run(ctx, parser, f.Path, src)
	parsers.Put(parser)
	if err != nil {
		if ctx.Err() == nil {
			skip(CodeInternal, SevError, "engine could not run: "+err.Error())
		}
		return nil, nil, nil // cancelled: the run ends; over time: overTime reports it
	}
	for _, fd := range res.Findings {
		f.Diagnostics = append(f.Diagnostics, findingDiag(f.Path, fd))
	}
	for _, pr := range res.Problems {
		d := Diagnostic{Code: pr.Code, Rule: pr.Rule, Severity: SevError, Path: f.Path, Line: pr.Line, Col: pr.Col, Message: pr.Message}
		if pr.Code == CodeOverBudget {
			d.Severity = SevWarning
		}
		f.Diagnostics = append(f.Diagnostics, d)
		if pr.Code == CodeSyntaxError || pr.Code == CodeOverBudget {
			f.Skipped = pr.Code
		}
	}
	if !res.Changed() {
		return nil, nil, nil
	}
	return res.Output, src, res.Shared
}

// fileContext is ctx bounded by the per-file time limit.
func (st *state) fileContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if st.opts.FileTimeout < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, st.opts.FileTimeout, errFileTimeout)
}

// errFileTimeout is the cause of a file context's end at its time limit.
var errFileTimeout = errors.New("per-file time limit")

// overTime reports f as skipped for its time running out, dropping the
// findings it had gathered (those of the rules that finished).
func (st *state) overTime(f *File) {
	f.Skipped = CodeOverBudget
	f.Diagnostics = append(f.Diagnostics[:0], Diagnostic{Code: CodeOverBudget, Rule: "over-budget", Severity: SevWarning, Path: f.Path,
		Line: 1, Col: 1, Message: fmt.Sprintf("the rules took longer than the per-file limit of %v; file left untouched", st.opts.FileTimeout)})
}

// onPath returns the rules whose Paths accept path (rules itself when all
// do): the engine would not run the others there.
func onPath(rules []*rule.Rule, path string) []*rule.Rule {
	for i, r := range rules {
		if r.Paths != nil && !r.Paths(path) {
			out := append([]*rule.Rule(nil), rules[:i]...)
			for _, r := range rules[i+1:] {
				if r.Paths == nil || r.Paths(path) {
					out = append(out, r)
				}
			}
			return out
		}
	}
	return rules
}

// kernelScanOnly parses a file no rule needs, for its kernel scan only:
// here, on the analyze stage's workers, rather than in the kernel stage
// after them.
func (st *state) kernelScanOnly(ctx context.Context, parsers *ts.Pool, src []byte, scan func(*ts.Tree)) {
	parser := parsers.Get()
	defer parsers.Put(parser)
	t, err := parser.Parse(ctx, src)
	if err != nil {
		return
	}
	defer t.Close()
	scan(t)
}

func findingDiag(path string, fd rule.Finding) Diagnostic {
	d := Diagnostic{Code: fd.Code, Rule: fd.Rule, Path: path, Line: fd.Line, Col: fd.Col, Message: fd.Message,
		Applied: fd.Applied, Skipped: fd.Skipped, Safety: rule.DisplayOnly.String()}
	if fd.Fix != nil {
		d.Safety = fd.Fix.Safety.String()
		d.Fix = fd.Fix.Title
	}
	switch {
	case fd.Applied:
		d.Severity = SevInfo
	default:
		d.Severity = SevWarning
	}
	return d
}

// applyRewrites moves the analyze stage's candidate rewrites into the run.
func (st *state) applyRewrites(ctx context.Context, r *Run) error {
	for i, pr := range st.pending {
		r.Files[i].Original, r.Files[i].Updated = pr[0], pr[1]
	}
	st.pending = nil
	st.addHelperModules(r)
	st.addCreated(r)
	if st.opts.Bench != nil {
		return st.addBench(ctx, r)
	}
	return nil
}

// srcBuffers holds file buffers (*[]byte) that readLimitedInto may reuse.
var srcBuffers = sync.Pool{New: func() any { return new([]byte) }}

// readLimitedInto reads the file p (at most limit bytes) into buf when it is
// large enough (the result then shares buf's memory), else into a new buffer.
//
// p is a regular file the walk found: it is opened only as one (a symlink or
// FIFO swapped in since is refused, never followed or waited on).
func readLimitedInto(p string, limit int64, buf []byte) ([]byte, error) {
	f, err := repofs.OpenRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("file grew to %d bytes, over the limit", fi.Size())
	}
	if int64(cap(buf)) < fi.Size() {
		buf = make([]byte, fi.Size())
	}
	buf = buf[:fi.Size()]
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

func countLines(src []byte) int {
	if len(src) == 0 {
		return 0
	}
	n := bytes.Count(src, []byte{'\n'})
	if src[len(src)-1] != '\n' {
		n++
	}
	return n
}
