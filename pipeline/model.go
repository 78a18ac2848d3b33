// Package pipeline runs a migration over a source tree through named stages —
// acquire, analyze, rewrite, draft, validate, deliver — and holds the run
// model every report, delivery and batch reads: files, edits, diagnostics with
// codes, kernels with their verdicts, and timings.
package pipeline

import (
	"context"
	"io/fs"
	"time"

	"github.com/pallasify/pallasify/transforms/codes"
	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/transforms/kernels"
)

// Stage names, in pipeline order.
const (
	StageAcquire  = "acquire"
	StageAnalyze  = "analyze"
	StageRewrite  = "rewrite"
	StageDraft    = "draft"
	StageValidate = "validate"
	StageDeliver  = "deliver"
)

// Stage is one step of a run. Stages read and fill the Run; an error aborts
// the run, while problems with single files or kernels become diagnostics.
type Stage interface {
	Name() string
	Run(ctx context.Context, r *Run) error
}

// Severity of a diagnostic (the code registry's, transforms/codes).
type Severity = codes.Severity

const (
	SevError   = codes.Error
	SevWarning = codes.Warning
	SevInfo    = codes.Info
)

// Diagnostic is one coded message about a place in the tree (or the run).
type Diagnostic struct {
	Code     string   `json:"code"`
	Rule     string   `json:"rule,omitempty"`
	Severity Severity `json:"severity"`
	Path     string   `json:"path,omitempty"` // slash-separated, relative to the root
	Line     int      `json:"line,omitempty"`
	Col      int      `json:"col,omitempty"`
	Message  string   `json:"message"`
	Safety   string   `json:"safety,omitempty"`  // safe, unsafe, diagnostic
	Fix      string   `json:"fix,omitempty"`     // the fix's title, when one exists
	Applied  bool     `json:"applied"`           // the fix is in the output
	Skipped  string   `json:"skipped,omitempty"` // why an available fix was not applied
}

// File is one file of the tree as the run saw it.
type File struct {
	Path        string       `json:"path"`
	Lang        string       `json:"lang"`
	Lines       int          `json:"lines"`
	Bytes       int64        `json:"bytes"`
	Mode        fs.FileMode  `json:"-"`
	Original    []byte       `json:"-"`                   // kept only for changed files
	Updated     []byte       `json:"-"`                   // nil when unchanged
	Generated   bool         `json:"generated,omitempty"` // a file the run created
	Skipped     string       `json:"skipped,omitempty"`   // diagnostic code when the file was not processed
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`

	// kernelScan is what the analyze stage's prefilter found of the kernel
	// discovery's needles (kernels.PythonNeedles) in a Python file, so the
	// kernel stage does not read the file again to find out.
	kernelScan scanState
	// kernelPy is the kernel scan of a Python file holding a needle, made
	// by the analyze stage from the rules' parse (kernels.ScanPythonTree);
	// nil when the analyze stage did not make it. The kernel stage takes it
	// and drops it.
	kernelPy *kernels.PythonScan
}

// scanState is a prefilter answer about one file: unknown (the analyze
// stage did not scan it), or known with or without a hit.
type scanState uint8

const (
	scanKnown scanState = 1 << iota
	scanHit
)

func scanOf(hit bool) scanState {
	if hit {
		return scanHit
	}
	return 0
}

// mayHoldKernels reports whether the kernel stage must read f: unless the
// analyze stage scanned it and found none of the needles.
func (f *File) mayHoldKernels() bool {
	return f == nil || f.kernelScan&scanKnown == 0 || f.kernelScan&scanHit != 0
}

// kernelScanned is the analyze stage's kernel scan of f, nil without one.
func (f *File) kernelScanned() *kernels.PythonScan {
	if f == nil {
		return nil
	}
	return f.kernelPy
}

// Changed reports whether the run rewrites or creates the file.
func (f *File) Changed() bool { return f.Updated != nil }

// Kernel is one custom CUDA (or Triton/CuPy) kernel found in the tree, with
// what the kernel stages made of it.
type Kernel struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Path       string `json:"path"`
	Line       int    `json:"line"`
	Origin     string `json:"origin"`                    // cu-file, load_inline, load, cuda-extension, cupy, triton
	Class      string `json:"class"`                     // elementwise, row-reduction, matmul-tile, scan, histogram, stencil, transpose, other
	SpecStatus string `json:"spec_status"`               // inferred, user, needs-spec
	EmuStatus  string `json:"emulator_status,omitempty"` // compiled, unsupported: <construct>, not-run
	Draft      *Draft `json:"draft,omitempty"`

	// What the capture stage made of the kernel: the repository's extension
	// built for the CPU (or the coded reason it was not), the launches
	// captured while its tests ran, where the spec came from (SpecTests,
	// SpecCallSites, SpecStatic or SpecNone) and whether the reference ran on
	// the emulator.
	BuiltCPU    bool         `json:"built_cpu"`
	BuildReason *BuildReason `json:"build_reason,omitempty"`
	Captured    int          `json:"captured"`
	SpecSource  string       `json:"spec_source"`
	Emulated    bool         `json:"emulated"`
	// TestsPassed and TestsFailed count the test entries (pytest files, the
	// KernelBench driver with its ModelNew-vs-Model check) that passed or
	// failed against the CPU-built original.
	TestsPassed int `json:"tests_passed,omitempty"`
	TestsFailed int `json:"tests_failed,omitempty"`
	// TPUCompiled is the TPU compile gate's result per chip for the proven
	// draft (validators' Verdict.TPU), nil when the gate did not run.
	TPUCompiled map[string]bool `json:"tpu_compiled,omitempty"`
}

// BuildReason says why a kernel's extension was not built for the CPU: a
// code (EMU-UNSUPPORTED, EMU-BUILD, ...) and one line naming the construct.
type BuildReason struct {
	Code string `json:"code"`
	Text string `json:"text"`
}

// Spec sources of a kernel, in the order they are tried.
const (
	SpecTests     = "tests"                // captured from the repository's own tests
	SpecCallSites = "call-sites+user-spec" // a user spec file for the call sites the rewrite stage found
	SpecStatic    = "static"               // static inference from the host code
	SpecNone      = "none"                 // no spec
)

// Draft is what the draft and validate stages did for a kernel.
type Draft struct {
	Drafter  string        `json:"drafter"` // rules, llm, none
	Verdict  string        `json:"verdict"` // proven, rejected, not-drafted, needs-llm, needs-spec, error
	Reason   string        `json:"reason,omitempty"`
	Rounds   int           `json:"rounds,omitempty"`
	Tokens   int           `json:"tokens,omitempty"`
	Calls    int           `json:"calls,omitempty"`
	CostUSD  float64       `json:"cost_usd,omitempty"` // LLM cost, when prices are configured
	Stats    *ErrorStats   `json:"stats,omitempty"`
	Shapes   []string      `json:"shapes,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	Module   string        `json:"module,omitempty"` // generated module path, when wired in
	// Cases are the validator's per-case comparisons of the verdict Stats
	// summarise (sizes, output dtype and shape, errors): the report's error
	// histogram and shapes covered.
	Cases []CaseResult `json:"cases,omitempty"`
}

// ErrorStats summarises a numeric comparison.
type ErrorStats = draft.ErrorStats

// CaseResult is one compared output of one validated case.
type CaseResult = draft.CaseResult

// Timing is how long one stage took.
type Timing struct {
	Stage    string        `json:"stage"`
	Duration time.Duration `json:"duration_ns"`
}

// Run is one migration of one tree.
type Run struct {
	Root        string       `json:"root"`
	Target      string       `json:"target"`
	Version     string       `json:"version"`
	Files       []*File      `json:"files"` // sorted by Path
	Kernels     []*Kernel    `json:"kernels,omitempty"`
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"` // run-level, not tied to a file
	Timings     []Timing     `json:"timings"`
	// Bench is the benchmark script's path (relative to Root) when the run
	// was asked for one (Options.Bench), whether it wrote it or found it.
	Bench string `json:"bench,omitempty"`
}
