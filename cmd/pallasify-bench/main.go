// Command pallasify-bench measures pallasify on a generated tree of about a
// million lines of Python shaped like real repositories (about one file in
// ten uses CUDA idioms): lines/s and peak RSS of `pallasify analyze` and
// `pallasify migrate`, each run as a child process, beside `grep -rc cuda`
// (and `rg -c cuda` when installed) on the same tree in the same run, plus
// full-parse throughput on a tree where every file needs rewriting.
//
// Targets: migrate within 3x of the grep floor; peak RSS under 200 MB.
//
// First, the real-code case (realtree.go): the sources of the pinned
// transformers and diffusers wheels, downloaded once into .bench/, where
// analyze and migrate --kernels=false run alternating with ruff (the venv's)
// and grep; targets: wall <= ruff's, CPU/wall >= 1.8, peak RSS <= 200 MB.
//
// Last, per fixture and pattern kernel the rules draft: draft and validate
// times, and a table of the v6e bytes accessed against the minimum and the
// layout minimum, naming the drafts above 1.25x (traffic.go); -drafts runs
// only that part, -only a,b only those fixture and pattern kernels.
//
// What it prints is also written, with the date, commit and arguments of the
// run, to DIR/bench-latest.md (DIR/bench-real-latest.md under -real-only,
// DIR/bench-drafts-latest.md under -drafts; -latest FILE names another).
//
//	go run ./cmd/pallasify-bench [-bin bin/pallasify] [-dir .bench] [-lines 1000000] [-real-only] [-wheels DIR] [-drafts [-only a,b]] [-latest FILE]
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
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// row is one line of the results table.
type row struct {
	Name  string
	Wall  time.Duration // best of the runs
	Lines int           // lines processed (0: not a line-throughput row)
	RSS   int64         // peak RSS in bytes (0: not measured)
	CPU   time.Duration // user+system CPU of the best run (shows contention on a shared machine)
	Note  string
}

// env is what every bench case gets.
type env struct {
	bin       string
	tree      string // the ~1M-line tree
	treeStats treeStats
	full      string // the every-file-rewritten tree
	fullStats treeStats
	runs      int
	traffic   []traffic       // bytes accessed per fixture draft (draftValidate)
	only      map[string]bool // -only: the fixture and pattern kernels measured (nil: all)
}

// wanted reports whether the fixture or pattern kernel named name is
// measured under -only.
func (e *env) wanted(name string) bool { return e.only == nil || e.only[name] }

// onlySet parses -only (comma-separated kernel names); nil when empty.
func onlySet(s string) map[string]bool {
	var set map[string]bool
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			if set == nil {
				set = map[string]bool{}
			}
			set[n] = true
		}
	}
	return set
}

// benchCase produces rows; add new measurements to cases in run.
type benchCase func(ctx context.Context, e *env) ([]row, error)

func main() {
	bin := flag.String("bin", "bin/pallasify", "the pallasify binary (built with go build when missing)")
	dir := flag.String("dir", ".bench", "where the generated trees live")
	lines := flag.Int("lines", 1_000_000, "lines of Python in the main tree")
	fullLines := flag.Int("full-lines", 200_000, "lines in the tree where every file needs rewriting")
	runs := flag.Int("runs", 3, "runs per measurement (the best is reported)")
	genOnly := flag.Bool("gen-only", false, "only generate the trees")
	real := flag.Bool("real", true, "also measure the real-code tree (transformers + diffusers sources) beside ruff")
	realOnly := flag.Bool("real-only", false, "measure only the real-code tree")
	ruff := flag.String("ruff", ".venv/bin/ruff", "the ruff to compare with on the real tree")
	python := flag.String("python", ".venv/bin/python", "the Python whose pip downloads the real tree's wheels")
	wheels := flag.String("wheels", "", "a folder already holding the real tree's wheels (else pip downloads them)")
	drafts := flag.Bool("drafts", false, "only draft and validate the fixture kernels and print bytes accessed per draft")
	only := flag.String("only", "", "with -drafts: the fixture and pattern kernels to measure, comma-separated (gelu,gather_points)")
	latest := flag.String("latest", "", "also write what is printed to FILE (default DIR/bench-latest.md, bench-real-latest.md, bench-drafts-latest.md)")
	flag.Parse()
	ctx := context.Background()
	if *latest == "" {
		*latest = filepath.Join(*dir, latestName(*drafts, *realOnly))
	}
	// out is stdout, kept for the -latest file once the run succeeds.
	var printed bytes.Buffer
	out := io.MultiWriter(os.Stdout, &printed)
	save := func() {
		if err := writeLatest(*latest, time.Now(), os.Args[1:], printed.Bytes()); err != nil {
			fmt.Fprintln(os.Stderr, "pallasify-bench:", err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "pallasify-bench: tables written to %s\n", *latest)
	}
	if *drafts {
		if err := draftsOnly(ctx, out, onlySet(*only)); err != nil {
			fmt.Fprintln(os.Stderr, "pallasify-bench:", err)
			os.Exit(2)
		}
		save()
		return
	}
	if *genOnly {
		if _, err := generate(filepath.Join(*dir, "tree"), *lines, 10, 1); err != nil {
			fmt.Fprintln(os.Stderr, "pallasify-bench:", err)
			os.Exit(2)
		}
		if _, err := generate(filepath.Join(*dir, "allcuda"), *fullLines, 1, 2); err != nil {
			fmt.Fprintln(os.Stderr, "pallasify-bench:", err)
			os.Exit(2)
		}
		return
	}
	if *real || *realOnly {
		if err := buildBin(ctx, bin, *dir); err != nil {
			fmt.Fprintln(os.Stderr, "pallasify-bench:", err)
			os.Exit(2)
		}
		tree, err := realTree(ctx, *dir, *python, *wheels)
		if err == nil {
			err = realTreeCase(ctx, out, *bin, *ruff, tree, *runs)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "pallasify-bench:", err)
			os.Exit(2)
		}
		if *realOnly {
			save()
			return
		}
	}
	if err := run(ctx, out, *bin, *dir, *lines, *fullLines, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "pallasify-bench:", err)
		os.Exit(2)
	}
	save()
}

// buildBin builds pallasify into dir when *bin does not exist, and points
// *bin at it.
func buildBin(ctx context.Context, bin *string, dir string) error {
	if _, err := os.Stat(*bin); err == nil {
		return nil
	}
	*bin = filepath.Join(dir, "pallasify")
	fmt.Fprintf(os.Stderr, "building %s\n", *bin)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", *bin, "./cmd/pallasify")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build pallasify: %w", err)
	}
	return nil
}

func run(ctx context.Context, w io.Writer, bin, dir string, lines, fullLines, runs int) error {
	if err := buildBin(ctx, &bin, dir); err != nil {
		return err
	}
	e := &env{bin: bin, tree: filepath.Join(dir, "tree"), full: filepath.Join(dir, "allcuda"), runs: runs}
	var err error
	t0 := time.Now()
	if e.treeStats, err = generate(e.tree, lines, 10, 1); err != nil {
		return fmt.Errorf("generate %s: %w", e.tree, err)
	}
	if e.fullStats, err = generate(e.full, fullLines, 1, 2); err != nil {
		return fmt.Errorf("generate %s: %w", e.full, err)
	}
	fmt.Fprintf(w, "trees ready in %s\n", time.Since(t0).Round(time.Millisecond))
	fmt.Fprintf(w, "  %s: %d files, %d lines, %d with CUDA idioms\n", e.tree, e.treeStats.Files, e.treeStats.Lines, e.treeStats.CUDAFiles)
	fmt.Fprintf(w, "  %s: %d files, %d lines, every one needs rewriting\n\n", e.full, e.fullStats.Files, e.fullStats.Lines)

	cases := []benchCase{
		grepFloor,
		pallasifyCase("pallasify analyze", "analyze"),
		pallasifyCase("pallasify migrate (dry run)", "migrate"),
		fullParse,
		draftValidate,
		protocolMedians,
	}
	var rows []row
	for _, c := range cases {
		rs, err := c(ctx, e)
		if err != nil {
			return err
		}
		rows = append(rows, rs...)
	}
	printRows(w, rows, e)
	printTraffic(w, e.traffic)
	return nil
}

// draftsOnly drafts and validates the fixture and pattern kernels and prints
// their rows and the bytes-accessed table (-drafts).
func draftsOnly(ctx context.Context, w io.Writer, only map[string]bool) error {
	e := &env{only: only}
	rows, err := draftValidate(ctx, e)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Wall.Round(time.Millisecond), r.Note)
	}
	tw.Flush()
	fmt.Fprintln(w)
	printTraffic(w, e.traffic)
	return nil
}

// measure runs argv runs times and returns the best wall time and the
// largest peak RSS. Exit status 1 is accepted (grep with no match, --check
// with changes). The grep floor runs first, with a warm-up, so every case
// reads the tree from the page cache.
func measure(ctx context.Context, runs int, warmup bool, argv ...string) (time.Duration, int64, time.Duration, error) {
	best := time.Duration(-1)
	var rss int64
	var cpu time.Duration
	first := 1
	if warmup {
		first = 0
	}
	for i := first; i <= runs; i++ {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stdout = io.Discard
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
			return 0, 0, 0, fmt.Errorf("%v: %w\n%s", argv, err, stderr.Bytes())
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss*1024 > rss {
			rss = ru.Maxrss * 1024 // Linux reports KiB
		}
		if i == 0 {
			continue // warm-up: page cache, binary
		}
		if best < 0 || d < best {
			best = d
			cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
	}
	return best, rss, cpu, nil
}

func grepFloor(ctx context.Context, e *env) ([]row, error) {
	d, rss, cpu, err := measure(ctx, e.runs, true, "grep", "-rc", "cuda", e.tree)
	if err != nil {
		return nil, err
	}
	rows := []row{{Name: "grep -rc cuda (floor)", Wall: d, Lines: e.treeStats.Lines, RSS: rss, CPU: cpu}}
	if rg, err := exec.LookPath("rg"); err == nil {
		d, rss, cpu, err := measure(ctx, e.runs, true, rg, "-c", "--no-ignore", "cuda", e.tree)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{Name: "rg -c cuda", Wall: d, Lines: e.treeStats.Lines, RSS: rss, CPU: cpu})
	}
	return rows, nil
}

func pallasifyCase(name, verb string) benchCase {
	return func(ctx context.Context, e *env) ([]row, error) {
		d, rss, cpu, err := measure(ctx, e.runs, false, e.bin, verb, e.tree)
		if err != nil {
			return nil, err
		}
		return []row{{Name: name, Wall: d, Lines: e.treeStats.Lines, RSS: rss, CPU: cpu}}, nil
	}
}

func fullParse(ctx context.Context, e *env) ([]row, error) {
	d, rss, cpu, err := measure(ctx, e.runs, false, e.bin, "migrate", e.full)
	if err != nil {
		return nil, err
	}
	return []row{{Name: "full parse: migrate, every file rewritten", Wall: d, Lines: e.fullStats.Lines, RSS: rss, CPU: cpu,
		Note: fmt.Sprintf("%d files", e.fullStats.Files)}}, nil
}

func printRows(w io.Writer, rows []row, e *env) {
	var floor, migrate time.Duration
	var peak int64
	for _, r := range rows {
		switch r.Name {
		case "grep -rc cuda (floor)":
			floor = r.Wall
		case "pallasify migrate (dry run)":
			migrate = r.Wall
		}
		if len(r.Name) > 9 && r.Name[:9] == "pallasify" || len(r.Name) > 4 && r.Name[:4] == "full" {
			if r.RSS > peak {
				peak = r.RSS
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "case\twall\tcpu\tlines/s\tpeak RSS\tvs grep\tnote")
	for _, r := range rows {
		lps, ratio := "-", "-"
		if r.Lines > 0 && r.Wall > 0 {
			lps = human(float64(r.Lines) / r.Wall.Seconds())
		}
		if floor > 0 && r.Lines == e.treeStats.Lines {
			ratio = fmt.Sprintf("%.2fx", r.Wall.Seconds()/floor.Seconds())
		}
		mem := "-"
		if r.RSS > 0 {
			mem = fmt.Sprintf("%.1f MB", float64(r.RSS)/1e6)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Wall.Round(time.Millisecond), r.CPU.Round(time.Millisecond), lps, mem, ratio, r.Note)
	}
	tw.Flush()
	fmt.Fprintln(w)
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "MISS"
	}
	if floor > 0 && migrate > 0 {
		x := migrate.Seconds() / floor.Seconds()
		fmt.Fprintf(w, "target migrate <= 3x grep floor: %.2fx  %s\n", x, verdict(x <= 3))
	}
	fmt.Fprintf(w, "target peak RSS < 200 MB:        %.1f MB  %s\n", float64(peak)/1e6, verdict(peak < 200e6))
}

func human(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}
