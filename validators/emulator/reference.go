package emulator

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
	"github.com/pallasify/pallasify/validators/sandbox"
)

// Emulator statuses of a kernel (Builder.Status). Statuses with a detail are
// written "<status>: <detail>".
const (
	StatusCompiled     = "compiled"      // the isolated unit builds into a reference library
	StatusUnsupported  = "unsupported"   // ": <construct>" the emulator cannot run
	StatusCompileError = "compile-error" // ": <first compiler error>"
	StatusNeedsSpec    = "needs-spec"    // no KernelSpec: the wrapper cannot be generated
	StatusNotRun       = "not-run"       // ": <why>" (no compiler, no sandbox, cancelled)
)

// StatusCacheVersion changes when the meaning of a cached status changes.
const StatusCacheVersion = "pallasify.emu-status/v1"

// Builder builds kernels' references: a kernel's CUDA source compiled
// against the CUDA-on-CPU emulator inside the sandbox. Build makes the
// reference library a validation runs against; Status only says whether it
// builds (cached on disk by the content hash of the unit, the kernel, the
// emulator header and the compiler). The compiler and the sandbox are
// checked once. It is the one place that drives the emulator for a kernel;
// a Builder is safe for concurrent use.
type Builder struct {
	// NoSandbox compiles without bubblewrap (--no-sandbox).
	NoSandbox bool
	// CacheDir holds one status file per unit ("" : no cache).
	CacheDir string
	// CXX is the compiler (default g++).
	CXX string

	once     sync.Once
	setupErr error  // nothing can be compiled here
	compiler string // "path\nversion line", part of the cache key
	sb       *sandbox.Sandbox
}

// DefaultCacheDir is where statuses are cached unless told otherwise:
// <user cache dir>/pallasify/emu.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "pallasify", "emu")
}

// errSandbox marks a setup failure of the sandbox (not of the compiler).
var errSandbox = errors.New("sandbox refused")

// setup finds the compiler and checks the sandbox, once.
func (b *Builder) setup(ctx context.Context) error {
	b.once.Do(func() {
		cxx := b.cxx()
		path, err := exec.LookPath(cxx)
		if err != nil {
			b.setupErr = fmt.Errorf("no C++ compiler (%s not on PATH; apt-get install g++)", cxx)
			return
		}
		out, err := exec.CommandContext(ctx, path, "--version").Output()
		if err != nil {
			b.setupErr = fmt.Errorf("%s --version failed: %w", cxx, err)
			return
		}
		first, _, _ := strings.Cut(string(out), "\n")
		b.compiler = path + "\n" + strings.TrimSpace(first)
		b.sb = &sandbox.Sandbox{Disabled: b.NoSandbox}
		if err := b.sb.Check(ctx); err != nil {
			b.setupErr = fmt.Errorf("%w (%s); pass --no-sandbox to compile unconfined", errSandbox, shortErr(err))
		}
	})
	return b.setupErr
}

func (b *Builder) cxx() string {
	if b.CXX != "" {
		return b.CXX
	}
	return "g++"
}

// Build compiles a CUDA kernel source (an isolated unit, or a .cu file: host
// code is stripped) for the kernel spec names into workdir/ref.so, inside
// the sandbox. log holds compiler diagnostics.
func (b *Builder) Build(ctx context.Context, workdir, src string, spec *kernels.Spec) (so, log string, err error) {
	if err := b.setup(ctx); err != nil {
		if errors.Is(err, errSandbox) {
			return "", "", fmt.Errorf("build reference: refusing to compile untrusted code: %w", err)
		}
		return "", "", fmt.Errorf("build reference: %w", err)
	}
	tu, probs := Prepare(StripHost(src))
	if HasErrors(probs) {
		var msgs []string
		for _, p := range probs {
			if p.Severity == "error" {
				msgs = append(msgs, p.String())
			}
		}
		return "", "", fmt.Errorf("build reference: %w: %s", ErrUnsupported, strings.Join(msgs, "; "))
	}
	k, err := KernelFromSpec(tu, spec)
	if err != nil {
		return "", "", fmt.Errorf("build reference: %w", err)
	}
	so, log, err = CompileWith(ctx, b.sb, workdir, tu, k, Options{CXX: b.CXX})
	if err != nil {
		return "", log, fmt.Errorf("build reference: %w", err)
	}
	return so, log, nil
}

// Status compiles k's isolated unit against the emulator and returns its
// status: compiled, unsupported: <construct>, compile-error: <first line>,
// needs-spec, or not-run: <why>.
func (b *Builder) Status(ctx context.Context, k *kernels.Kernel) string {
	switch {
	case k.Origin == kernels.OriginTriton:
		return StatusUnsupported + ": triton (inventory only)"
	case k.Unit == nil || k.Unit.Source == "":
		return StatusNotRun + ": no isolated unit"
	case len(k.Unit.Unsupported) > 0:
		return StatusUnsupported + ": " + k.Unit.Unsupported[0]
	}
	if err := ctx.Err(); err != nil {
		return StatusNotRun + ": cancelled"
	}
	tu, probs := Prepare(k.Unit.Source)
	if HasErrors(probs) {
		for _, p := range probs {
			if p.Severity == "error" {
				c := p.Construct
				if c == "" {
					c = p.Message
				}
				return StatusUnsupported + ": " + c
			}
		}
	}
	kern, status := statusKernel(tu, k)
	if status != "" {
		return status
	}
	if err := b.setup(ctx); err != nil {
		return StatusNotRun + ": " + err.Error()
	}
	key := b.key(k, kern)
	if st, ok := b.load(key); ok {
		return st
	}
	st := b.compile(ctx, tu, kern)
	if !strings.HasPrefix(st, StatusNotRun) {
		b.store(key, st)
	}
	return st
}

// statusKernel names the kernel to wrap: from its spec (parameters checked
// against the signature), else by name alone (the unit still builds; the
// spec is reported missing separately), unless it is a template whose
// arguments only a spec can give.
func statusKernel(tu string, k *kernels.Kernel) (Kernel, string) {
	if k.Spec != nil {
		kern, err := KernelFromSpec(tu, k.Spec)
		if err != nil {
			return kern, StatusCompileError + ": " + shortErr(err)
		}
		return kern, ""
	}
	kern := Kernel{Name: k.Name, FastMath: k.FastMath}
	args, err := Instantiate(tu, k.Name, k.TemplateArgs)
	switch {
	case err == nil:
		kern.TemplateArgs = args
	case len(k.TemplateArgs) > 0 || !strings.Contains(err.Error(), "no template definition"):
		return kern, StatusNeedsSpec
	}
	return kern, ""
}

func (b *Builder) compile(ctx context.Context, tu string, kern Kernel) string {
	work, err := sandbox.MkdirTemp("pallasify-emu-*")
	if err != nil {
		return StatusNotRun + ": work dir: " + shortErr(err)
	}
	defer os.RemoveAll(work)
	_, log, err := CompileWith(ctx, b.sb, work, tu, kern, Options{CXX: b.CXX})
	switch {
	case err == nil:
		return StatusCompiled
	case ctx.Err() != nil:
		return StatusNotRun + ": cancelled"
	case errors.Is(err, ErrUnsupported):
		return StatusUnsupported + ": " + shortErr(err)
	case errors.Is(err, ErrCompile):
		return StatusCompileError + ": " + firstErrorLine(log, err)
	}
	return StatusNotRun + ": " + shortErr(err)
}

// key hashes everything the status depends on.
func (b *Builder) key(k *kernels.Kernel, kern Kernel) string {
	h := sha256.New()
	hdr := sha256.Sum256([]byte(Header()))
	kj, _ := json.Marshal(kern)
	for _, part := range []string{StatusCacheVersion, k.Unit.Hash, hex.EncodeToString(hdr[:]), string(kj), b.compiler,
		fmt.Sprint(b.NoSandbox)} {
		fmt.Fprintf(h, "%d\n%s", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

type statusEntry struct {
	Version string `json:"version"`
	Status  string `json:"status"`
}

func (b *Builder) load(key string) (string, bool) {
	if b.CacheDir == "" {
		return "", false
	}
	data, err := os.ReadFile(filepath.Join(b.CacheDir, key+".json"))
	if err != nil {
		return "", false
	}
	var c statusEntry
	if json.Unmarshal(data, &c) != nil || c.Version != StatusCacheVersion || c.Status == "" {
		return "", false
	}
	return c.Status, true
}

// store writes the status atomically (temp file + rename); a cache that
// cannot be written only costs a recompile next time.
func (b *Builder) store(key, status string) {
	dir := b.CacheDir
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	data, err := json.Marshal(statusEntry{Version: StatusCacheVersion, Status: status})
	if err != nil {
		return
	}
	f, err := os.CreateTemp(dir, key+".*.tmp")
	if err != nil {
		return
	}
	_, werr := f.Write(data)
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
