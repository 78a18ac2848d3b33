package validators

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pallasify/pallasify/transforms/triton"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// TritonTests runs a repository's tests under Triton's interpreter in the
// sandbox with every launch recorded (harness triton_capture.py): the
// capture stage's triton.TestRunner.
type TritonTests struct{}

var _ triton.TestRunner = TritonTests{}

// Digest implements triton.TestRunner: the harness's version.
func (TritonTests) Digest() string { return "triton-capture/v1 " + HarnessHash() }

// RunTests implements triton.TestRunner. The tree's Python files are
// copied into the sandbox's work directory (tests may write into it), the
// harness beside them; the run's own failure is an error, a test's is a
// count in the result.
func (TritonTests) RunTests(ctx context.Context, req triton.TestRun) (*triton.TestResult, error) {
	if len(req.Tests) == 0 {
		return nil, fmt.Errorf("triton capture: no test to run")
	}
	sb, py, work, err := harnessWork(ctx, req.NoSandbox, req.Python, "triton capture", "pallasify-triton-capture-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	repo := filepath.Join(work, "repo")
	if err := writeTree(repo, req.Files); err != nil {
		return nil, err
	}
	perTest, perFile, wall := durationOr(req.PerTest, time.Minute), durationOr(req.PerFile, 2*time.Minute), req.Wall
	if wall <= 0 {
		wall = time.Duration(len(req.Tests))*perFile + time.Minute
	}
	maxL := req.MaxLaunches
	if maxL <= 0 {
		maxL = 4
	}
	out := filepath.Join(work, "capture.json")
	argv := []string{"-m", "pallasify_harness.triton_capture", "--root", repo, "--max", strconv.Itoa(maxL),
		"--per-test", strconv.Itoa(int(perTest.Seconds())), "--per-file", strconv.Itoa(int(perFile.Seconds())), "--out", out}
	for _, r := range req.ImportRoots {
		if r != "" {
			argv = append(argv, "--import-root", r)
		}
	}
	for _, p := range req.Packages {
		argv = append(argv, "--package", p)
	}
	argv = append(argv, req.Tests...)
	sb.Env = append(harnessEnv(work), "HOME="+work)
	lim := sandbox.Limits{Wall: wall, CPUSeconds: int(2*wall.Seconds()) + 60, MemoryMB: 8192, FileMB: 512}
	cmd, cancel, err := sb.Command(ctx, work, lim, append([]string{py}, argv...)...)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var log tail
	cmd.Stdout, cmd.Stderr = &log, &log
	start := time.Now()
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("triton capture: no result after %s (%v): %s", time.Since(start).Round(time.Millisecond), runErr,
			lastLine(log.String()))
	}
	var res triton.TestResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("triton capture: %w", err)
	}
	return &res, nil
}

// writeTree writes files (slash paths relative to the tree) under dir.
func writeTree(dir string, files map[string][]byte) error {
	for rel, b := range files {
		clean := path.Clean(rel)
		if clean == ".." || strings.HasPrefix(clean, "../") || path.IsAbs(clean) {
			return fmt.Errorf("triton capture: path %q leaves the tree", rel)
		}
		dst := filepath.Join(dir, filepath.FromSlash(clean))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func durationOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
