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
	inv, probs := kernels.DiscoverScanned(ctx, r.Root, files, func(rel string) bool { return byPath[rel].mayHoldKernels() },
		func(rel string) *kernels.PythonScan { return byPath[rel].kernelScanned() })
	for _, f := range r.Files {
		f.kernelPy = nil
	}
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
		if s.Triton != nil {
			for id, kc := range s.Triton.capture(ctx, s.Capture, inv) {
				caps[id] = kc
			}
		}
	}
	if s.Triton != nil {
		for id, kc := range s.Triton.drive(ctx, inv, caps) { // launchers driven, without tests
			if caps == nil {
				caps = map[string]*KernelCapture{}
			}
			caps[id] = kc
		}
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
			if kc.Driven {
				pk.SpecSource = SpecDriven // the op driver's launches, not the tests'
			}
		}
		switch {
		case k.Origin == kernels.OriginTriton && s.Triton != nil:
			pk.SpecSource, pk.EmuStatus = s.Triton.specSource(k), tritonEmuStatus(k)
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
		if staleSpecRequest(p, inv) {
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

// staleSpecRequest: discovery asked for a spec (PKN002) that the capture
// stage then gave the kernel from its tests; the report must not say the
// kernel still needs one.
func staleSpecRequest(p kernels.Problem, inv *kernels.Inventory) bool {
	k := inv.Lookup(p.Kernel)
	return p.Code == kernels.CodeNeedsSpec && k != nil && k.Spec != nil
}
