// Command pallasify-corpus measures the kernel stages on real code: it runs
// `pallasify analyze` and `pallasify migrate` (dry run, kernels on) over every
// folder of the corpus (../shared/corpus: subsets of public repositories) and
// prints, per folder and in total, how many kernels were found, built for the
// CPU, captured, where their specs came from, emulated, drafted, proven,
// compiled for TPU and wired, with the top blocking reasons. CUDA and Triton
// kernels have their own rows.
//
// With -tpuhost it then runs the TPU-host part (tpuhost.go): for timm, litgpt
// and dinov2, a named subset of their own tests and a tiny step script run
// before migration on the CPU and after it on the simulated TPU host, through
// `pallasify verify --tpu`, for each target; -tpuhost-only skips the kernel
// part. With -audit it also runs the maintainer audit (audit.go) of the same
// repositories for each target; -audit-only runs only that.
//
// It is a benchmark, not a test: a missing corpus is reported and nothing
// else happens. Each folder is copied to a temporary directory first, so the
// corpus is never written.
//
// Each part's tables are also written to a file of -latest-dir (default
// .bench), which the next run of that part replaces: corpus-latest.md (the
// kernel stages), corpus-tpuhost-latest.md and corpus-audit-latest.md.
//
//	go run ./cmd/pallasify-corpus [-bin bin/pallasify] [-corpus ../shared/corpus] [-j 2] [-json FILE] [-tpuhost | -tpuhost-only] [-audit | -audit-only] [-latest-dir DIR]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options are the command's flags.
type Options struct {
	Bin      string
	Corpus   string
	Target   string
	Parallel int
	JSON     string
	Only     []string // folder names; all when empty
	Timeout  time.Duration
	Out      io.Writer
	Err      io.Writer
	Latest   string // folder each part's tables are also written to ("": none)

	// The TPU-host part.
	TPUHost     bool     // run it after the kernel part
	TPUHostOnly bool     // run only it
	Audit       bool     // run the maintainer audit (audit.go)
	AuditOnly   bool     // run only the audit
	HostVenv    string   // the benchmark venv (absolute)
	HostBase    string   // the python whose site-packages it sees (absolute)
	HostTargets []string // migrate targets
}

// HostPython is the benchmark venv's interpreter.
func (o Options) HostPython() string { return filepath.Join(o.HostVenv, "bin", "python") }

func main() {
	o := Options{Out: os.Stdout, Err: os.Stderr}
	flag.StringVar(&o.Bin, "bin", "bin/pallasify", "the pallasify binary")
	flag.StringVar(&o.Corpus, "corpus", "../shared/corpus", "the corpus: one folder per repository subset")
	flag.StringVar(&o.Target, "target", "tpu", "migrate --target")
	flag.IntVar(&o.Parallel, "j", 2, "folders run at once")
	flag.StringVar(&o.JSON, "json", "", "also write the aggregate (every kernel's facts) as JSON to FILE")
	flag.StringVar(&o.Latest, "latest-dir", ".bench", "also write each part's tables to corpus-latest.md, corpus-tpuhost-latest.md, corpus-audit-latest.md here (empty: no files)")
	only := flag.String("only", "", "comma-separated folder names (default: every folder)")
	flag.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "limit for one folder's analyze or migrate run (and one TPU-host verify)")
	flag.BoolVar(&o.TPUHost, "tpuhost", false, "also run the TPU-host part: timm, litgpt, dinov2 tests before migration on the CPU, after on the simulated TPU host")
	flag.BoolVar(&o.TPUHostOnly, "tpuhost-only", false, "run only the TPU-host part")
	flag.BoolVar(&o.Audit, "audit", false, "also run the maintainer audit of timm, litgpt, dinov2 (files, hunks, fixed, flagged, silent sites) for each target")
	flag.BoolVar(&o.AuditOnly, "audit-only", false, "run only the maintainer audit")
	flag.StringVar(&o.HostVenv, "tpuhost-venv", ".bench/tpuhost-venv", "the TPU-host part's benchmark venv (created when missing or stale)")
	base := os.Getenv("PALLASIFY_PYTHON")
	if base == "" {
		base = ".venv/bin/python"
	}
	flag.StringVar(&o.HostBase, "tpuhost-base", base, "the python (of the project's venv) whose torch, torch_tpu and jax the benchmark venv sees")
	targets := flag.String("tpuhost-targets", "portable,tpu", "comma-separated migrate targets of the TPU-host part")
	flag.Parse()
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	o.HostTargets = strings.Split(*targets, ",")
	for _, p := range []*string{&o.HostVenv, &o.HostBase} {
		if abs, err := filepath.Abs(*p); err == nil {
			*p = abs
		}
	}
	if err := corpusRun(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "pallasify-corpus:", err)
		os.Exit(2)
	}
}

// corpusRun runs every folder with bounded parallelism and prints the tables.
func corpusRun(ctx context.Context, o Options) error {
	folders, err := listFolders(o.Corpus, o.Only)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(o.Out, "pallasify-corpus: no corpus at %s; nothing to measure\n", o.Corpus)
		return nil
	}
	if err != nil {
		return err
	}
	bin, err := filepath.Abs(o.Bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("binary: %w (run make build)", err)
	}
	agg := &Aggregate{Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), Corpus: o.Corpus, Binary: o.Bin,
		Target: o.Target, Parallel: max(1, o.Parallel)}
	var latestErrs []error
	if !o.TPUHostOnly && !o.AuditOnly {
		agg.Folders = make([]Folder, len(folders))
		kernelRun(ctx, o, bin, folders, agg)
		latestErrs = append(latestErrs, tee(o, agg, latestKernels, func(w io.Writer) { writeAggregate(w, agg) }))
	}
	if o.TPUHost || o.TPUHostOnly {
		agg.TPUHost = hostRun(ctx, o, bin)
		latestErrs = append(latestErrs, tee(o, agg, latestHost, func(w io.Writer) { writeHost(w, agg.TPUHost) }))
	}
	if o.Audit || o.AuditOnly {
		agg.Audit = auditRun(ctx, o, bin)
		joinHostRuns(agg.Audit, agg.TPUHost)
		latestErrs = append(latestErrs, tee(o, agg, latestAudit, func(w io.Writer) { writeAudit(w, agg.Audit) }))
	}
	if err := errors.Join(latestErrs...); err != nil {
		return err
	}
	if o.JSON != "" {
		b, err := jsonAggregate(agg)
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.JSON, b, 0o644); err != nil {
			return fmt.Errorf("write -json: %w", err)
		}
	}
	failed := 0
	for _, f := range agg.Folders {
		if len(f.Errors) > 0 {
			failed++
		}
	}
	if h := agg.TPUHost; h != nil {
		if h.Venv.Error != "" {
			failed++
		}
		for _, r := range h.Runs {
			if r.Error != "" {
				failed++
			}
		}
	}
	if a := agg.Audit; a != nil {
		for _, r := range a.Rows {
			if r.Error != "" {
				failed++
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d folder(s), TPU-host run(s) or audit row(s) had errors (see the tables)", failed)
	}
	return nil
}

// kernelRun runs every folder's analyze and migrate with bounded parallelism.
func kernelRun(ctx context.Context, o Options, bin string, folders []string, agg *Aggregate) {
	t0 := time.Now()
	sem := make(chan struct{}, agg.Parallel)
	var wg sync.WaitGroup
	for i, name := range folders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fmt.Fprintf(o.Err, "corpus: %s …\n", name)
			agg.Folders[i] = runFolder(ctx, o, bin, name)
			f := &agg.Folders[i]
			fmt.Fprintf(o.Err, "corpus: %s done: %d kernels, analyze %.1f s, migrate %.1f s\n", name, len(f.Kernels), f.AnalyzeS, f.MigrateS)
		}()
	}
	wg.Wait()
	agg.WallS = time.Since(t0).Seconds()
	summarizeTotal(agg)
}

// listFolders returns the corpus's folders (sorted), or only those named.
func listFolders(corpus string, only []string) ([]string, error) {
	ents, err := os.ReadDir(corpus)
	if err != nil {
		return nil, err
	}
	var out []string
	have := map[string]bool{}
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
			have[e.Name()] = true
		}
	}
	if len(only) > 0 {
		for _, n := range only {
			if !have[n] {
				return nil, fmt.Errorf("no folder %q in %s", n, corpus)
			}
		}
		out = only
	}
	sort.Strings(out)
	return out, nil
}

// runFolder copies one folder to a temporary directory and runs analyze and
// migrate on the copy.
func runFolder(ctx context.Context, o Options, bin, name string) Folder {
	tmp, err := os.MkdirTemp("", "pallasify-corpus-")
	if err != nil {
		return Folder{Name: name, Errors: []string{err.Error()}}
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, name)
	if err := os.CopyFS(tree, os.DirFS(filepath.Join(o.Corpus, name))); err != nil {
		return Folder{Name: name, Errors: []string{"copy: " + err.Error()}}
	}
	var errs []string
	analyze, as, err := runJSON(ctx, o.Timeout, bin, "analyze", "--capture", "--format", "json", tree)
	if err != nil {
		errs = append(errs, "analyze: "+err.Error())
	}
	migrate, ms, err := runJSON(ctx, o.Timeout, bin, "migrate", "--capture", "--format", "json", "--color", "never", "--kernels",
		"--no-llm", "--target", o.Target, tree)
	if err != nil {
		errs = append(errs, "migrate: "+err.Error())
	}
	f := folderFromReports(name, analyze, migrate)
	f.AnalyzeS, f.MigrateS = as, ms
	f.Errors = append(errs, f.Errors...)
	return f
}

// runJSON runs the binary and returns its stdout and wall seconds; stdout is
// nil when it failed.
func runJSON(ctx context.Context, timeout time.Duration, bin string, args ...string) ([]byte, float64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	secs := time.Since(t0).Seconds()
	if err != nil {
		return nil, secs, fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), args[0], err, tail(stderr.String(), 400))
	}
	return stdout.Bytes(), secs, nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
