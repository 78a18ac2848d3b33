package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// realWheels are the pinned PyPI wheels whose sources make the real-code
// tree: transformers and diffusers, 3,965 Python files and 1.82M lines.
var realWheels = []string{"transformers==5.23.0", "diffusers==0.42.1"}

// realTree returns the unpacked real-code tree under dir/realtree, building
// it the first time: the wheels are downloaded once into dir/wheels with the
// venv's pip (`pip download --no-deps`, pinned) unless wheelDir already holds
// them, and unpacked (every member, as pip would install it).
func realTree(ctx context.Context, dir, python, wheelDir string) (string, error) {
	tree := filepath.Join(dir, "realtree")
	done := filepath.Join(tree, ".complete")
	if _, err := os.Stat(done); err == nil {
		return tree, nil
	}
	whl := filepath.Join(dir, "wheels")
	if err := os.MkdirAll(whl, 0o755); err != nil {
		return "", err
	}
	var files []string
	for _, pin := range realWheels {
		name, version, _ := strings.Cut(pin, "==")
		want := fmt.Sprintf("%s-%s-py3-none-any.whl", name, version)
		dst := filepath.Join(whl, want)
		if _, err := os.Stat(dst); err != nil && wheelDir != "" {
			if err := copyFile(filepath.Join(wheelDir, want), dst); err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", err
			}
		}
		if _, err := os.Stat(dst); err != nil {
			fmt.Fprintf(os.Stderr, "downloading %s\n", pin)
			cmd := exec.CommandContext(ctx, python, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
				"-d", whl, pin)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				return "", fmt.Errorf("pip download %s: %w", pin, err)
			}
			if _, err := os.Stat(dst); err != nil {
				return "", fmt.Errorf("pip download %s did not give %s", pin, want)
			}
		}
		files = append(files, dst)
	}
	tmp := tree + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	for _, f := range files {
		if err := unzip(f, tmp); err != nil {
			return "", fmt.Errorf("unpack %s: %w", f, err)
		}
	}
	if err := os.RemoveAll(tree); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, tree); err != nil {
		return "", err
	}
	return tree, os.WriteFile(done, []byte(strings.Join(realWheels, "\n")+"\n"), 0o644)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

func unzip(archive, dst string) error {
	zr, err := zip.OpenReader(archive)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		name := filepath.FromSlash(f.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("member %q leaves the tree", f.Name)
		}
		p := filepath.Join(dst, name)
		if f.FileInfo().IsDir() {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		r, err := f.Open()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// treeSize counts the Python files and lines under root.
func treeSize(root string) (files, lines int, err error) {
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".py") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		lines += bytes.Count(b, []byte{'\n'})
		return nil
	})
	return files, lines, err
}

// sample is one run of one command.
type sample struct {
	wall, cpu time.Duration
	rss       int64
}

// runOnce runs argv once; exit status 1 is accepted (ruff and grep report
// findings with it, migrate --check changes).
func runOnce(ctx context.Context, argv []string) (sample, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout = io.Discard
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	err := cmd.Run()
	s := sample{wall: time.Since(t0)}
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return s, fmt.Errorf("%v: %w\n%s", argv, err, stderr.Bytes())
	}
	s.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.rss = ru.Maxrss * 1024 // Linux reports KiB
	}
	return s, nil
}

// realCmd is one command of the real-tree comparison.
type realCmd struct {
	name string
	argv []string
}

// realResult is the medians of one command's runs.
type realResult struct {
	realCmd
	wall, cpu time.Duration
	rss       int64 // the largest of the runs
}

// benchRealTree runs every command once as a warm-up, then runs rounds of
// all of them, alternating, so a change of load on the shared machine hits
// every command alike; it reports medians.
func benchRealTree(ctx context.Context, cmds []realCmd, runs int) ([]realResult, error) {
	samples := make([][]sample, len(cmds))
	for round := 0; round <= runs; round++ {
		for i, c := range cmds {
			s, err := runOnce(ctx, c.argv)
			if err != nil {
				return nil, err
			}
			if round > 0 {
				samples[i] = append(samples[i], s)
			}
		}
	}
	out := make([]realResult, len(cmds))
	for i, c := range cmds {
		r := realResult{realCmd: c}
		var walls, cpus []time.Duration
		for _, s := range samples[i] {
			walls, cpus = append(walls, s.wall), append(cpus, s.cpu)
			r.rss = max(r.rss, s.rss)
		}
		r.wall, r.cpu = median(walls), median(cpus)
		out[i] = r
	}
	return out, nil
}

// checkCoverage runs analyze once and fails unless its report counts at least
// the tree's Python files: a run that walks nothing (a tree its enclosing
// repository ignores, a wrong path) would otherwise time as "faster than ruff".
func checkCoverage(ctx context.Context, bin, tree string, pyFiles int) error {
	out, err := exec.CommandContext(ctx, bin, "analyze", "--format", "json", tree).Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return fmt.Errorf("%s analyze --format json %s: %w", bin, tree, err)
	}
	var rep struct {
		Files int `json:"files"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return fmt.Errorf("analyze report of %s: %w", tree, err)
	}
	if rep.Files < pyFiles {
		return fmt.Errorf("analyze walked %d files of %s, which holds %d Python files: the timings would not measure the tree", rep.Files, tree, pyFiles)
	}
	return nil
}

func median(xs []time.Duration) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// realTreeCase measures analyze and migrate (dry run, kernels off) beside
// ruff and grep on the real-code tree and prints the table with the targets.
func realTreeCase(ctx context.Context, w io.Writer, bin, ruff, tree string, runs int) error {
	files, lines, err := treeSize(tree)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "real tree %s: %s, %d Python files, %d lines\n", tree, strings.Join(realWheels, " + "), files, lines)
	if err := checkCoverage(ctx, bin, tree, files); err != nil {
		return err
	}
	cmds := []realCmd{
		{"pallasify analyze", []string{bin, "analyze", tree}},
		{"pallasify migrate --kernels=false", []string{bin, "migrate", "--kernels=false", tree}},
		{"ruff check --isolated --no-cache", []string{ruff, "check", "--isolated", "--no-cache", "--quiet", tree}},
		{"grep -rc cuda", []string{"grep", "-rc", "cuda", tree}},
	}
	res, err := benchRealTree(ctx, cmds, runs)
	if err != nil {
		return err
	}
	ruffWall, ruffCPU := res[2].wall, res[2].cpu
	fmt.Fprintf(w, "median of %d alternating runs (after one warm-up round)\n", runs)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "command\twall\tCPU\tcores\tpeak RSS\tvs ruff wall\tvs ruff CPU")
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.1f MB\t%.2fx\t%.2fx\n", r.name, r.wall.Round(time.Millisecond), r.cpu.Round(time.Millisecond),
			r.cpu.Seconds()/r.wall.Seconds(), float64(r.rss)/1e6, r.wall.Seconds()/ruffWall.Seconds(), r.cpu.Seconds()/ruffCPU.Seconds())
	}
	tw.Flush()
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "MISS"
	}
	for _, r := range res[:2] {
		x := r.wall.Seconds() / ruffWall.Seconds()
		cores := r.cpu.Seconds() / r.wall.Seconds()
		fmt.Fprintf(w, "target %s: wall <= ruff %.2fx %s; CPU/wall >= 1.8: %.2f %s; peak RSS <= 200 MB: %.1f MB %s\n",
			r.name, x, verdict(x <= 1), cores, verdict(cores >= 1.8), float64(r.rss)/1e6, verdict(r.rss <= 200e6))
	}
	fmt.Fprintln(w)
	return nil
}
