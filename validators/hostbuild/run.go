package hostbuild

import (
	"bufio"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pallasify/pallasify/validators/sandbox"
)

//go:embed all:pyrt
var pyrtFiles embed.FS

// RunRequest is one sandboxed run of a Python entry with CPU-built modules.
type RunRequest struct {
	Root  string   // repository root (copied; the run's current directory is the copy)
	Built []*Built // modules importable under their names (and load_inline sources they match)
	// Entry is the argv after python, e.g. ["-m", "pytest", "-x", "tests/test_ops/test_roi_align.py"].
	Entry                []string
	CaptureDir           string        // where the capture dir is copied ("" keeps none)
	Timeout              time.Duration // wall limit (default 10 minutes)
	MaxLaunchesPerKernel int           // launches recorded per kernel name (default 4; the rest are counted)
	Python               string        // interpreter (default $PALLASIFY_PYTHON, else python3)
	// Shims are directories appended to sys.path (last, so a real package
	// wins), e.g. a minimal stand-in for a dependency the sandbox lacks.
	Shims []string
	// CacheDir, when set, caches the run by a content hash of everything it
	// reads: a second identical run returns the recorded result and captures.
	CacheDir string
	// Discover records every load/load_inline call that has no prebuilt
	// module (RunResult.Requests).
	Discover bool
}

// RunResult is what a run produced.
type RunResult struct {
	ExitCode                       int
	Stopped                        string // the sandbox's coded reason when it stopped the run (SBX-TIME, SBX-DISK, SBX-PROCS, ...)
	Passed, Failed, Skipped, Error int
	Output                         string // the tail of stdout+stderr
	Launches                       []Launch
	Requests                       []DiscoveredBuild // load/load_inline calls without a prebuilt module
	Cached                         bool
	CaptureDir                     string
}

// DiscoveredBuild is a load or load_inline call the run made.
type DiscoveredBuild struct {
	Kind              string   `json:"kind"` // load | load_inline
	Name              string   `json:"name"`
	CPPSources        []string `json:"cpp_sources,omitempty"`
	CUDASources       []string `json:"cuda_sources,omitempty"`
	Functions         []string `json:"functions,omitempty"`
	Sources           []string `json:"sources,omitempty"` // load: repository-relative
	ExtraCflags       []string `json:"extra_cflags,omitempty"`
	ExtraIncludePaths []string `json:"extra_include_paths,omitempty"`
}

// Request turns a discovered call into a BuildRequest.
func (d DiscoveredBuild) Request(root string) BuildRequest {
	if d.Kind == "load_inline" {
		return BuildRequest{Module: d.Name, Inline: &InlineSources{Name: d.Name, CPP: d.CPPSources, CUDA: d.CUDASources, Functions: d.Functions}, Flags: d.ExtraCflags}
	}
	return BuildRequest{Root: root, Module: d.Name, Sources: d.Sources, IncludeDirs: d.ExtraIncludePaths, Flags: d.ExtraCflags}
}

type runConfig struct {
	Modules   map[string]string `json:"modules"`
	Inline    map[string]string `json:"inline"`
	Runtimes  []string          `json:"runtimes"`
	Discover  string            `json:"discover,omitempty"`
	Shims     []string          `json:"shims,omitempty"`
	CudaAsCPU bool              `json:"cuda_as_cpu"`
}

// Run runs req.Entry with python inside the sandbox, in cuda-as-cpu mode
// with capture on, and reads the captures.
func Run(ctx context.Context, sb *sandbox.Sandbox, req RunRequest) (*RunResult, error) {
	py := python(req.Python)
	maxL := req.MaxLaunchesPerKernel
	if maxL <= 0 {
		maxL = 4
	}
	var key string
	if req.CacheDir != "" {
		k, err := runKey(req, py, maxL)
		if err != nil {
			return nil, err
		}
		key = k
		if res, ok := cachedRun(req, key); ok {
			return res, nil
		}
	}
	work, err := os.MkdirTemp("", "hostbuild-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	repo := filepath.Join(work, "repo")
	if req.Root != "" {
		if err := copyTree(req.Root, repo); err != nil {
			return nil, fmt.Errorf("hostbuild: copy %s: %w", req.Root, err)
		}
	} else if err := os.MkdirAll(repo, 0o755); err != nil {
		return nil, err
	}
	meta := filepath.Join(repo, ".pallasify")
	if err := writePyrt(filepath.Join(meta, "pyrt")); err != nil {
		return nil, err
	}
	capDir := filepath.Join(meta, "capture")
	if err := os.MkdirAll(capDir, 0o755); err != nil {
		return nil, err
	}
	cfg := runConfig{Modules: map[string]string{}, Inline: map[string]string{}, Runtimes: []string{}, CudaAsCPU: true, Shims: req.Shims}
	expose := append([]string{}, req.Shims...)
	seenRT := map[string]bool{}
	for _, b := range req.Built {
		if b.InlineDigest != "" {
			cfg.Inline[b.InlineDigest] = b.SO
		} else {
			cfg.Modules[b.Module] = b.SO
		}
		expose = append(expose, filepath.Dir(b.SO))
		if !seenRT[b.Runtime] {
			seenRT[b.Runtime] = true
			cfg.Runtimes = append(cfg.Runtimes, b.Runtime)
			expose = append(expose, b.Runtime)
		}
	}
	if req.Discover {
		cfg.Discover = filepath.Join(meta, "discover.jsonl")
	}
	cb, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(meta, "config.json")
	if err := os.WriteFile(cfgPath, cb, 0o644); err != nil {
		return nil, err
	}
	env := sandboxEnv(
		"PYTHONPATH="+filepath.Join(meta, "pyrt")+":"+repo,
		"PALLASIFY_HOSTBUILD_CONFIG="+cfgPath,
		"PALLASIFY_CAPTURE_DIR="+capDir,
		"PALLASIFY_CAPTURE_MAX="+strconv.Itoa(maxL),
		"CUDAEMU_TIMEOUT_S=120",
		"PYTHONWARNINGS=ignore",
	)
	wall := req.Timeout
	if wall <= 0 {
		wall = 10 * time.Minute
	}
	sbx := withPaths(sb, env, expose...)
	argv := append([]string{py}, req.Entry...)
	out, runErr := sbx.Run(ctx, repo, sandbox.Limits{CPUSeconds: int(wall.Seconds()) + 60, MemoryMB: 16384, FileMB: 2048, Wall: wall}, argv...)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res := &RunResult{Output: tail(string(out), 8000)}
	if runErr != nil {
		res.ExitCode = -1
		if ee, ok := runErr.(interface{ ExitCode() int }); ok {
			res.ExitCode = ee.ExitCode()
		}
		if why, ok := strings.CutPrefix(runErr.Error(), "sandboxed process stopped: "); ok {
			res.Stopped = why
		}
	}
	if strings.Contains(string(out), "Error in sitecustomize") {
		// The cuda-as-cpu runtime did not install: nothing the run did is
		// evidence about the extension.
		return nil, fmt.Errorf("hostbuild: the Python runtime failed to install: %s", firstLineWith(string(out), "Error"))
	}
	res.Passed, res.Failed, res.Skipped, res.Error = pytestCounts(string(out))
	res.Requests, _ = readDiscovered(cfg.Discover)
	dst := capDir
	if req.CacheDir != "" {
		dst = filepath.Join(req.CacheDir, "run-"+key, "capture")
		if err := copyTree(capDir, dst); err != nil {
			return nil, err
		}
	}
	if req.CaptureDir != "" {
		if err := copyTree(capDir, req.CaptureDir); err != nil {
			return nil, err
		}
		dst = req.CaptureDir
	}
	res.Launches, err = ReadCaptures(dst)
	if err != nil {
		return nil, err
	}
	if req.CaptureDir != "" {
		res.CaptureDir = req.CaptureDir
	}
	if req.CacheDir != "" {
		b, _ := json.Marshal(res)
		_ = os.WriteFile(filepath.Join(req.CacheDir, "run-"+key, "result.json"), b, 0o644)
	}
	return res, nil
}

func cachedRun(req RunRequest, key string) (*RunResult, bool) {
	dir := filepath.Join(req.CacheDir, "run-"+key)
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, false
	}
	var res RunResult
	if json.Unmarshal(b, &res) != nil {
		return nil, false
	}
	src := filepath.Join(dir, "capture")
	if req.CaptureDir != "" {
		if err := copyTree(src, req.CaptureDir); err != nil {
			return nil, false
		}
		src = req.CaptureDir
	}
	ls, err := ReadCaptures(src)
	if err != nil {
		return nil, false
	}
	res.Launches = ls
	res.Cached = true
	return &res, true
}

// runKey hashes what a run reads: the modules, the entry, the tree, the
// runtime and the limits.
func runKey(req RunRequest, py string, maxL int) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "hostbuild-run/v1 py=%s max=%d entry=%q shims=%q discover=%v\n", py, maxL, req.Entry, req.Shims, req.Discover)
	for _, b := range req.Built {
		fmt.Fprintf(h, "built %s %s %s\n", b.Module, b.Key, b.InlineDigest)
	}
	_ = fs.WalkDir(pyrtFiles, "pyrt", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := pyrtFiles.ReadFile(p)
			h.Write([]byte(p))
			h.Write(b)
		}
		return nil
	})
	for _, dir := range append([]string{req.Root}, req.Shims...) {
		if dir == "" {
			continue
		}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); p != dir && (n == ".git" || n == "__pycache__" || n == ".pytest_cache") {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			fmt.Fprintf(h, "\n%s\x00%d\x00", rel, len(b))
			h.Write(b)
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

func writePyrt(dst string) error {
	return fs.WalkDir(pyrtFiles, "pyrt", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "pyrt"), "/")
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := pyrtFiles.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

func readDiscovered(path string) ([]DiscoveredBuild, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	var out []DiscoveredBuild
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var d DiscoveredBuild
		if json.Unmarshal(sc.Bytes(), &d) == nil {
			out = append(out, d)
		}
	}
	return out, sc.Err()
}

var pytestCount = regexp.MustCompile(`(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)`)

// pytestCounts reads pytest's last summary line.
func pytestCounts(out string) (passed, failed, skipped, errs int) {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if !strings.Contains(l, " in ") || !pytestCount.MatchString(l) {
			continue
		}
		for _, m := range pytestCount.FindAllStringSubmatch(l, -1) {
			n, _ := strconv.Atoi(m[1])
			switch m[2] {
			case "passed", "xpassed":
				passed += n
			case "failed":
				failed += n
			case "skipped", "xfailed":
				skipped += n
			default:
				errs += n
			}
		}
		return
	}
	return
}

func firstLineWith(s, sub string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.Contains(l, sub) {
			if i+1 < len(lines) {
				return strings.TrimSpace(l) + " " + strings.TrimSpace(lines[i+1])
			}
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "[...]\n" + s[len(s)-n:]
}

// copyTree copies regular files and directories (no symlinks, no .git).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		mode := fs.FileMode(0o644)
		if info != nil {
			mode = info.Mode().Perm() | 0o200
		}
		return os.WriteFile(target, b, mode)
	})
}

// RuntimeDigest hashes the Python runtime every run uses (cuda-as-cpu, the
// patched cpp_extension, the capture hooks): a cache of capture results
// keyed without it would keep what an older runtime recorded.
func RuntimeDigest() string {
	h := sha256.New()
	_ = fs.WalkDir(pyrtFiles, "pyrt", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := pyrtFiles.ReadFile(p)
			fmt.Fprintf(h, "%s %d\n", p, len(b))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:24]
}
