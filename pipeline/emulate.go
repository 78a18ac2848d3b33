package pipeline

import (
	"github.com/pallasify/pallasify/validators/emulator"
)

// Emulator statuses of a kernel (Kernel.EmuStatus), as validators/emulator
// gives them. Statuses with a detail are written "<status>: <detail>".
const (
	EmuCompiled     = emulator.StatusCompiled     // the isolated unit builds into a reference library
	EmuUnsupported  = emulator.StatusUnsupported  // ": <construct>" the emulator cannot run
	EmuCompileError = emulator.StatusCompileError // ": <first compiler error>"
	EmuNeedsSpec    = emulator.StatusNeedsSpec    // no KernelSpec: the wrapper cannot be generated
	EmuNotRun       = emulator.StatusNotRun       // ": <why>" (no compiler, no sandbox, cancelled)
)

// EmulatorCheck configures the emulator build of every discovered kernel
// during analysis: the kernel's isolated unit is compiled against the
// CUDA-on-CPU emulator in the sandbox (nothing is run), so the report can
// say whether its reference can be built. The build is validators/emulator's
// Builder (the one driver of the emulator, the validator's reference build
// too); statuses are cached on disk by the content hash of the unit, its
// spec, the emulator header and the compiler.
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
func DefaultEmuCacheDir() string { return emulator.DefaultCacheDir() }

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
	ks.Emulate = NewEmulator(*opts.Emulator).Status
	ks.EmulateConcurrency = opts.Emulator.concurrency()
}

// NewEmulator returns the emulator status hook for cfg (its Status method
// is a KernelStage.Emulate hook, safe for concurrent use).
func NewEmulator(cfg EmulatorCheck) *emulator.Builder {
	dir := cfg.CacheDir
	switch dir {
	case "-":
		dir = ""
	case "":
		dir = DefaultEmuCacheDir()
	}
	return &emulator.Builder{NoSandbox: cfg.NoSandbox, CacheDir: dir, CXX: cfg.CXX}
}
