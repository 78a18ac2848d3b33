package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/triton"
	"github.com/pallasify/pallasify/validators/hostbuild"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// CaptureConfig turns the capture stage on for a run (Options.Capture).
type CaptureConfig struct {
	// NoSandbox runs the build and the repository's tests unconfined.
	NoSandbox bool
	// CacheDir holds builds and captures (default
	// $XDG_CACHE_HOME/pallasify/capture).
	CacheDir string
	// Python is the interpreter with torch (default $PALLASIFY_PYTHON).
	Python string
	// Triton runs the tests reaching Triton kernels under Triton's
	// interpreter (validators.TritonTests); nil captures no Triton launch.
	Triton triton.TestRunner
	// NoTests runs none of the repository's tests: the op driver alone
	// gives the specs (the default path without --capture). NoDrive turns
	// the op driver off (drive.go).
	NoTests, NoDrive bool
}

// DefaultCaptureCacheDir is where builds and captures are cached.
func DefaultCaptureCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "pallasify", "capture")
}

// NewCaptureStage returns the capture stage backed by validators/hostbuild.
func NewCaptureStage(cfg CaptureConfig) *CaptureStage {
	if cfg.CacheDir == "" {
		cfg.CacheDir = DefaultCaptureCacheDir()
	}
	eng := &hostEngine{sb: &sandbox.Sandbox{Disabled: cfg.NoSandbox}, cache: filepath.Join(cfg.CacheDir, "build"), python: cfg.Python}
	return &CaptureStage{Host: eng, CacheDir: filepath.Join(cfg.CacheDir, "runs"), Triton: cfg.Triton, python: cfg.Python,
		noSandbox: cfg.NoSandbox, NoTests: cfg.NoTests, NoDrive: cfg.NoDrive}
}

// attachCapture sets the capture stage on the kernel inventory stage.
func attachCapture(opts Options) {
	ks, ok := opts.Discover.(*KernelStage)
	if !ok || opts.Capture == nil || ks.Capture != nil {
		return
	}
	ks.Capture = NewCaptureStage(*opts.Capture)
}

// hostEngine is HostBuild over validators/hostbuild.
type hostEngine struct {
	sb     *sandbox.Sandbox
	cache  string
	python string
}

func (e *hostEngine) Build(ctx context.Context, req BuildRequest) (*BuiltExtension, error) {
	hr := hostbuild.BuildRequest{Root: req.Root, Module: req.Module, Sources: req.Sources, IncludeDirs: req.IncludeDirs,
		Defines: req.Defines, Python: e.python}
	if req.Inline != nil {
		hr.Inline = &hostbuild.InlineSources{Name: req.Inline.Name, CPP: req.Inline.CPP, CUDA: req.Inline.CUDA, Functions: req.Inline.Functions}
	}
	b, err := hostbuild.Build(ctx, e.sb, e.cache, hr)
	if err != nil {
		var be *hostbuild.BuildError
		if errors.As(err, &be) {
			text := be.Construct
			if text == "" {
				text = be.Message
			} else if be.Message != "" {
				text += ": " + be.Message
			}
			if be.File != "" {
				text += " (" + be.File + ")"
			}
			return nil, &BuildFailure{Code: be.Code, Construct: oneLine(text)}
		}
		return nil, err
	}
	return &BuiltExtension{Module: b.Module, Key: b.Key, Cached: b.Cached, Handle: b}, nil
}

func (e *hostEngine) Run(ctx context.Context, req CaptureRun) (*CaptureResult, error) {
	var built []*hostbuild.Built
	for _, b := range req.Built {
		if hb, ok := b.Handle.(*hostbuild.Built); ok {
			built = append(built, hb)
		}
	}
	res, err := hostbuild.Run(ctx, e.sb, hostbuild.RunRequest{Root: req.Root, Built: built, Entry: req.Entry,
		CaptureDir: req.CaptureDir, Timeout: req.Timeout, MaxLaunchesPerKernel: req.MaxLaunchesPerKernel,
		Python: e.python, Shims: req.Shims})
	if err != nil {
		return nil, err
	}
	return &CaptureResult{ExitCode: res.ExitCode, Stopped: res.Stopped, Passed: res.Passed, Failed: res.Failed, Skipped: res.Skipped, Output: res.Output}, nil
}

// ReadCaptures reads a capture dir with hostbuild's reader (shape hints
// completed from the tensors each Python call saw) into the kernels' form.
func (e *hostEngine) ReadCaptures(dir string) ([]kernels.CapturedLaunch, error) {
	ls, err := hostbuild.ReadCaptures(dir)
	if err != nil {
		return nil, err
	}
	out := make([]kernels.CapturedLaunch, 0, len(ls))
	for _, l := range ls {
		b, err := json.Marshal(l)
		if err != nil {
			return nil, err
		}
		var cl kernels.CapturedLaunch
		if err := json.Unmarshal(b, &cl); err != nil {
			return nil, fmt.Errorf("capture %s launch %d: %w", dir, l.Seq, err)
		}
		cl.Dir = dir
		out = append(out, cl)
	}
	return out, nil
}

func (e *hostEngine) Preprocess(ctx context.Context, src string) (string, error) {
	return Preprocess(ctx, e.sb, src)
}
