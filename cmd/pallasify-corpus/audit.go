package main

// The maintainer audit (-audit): for each whole repository of the corpus
// (timm, litgpt, dinov2) and each target, what a maintainer reviewing the
// pull request would count: files changed, hunks, sites fixed and flagged,
// sites left silent (a CUDA site in the migrated tree with no finding on its
// line: goal 0; a line the migration wrote is ours, judged by review and
// tests, not counted), what a second pass would still change (goal 0), and, when
// the TPU-host part ran, the CUDA-only calls it reached (goal 0).
//
// A CUDA site is found by audit/scan.py, which parses (never imports) the
// migrated tree's Python files; the findings on the migrated tree are a
// second `pallasify migrate` (dry run) over it, so a site counts as flagged
// exactly when the tool a user runs says something on its line.

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

//go:embed audit/scan.py
var scanScript []byte

// AuditReport is the audit part of the aggregate.
type AuditReport struct {
	Rows  []AuditRow `json:"rows"`
	WallS float64    `json:"wall_s"`
}

// AuditRow is one repository and target.
type AuditRow struct {
	Repo         string       `json:"repo"`
	Target       string       `json:"target"`
	Files        int          `json:"files"`
	FilesChanged int          `json:"files_changed"`
	Hunks        int          `json:"hunks"`
	Fixed        int          `json:"sites_fixed"`
	Flagged      int          `json:"sites_flagged"`
	CUDASites    int          `json:"cuda_sites_after"`  // CUDA sites in the migrated tree
	Silent       []AuditSite  `json:"silent"`            // of those, the ones with no finding on their line
	SecondPass   int          `json:"second_pass_files"` // files a second pass would change
	Unparsed     []string     `json:"unparsed,omitempty"`
	ImportFails  *int         `json:"import_failures,omitempty"` // nil: not measured
	Imports      *ImportTotal `json:"imports,omitempty"`         // verify --imports' totals over both modes
	CUDAOnly     *int         `json:"cuda_only_calls,omitempty"` // nil: the TPU-host part did not run
	Seconds      float64      `json:"seconds"`
	Error        string       `json:"error,omitempty"`
}

// ImportTotal is the part of `pallasify verify --imports --format json`
// the audit keeps: its totals over both modes (with torch-tpu and without).
type ImportTotal struct {
	Modules       int `json:"modules"`
	OK            int `json:"ok"`
	Failed        int `json:"failed"`
	MissingDeps   int `json:"missing_deps"`
	PreExisting   int `json:"pre_existing"`
	NotChecked    int `json:"not_checked"`
	CollectErrors int `json:"collect_errors"`
	Tests         int `json:"tests"`
}

// AuditSite is one CUDA site of the migrated tree.
type AuditSite struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Blocks []int  `json:"blocks,omitempty"` // header lines of the statements around it
}

// blockCodes are the codes whose finding on a block's header speaks for
// every line of the block: a guard or a test kept CUDA-only as a whole.
var blockCodes = map[string]bool{"PCU012": true, "PCU013": true}

// migrateReport is the part of migrate's JSON report the audit reads.
type migrateReport struct {
	Files        int `json:"files"`
	FilesChanged int `json:"files_changed"`
	Findings     []struct {
		Code    string `json:"code"`
		Path    string `json:"path"`
		Line    int    `json:"line"`
		Applied bool   `json:"applied"`
	} `json:"findings"`
}

// auditRun audits every whole repository of the corpus for every target.
func auditRun(ctx context.Context, o Options, bin string) *AuditReport {
	t0 := time.Now()
	rep := &AuditReport{}
	for _, s := range hostSuites {
		if _, err := os.Stat(filepath.Join(o.Corpus, s.Repo)); err != nil {
			continue
		}
		for _, target := range o.HostTargets {
			fmt.Fprintf(o.Err, "audit: %s --target %s …\n", s.Repo, target)
			r := auditOne(ctx, o, bin, s.Repo, target)
			fmt.Fprintf(o.Err, "audit: %s --target %s: %d silent, %.1f s\n", s.Repo, target, len(r.Silent), r.Seconds)
			rep.Rows = append(rep.Rows, r)
		}
	}
	rep.WallS = time.Since(t0).Seconds()
	return rep
}

func auditOne(ctx context.Context, o Options, bin, repo, target string) (r AuditRow) {
	t0 := time.Now()
	r = AuditRow{Repo: repo, Target: target}
	defer func() { r.Seconds = time.Since(t0).Seconds() }()
	fail := func(err error) AuditRow { r.Error = err.Error(); return r }
	tmp, err := os.MkdirTemp("", "pallasify-audit-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	src, out, patch := filepath.Join(tmp, repo), filepath.Join(tmp, repo+"-"+target), filepath.Join(tmp, "patch.diff")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(o.Corpus, repo))); err != nil {
		return fail(fmt.Errorf("copy: %w", err))
	}
	first, _, err := runJSON(ctx, o.Timeout, bin, "migrate", "--format", "json", "--color", "never", "--no-llm",
		"--target", target, "--out", out, "--patch", patch, src)
	if err != nil {
		return fail(err)
	}
	var m1 migrateReport
	if err := json.Unmarshal(first, &m1); err != nil {
		return fail(fmt.Errorf("migrate JSON: %w", err))
	}
	r.Files, r.FilesChanged = m1.Files, m1.FilesChanged
	for _, f := range m1.Findings {
		if f.Applied {
			r.Fixed++
		} else {
			r.Flagged++
		}
	}
	p, err := os.ReadFile(patch)
	if err != nil {
		return fail(fmt.Errorf("patch: %w", err))
	}
	r.Hunks = countHunks(p)
	ours := addedLines(p)
	second, _, err := runJSON(ctx, o.Timeout, bin, "migrate", "--format", "json", "--color", "never", "--no-llm",
		"--target", target, out)
	if err != nil {
		return fail(fmt.Errorf("second pass: %w", err))
	}
	var m2 migrateReport
	if err := json.Unmarshal(second, &m2); err != nil {
		return fail(fmt.Errorf("second-pass JSON: %w", err))
	}
	covered, blocks := map[string]bool{}, map[string]bool{}
	for _, f := range m2.Findings {
		covered[noteKey(f.Path, f.Line)] = true
		if blockCodes[f.Code] {
			blocks[noteKey(f.Path, f.Line)] = true
		}
	}
	r.SecondPass = m2.FilesChanged
	sites, unparsed, err := scanCUDASites(ctx, o, out)
	if err != nil {
		return fail(err)
	}
	r.CUDASites, r.Unparsed = len(sites), unparsed
	for k := range ours {
		covered[k] = true
	}
	r.Silent = silentSites(sites, covered, blocks)
	if err := auditImports(ctx, o, bin, src, out, &r); err != nil {
		return fail(err)
	}
	return r
}

// auditImports runs `pallasify verify --imports` on the migrated tree
// against the original, with the benchmark venv's python when it exists
// (it has the repositories' dependencies), else the project's.
func auditImports(ctx context.Context, o Options, bin, src, out string, r *AuditRow) error {
	py := o.HostBase
	if _, err := os.Stat(o.HostPython()); err == nil {
		py = o.HostPython()
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "verify", "--imports", "--format", "json", "--python", py, "--against", out, src)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// verify exits 1 when something no longer imports; its JSON says what.
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			return fmt.Errorf("verify --imports: %w: %s", err, tail(stderr.String(), 400))
		}
	}
	data := stdout.Bytes()
	var v struct {
		Failures int          `json:"failures"`
		Total    *ImportTotal `json:"total"`
	}
	if err := json.Unmarshal(data, &v); err != nil || v.Total == nil {
		return fmt.Errorf("verify --imports JSON: %v", err)
	}
	r.ImportFails, r.Imports = &v.Failures, v.Total
	return nil
}

// countHunks counts a unified diff's hunks.
func countHunks(patch []byte) int {
	n := 0
	for line := range bytes.Lines(patch) {
		if bytes.HasPrefix(line, []byte("@@ ")) {
			n++
		}
	}
	return n
}

// addedLines are the lines of the new side a unified diff adds, as
// noteKey(path, line): the lines the migration wrote.
func addedLines(patch []byte) map[string]bool {
	out := map[string]bool{}
	path, line := "", 0
	for raw := range bytes.Lines(patch) {
		l := strings.TrimRight(string(raw), "\n")
		switch {
		case strings.HasPrefix(l, "+++ "):
			path = strings.TrimPrefix(strings.TrimPrefix(l, "+++ "), "b/")
		case strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "diff "):
		case strings.HasPrefix(l, "@@ "):
			// @@ -a,b +c,d @@
			f := strings.Fields(l)
			if len(f) >= 3 {
				start, _, _ := strings.Cut(strings.TrimPrefix(f[2], "+"), ",")
				fmt.Sscan(start, &line)
			}
		case strings.HasPrefix(l, "+"):
			out[noteKey(path, line)] = true
			line++
		case strings.HasPrefix(l, "-"), strings.HasPrefix(l, "\\"):
		default:
			line++
		}
	}
	return out
}

// silentSites keeps the sites with no finding on their line and none of
// blockCodes on the header of a block around them, one per line.
func silentSites(sites []AuditSite, covered, blocks map[string]bool) []AuditSite {
	var out []AuditSite
	seen := map[string]bool{}
	for _, s := range sites {
		k := noteKey(s.Path, s.Line)
		if covered[k] || seen[k] || slices.ContainsFunc(s.Blocks, func(l int) bool { return blocks[noteKey(s.Path, l)] }) {
			continue
		}
		seen[k] = true
		out = append(out, s)
	}
	return out
}

// scanCUDASites runs audit/scan.py over a migrated tree with the host python.
func scanCUDASites(ctx context.Context, o Options, tree string) ([]AuditSite, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.HostBase, "-I", "-c", string(scanScript), tree)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("scan: %w: %s", err, tail(stderr.String(), 400))
	}
	var res struct {
		Sites    []AuditSite `json:"sites"`
		Unparsed []struct {
			Path  string `json:"path"`
			Error string `json:"error"`
		} `json:"unparsed"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return nil, nil, fmt.Errorf("scan JSON: %w", err)
	}
	var unparsed []string
	for _, u := range res.Unparsed {
		unparsed = append(unparsed, u.Path+": "+u.Error)
	}
	return res.Sites, unparsed, nil
}

// joinHostRuns copies the TPU-host part's CUDA-only call counts into the
// audit rows of the same repository and target.
func joinHostRuns(a *AuditReport, h *HostReport) {
	if a == nil || h == nil {
		return
	}
	for i := range a.Rows {
		for _, run := range h.Runs {
			if run.Repo == a.Rows[i].Repo && run.Target == a.Rows[i].Target && run.TPU != nil {
				n := 0
				for _, c := range run.TPU.CUDAOnly {
					n += max(1, c.Count)
				}
				a.Rows[i].CUDAOnly = &n
			}
		}
	}
}

// writeAudit prints the audit table and each row's silent sites (up to
// silentShown of them; all are in the -json file).
func writeAudit(w io.Writer, a *AuditReport) {
	const silentShown = 15
	fmt.Fprintf(w, "\nMaintainer audit (%.0f s): per repository and target; silent = a CUDA site in the output with no finding on its line\n\n", a.WallS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REPO\tTARGET\tFILES CHANGED\tHUNKS\tFIXED\tFLAGGED\tCUDA SITES AFTER\tSILENT\t2ND PASS\tIMPORT FAILS\tCUDA-ONLY CALLS")
	for _, r := range a.Rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\terror: %s\n", r.Repo, r.Target, r.Error)
			continue
		}
		imports := optInt(r.ImportFails)
		if t := r.Imports; t != nil {
			imports = fmt.Sprintf("%d (%d of %d ok, %d missing deps, %d pre-existing)", *r.ImportFails, t.OK, t.Modules,
				t.MissingDeps, t.PreExisting)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d of %d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", r.Repo, r.Target, r.FilesChanged, r.Files, r.Hunks,
			r.Fixed, r.Flagged, r.CUDASites, len(r.Silent), r.SecondPass, imports, optInt(r.CUDAOnly))
	}
	tw.Flush()
	for _, r := range a.Rows {
		if len(r.Silent) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s --target %s: %d silent site(s)\n", r.Repo, r.Target, len(r.Silent))
		kinds := map[string]int{}
		for _, s := range r.Silent {
			kinds[s.Kind]++
		}
		var ks []string
		for k := range kinds {
			ks = append(ks, k)
		}
		sort.Slice(ks, func(i, j int) bool {
			return kinds[ks[i]] > kinds[ks[j]] || kinds[ks[i]] == kinds[ks[j]] && ks[i] < ks[j]
		})
		var parts []string
		for _, k := range ks {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, kinds[k]))
		}
		fmt.Fprintf(w, "  by kind: %s\n", strings.Join(parts, ", "))
		for i, s := range r.Silent {
			if i == silentShown {
				fmt.Fprintf(w, "  … %d more in the -json file\n", len(r.Silent)-silentShown)
				break
			}
			fmt.Fprintf(w, "  %s:%d  %s  | %s\n", s.Path, s.Line, s.Kind, s.Text)
		}
	}
}

func optInt(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
