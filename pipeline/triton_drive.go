package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/triton"
)

// Triton launchers driven without the repository's tests (the default
// path): every launched Triton kernel whose spec the tests did not give has
// its launchers (the function around the launch, the autograd.Function that
// reaches it) called under Triton's interpreter in the sandbox on inputs
// made from their code (triton.Driver; validators.TritonDrive), every launch
// recorded with its grid and constexprs as they were. The launches make the
// kernel's spec as the tests' do (spec source "driven"); a kernel that gets
// none says why with a PTR code (transforms/triton/drive.go). Results are
// cached by the driver's version and the tree's Python.

// SpecTritonDriven: the spec was captured by driving the kernel's launchers.
const SpecTritonDriven = "driven"

// Bounds of a drive: one launcher call, the tries per launcher, the launches
// kept per kernel, and the whole run by default.
const (
	drivePerCall     = 30 * time.Second
	driveTries       = 12
	driveMaxLaunches = 4
	driveWall        = 5 * time.Minute
)

// TritonDriveConfig turns driving on for a run (Options.TritonDrive).
type TritonDriveConfig struct {
	// Driver runs the launchers (validators.TritonDrive); nil drives nothing.
	Driver triton.Driver
	// Python is the interpreter with torch and triton (default
	// $PALLASIFY_PYTHON, else .venv, else python3); NoSandbox runs it
	// unconfined.
	Python    string
	NoSandbox bool
	// CacheDir holds drive results by content (default
	// DefaultCaptureCacheDir()/runs; "-" disables the cache).
	CacheDir string
	// Wall bounds the whole drive (default 5 minutes).
	Wall time.Duration
}

// attachTritonDrive sets the drive on the kernel inventory stage.
func attachTritonDrive(opts Options) {
	ks, ok := opts.Discover.(*KernelStage)
	if !ok || opts.TritonDrive == nil || ks.Triton == nil || ks.Triton.Drive != nil {
		return
	}
	ks.Triton.Drive = opts.TritonDrive
}

// drive drives the launchers of the launched Triton kernels of inv whose
// spec no test captured; it returns what happened per kernel id (nil when
// driving is off).
func (s *TritonStage) drive(ctx context.Context, inv *kernels.Inventory, caps map[string]*KernelCapture) map[string]*KernelCapture {
	cfg := s.Drive
	if cfg == nil || cfg.Driver == nil || s.Inventory == nil {
		return nil
	}
	var mine []*kernels.Kernel
	var tks []*triton.Kernel
	for _, k := range inv.Kernels {
		d := s.Draft(k.ID)
		if d == nil || k.Origin != kernels.OriginTriton || k.SpecStatus == kernels.SpecCaptured {
			continue
		}
		mine = append(mine, k)
		tks = append(tks, d.Kernel)
	}
	if len(mine) == 0 {
		return nil
	}
	out := map[string]*KernelCapture{}
	reason := func(k *kernels.Kernel, code, text string) {
		kc := &KernelCapture{}
		if prev := caps[k.ID]; prev != nil {
			*kc = *prev
		}
		kc.BuildReason = &BuildReason{Code: code, Text: text}
		out[k.ID] = kc
	}
	plan := triton.PlanLaunchers(s.Inventory, tks, s.files)
	if len(plan.Launchers) == 0 {
		for _, k := range mine {
			reason(k, triton.CodeDriveLauncher, plan.NoDriver[k.Path+":"+k.Name])
		}
		return out
	}
	res, err := s.runDrive(ctx, cfg, triton.DriveRun{Launchers: plan.Launchers, ImportRoots: plan.ImportRoots,
		Packages: plan.Packages})
	if err != nil {
		if ctx.Err() != nil {
			return out
		}
		for _, k := range mine {
			reason(k, triton.CodeDriveRun, oneLine(err.Error()))
		}
		return out
	}
	byLabel := map[string]triton.DrivenLauncher{}
	for _, dl := range res.Launchers {
		byLabel[dl.Label()] = dl
	}
	for _, k := range mine {
		d := s.Draft(k.ID)
		key := k.Path + ":" + k.Name
		ls := plan.ByKernel[key]
		if len(ls) == 0 {
			reason(k, triton.CodeDriveLauncher, plan.NoDriver[key])
			continue
		}
		ok, bad := triton.ForKernel(res.Launches, d.Kernel)
		if len(ok) == 0 {
			code, why := driveWhy(k, ls, byLabel, bad)
			reason(k, code, why)
			continue
		}
		kc := &KernelCapture{}
		if prev := caps[k.ID]; prev != nil {
			*kc = *prev
		}
		kc.BuildReason, kc.Captured = nil, len(ok)
		out[k.ID] = kc
		s.specFromLaunches(k, d, ok, kc, "driving its launchers")
		if kc.BuildReason == nil {
			s.mu.Lock()
			if s.driven == nil {
				s.driven = map[string]bool{}
			}
			s.driven[k.ID] = true
			s.mu.Unlock()
		}
	}
	return out
}

// driveWhy says why k's launchers ls made no finished launch of it.
func driveWhy(k *kernels.Kernel, ls []triton.Launcher, byLabel map[string]triton.DrivenLauncher, bad []triton.CapturedLaunch) (string, string) {
	if len(bad) > 0 {
		return triton.CodeInterpreter, fmt.Sprintf("Triton's interpreter did not finish %s's launch in %s: %s", k.Name,
			strings.TrimPrefix(bad[0].Test, triton.DrivePrefix), bad[0].Error)
	}
	var ran, failed []string
	code := ""
	for _, l := range ls {
		dl, ok := byLabel[l.Label()]
		switch {
		case !ok:
			failed = append(failed, l.Label()+": not driven")
			code = triton.CodeDriveRun
		case dl.Status == "ok":
			what := "nothing"
			if len(dl.Launched) > 0 {
				what = strings.Join(dl.Launched, ", ")
			}
			ran = append(ran, l.Label()+" launched "+what)
		default:
			failed = append(failed, fmt.Sprintf("%s: %s after %d tr%s: %s", l.Label(), dl.Code, len(dl.Tries),
				plural(len(dl.Tries), "y", "ies"), dl.Error))
			if code == "" || code == triton.CodeDriveRun {
				code = dl.Code
			}
		}
	}
	if len(ran) > 0 {
		return triton.CodeDriveNotLaunched, fmt.Sprintf("the launchers ran and never launched %s: %s", k.Name,
			strings.Join(append(ran, failed...), "; "))
	}
	if code == "" {
		code = triton.CodeDriveInputs
	}
	return code, strings.Join(failed, "; ")
}

// runDrive runs req through the driver, or takes its result from the cache
// (keyed by the driver's version, the request and every Python file).
func (s *TritonStage) runDrive(ctx context.Context, cfg *TritonDriveConfig, req triton.DriveRun) (*triton.DriveResult, error) {
	req.Files, req.Python, req.NoSandbox = s.files, cfg.Python, cfg.NoSandbox
	req.MaxLaunches, req.Tries, req.PerCall = driveMaxLaunches, driveTries, drivePerCall
	req.Wall = cfg.Wall
	if req.Wall <= 0 {
		req.Wall = driveWall
	}
	h := sha256.New()
	launchers, _ := json.Marshal(req.Launchers)
	fmt.Fprintf(h, "triton-drive/v1\ndriver %s\nmax %d tries %d per-call %s\nlaunchers %s\nroots %q\npackages %q\n",
		cfg.Driver.Digest(), req.MaxLaunches, req.Tries, req.PerCall, launchers, req.ImportRoots, req.Packages)
	var names []string
	for f := range req.Files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		sum := sha256.Sum256(req.Files[f])
		fmt.Fprintf(h, "py %s %x\n", f, sum)
	}
	dir := cfg.CacheDir
	if dir == "" {
		dir = filepath.Join(DefaultCaptureCacheDir(), "runs")
	}
	var cache string
	if dir != "-" {
		cache = filepath.Join(dir, "triton-drive-"+hex.EncodeToString(h.Sum(nil))+".json")
		if b, err := os.ReadFile(cache); err == nil {
			var res triton.DriveResult
			if json.Unmarshal(b, &res) == nil {
				return &res, nil
			}
		}
	}
	res, err := cfg.Driver.Drive(ctx, req)
	if err != nil {
		return nil, err
	}
	if res.Error != "" {
		return nil, fmt.Errorf("the Triton drive failed: %s", res.Error)
	}
	if cache != "" && os.MkdirAll(dir, 0o755) == nil {
		if b, err := json.Marshal(res); err == nil {
			_ = os.WriteFile(cache, b, 0o644)
		}
	}
	return res, nil
}

// specSource is where a Triton kernel's spec came from ("driven" when
// driving its launchers gave it).
func (s *TritonStage) specSource(k *kernels.Kernel) string {
	s.mu.Lock()
	driven := s.driven[k.ID]
	s.mu.Unlock()
	if driven && k.SpecStatus == kernels.SpecCaptured {
		return SpecTritonDriven
	}
	return specSourceOf(k)
}
