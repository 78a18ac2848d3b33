package validators

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/pallasify/pallasify/transforms/triton"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// TritonDrive calls a tree's Triton launchers under Triton's interpreter in
// the sandbox, on inputs made from their own code, with every launch
// recorded (harness triton_drive.py): the Triton stage's triton.Driver,
// used without the repository's tests.
type TritonDrive struct{}

var _ triton.Driver = TritonDrive{}

// Digest implements triton.Driver: the harness's version.
func (TritonDrive) Digest() string { return "triton-drive/v2 " + HarnessHash() }

// Drive implements triton.Driver. The run's own failure is an error; a
// launcher's is its result.
func (TritonDrive) Drive(ctx context.Context, req triton.DriveRun) (*triton.DriveResult, error) {
	if len(req.Launchers) == 0 {
		return nil, fmt.Errorf("triton drive: no launcher to drive")
	}
	sb, py, work, err := harnessWork(ctx, req.NoSandbox, req.Python, "triton drive", "pallasify-triton-drive-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	repo := filepath.Join(work, "repo")
	if err := writeTree(repo, req.Files); err != nil {
		return nil, err
	}
	perCall := durationOr(req.PerCall, 30*time.Second)
	wall := req.Wall
	if wall <= 0 {
		wall = time.Duration(len(req.Launchers))*2*perCall + time.Minute
	}
	// every file of the tree: a module any of them imports that this Python
	// lacks (a package __init__ importing huggingface_hub) is a stand-in
	files := make([]string, 0, len(req.Files))
	for f := range req.Files {
		files = append(files, f)
	}
	sort.Strings(files)
	body, err := json.Marshal(map[string]any{"import_roots": req.ImportRoots, "packages": req.Packages, "files": files,
		"launchers": req.Launchers, "max_launches": max(req.MaxLaunches, 1), "tries": max(req.Tries, 1),
		"per_call": max(int(perCall.Seconds()), 1)})
	if err != nil {
		return nil, err
	}
	reqFile, out := filepath.Join(work, "drive.json"), filepath.Join(work, "launches.json")
	if err := os.WriteFile(reqFile, body, 0o644); err != nil {
		return nil, err
	}
	sb.Env = append(harnessEnv(work), "HOME="+work)
	lim := sandbox.Limits{Wall: wall, CPUSeconds: int(2*wall.Seconds()) + 60, MemoryMB: 8192, FileMB: 512}
	cmd, cancel, err := sb.Command(ctx, work, lim, py, "-m", "pallasify_harness.triton_drive", "--root", repo,
		"--request", reqFile, "--out", out)
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
		return nil, fmt.Errorf("triton drive: no result after %s (%v): %s", time.Since(start).Round(time.Millisecond), runErr,
			lastLine(log.String()))
	}
	var res triton.DriveResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("triton drive: %w", err)
	}
	return &res, nil
}
