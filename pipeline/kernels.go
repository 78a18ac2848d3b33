package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/sourcegraph/conc/pool"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// StageKernels is the name of the kernel inventory stage.
const StageKernels = "analyze-kernels"

// KernelStage discovers the custom kernels of the tree (CUDA .cu/.cuh files,
// load_inline/load/CUDAExtension sources, CuPy RawKernel/RawModule, Triton
// @triton.jit for inventory), isolates each __global__ kernel, infers its
// KernelSpec, fills Run.Kernels and adds PKN diagnostics. It reads only the
// files the walk put in Run.Files (so .gitignore and the skip list hold).
//
// Use a pointer: after Run, Inventory holds the full result (isolated units
// and specs) for the draft and validate stages.
type KernelStage struct {
	// Emulate, when set, compiles a kernel's isolated unit against the
	// emulator and returns its status ("compiled" or "unsupported: <construct>").
	// When nil, EmuStatus is "not-run" (or "unsupported: …" when isolation
	// already found a construct it cannot give the unit).
	Emulate func(ctx context.Context, k *kernels.Kernel) string
	// EmulateConcurrency bounds Emulate calls at once (default 2).
	EmulateConcurrency int
	// Capture, when set, builds the repository's extensions for the CPU,
	// runs its tests with every launch captured and takes the specs of the
	// kernels they launched from the captures (capture.go).
	Capture *CaptureStage
	// Triton drafts the launched Triton kernels (triton.go); nil leaves them
	// inventory-only.
	Triton *TritonStage

	// Inventory is what the last Run found.
	Inventory *kernels.Inventory
}

// NewKernelStage returns the kernel inventory stage.
func NewKernelStage() *KernelStage { return &KernelStage{Triton: NewTritonStage()} }

// Name implements Stage.
func (s *KernelStage) Name() string { return StageKernels }

// Lookup returns the discovered kernel with id (nil before Run or if absent).
func (s *KernelStage) Lookup(id string) *kernels.Kernel {
	if s.Inventory == nil {
		return nil
	}
	return s.Inventory.Lookup(id)
}

// Run implements Stage. Problems with single kernels become diagnostics; only
// a cancelled context is an error.
func (s *KernelStage) Run(ctx context.Context, r *Run) error {
	var files []string
	byPath := map[string]*File{}
	for _, f := range r.Files {
		byPath[f.Path] = f
		if f.Generated || f.Skipped != "" {
			continue
		}
		if strings.HasSuffix(f.Path, ".cu") || strings.HasSuffix(f.Path, ".cuh") || strings.HasSuffix(f.Path, ".py") {
			files = append(files, f.Path)
		}
	}
	inv, probs := kernels.DiscoverScan(ctx, r.Root, files, func(rel string) bool { return byPath[rel].mayHoldKernels() })
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kernel discovery: %w", err)
	}
	s.Inventory = inv
	if s.Triton != nil {
		s.Triton.run(ctx, r, inv)
	}
	var caps map[string]*KernelCapture
	if s.Capture != nil {
		caps = s.Capture.Run(ctx, r.Root, files, inv)
	}
	r.Kernels = r.Kernels[:0]
	limit := s.EmulateConcurrency
	if limit <= 0 {
		limit = 2
	}
	emu := pool.New().WithMaxGoroutines(limit)
	for _, k := range inv.Kernels {
		pk := &Kernel{ID: k.ID, Name: k.Name, Path: k.Path, Line: k.Line, Origin: k.Origin, Class: k.Class, SpecStatus: k.SpecStatus,
			SpecSource: specSourceOf(k)}
		if kc := caps[k.ID]; kc != nil {
			pk.BuiltCPU, pk.BuildReason, pk.Captured = kc.BuiltCPU, kc.BuildReason, kc.Captured
			pk.TestsPassed, pk.TestsFailed = kc.TestsPassed, kc.TestsFailed
		}
		switch {
		case k.Origin == kernels.OriginTriton && s.Triton != nil:
			pk.SpecSource, pk.EmuStatus = specSourceOf(k), tritonEmuStatus(k)
		case k.Origin == kernels.OriginTriton:
			pk.EmuStatus = "unsupported: triton (inventory only)"
		case k.Unit != nil && len(k.Unit.Unsupported) > 0:
			pk.EmuStatus = "unsupported: " + k.Unit.Unsupported[0]
		case s.Emulate != nil:
			emu.Go(func() { pk.EmuStatus = s.Emulate(ctx, k) })
		default:
			pk.EmuStatus = "not-run"
		}
		r.Kernels = append(r.Kernels, pk)
	}
	emu.Wait()
	for _, pk := range r.Kernels {
		// compiled against the emulator, or run on it by the tests
		pk.Emulated = pk.EmuStatus == "compiled" || pk.Captured > 0
	}
	for _, p := range probs {
		p, keep := s.Triton.inventoryNote(p, inv)
		if !keep {
			continue
		}
		d := Diagnostic{Code: p.Code, Severity: Severity(p.Severity), Path: p.Path, Line: p.Line, Message: p.Message, Safety: "diagnostic"}
		if f := byPath[p.Path]; f != nil {
			f.Diagnostics = append(f.Diagnostics, d)
		} else {
			r.Diagnostics = append(r.Diagnostics, d)
		}
	}
	return nil
}

// KernelCodes documents the PKN family (kernel discovery and specs).
func KernelCodes() []CodeDoc {
	return []CodeDoc{
		{kernels.CodeFound, "kernel-found", SevInfo, "A custom kernel was found and handed to the kernel stages",
			"A __global__ kernel in a .cu/.cuh file, a load_inline/load/CUDAExtension source or a CuPy RawKernel/RawModule " +
				"string. It gets a stable id (k- and 10 hex digits of sha256 of path#name), an isolated translation unit and, " +
				"when its launch can be read, an inferred KernelSpec."},
		{kernels.CodeNeedsSpec, "needs-spec", SevWarning, "The kernel's spec could not be inferred",
			"The launch site could not be read (no launch in host code, a launch from Python, an argument or shape the " +
				"analysis cannot follow). Write .pallasify/kernels/<id>.yaml with the KernelSpec fields; no draft of this " +
				"kernel is validated without one."},
		{kernels.CodeUnsupported, "unsupported-construct", SevWarning, "The kernel uses a construct isolation cannot give it",
			"A host function called from device code, cooperative groups, cub, WMMA, dynamic parallelism, or an isolated " +
				"unit that does not parse. The kernel is listed but its reference cannot be run on the emulator."},
		{kernels.CodeBadSpec, "bad-user-spec", SevError, "A user spec file is invalid",
			"The .pallasify/kernels/<id>.yaml file does not decode strictly (unknown fields, wrong types) or does not fit " +
				"the kernel (parameter names or kinds, roles, dtypes, expressions over undeclared symbols). The message names " +
				"the field. The kernel is treated as needs-spec until the file is fixed."},
		{kernels.CodeParse, "cuda-parse", SevWarning, "A CUDA source does not parse cleanly",
			"After masking the CUDA keywords the cpp grammar still reports errors, or the file could not be read. Kernels " +
				"near the errors may be missed."},
		{kernels.CodeUnresolved, "unresolved-source", SevWarning, "A Python reference to CUDA source cannot be followed",
			"load_inline cuda_sources, load/CUDAExtension sources or a CuPy code argument is an f-string, a computed value, " +
				"a missing file or a path outside the repository."},
		{kernels.CodeInventory, "triton-inventory", SevInfo, "A Triton kernel was listed (inventory only)",
			"@triton.jit functions are listed with a class guess; they are not emulated or drafted."},
		{kernels.CodeInternal, "kernel-analysis-failed", SevError, "Kernel analysis failed on this file",
			"The analysis met code it did not expect. The kernel (or Python file) is left out of the inventory and the " +
				"run continues. Please report it with the file."},
	}
}

// specSourceOf names where a discovered kernel's spec came from: a user spec
// file (the call sites the rewrite stage found, with the user's shapes),
// static inference, or nowhere. The capture stage replaces it with
// SpecTests when the repository's tests launched the kernel.
func specSourceOf(k *kernels.Kernel) string {
	switch {
	case k.Spec == nil:
		return SpecNone
	case k.SpecStatus == kernels.SpecCaptured:
		return SpecTests
	case k.SpecStatus == kernels.SpecUser:
		return SpecCallSites
	default:
		return SpecStatic
	}
}
