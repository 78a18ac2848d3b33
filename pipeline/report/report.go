// Package report turns a pipeline.Run into the analyze/migrate report — per
// file and total counts by rule, the sites a human must handle, kernels found,
// an effort estimate and timings — and renders it as text, JSON, Markdown or
// SARIF 2.1.0. It also colours unified diffs for terminals.
//
// # Effort estimate
//
// A site is one rule finding. It is auto-fixable when its fix is applied under
// the run's options (safe fixes; unsafe ones with --unsafe-fixes). The effort
// bucket is:
//
//   - none: no sites and no kernels;
//   - low: at least 90% of sites auto-fixable and no custom kernels left;
//   - medium: at least 60% auto-fixable and at most 3 custom kernels left;
//   - high: anything else (under 60% auto-fixable, or more than 3 kernels).
//
// A custom kernel the kernel stages proved and wired in is no longer left
// (the reason names it: "1 custom kernel proven and wired in"), and its call
// site (PDX006, a diagnostic rule: it fixes nothing itself) is counted as
// replaced, neither fixed nor left to a human; the auto-fixable share is
// that of the other sites.
//
// An opt-in rule's findings (PCM002, wrapping a model in torch.compile)
// that the run did not apply are offers, not work: they count in Sites and
// OptIn, not in Manual, and the estimate leaves them out.
//
// Kernels weigh heavily because each needs a drafted and validated Pallas
// replacement; PIO problems (unparseable or skipped files) are listed but do
// not enter the share.
package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms/codes"
	"github.com/pallasify/pallasify/transforms/rule"
)

// Effort thresholds; see the package doc.
const (
	LowShare      = 0.90
	MediumShare   = 0.60
	MediumKernels = 3
)

// SchemaVersion is the version of the JSON report (--format json): it goes
// up when a field is removed, renamed or changes meaning; new fields keep
// it.
const SchemaVersion = 1

// Report is the summary of one run.
type Report struct {
	// SchemaVersion is the JSON document's version (SchemaVersion).
	SchemaVersion int `json:"schema_version"`

	Tool    string `json:"tool"`
	Version string `json:"version"`
	Kind    string `json:"kind"` // analyze or migrate
	Root    string `json:"root"`
	Target  string `json:"target"`
	// Output says where the changes went: "dry run", "written in place",
	// "written to DIR", "patch FILE" (migrate only).
	Output string `json:"output,omitempty"`
	// Config is the repository's config file the run read, as
	// config.Describe names it ("" when none).
	Config string `json:"config,omitempty"`
	// Options are the run's options besides the target, one phrase each
	// (OptionList), for the HTML report's summary; not in the JSON.
	Options []string `json:"-"`

	Files        int `json:"files"` // source files processed (not the modules the run generates)
	Lines        int `json:"lines"` // their lines
	FilesWithHit int `json:"files_with_findings"`
	FilesChanged int `json:"files_changed"` // files the run rewrites (or would), new ones included
	// FilesAdded counts the files of FilesChanged the run creates (the
	// kernel stages' generated modules, helper modules).
	FilesAdded int `json:"files_added,omitempty"`

	Sites       int `json:"sites"`
	AutoFixable int `json:"auto_fixable"`
	Manual      int `json:"manual"`
	// OptIn counts the unapplied findings of opt-in rules (PCM002): offers,
	// not work for a human, so neither in Manual nor in the effort estimate.
	OptIn int `json:"opt_in"`
	// Replaced counts the custom-kernel sites (PDX006, diagnostic only)
	// whose kernel the kernel stages proved and wired in: neither fixed by
	// a rule nor left to a human.
	Replaced int         `json:"replaced,omitempty"`
	Effort   Effort      `json:"effort"`
	ByRule   []RuleCount `json:"by_rule"`
	PerFile  []FileRow   `json:"per_file"`
	// Findings are every rule finding, applied or not, in path order.
	Findings []pipeline.Diagnostic `json:"findings"`
	// ManualSites are the findings a human must handle (diagnostic-only, unsafe
	// not enabled, or a fix that could not be applied).
	ManualSites []pipeline.Diagnostic `json:"manual_sites"`
	// Problems are PIO diagnostics: files left untouched and why.
	Problems []pipeline.Diagnostic `json:"problems"`
	// KernelNotes are the kernel stage's PKN diagnostics (kernel found, spec
	// needed, unsupported construct, ...).
	KernelNotes []pipeline.Diagnostic `json:"kernel_notes"`
	Kernels     []KernelRow           `json:"kernels"`
	LLM         *LLMTotals            `json:"llm,omitempty"`
	Timings     []Timing              `json:"timings"`

	// NextSteps is the "Next steps on a TPU VM" checklist (migrate only;
	// nextsteps.go).
	NextSteps []NextStep `json:"next_steps,omitempty"`

	rules map[string]*rule.Rule
	// run is the run the report was built from: the HTML report takes each
	// changed file's diff from it (migrate; analyze keeps no contents).
	run *pipeline.Run
}

// Effort is the estimate of the work left after the automatic rewrites.
type Effort struct {
	Level     string  `json:"level"`      // none, low, medium, high
	AutoShare float64 `json:"auto_share"` // auto-fixable sites / sites (1 when no sites)
	Manual    int     `json:"manual_sites"`
	Kernels   int     `json:"kernels"`                 // custom kernels left (not proven and wired in)
	Wired     int     `json:"kernels_wired,omitempty"` // custom kernels proven and wired in
	Reason    string  `json:"reason"`
}

// RuleCount is one rule's total.
type RuleCount struct {
	Code     string `json:"code"`
	Name     string `json:"name"`
	Safety   string `json:"safety"`
	Title    string `json:"title"`
	Sites    int    `json:"sites"`
	Applied  int    `json:"applied"`
	Manual   int    `json:"manual"`
	OptIn    int    `json:"opt_in,omitempty"`   // unapplied findings of an opt-in rule
	Replaced int    `json:"replaced,omitempty"` // sites whose kernel was proven and wired in (Report.Replaced)
}

// FileRow is one file with findings, problems or changes.
type FileRow struct {
	Path     string         `json:"path"`
	Lines    int            `json:"lines"`
	Sites    int            `json:"sites"`
	Applied  int            `json:"applied"`
	Manual   int            `json:"manual"`
	Replaced int            `json:"replaced,omitempty"`
	Changed  bool           `json:"changed"`
	Skipped  string         `json:"skipped,omitempty"`
	ByRule   map[string]int `json:"by_rule,omitempty"`
}

// KernelRow is one kernel and, once the kernel stages ran, its verdict.
type KernelRow struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Origin string `json:"origin"`
	Class  string `json:"class"`
	Spec   string `json:"spec_status"`
	// Emulator is the emulator status: compiled, unsupported: <construct>,
	// compile-error: <first error>, needs-spec, ran (validation reference)
	// when the validator ran the original there, ran (captured launches)
	// when only the repository's tests did, or not-run[: <why>].
	Emulator string               `json:"emulator_status"`
	Drafter  string               `json:"drafter"` // "-" until the draft stage ran
	Verdict  string               `json:"verdict"` // "-" until the validate stage ran
	Reason   string               `json:"reason,omitempty"`
	Stats    *pipeline.ErrorStats `json:"stats,omitempty"`
	// Rounds, Tokens and Calls are the LLM drafter's repair rounds, tokens
	// and calls for this kernel (0 for rule drafts and cache hits).
	Rounds int `json:"rounds,omitempty"`
	Tokens int `json:"tokens,omitempty"`
	Calls  int `json:"calls,omitempty"`
	// Shapes are the size assignments the validator tested, DurationMS the
	// drafting+validation time, Module the generated module when wired in.
	Shapes     []string `json:"shapes,omitempty"`
	DurationMS int64    `json:"duration_ms,omitempty"`
	Module     string   `json:"module,omitempty"`
	// Cases are the validator's per-case comparisons (sizes, output dtype
	// and shape, errors): the HTML report's histogram and shapes covered.
	Cases []pipeline.CaseResult `json:"cases,omitempty"`

	// The capture stage's facts (see pipeline.Kernel): extension built for
	// the CPU or why not, launches captured, spec source (tests,
	// call-sites+user-spec, static, none), reference emulated, and the TPU
	// compile gate per chip.
	BuiltCPU    bool                  `json:"built_cpu"`
	BuildReason *pipeline.BuildReason `json:"build_reason,omitempty"`
	Captured    int                   `json:"captured"`
	SpecSource  string                `json:"spec_source"`
	Emulated    bool                  `json:"emulated"`
	TPUCompiled map[string]bool       `json:"tpu_compiled"`
	// TestsPassed and TestsFailed count the repository's test entries run
	// against the CPU-built original.
	TestsPassed int `json:"tests_passed,omitempty"`
	TestsFailed int `json:"tests_failed,omitempty"`
	// Drafted, Proven and Wired summarise the draft columns: a candidate was
	// drafted, the validator proved it, and migrate wired it in.
	Drafted bool `json:"drafted"`
	Proven  bool `json:"proven"`
	Wired   bool `json:"wired"`
}

// LLMTotals are the run's LLM drafting totals (present when any kernel was
// drafted by the LLM or needs one).
type LLMTotals struct {
	Kernels  int     `json:"kernels"`   // kernels drafted by the LLM
	Proven   int     `json:"proven"`    // of which proven
	NeedsLLM int     `json:"needs_llm"` // kernels left for an LLM (none configured)
	Calls    int     `json:"calls"`
	Tokens   int     `json:"tokens"`
	CostUSD  float64 `json:"cost_usd,omitempty"`
	Fix      string  `json:"fix,omitempty"` // how to configure an LLM, when NeedsLLM > 0
}

// Timing is a stage's duration.
type Timing struct {
	Stage   string  `json:"stage"`
	Seconds float64 `json:"seconds"`
}

// Build summarises run. kind is "analyze" or "migrate"; rules documents the
// codes (titles, safety) and may be the full registry.
func Build(run *pipeline.Run, kind string, rules []*rule.Rule) *Report {
	rep := &Report{SchemaVersion: SchemaVersion, Tool: "pallasify", Version: run.Version, Kind: kind, Root: run.Root, Target: run.Target,
		rules: map[string]*rule.Rule{}, run: run, Findings: []pipeline.Diagnostic{}, ManualSites: []pipeline.Diagnostic{}, Problems: []pipeline.Diagnostic{},
		KernelNotes: []pipeline.Diagnostic{}, Kernels: []KernelRow{}, ByRule: []RuleCount{}, PerFile: []FileRow{}}
	for _, r := range rules {
		rep.rules[r.Code] = r
	}
	byRule := map[string]*RuleCount{}
	var benchNotes []pipeline.Diagnostic // PBN: the checklist's benchmark step says them
	handled := kernelsHandled(run)
	for _, f := range run.Files {
		if f.Lang == pipeline.LangPython || f.Lang == pipeline.LangNotebook || f.Lang == pipeline.LangProject {
			if f.Mode.IsRegular() && !f.Generated {
				rep.Files++
				rep.Lines += f.Lines
			}
		}
		// Analyze keeps no contents: a file with an applied fix is one the
		// migration would change.
		changed := f.Changed()
		for _, d := range f.Diagnostics {
			// a kernel stage's note (PDR001 "wired") is no edit of this file:
			// the wiring's edits are in f.Updated when it made any
			_, isDriver := pipeline.CodeInfo(d.Code)
			changed = changed || d.Applied && !isDriver
		}
		if changed {
			rep.FilesChanged++
			if f.Generated {
				rep.FilesAdded++
			}
		}
		if len(f.Diagnostics) == 0 && !changed {
			continue
		}
		row := FileRow{Path: f.Path, Lines: f.Lines, Changed: changed, Skipped: f.Skipped, ByRule: map[string]int{}}
		for _, d := range f.Diagnostics {
			if _, isIO := pipeline.IOCode(d.Code); isIO {
				rep.Problems = append(rep.Problems, d)
				continue
			}
			if benchNote(d) {
				benchNotes = append(benchNotes, d)
				continue
			}
			if _, isDriver := pipeline.CodeInfo(d.Code); isDriver {
				rep.KernelNotes = append(rep.KernelNotes, d)
				continue
			}
			rc := byRule[d.Code]
			if rc == nil {
				rc = &RuleCount{Code: d.Code, Name: d.Rule, Safety: d.Safety}
				if r := rep.rules[d.Code]; r != nil {
					rc.Title, rc.Safety, rc.Name = r.Title(), r.Safety.String(), r.Name
				} else if e, ok := codes.Lookup(d.Code); ok && e.Family() == "PNF" {
					// a rule for non-Python files (transforms/files): its group is its fix safety
					rc.Title, rc.Safety, rc.Name = e.Title, e.Group, e.Name
				}
				byRule[d.Code] = rc
			}
			replaced := false
			if d.Code == customKernelCode && !d.Applied && handled(f.Path) {
				// the kernel stages replaced the kernel: a proven, wired
				// Pallas op; nothing is left to a human at this site, and
				// no rule fixed it (the rule only reports)
				d.Applied, replaced = true, true
			}
			rep.Findings = append(rep.Findings, d)
			rc.Sites++
			row.Sites++
			row.ByRule[d.Code]++
			rep.Sites++
			switch r := rep.rules[d.Code]; {
			case replaced:
				rc.Replaced++
				row.Replaced++
				rep.Replaced++
			case d.Applied:
				rc.Applied++
				row.Applied++
				rep.AutoFixable++
			case r != nil && r.OptIn:
				rc.OptIn++
				rep.OptIn++
			default:
				rc.Manual++
				row.Manual++
				rep.Manual++
				rep.ManualSites = append(rep.ManualSites, d)
			}
		}
		if row.Sites > 0 {
			rep.FilesWithHit++
		}
		rep.PerFile = append(rep.PerFile, row)
	}
	for _, rc := range byRule {
		rep.ByRule = append(rep.ByRule, *rc)
	}
	sort.Slice(rep.ByRule, func(i, j int) bool { return rep.ByRule[i].Code < rep.ByRule[j].Code })
	for _, k := range run.Kernels {
		row := KernelRow{ID: k.ID, Name: k.Name, Path: k.Path, Line: k.Line, Origin: k.Origin, Class: k.Class,
			Spec: k.SpecStatus, Emulator: k.EmuStatus, Drafter: "-", Verdict: "-"}
		if row.Emulator == "" {
			row.Emulator = "not-run"
		}
		captureColumns(&row, k)
		if row.Emulator == "not-run" && k.Draft != nil && (k.Draft.Verdict == pipeline.VerdictProven || k.Draft.Verdict == pipeline.VerdictRejected) {
			// the validator ran the original on the CUDA-on-CPU emulator
			row.Emulator, row.Emulated = "ran (validation reference)", true
		}
		if row.Emulator == "not-run" && k.Captured > 0 {
			// the repository's tests ran the original there (capture)
			row.Emulator = "ran (captured launches)"
		}
		if k.Draft != nil {
			row.Drafter, row.Verdict, row.Reason, row.Stats = k.Draft.Drafter, k.Draft.Verdict, k.Draft.Reason, k.Draft.Stats
			row.Rounds, row.Tokens, row.Calls = k.Draft.Rounds, k.Draft.Tokens, k.Draft.Calls
			row.Shapes, row.DurationMS, row.Module = k.Draft.Shapes, k.Draft.Duration.Milliseconds(), k.Draft.Module
			row.Cases = k.Draft.Cases
			if k.Draft.Drafter == "llm" || k.Draft.Verdict == "needs-llm" {
				if rep.LLM == nil {
					rep.LLM = &LLMTotals{}
				}
				t := rep.LLM
				t.Calls += k.Draft.Calls
				t.Tokens += k.Draft.Tokens
				t.CostUSD += k.Draft.CostUSD
				switch {
				case k.Draft.Verdict == "needs-llm":
					t.NeedsLLM++
					t.Fix = k.Draft.Reason
					if i := strings.LastIndex(t.Fix, " — "); i >= 0 {
						t.Fix = t.Fix[i+len(" — "):] // the hint, without the refusal before it
					}
				case k.Draft.Verdict == "proven":
					t.Kernels++
					t.Proven++
				default:
					t.Kernels++
				}
			}
		}
		rep.Kernels = append(rep.Kernels, row)
	}
	for _, d := range run.Diagnostics {
		if _, isIO := pipeline.IOCode(d.Code); isIO {
			rep.Problems = append(rep.Problems, d)
		} else if benchNote(d) {
			benchNotes = append(benchNotes, d)
		} else {
			rep.KernelNotes = append(rep.KernelNotes, d)
		}
	}
	if kind == "migrate" {
		rep.NextSteps = nextSteps(run, benchNotes)
	}
	for _, t := range run.Timings {
		rep.Timings = append(rep.Timings, Timing{Stage: t.Stage, Seconds: t.Duration.Seconds()})
	}
	left := 0
	for _, k := range run.Kernels {
		if !wiredKernel(k) {
			left++
		}
	}
	rep.Effort = Estimate(rep.Sites-rep.OptIn-rep.Replaced, rep.AutoFixable, left, len(run.Kernels)-left)
	return rep
}

// OptionList describes o's choices besides the root and the target, one
// phrase each, in a fixed order (nil when all are the defaults).
func OptionList(o pipeline.Options) []string {
	var out []string
	list := func(name string, v []string) {
		if len(v) > 0 {
			out = append(out, name+" "+strings.Join(v, ","))
		}
	}
	list("select", o.Select)
	list("ignore", o.Ignore)
	list("include", o.Include)
	list("exclude", o.Exclude)
	if o.UnsafeFixes {
		out = append(out, "unsafe fixes applied")
	}
	if o.Mark {
		out = append(out, "sites left to a human marked in the code")
	}
	if o.Concurrency > 0 {
		out = append(out, fmt.Sprintf("jobs %d", o.Concurrency))
	}
	if e := o.Emulator; e != nil {
		s := "kernels compiled against the CUDA-on-CPU emulator"
		if e.NoSandbox {
			s += " (no sandbox)"
		}
		out = append(out, s)
	}
	if c := o.Capture; c != nil {
		if !c.NoTests {
			out = append(out, "the tree's tests run with kernel launches captured")
		}
		if !c.NoDrive {
			out = append(out, "CUDA extension ops driven on their CPU build")
		}
	}
	if o.TritonDrive != nil {
		out = append(out, "Triton launchers driven under the interpreter")
	}
	if o.Draft != nil {
		out = append(out, "kernels drafted as Pallas")
	}
	if o.Validate != nil {
		out = append(out, "drafts validated numerically")
	}
	return out
}

// customKernelCode is the rule that flags a custom CUDA kernel's Python
// entry (transforms/hazards, custom-cuda-kernel).
const customKernelCode = "PDX006"

// wiredKernel reports whether the kernel stages replaced k: its draft is
// proven and wired into the Python code.
func wiredKernel(k *pipeline.Kernel) bool {
	return k.Draft != nil && k.Draft.Verdict == pipeline.VerdictProven && k.Draft.Module != ""
}

// kernelsHandled says, per Python file, whether its custom-kernel sites
// are the kernel stages' work done: every kernel of the run is proven and
// wired, or every kernel defined in that file is.
func kernelsHandled(run *pipeline.Run) func(path string) bool {
	all := len(run.Kernels) > 0
	inFile := map[string]bool{}
	for _, k := range run.Kernels {
		w := wiredKernel(k)
		all = all && w
		if v, seen := inFile[k.Path]; seen {
			inFile[k.Path] = v && w
		} else {
			inFile[k.Path] = w
		}
	}
	return func(path string) bool { return all || inFile[path] }
}

// Estimate buckets the remaining work; see the package doc. sites are the
// sites that count as work (not the opt-in offers, not the sites of wired
// kernels), auto those a rule fixes, kernels the custom kernels left and
// wired those the kernel stages proved and wired in.
func Estimate(sites, auto, kernels, wired int) Effort {
	e := Effort{AutoShare: 1, Manual: sites - auto, Kernels: kernels, Wired: wired}
	if sites > 0 {
		e.AutoShare = float64(auto) / float64(sites)
	}
	pct := fmt.Sprintf("%.0f%% of %d site%s auto-fixable", 100*e.AutoShare, sites, plural(sites))
	ks := fmt.Sprintf("%d custom kernel%s", kernels, plural(kernels))
	if wired > 0 {
		ks = fmt.Sprintf("%d custom kernel%s left, %d proven and wired in", kernels, plural(kernels), wired)
	}
	switch {
	case sites == 0 && kernels == 0 && wired == 0:
		e.Level, e.Reason = "none", "nothing CUDA-specific found"
	case e.AutoShare >= LowShare && kernels == 0 && wired > 0:
		e.Level, e.Reason = "low", fmt.Sprintf("%s, %d custom kernel%s proven and wired in", pct, wired, plural(wired))
	case e.AutoShare >= LowShare && kernels == 0:
		e.Level, e.Reason = "low", pct+", no custom kernels"
	case e.AutoShare >= MediumShare && kernels <= MediumKernels:
		e.Level, e.Reason = "medium", pct+", "+ks
	default:
		e.Level, e.Reason = "high", pct+", "+ks
	}
	return e
}

// Thresholds describes the effort buckets in one line.
func Thresholds() string {
	return fmt.Sprintf("low: >=%.0f%% auto-fixable and no kernels; medium: >=%.0f%% and <=%d kernels; high: otherwise",
		100*LowShare, 100*MediumShare, MediumKernels)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// title returns the one-line description of a code (rule or PIO).
func (rep *Report) title(code string) string {
	if r := rep.rules[code]; r != nil {
		return r.Title()
	}
	if c, ok := pipeline.CodeInfo(code); ok {
		return c.Title
	}
	return code
}

func pct(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
}

func loc(d pipeline.Diagnostic) string {
	var b strings.Builder
	b.WriteString(d.Path)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d", d.Line)
		if d.Col > 0 {
			fmt.Fprintf(&b, ":%d", d.Col)
		}
	}
	return b.String()
}

func dur(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}

// captureColumns copies the capture stage's facts and the drafted/proven/
// wired summary into a kernel row.
func captureColumns(row *KernelRow, k *pipeline.Kernel) {
	row.BuiltCPU, row.BuildReason, row.Captured, row.Emulated = k.BuiltCPU, k.BuildReason, k.Captured, k.Emulated
	row.SpecSource, row.TestsPassed, row.TestsFailed = k.SpecSource, k.TestsPassed, k.TestsFailed
	if row.SpecSource == "" {
		row.SpecSource = pipeline.SpecNone
	}
	row.TPUCompiled = k.TPUCompiled
	if row.TPUCompiled == nil {
		row.TPUCompiled = map[string]bool{}
	}
	if d := k.Draft; d != nil {
		row.Drafted = d.Drafter != "" && d.Drafter != "none"
		row.Proven = d.Verdict == pipeline.VerdictProven
		row.Wired = row.Proven && d.Module != ""
	}
}
