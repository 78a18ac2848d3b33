package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators/emulator"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// Emulator statuses of a kernel (Kernel.EmuStatus). Statuses with a detail
// are written "<status>: <detail>".
const (
	EmuCompiled     = "compiled"      // the isolated unit builds into a reference library
	EmuUnsupported  = "unsupported"   // ": <construct>" the emulator cannot run
	EmuCompileError = "compile-error" // ": <first compiler error>"
	EmuNeedsSpec    = "needs-spec"    // no KernelSpec: the wrapper cannot be generated
	EmuNotRun       = "not-run"       // ": <why>" (no compiler, no sandbox, cancelled)
)

// emuCacheVersion changes when the meaning of a cached status changes.
const emuCacheVersion = "pallasify.emu-status/v1"

// EmulatorCheck configures the emulator build of every discovered kernel
// during analysis: the kernel's isolated unit is compiled against the
// CUDA-on-CPU emulator in the sandbox (nothing is run), so the report can
// say whether its reference can be built. Results are cached on disk by the
// content hash of the unit, its spec, the emulator header and the compiler.
type EmulatorCheck struct {
	// NoSandbox compiles without bubblewrap (--no-sandbox).
	NoSandbox bool
	// CacheDir holds one status file per unit (default
	// DefaultEmuCacheDir()); "-" disables the cache.
	CacheDir string
	// Concurrency bounds compiles at once (default 2: g++ on the emulator
	// header takes about a second of CPU and 300 MB).
	Concurrency int
	// CXX is the compiler (default g++).
	CXX string
}

// DefaultEmuCacheDir is where emulator statuses are cached unless told
// otherwise: <user cache dir>/pallasify/emu.
func DefaultEmuCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "pallasify", "emu")
}

func (c EmulatorCheck) concurrency() int {
	if c.Concurrency > 0 {
		return c.Concurrency
	}
	return 2
}

// attachEmulator gives the run's kernel stage its emulator hook when
// opts.Emulator is set and the stage has none yet.
func attachEmulator(opts Options) {
	ks, ok := opts.Discover.(*KernelStage)
	if !ok || opts.Emulator == nil || ks.Emulate != nil {
		return
	}
	e := NewEmulator(*opts.Emulator)
	ks.Emulate = e.Status
	ks.EmulateConcurrency = opts.Emulator.concurrency()
}

// Emulator computes kernels' emulator statuses (see EmulatorCheck). Its
// Status method is a KernelStage.Emulate hook; it is safe for concurrent use.
type Emulator struct {
	cfg      EmulatorCheck
	once     sync.Once
	notRun   string // set when nothing can be compiled here
	compiler string // "path\nversion line", part of the cache key
	sb       *sandbox.Sandbox
}

// NewEmulator returns the emulator status hook for cfg.
func NewEmulator(cfg EmulatorCheck) *Emulator { return &Emulator{cfg: cfg} }

// setup finds the compiler and checks the sandbox, once.
func (e *Emulator) setup(ctx context.Context) {
	e.once.Do(func() {
		cxx := e.cfg.CXX
		if cxx == "" {
			cxx = "g++"
		}
		path, err := exec.LookPath(cxx)
		if err != nil {
			e.notRun = EmuNotRun + ": no C++ compiler (" + cxx + " not on PATH; apt-get install g++)"
			return
		}
		out, err := exec.CommandContext(ctx, path, "--version").Output()
		if err != nil {
			e.notRun = EmuNotRun + ": " + cxx + " --version failed: " + err.Error()
			return
		}
		first, _, _ := strings.Cut(string(out), "\n")
		e.compiler = path + "\n" + strings.TrimSpace(first)
		e.sb = &sandbox.Sandbox{Disabled: e.cfg.NoSandbox}
		if err := e.sb.Check(ctx); err != nil {
			e.notRun = EmuNotRun + ": sandbox refused (" + shortErr(err) + "); pass --no-sandbox to compile unconfined"
		}
	})
}

// Status compiles k's isolated unit against the emulator and returns its
// status: compiled, unsupported: <construct>, compile-error: <first line>,
// needs-spec, or not-run: <why>.
func (e *Emulator) Status(ctx context.Context, k *kernels.Kernel) string {
	switch {
	case k.Origin == kernels.OriginTriton:
		return EmuUnsupported + ": triton (inventory only)"
	case k.Unit == nil || k.Unit.Source == "":
		return EmuNotRun + ": no isolated unit"
	case len(k.Unit.Unsupported) > 0:
		return EmuUnsupported + ": " + k.Unit.Unsupported[0]
	}
	if err := ctx.Err(); err != nil {
		return EmuNotRun + ": cancelled"
	}
	tu, probs := emulator.Prepare(k.Unit.Source)
	if emulator.HasErrors(probs) {
		for _, p := range probs {
			if p.Severity == "error" {
				c := p.Construct
				if c == "" {
					c = p.Message
				}
				return EmuUnsupported + ": " + c
			}
		}
	}
	kern, status := emuKernel(tu, k)
	if status != "" {
		return status
	}
	e.setup(ctx)
	if e.notRun != "" {
		return e.notRun
	}
	key := e.key(k, kern)
	if st, ok := e.load(key); ok {
		return st
	}
	st := e.compile(ctx, tu, kern)
	if !strings.HasPrefix(st, EmuNotRun) {
		e.store(key, st)
	}
	return st
}

// emuKernel names the kernel to wrap: from its spec (parameters checked
// against the signature), else by name alone (the unit still builds; the
// spec is reported missing separately), unless it is a template whose
// arguments only a spec can give.
func emuKernel(tu string, k *kernels.Kernel) (emulator.Kernel, string) {
	if k.Spec != nil {
		kern, err := emulator.KernelFromSpec(tu, k.Spec)
		if err != nil {
			return kern, EmuCompileError + ": " + shortErr(err)
		}
		return kern, ""
	}
	kern := emulator.Kernel{Name: k.Name, FastMath: k.FastMath}
	args, err := emulator.Instantiate(tu, k.Name, k.TemplateArgs)
	switch {
	case err == nil:
		kern.TemplateArgs = args
	case len(k.TemplateArgs) > 0 || !strings.Contains(err.Error(), "no template definition"):
		return kern, EmuNeedsSpec
	}
	return kern, ""
}

func (e *Emulator) compile(ctx context.Context, tu string, kern emulator.Kernel) string {
	work, err := sandbox.MkdirTemp("pallasify-emu-*")
	if err != nil {
		return EmuNotRun + ": work dir: " + shortErr(err)
	}
	defer os.RemoveAll(work)
	_, log, err := emulator.CompileWith(ctx, e.sb, work, tu, kern, emulator.Options{CXX: e.cfg.CXX})
	switch {
	case err == nil:
		return EmuCompiled
	case ctx.Err() != nil:
		return EmuNotRun + ": cancelled"
	case errors.Is(err, emulator.ErrUnsupported):
		return EmuUnsupported + ": " + shortErr(err)
	case errors.Is(err, emulator.ErrCompile):
		return EmuCompileError + ": " + firstErrorLine(log, err)
	}
	return EmuNotRun + ": " + shortErr(err)
}

// key hashes everything the status depends on.
func (e *Emulator) key(k *kernels.Kernel, kern emulator.Kernel) string {
	h := sha256.New()
	hdr := sha256.Sum256([]byte(emulator.Header()))
	kj, _ := json.Marshal(kern)
	for _, part := range []string{emuCacheVersion, k.Unit.Hash, hex.EncodeToString(hdr[:]), string(kj), e.compiler,
		fmt.Sprint(e.cfg.NoSandbox)} {
		fmt.Fprintf(h, "%d\n%s", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (e *Emulator) cacheDir() string {
	switch e.cfg.CacheDir {
	case "-":
		return ""
	case "":
		return DefaultEmuCacheDir()
	}
	return e.cfg.CacheDir
}

type emuCacheEntry struct {
	Version string `json:"version"`
	Status  string `json:"status"`
}

func (e *Emulator) load(key string) (string, bool) {
	dir := e.cacheDir()
	if dir == "" {
		return "", false
	}
	b, err := os.ReadFile(filepath.Join(dir, key+".json"))
	if err != nil {
		return "", false
	}
	var c emuCacheEntry
	if json.Unmarshal(b, &c) != nil || c.Version != emuCacheVersion || c.Status == "" {
		return "", false
	}
	return c.Status, true
}

// store writes the status atomically (temp file + rename); a cache that
// cannot be written only costs a recompile next time.
func (e *Emulator) store(key, status string) {
	dir := e.cacheDir()
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	b, err := json.Marshal(emuCacheEntry{Version: emuCacheVersion, Status: status})
	if err != nil {
		return
	}
	f, err := os.CreateTemp(dir, key+".*.tmp")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), filepath.Join(dir, key+".json")) != nil {
		os.Remove(f.Name())
	}
}

// firstErrorLine is the compiler's first error, without the work dir.
func firstErrorLine(log string, err error) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "error") {
			return clip(strings.TrimSpace(l))
		}
	}
	return shortErr(err)
}

func shortErr(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return clip(s)
}

func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}
