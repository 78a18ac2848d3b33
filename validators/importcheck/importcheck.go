// Package importcheck imports every module of a migrated tree on the CPU, in
// the sandbox, and collects its tests with pytest: once with torch-tpu as
// the environment has it, once with torch-tpu hidden from the process. Each
// module's result is compared with the original tree's, so what the
// migration broke (PIM001, PIM002) is told apart from the repository's own
// missing dependencies (PIM003) and failures it already had (PIM004). See
// README.md for the contract.
package importcheck

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pallasify/pallasify/validators/sandbox"
)

//go:embed driver.py
var driverPy []byte

// Mode is how torch-tpu is seen by the importing process.
type Mode string

const (
	// WithTorchTPU runs the environment as it is (torch_tpu installed, and
	// loaded by torch's backend autoload).
	WithTorchTPU Mode = "with-torch-tpu"
	// WithoutTorchTPU hides torch_tpu from the process (a meta_path wrapper
	// installed before anything is imported, torch's backend autoload off),
	// as on a host where it is not installed; the environment is untouched.
	WithoutTorchTPU Mode = "without-torch-tpu"
)

// Modes are both modes, in the order they run.
var Modes = []Mode{WithTorchTPU, WithoutTorchTPU}

// Statuses of one module in one process.
const (
	StatusOK         = "ok"
	StatusFailed     = "failed"
	StatusMissingDep = "missing-dependency"
	StatusTimeout    = "timeout"
	StatusCrashed    = "crashed"     // the process died while importing it
	StatusNotRun     = "not-checked" // never reached (total limit, no interpreter)
)

// Classes: a migrated module's result next to the original's.
const (
	ClassOK          = "ok"
	ClassOurs        = "ours"         // PIM001 / PIM002
	ClassMissingDep  = "missing-dep"  // PIM003
	ClassPreExisting = "pre-existing" // PIM004
	ClassNotChecked  = "not-checked"  // PIM005
)

// Options configure a check.
type Options struct {
	// Python is the interpreter (default $PALLASIFY_PYTHON, else python3).
	Python string
	// Sandbox runs the processes (nil: the default bubblewrap sandbox).
	Sandbox *sandbox.Sandbox
	// ModuleTimeout bounds one module's import (default 60s) and, times 5,
	// one tree's test collection.
	ModuleTimeout time.Duration
	// Timeout bounds the whole check (default 30 minutes).
	Timeout time.Duration
	// Modes to run (default Modes).
	Modes []Mode
}

// Pair is a tree to check and, optionally, the tree it was migrated from.
type Pair struct {
	Tree     string
	Original string // "": no comparison; every failure counts as the migration's
}

// Report is the check of one tree.
type Report struct {
	Tree     string    `json:"tree"`
	Original string    `json:"original,omitempty"`
	Modules  int       `json:"modules"`
	Tests    int       `json:"test_files"`
	Skipped  []Skip    `json:"skipped"`
	Modes    []ModeRun `json:"modes"`
	Findings []Finding `json:"findings"`
	Total    Counts    `json:"total"`
	Seconds  float64   `json:"seconds"`
	layout   *Layout   // the migrated tree's
	origLay  *Layout   // the original's (nil without one)
	byMode   map[Mode]*ModeRun
}

// ModeRun is one mode's results.
type ModeRun struct {
	Mode    Mode           `json:"mode"`
	Results []Result       `json:"modules"`
	Collect *CollectResult `json:"collect,omitempty"`
	Counts  Counts         `json:"counts"`
	// Notes are the process's own problems (a restart after a crash, the
	// interpreter's last words).
	Notes []string `json:"notes,omitempty"`
}

// Result is one module's import.
type Result struct {
	Module     string  `json:"module"`
	Path       string  `json:"path"`
	Status     string  `json:"status"`
	Class      string  `json:"class"`
	Type       string  `json:"type,omitempty"`
	Message    string  `json:"message,omitempty"`
	Site       string  `json:"site,omitempty"`
	Dependency string  `json:"dependency,omitempty"`
	Original   string  `json:"original,omitempty"` // the original's outcome where it was checked and differs
	Seconds    float64 `json:"seconds"`
}

// CollectResult is pytest's collection of one tree.
type CollectResult struct {
	Status string         `json:"status"` // ok, no-pytest, pytest-error, failed, crashed, not-checked
	Tests  int            `json:"tests"`
	Exit   *int           `json:"exit,omitempty"`
	Errors []CollectError `json:"errors"`
	Error  string         `json:"error,omitempty"`
}

// CollectError is one test file pytest could not collect.
type CollectError struct {
	Path       string `json:"path"`
	Status     string `json:"status"` // failed, missing-dependency
	Class      string `json:"class"`
	Type       string `json:"type,omitempty"`
	Message    string `json:"message,omitempty"`
	Site       string `json:"site,omitempty"`
	Dependency string `json:"dependency,omitempty"`
}

// Counts sum one mode's (or, in Report.Total, every mode's) results.
type Counts struct {
	Modules       int `json:"modules"`
	OK            int `json:"ok"`
	Failed        int `json:"failed"` // the migration's (PIM001)
	MissingDeps   int `json:"missing_deps"`
	PreExisting   int `json:"pre_existing"`
	NotChecked    int `json:"not_checked"`
	CollectErrors int `json:"collect_errors"` // the migration's (PIM002)
	CollectOther  int `json:"collect_other"`  // missing dependencies and pre-existing ones
	Tests         int `json:"tests"`
}

// Finding is one coded line of the report.
type Finding struct {
	Code    string `json:"code"`
	Mode    Mode   `json:"mode"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Failures is what the migration broke: modules that no longer import and
// test files that no longer collect, over every mode.
func (r *Report) Failures() int { return r.Total.Failed + r.Total.CollectErrors }

// Check checks one tree (against original when it is not "").
func Check(ctx context.Context, tree, original string, o Options) (*Report, error) {
	rs, err := CheckAll(ctx, o, Pair{Tree: tree, Original: original})
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// CheckAll checks several trees with one Python process per mode (torch
// imported once; each tree's modules leave sys.modules before the next
// tree), then the originals' modules that failed, again one process per
// mode.
func CheckAll(ctx context.Context, o Options, pairs ...Pair) ([]*Report, error) {
	o = defaults(o)
	deadline := time.Now().Add(o.Timeout)
	t0 := time.Now()
	var reps []*Report
	for _, p := range pairs {
		tree, err := filepath.Abs(p.Tree)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(tree); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("importcheck: %s: not a directory", p.Tree)
		}
		l, err := Discover(tree)
		if err != nil {
			return nil, fmt.Errorf("importcheck: %s: %w", p.Tree, err)
		}
		r := &Report{Tree: tree, Modules: len(l.Modules), Tests: len(l.Tests), Skipped: l.Skipped, layout: l,
			byMode: map[Mode]*ModeRun{}}
		if r.Skipped == nil {
			r.Skipped = []Skip{}
		}
		if p.Original != "" {
			orig, err := filepath.Abs(p.Original)
			if err != nil {
				return nil, err
			}
			if r.origLay, err = Discover(orig); err != nil {
				return nil, fmt.Errorf("importcheck: %s: %w", p.Original, err)
			}
			r.Original = orig
		}
		reps = append(reps, r)
	}
	for _, mode := range o.Modes {
		var jobs []job
		for i, r := range reps {
			jobs = append(jobs, job{ID: i, Tree: r.Tree, Roots: r.layout.Roots, Tops: r.layout.Tops,
				Modules: r.layout.Modules, Collect: len(r.layout.Tests) > 0})
		}
		res, notes, err := run(ctx, o, mode, jobs, deadline)
		if err != nil {
			return nil, err
		}
		for i, r := range reps {
			mr := &ModeRun{Mode: mode, Notes: notes}
			for _, m := range r.layout.Modules {
				mr.Results = append(mr.Results, res.module(i, m))
			}
			mr.Collect = res.collect(i, len(r.layout.Tests) > 0)
			r.Modes = append(r.Modes, *mr)
		}
	}
	for _, r := range reps {
		for k := range r.Modes {
			r.byMode[r.Modes[k].Mode] = &r.Modes[k]
		}
	}
	if err := compareOriginals(ctx, o, reps, deadline); err != nil {
		return nil, err
	}
	for _, r := range reps {
		r.finish()
		r.Seconds = time.Since(t0).Seconds()
	}
	return reps, nil
}

func defaults(o Options) Options {
	if o.Python == "" {
		o.Python = os.Getenv("PALLASIFY_PYTHON")
	}
	if o.Python == "" {
		if p, err := exec.LookPath("python3"); err == nil {
			o.Python = p
		}
	}
	if o.Sandbox == nil {
		o.Sandbox = &sandbox.Sandbox{}
	}
	if o.ModuleTimeout <= 0 {
		o.ModuleTimeout = time.Minute
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Minute
	}
	if len(o.Modes) == 0 {
		o.Modes = Modes
	}
	return o
}

// compareOriginals imports, in each original tree, the modules that did not
// import in the migrated one (and collects its tests where the migrated
// tree's collection reported errors), one process per mode, and classifies
// every result.
func compareOriginals(ctx context.Context, o Options, reps []*Report, deadline time.Time) error {
	for _, mode := range o.Modes {
		var jobs []job
		for i, r := range reps {
			mr := r.byMode[mode]
			if r.origLay == nil || mr == nil {
				continue
			}
			j := job{ID: i, Tree: r.Original, Roots: r.origLay.Roots, Tops: r.origLay.Tops}
			for _, res := range mr.Results {
				if res.Status == StatusOK || res.Status == StatusNotRun {
					continue
				}
				if i := slices.IndexFunc(r.origLay.Modules, func(m Module) bool { return m.Path == res.Path }); i >= 0 {
					j.Modules = append(j.Modules, r.origLay.Modules[i])
				}
			}
			j.Collect = mr.Collect != nil && (len(mr.Collect.Errors) > 0 || mr.Collect.Status != "ok" && mr.Collect.Status != "no-pytest")
			if len(j.Modules) > 0 || j.Collect {
				jobs = append(jobs, j)
			}
		}
		if len(jobs) == 0 {
			continue
		}
		res, _, err := run(ctx, o, mode, jobs, deadline)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			r := reps[j.ID]
			orig := map[string]Result{}
			for _, m := range j.Modules {
				orig[m.Path] = res.module(j.ID, m)
			}
			mr := r.byMode[mode]
			for k := range mr.Results {
				if or, ok := orig[mr.Results[k].Path]; ok {
					mr.Results[k].Original = outcome(or)
					mr.Results[k].Class = classify(mr.Results[k], &or)
				}
			}
			if j.Collect {
				oc := res.collect(j.ID, true)
				for k := range mr.Collect.Errors {
					e := &mr.Collect.Errors[k]
					i := slices.IndexFunc(oc.Errors, func(x CollectError) bool { return x.Path == e.Path })
					switch {
					case i >= 0 && e.Status == StatusMissingDep:
						e.Class = ClassMissingDep
					case i >= 0 && oc.Errors[i].Status != StatusMissingDep:
						e.Class = ClassPreExisting
					case e.Status == StatusMissingDep && oc.Status != "ok":
						e.Class = ClassMissingDep
					default:
						e.Class = ClassOurs
					}
				}
				if mr.Collect.Status != "ok" && mr.Collect.Status != "no-pytest" && mr.Collect.Status == oc.Status {
					mr.Collect.Error = strings.TrimSpace(mr.Collect.Error + " (the original's collection too: pre-existing)")
					mr.Collect.Status += "-pre-existing"
				}
			}
		}
	}
	return nil
}

// classify is a migrated module's class given the original's result (nil:
// none to compare with). A module that fails in the original too is
// pre-existing, whatever it raises there (a script doing CUDA work at import
// fails on a CPU host before and after), except where the original only
// lacked a dependency and the migrated module raises something else: that
// failure may hide behind the missing import, so it counts as ours.
func classify(m Result, orig *Result) string {
	switch m.Status {
	case StatusOK:
		return ClassOK
	case StatusNotRun:
		return ClassNotChecked
	case StatusMissingDep:
		if orig != nil && orig.Status == StatusOK {
			return ClassOurs // the migration added the import
		}
		return ClassMissingDep
	}
	if orig != nil && orig.Status != StatusOK && orig.Status != StatusNotRun && orig.Status != StatusMissingDep {
		return ClassPreExisting
	}
	return ClassOurs
}

func outcome(r Result) string {
	switch r.Status {
	case StatusOK:
		return "ok"
	case StatusMissingDep:
		return "missing dependency: " + r.Dependency
	}
	return strings.TrimSpace(r.Status + ": " + r.Type + ": " + r.Message)
}

// finish classifies what compareOriginals did not, counts, and writes the
// coded findings.
func (r *Report) finish() {
	r.Findings = []Finding{}
	for k := range r.Modes {
		mr := &r.Modes[k]
		c := Counts{Modules: len(mr.Results)}
		for i := range mr.Results {
			m := &mr.Results[i]
			if m.Class == "" {
				m.Class = classify(*m, nil)
			}
			switch m.Class {
			case ClassOK:
				c.OK++
			case ClassOurs:
				c.Failed++
				msg := fmt.Sprintf("%s: %s %s: %s", mr.Mode, m.Module, m.Status, strings.TrimSpace(m.Type+": "+m.Message))
				if m.Status == StatusMissingDep {
					msg = fmt.Sprintf("%s: %s needs %s, which the original did not import", mr.Mode, m.Module, m.Dependency)
				}
				r.finding(CodeImportFails, mr.Mode, m.Path, m.Site, msg, m.Original)
			case ClassMissingDep:
				c.MissingDeps++
				r.finding(CodeMissingDependency, mr.Mode, m.Path, "", fmt.Sprintf("%s: %s: missing dependency: %s", mr.Mode, m.Module, m.Dependency), "")
			case ClassPreExisting:
				c.PreExisting++
				r.finding(CodePreExisting, mr.Mode, m.Path, m.Site, fmt.Sprintf("%s: %s fails in the original too: %s: %s", mr.Mode, m.Module, m.Type, m.Message), m.Original)
			case ClassNotChecked:
				c.NotChecked++
				r.finding(CodeNotChecked, mr.Mode, m.Path, "", fmt.Sprintf("%s: %s was not checked: %s", mr.Mode, m.Module, m.Message), "")
			}
		}
		if col := mr.Collect; col != nil {
			c.Tests = col.Tests
			for i := range col.Errors {
				e := &col.Errors[i]
				if e.Class == "" {
					e.Class = ClassOurs
					if e.Status == StatusMissingDep {
						e.Class = ClassMissingDep
					}
				}
				msg := fmt.Sprintf("%s: collecting %s: %s", mr.Mode, e.Path, strings.TrimSpace(e.Type+": "+e.Message))
				switch e.Class {
				case ClassOurs:
					c.CollectErrors++
					r.finding(CodeCollectFails, mr.Mode, e.Path, e.Site, msg, "")
				case ClassMissingDep:
					c.CollectOther++
					r.finding(CodeMissingDependency, mr.Mode, e.Path, "", fmt.Sprintf("%s: collecting %s: missing dependency: %s", mr.Mode, e.Path, e.Dependency), "")
				default:
					c.CollectOther++
					r.finding(CodePreExisting, mr.Mode, e.Path, e.Site, msg+" (the original's too)", "")
				}
			}
			switch {
			case col.Status == "ok" || col.Status == "no-pytest" || strings.HasSuffix(col.Status, "-pre-existing"):
			case col.Status == StatusNotRun:
				r.finding(CodeNotChecked, mr.Mode, "", "", fmt.Sprintf("%s: the test collection was not run: %s", mr.Mode, col.Error), "")
			default:
				c.CollectErrors++
				r.finding(CodeCollectFails, mr.Mode, "", "", fmt.Sprintf("%s: the test collection %s: %s", mr.Mode, col.Status, col.Error), "")
			}
		}
		mr.Counts = c
		r.Total.add(c)
	}
}

func (r *Report) finding(code string, mode Mode, path, site, msg, orig string) {
	if site != "" {
		msg += " (raised at " + site + ")"
	}
	if orig != "" && orig != "ok" {
		msg += "; the original: " + orig
	}
	r.Findings = append(r.Findings, Finding{Code: code, Mode: mode, Path: path, Message: msg})
}

func (c *Counts) add(o Counts) {
	c.Modules += o.Modules
	c.OK += o.OK
	c.Failed += o.Failed
	c.MissingDeps += o.MissingDeps
	c.PreExisting += o.PreExisting
	c.NotChecked += o.NotChecked
	c.CollectErrors += o.CollectErrors
	c.CollectOther += o.CollectOther
	c.Tests += o.Tests
}

// Text renders the report for the CLI: the counts per mode, then one line
// per finding that is not informational.
func (r *Report) Text(verbose bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "import check of %s: %d module(s), %d test file(s)", r.Tree, r.Modules, r.Tests)
	if r.Original != "" {
		fmt.Fprintf(&b, ", compared with %s", r.Original)
	}
	b.WriteString("\n")
	for _, mr := range r.Modes {
		c := mr.Counts
		fmt.Fprintf(&b, "  %s: %d ok, %d failed (migration), %d missing dependencies, %d pre-existing, %d not checked; "+
			"%d test(s) collected, %d collection error(s) (migration), %d other\n",
			mr.Mode, c.OK, c.Failed, c.MissingDeps, c.PreExisting, c.NotChecked, c.Tests, c.CollectErrors, c.CollectOther)
		for _, n := range mr.Notes {
			fmt.Fprintf(&b, "    note: %s\n", n)
		}
	}
	for _, f := range r.Findings {
		if !verbose && (f.Code == CodeMissingDependency || f.Code == CodePreExisting) {
			continue
		}
		fmt.Fprintf(&b, "  %s: %s %s\n", orDash(f.Path), f.Code, f.Message)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// job is one tree of a driver process's input.
type job struct {
	ID      int      `json:"id"`
	Tree    string   `json:"tree"`
	Roots   []string `json:"roots"`
	Tops    []string `json:"tops"`
	Modules []Module `json:"modules"`
	Collect bool     `json:"collect"`
}

// record is one line the driver writes.
type record struct {
	Job        int            `json:"job"`
	Kind       string         `json:"kind"`
	Module     string         `json:"module"`
	Status     string         `json:"status"`
	Type       string         `json:"type"`
	Message    string         `json:"message"`
	Site       string         `json:"site"`
	Dependency string         `json:"dependency"`
	Seconds    float64        `json:"seconds"`
	Tests      int            `json:"tests"`
	Exit       *int           `json:"exit"`
	Errors     []CollectError `json:"errors"`
	Error      *record        `json:"error"`
}

// results are a run's records by job and module ("" for the collection).
type results map[int]map[string]record

func (rs results) put(rec record) {
	if rs[rec.Job] == nil {
		rs[rec.Job] = map[string]record{}
	}
	rs[rec.Job][rec.Module] = rec
}

func (rs results) module(jobID int, m Module) Result {
	rec, ok := rs[jobID][m.Name]
	if !ok {
		return Result{Module: m.Name, Path: m.Path, Status: StatusNotRun, Message: "never reached"}
	}
	return Result{Module: m.Name, Path: m.Path, Status: rec.Status, Type: rec.Type, Message: rec.Message,
		Site: rec.Site, Dependency: rec.Dependency, Seconds: rec.Seconds}
}

func (rs results) collect(jobID int, want bool) *CollectResult {
	if !want {
		return nil
	}
	rec, ok := rs[jobID][""]
	if !ok {
		return &CollectResult{Status: StatusNotRun, Errors: []CollectError{}, Error: "never reached"}
	}
	c := &CollectResult{Status: rec.Status, Tests: rec.Tests, Exit: rec.Exit, Errors: rec.Errors}
	if c.Errors == nil {
		c.Errors = []CollectError{}
	}
	if rec.Error != nil {
		c.Error = strings.TrimSpace(rec.Error.Type + ": " + rec.Error.Message)
		if rec.Error.Site != "" {
			c.Error += " (raised at " + rec.Error.Site + ")"
		}
	} else if rec.Message != "" {
		c.Error = rec.Message
	}
	if c.Status == "pytest-error" && c.Exit != nil {
		c.Error = fmt.Sprintf("pytest exited %d", *c.Exit)
	}
	return c
}

// maxRestarts bounds how often a run starts its process again after one
// died mid-import.
const maxRestarts = 10

// run imports jobs in one sandboxed process for mode; when the process dies
// mid-import, the module it was importing is recorded as crashed and a
// fresh process goes on with the rest (at most maxRestarts times).
func run(ctx context.Context, o Options, mode Mode, jobs []job, deadline time.Time) (results, []string, error) {
	res := results{}
	var notes []string
	work, err := sandbox.MkdirTemp("pallasify-imports-*")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(work)
	os.Chmod(work, 0o755)
	driver := filepath.Join(work, "_pallasify_importcheck.py")
	if err := os.WriteFile(driver, driverPy, 0o644); err != nil {
		return nil, nil, err
	}
	for attempt := 0; ; attempt++ {
		left := pending(jobs, res)
		if len(left) == 0 {
			return res, notes, nil
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		wall := time.Until(deadline)
		if wall <= time.Second || attempt > maxRestarts {
			why := "the check's total time limit"
			if attempt > maxRestarts {
				why = fmt.Sprintf("the process died %d times", attempt)
			}
			notes = append(notes, "stopped: "+why)
			markRest(res, left, why)
			return res, notes, nil
		}
		in := filepath.Join(work, fmt.Sprintf("in-%d.json", attempt))
		out := filepath.Join(work, fmt.Sprintf("results-%d.jsonl", attempt))
		spec := map[string]any{"jobs": left, "module_timeout": o.ModuleTimeout.Seconds(),
			"collect_timeout": 5 * o.ModuleTimeout.Seconds()}
		if mode == WithoutTorchTPU {
			spec["hide"] = []string{"torch_tpu"}
		}
		b, _ := json.Marshal(spec)
		if err := os.WriteFile(in, b, 0o644); err != nil {
			return nil, nil, err
		}
		stderr, runErr := runDriver(ctx, o, mode, jobs, work, wall, driver, in, out)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		recs, done := readRecords(out)
		var inFlight *record
		for i := range recs {
			switch recs[i].Kind {
			case "start":
				inFlight = &recs[i]
			case "module", "collect":
				if recs[i].Kind == "collect" {
					recs[i].Module = ""
				}
				res.put(recs[i])
				inFlight = nil
			}
		}
		if done {
			return res, notes, nil
		}
		why := lastLine(stderr)
		if runErr != nil {
			why = strings.TrimSuffix(strings.TrimSpace(runErr.Error()+": "+why), ":")
		}
		if inFlight == nil {
			if len(recs) == 0 {
				// The interpreter did not start: nothing will.
				notes = append(notes, "the Python process did not start: "+why)
				markRest(res, left, "the Python process did not start: "+why)
				return res, notes, nil
			}
			continue
		}
		status := StatusCrashed
		if time.Until(deadline) <= time.Second {
			status = StatusNotRun
		}
		res.put(record{Job: inFlight.Job, Kind: "module", Module: inFlight.Module, Status: status, Type: "ProcessDied", Message: why})
		notes = append(notes, fmt.Sprintf("the process died importing %q (%s); restarted", inFlight.Module, why))
	}
}

// runDriver runs the driver once in the sandbox and returns its stderr's
// tail.
func runDriver(ctx context.Context, o Options, mode Mode, jobs []job, work string, wall time.Duration, driver, in, out string) (string, error) {
	sb := &sandbox.Sandbox{Disabled: o.Sandbox.Disabled, Bwrap: o.Sandbox.Bwrap, Env: env(o.Python, mode),
		ReadOnly: slices.Clone(o.Sandbox.ReadOnly)}
	for _, j := range jobs {
		sb.ReadOnly = append(sb.ReadOnly, j.Tree)
	}
	if filepath.IsAbs(o.Python) {
		sb.ReadOnly = append(sb.ReadOnly, filepath.Dir(filepath.Dir(o.Python)))
		if real, err := filepath.EvalSymlinks(o.Python); err == nil {
			sb.ReadOnly = append(sb.ReadOnly, filepath.Dir(filepath.Dir(real)))
		}
	}
	cmd, cancel, err := sb.Command(ctx, work, sandbox.Limits{Wall: wall, FileMB: 256}, o.Python, "-s", driver, in, out)
	if err != nil {
		return "", fmt.Errorf("importcheck: %w", err)
	}
	defer cancel()
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err = cmd.Run()
	if why := sb.Violation(cmd); why != "" {
		return stderr.String(), errors.New("sandboxed process stopped: " + why)
	}
	if err != nil && cmd.ProcessState == nil {
		return stderr.String(), fmt.Errorf("importcheck: run %s: %w", o.Python, err)
	}
	if err != nil {
		return stderr.String(), fmt.Errorf("%s", cmd.ProcessState)
	}
	return stderr.String(), nil
}

// env is the importing process's environment: the CPU only, the
// interpreter first on PATH; without torch-tpu, torch's backend autoload
// off (on a host without torch-tpu there is nothing to autoload).
func env(python string, mode Mode) []string {
	path := "/usr/local/bin:/usr/bin:/bin"
	if python != "" {
		path = filepath.Dir(python) + ":" + path
	}
	e := []string{"PATH=" + path, "LANG=C.UTF-8", "PYTHONHASHSEED=0", "PYTHONDONTWRITEBYTECODE=1",
		"CUDA_VISIBLE_DEVICES=", "JAX_PLATFORMS=cpu", "OMP_NUM_THREADS=1", "TPU_SKIP_MDS_QUERY=1",
		"TPU_WORKER_HOSTNAMES=localhost", "ALLOW_MULTIPLE_LIBTPU_LOAD=1", "MPLBACKEND=Agg"}
	if mode == WithoutTorchTPU {
		e = append(e, "TORCH_DEVICE_BACKEND_AUTOLOAD=0")
	}
	return e
}

// pending is what of jobs has no result yet.
func pending(jobs []job, res results) []job {
	var out []job
	for _, j := range jobs {
		k := j
		k.Modules = nil
		for _, m := range j.Modules {
			if _, ok := res[j.ID][m.Name]; !ok {
				k.Modules = append(k.Modules, m)
			}
		}
		if _, ok := res[j.ID][""]; ok || !j.Collect {
			k.Collect = false
		}
		if len(k.Modules) > 0 || k.Collect {
			out = append(out, k)
		}
	}
	return out
}

func markRest(res results, left []job, why string) {
	for _, j := range left {
		for _, m := range j.Modules {
			res.put(record{Job: j.ID, Kind: "module", Module: m.Name, Status: StatusNotRun, Message: why})
		}
		if j.Collect {
			res.put(record{Job: j.ID, Kind: "collect", Module: "", Status: StatusNotRun, Message: why})
		}
	}
}

// readRecords reads the driver's results and whether it finished.
func readRecords(path string) ([]record, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var recs []record
	done := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 16<<20)
	for sc.Scan() {
		var r record
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue // a line cut by the process's death
		}
		if r.Kind == "done" {
			done = true
			continue
		}
		recs = append(recs, r)
	}
	return recs, done
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// tailBuffer keeps the last 64 KiB written to it.
type tailBuffer struct{ b bytes.Buffer }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b.Write(p)
	if t.b.Len() > 128<<10 {
		keep := append([]byte(nil), t.b.Bytes()[t.b.Len()-64<<10:]...)
		t.b.Reset()
		t.b.Write(keep)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return t.b.String() }
