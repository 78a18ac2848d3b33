package pipeline

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/llm"
	"github.com/pallasify/pallasify/transforms/pallas"
	"github.com/pallasify/pallasify/transforms/repofs"
	"github.com/pallasify/pallasify/transforms/triton"
)

// The Triton kernel stages. The kernel inventory lists every @triton.jit
// function; TritonStage (run by KernelStage) finds each one's launches,
// wrapper and autograd.Function (transforms/triton), and drafts the launched
// ones by the Triton rules with the spec the translation infers from the
// kernel's accesses. The validate stage then runs the original under
// Triton's interpreter in the sandbox (the recorded launches are the
// kernel's captures), proves the draft against it with the numeric protocol
// and the TPU compile gate, and the wiring gives every launch of a proven
// kernel a TPU branch (transforms/triton/wire.go). PKN007 stays only on the
// kernels none of this applies to: @triton.jit functions no launch reaches.

// DrafterTritonRules names the Triton rule translator in reports.
const DrafterTritonRules = "triton-rules"

// TritonValidator is what the Triton stages need from the run's validator
// (draft.TritonValidator; validators.StageValidator implements it): run the
// original kernel under Triton's interpreter, and prove a candidate against
// it. TritonRun is what the interpreter did with the original on one case.
type (
	TritonValidator = draft.TritonValidator
	TritonRun       = draft.TritonRun
)

// TritonDraft is one launched Triton kernel: its spec and the kernel-mode
// call that runs the original (isolated from its file) under the
// interpreter, and the rule translator's candidate or refusal.
//
// Spec and Call are set whenever the kernel has a spec, whether or not the
// rules translate it: from the launches the repository's tests made
// (captured under the interpreter, spec source "tests"), else from the
// translation (source "static"). Refusal is only the rule translator's
// refusal (Candidate is then nil): a kernel with a Refusal and a Spec can
// still be drafted by another drafter and validated against the same
// reference.
type TritonDraft struct {
	Kernel    *triton.Kernel
	Spec      *kernels.Spec
	Call      triton.Call
	Candidate []byte
	Refusal   error
	// Mode and Block are the translation's shape (row or flat) and the
	// constexpr of its arange width.
	Mode, Block string
	// Free are the constexprs the candidate does not depend on.
	Free []string
	// Tiled: the kernel walks its rows in column tiles.
	Tiled bool
}

// TritonStage holds the Triton side of the kernel stages for one run.
type TritonStage struct {
	// Inventory is the last run's Triton discovery (nil before).
	Inventory *triton.Inventory
	// Mutate rewrites every Triton rule draft before validation. Tests only:
	// a broken rule draft is rejected and goes to the LLM drafter.
	Mutate func(module string) string

	// files are the walked Python files the discovery read (by path).
	files map[string][]byte

	// Drive, when set, drives the launchers of the kernels no test
	// captured (triton_drive.go).
	Drive *TritonDriveConfig

	mu     sync.Mutex
	drafts map[string]*TritonDraft // by kernel id
	proven []tritonProof
	driven map[string]bool // kernels whose spec driving gave
}

type tritonProof struct {
	id      string
	draft   *TritonDraft
	verdict *DraftVerdict
	// module is the proven candidate, drafter who drafted it.
	module, drafter string
}

// NewTritonStage returns the Triton stage state.
func NewTritonStage() *TritonStage { return &TritonStage{drafts: map[string]*TritonDraft{}} }

// Draft returns the kernel's Triton draft (nil for a kernel never launched).
func (s *TritonStage) Draft(id string) *TritonDraft {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.drafts[id]
}

// run discovers the Triton launches of the walked Python files and drafts
// every launched kernel of inv; a kernel gets its inferred spec, or the
// translator's refusal as its reason.
func (s *TritonStage) run(ctx context.Context, r *Run, inv *kernels.Inventory) {
	s.mu.Lock()
	s.drafts = map[string]*TritonDraft{}
	s.proven, s.driven = nil, nil
	s.mu.Unlock()
	any := false
	for _, k := range inv.Kernels {
		any = any || k.Origin == kernels.OriginTriton
	}
	if !any {
		return
	}
	files := map[string][]byte{}
	for _, f := range r.Files {
		if f.Generated || f.Skipped != "" || !strings.HasSuffix(f.Path, ".py") {
			continue
		}
		if b, err := repofs.ReadFile(r.Root, f.Path, DefaultMaxFileBytes); err == nil {
			files[f.Path] = b
		}
	}
	tinv, err := triton.DiscoverFiles(ctx, files)
	if err != nil {
		return
	}
	s.Inventory, s.files = tinv, files
	for _, k := range inv.Kernels {
		if k.Origin != kernels.OriginTriton {
			continue
		}
		tk := tinv.Kernel(k.Path, k.Name)
		if tk == nil || len(tk.Launches) == 0 {
			k.Reason = "never launched: no kernel[grid](...) call reaches it"
			if tk != nil && tinv.CalledFromKernels(tk) {
				k.Reason = "never launched: a @triton.jit helper, inlined into the kernels that call it"
			}
			continue
		}
		k.Launches = len(tk.Launches)
		d := &TritonDraft{Kernel: tk}
		a, src, err := triton.Translate(ctx, tinv, tk)
		if err == nil {
			d.Spec, d.Call, err = triton.Spec(a)
		}
		if err != nil {
			d.Refusal = err
			k.Reason = err.Error()
		} else {
			d.Call.Files = triton.Isolate(tinv, tk)
			d.Candidate, d.Mode, d.Block, d.Free, d.Tiled = src, a.Mode, a.Block, a.Free, a.ColumnTiles
			k.Spec, k.SpecStatus, k.Reason = d.Spec, kernels.SpecInferred, ""
		}
		s.mu.Lock()
		s.drafts[k.ID] = d
		s.mu.Unlock()
	}
}

// inventoryNote keeps PKN007 for the Triton kernels the stages do not take
// (never launched), saying so, and drops it for the others.
func (s *TritonStage) inventoryNote(p kernels.Problem, inv *kernels.Inventory) (kernels.Problem, bool) {
	if s == nil || p.Code != kernels.CodeInventory || s.Inventory == nil {
		return p, true
	}
	if s.Draft(p.Kernel) != nil {
		return p, false
	}
	if k := inv.Lookup(p.Kernel); k != nil && k.Reason != "" {
		p.Message = fmt.Sprintf("Triton kernel %s listed only: %s", k.Name, k.Reason)
	}
	return p, true
}

// emuStatus is a Triton kernel's emulator status before validation: its
// reference is Triton's interpreter, run by the validate stage.
func tritonEmuStatus(k *kernels.Kernel) string {
	if k.Spec == nil {
		return "unsupported: triton (" + firstField(k.Reason) + ")"
	}
	return "not-run"
}

func firstField(s string) string {
	if i := strings.IndexAny(s, ":"); i > 0 {
		return s[:i]
	}
	if s == "" {
		return "no draft"
	}
	return s
}

// TritonKernelDrafter is a drafter that also drafts Triton kernels from
// their Triton source (the LLM drafter, transforms/llm): the Triton stage
// hands it a kernel whose rule translation refused or whose rule draft was
// rejected.
type TritonKernelDrafter interface {
	KernelDrafter
	DraftTriton(ctx context.Context, k *kernels.Kernel, tk llm.TritonKernel, t draft.Turn) (*Candidate, error)
}

// tritonDrafter is a TritonKernelDrafter bound to one kernel: the repair
// loop's KernelDrafter for it.
type tritonDrafter struct {
	d  TritonKernelDrafter
	tk llm.TritonKernel
}

func (t tritonDrafter) Name() string         { return t.d.Name() }
func (t tritonDrafter) Budget() draft.Budget { return t.d.Budget() }
func (t tritonDrafter) Draft(ctx context.Context, k *kernels.Kernel, turn draft.Turn) (*Candidate, error) {
	return t.d.DraftTriton(ctx, k, t.tk, turn)
}

// tritonRules is the Triton rule translator in the repair loop: its one
// candidate is drafted at discovery (one round, no repair).
type tritonRules struct{}

func (tritonRules) Name() string         { return DrafterTritonRules }
func (tritonRules) Budget() draft.Budget { return draft.One }
func (tritonRules) Draft(context.Context, *kernels.Kernel, draft.Turn) (*Candidate, error) {
	return nil, fmt.Errorf("the Triton rules draft once, at discovery")
}

// tritonCheck proves a candidate of a Triton kernel against the original
// run by Triton's interpreter (the repair loop's validator for it).
type tritonCheck struct {
	tv   TritonValidator
	call triton.Call
}

func (c tritonCheck) Validate(ctx context.Context, k *kernels.Kernel, module []byte) (*DraftVerdict, error) {
	return c.tv.ValidateTriton(ctx, k, c.call, module)
}

// tritonLLMs are the run's drafters that draft Triton kernels, bound to d.
func (w *KernelWork) tritonLLMs(d *TritonDraft) []KernelDrafter {
	var out []KernelDrafter
	for _, kd := range w.drafters() {
		if td, ok := kd.(TritonKernelDrafter); ok {
			out = append(out, tritonDrafter{td, llm.TritonKernel{Inventory: w.Kernels.Triton.Inventory, Kernel: d.Kernel, Call: d.Call}})
		}
	}
	return out
}

// draftTriton is the draft stage for a Triton kernel: the rule draft made
// at discovery, or the reason there is none. A kernel the rules refused
// that has a spec (and so a reference to prove against) waits for the LLM
// drafter when one is configured: it drafts after the reference ran.
func (w *KernelWork) draftTriton(pk *Kernel, k *kernels.Kernel, st *kernelState) {
	ts := w.Kernels.Triton
	d := ts.Draft(k.ID)
	switch {
	case d == nil:
		pk.Draft.Verdict, pk.Draft.Reason = VerdictNotDrafted, kernels.CodeInventory+": "+k.Reason
	case d.Refusal != nil:
		pk.Draft.Verdict, pk.Draft.Reason = VerdictNotDrafted, d.Refusal.Error()
		st.pending = k.Spec != nil && d.Call.Entry != "" && len(w.tritonLLMs(d)) > 0
	default:
		mod := string(d.Candidate)
		if ts.Mutate != nil {
			mod = ts.Mutate(mod)
		}
		st.drafter = tritonRules{}
		st.cand = &Candidate{Drafter: DrafterTritonRules, Class: k.Class, Module: mod}
		pk.Draft.Drafter, pk.Draft.Rounds = DrafterTritonRules, 1
	}
}

// validateTriton runs the original under Triton's interpreter (the launches
// it records are the kernel's captures), then proves the rule draft against
// it; a refused or rejected rule draft goes to the LLM drafter (when one is
// configured) through the same repair loop as a CUDA kernel's, every
// candidate validated against the interpreter reference. Without a proof
// the reason is the rule refusal or verdict, then the LLM's. A proven draft
// waits for wireTriton.
func (w *KernelWork) validateTriton(ctx context.Context, k *kernels.Kernel, pk *Kernel, st *kernelState) error {
	t0 := time.Now()
	defer func() { pk.Draft.Duration = st.took + time.Since(t0) }()
	d := w.Kernels.Triton.Draft(k.ID)
	tv, ok := w.Validator.(TritonValidator)
	if !ok || d == nil {
		pk.Draft.Verdict, pk.Draft.Reason = VerdictError, "the validator of this run does not run Triton's interpreter"
		return nil
	}
	pr, err := tv.ProbeTriton(ctx, k, d.Call)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		pk.Draft.Verdict, pk.Draft.Reason = VerdictError, err.Error()
		return nil
	}
	// the launches the tests made count too (captured before validation)
	pk.Captured, pk.Emulated = max(pk.Captured, pr.Launches), pk.Emulated || pr.OK
	if pr.OK {
		pk.EmuStatus = "compiled" // run by Triton's interpreter: nothing to build
	} else {
		pk.EmuStatus = "unsupported: " + triton.CodeInterpreter
		pk.Draft.Verdict = VerdictError
		pk.Draft.Reason = triton.CodeInterpreter + ": Triton's interpreter did not run the original: " + pr.Error
		return nil
	}
	var history []string
	if st.cand == nil && d.Refusal != nil {
		history = append(history, DrafterTritonRules+": "+d.Refusal.Error())
	}
	proof, err := w.repair(ctx, k, pk, tritonCheck{tv, d.Call}, st.drafter, st.cand, w.tritonLLMs(d), history)
	if err != nil {
		return err
	}
	if proof != nil {
		ts := w.Kernels.Triton
		ts.mu.Lock()
		ts.proven = append(ts.proven, tritonProof{id: k.ID, draft: d, verdict: proof.Verdict,
			module: proof.Candidate.Module, drafter: proof.Candidate.Drafter})
		ts.mu.Unlock()
	}
	return nil
}

// wireTriton wires every proven Triton kernel at its launches: generated
// modules next to them, the launches given their TPU branch.
func (w *KernelWork) wireTriton(ctx context.Context, r *Run) error {
	ts := w.Kernels.Triton
	if ts == nil {
		return nil
	}
	ts.mu.Lock()
	proofs := append([]tritonProof(nil), ts.proven...)
	ts.mu.Unlock()
	if len(proofs) == 0 {
		return nil
	}
	sort.Slice(proofs, func(i, j int) bool { return proofs[i].id < proofs[j].id })
	byPath := map[string]*File{}
	for _, f := range r.Files {
		byPath[f.Path] = f
	}
	read := func(p string) ([]byte, bool) {
		if f := byPath[p]; f != nil && f.Updated != nil {
			return f.Updated, true
		}
		if _, ok := byPath[p]; !ok {
			return nil, false
		}
		b, err := repofs.ReadFile(r.Root, p, DefaultMaxFileBytes)
		return b, err == nil
	}
	var wks []triton.WireKernel
	for _, p := range proofs {
		wk := triton.WireKernel{Kernel: p.draft.Kernel, ID: p.id, Spec: p.draft.Spec, Call: p.draft.Call,
			Mode: p.draft.Mode, Block: p.draft.Block, Tiled: p.draft.Tiled, Drafter: p.drafter,
			Module: p.module, Verdict: verdictLine(p.verdict), Cases: p.verdict.Cases, TPU: p.verdict.Chips}
		if p.drafter == DrafterTritonRules {
			wk.Free = p.draft.Free // what the rule candidate does not read; another draft is checked on every constexpr
		}
		wks = append(wks, wk)
	}
	var py []string
	for _, f := range r.Files {
		if f.Lang == LangPython && f.Skipped == "" && !f.Generated && strings.HasSuffix(f.Path, ".py") {
			py = append(py, f.Path)
		}
	}
	files, wired, probs := triton.Wire(ctx, wks, read, py)
	applyWireFiles(r, byPath, read, files)
	for _, wd := range wired {
		for _, pk := range r.Kernels {
			if pk.ID == wd.Kernel && pk.Draft != nil {
				pk.Draft.Module = wd.Module
			}
		}
	}
	for _, pr := range probs {
		d := Diagnostic{Code: CodeNotWired, Severity: SevWarning, Path: pr.Path, Safety: "diagnostic",
			Message: fmt.Sprintf("kernel %s is proven but not wired in: %s", pr.Kernel, pr.Message)}
		if f := byPath[pr.Path]; f != nil {
			f.Diagnostics = append(f.Diagnostics, d)
		} else {
			r.Diagnostics = append(r.Diagnostics, d)
		}
	}
	return nil
}

// applyWireFiles puts wiring's files into the run: rewritten tree files
// keep their original, new ones are generated.
func applyWireFiles(r *Run, byPath map[string]*File, read func(string) ([]byte, bool), files []pallas.WireFile) {
	for _, wf := range files {
		if f := byPath[wf.Path]; f != nil {
			if f.Original == nil {
				orig, _ := read(wf.Path)
				f.Original = orig
			}
			f.Updated = wf.Content
			continue
		}
		f := &File{Path: wf.Path, Lang: langOf(wf.Path), Generated: true, Updated: wf.Content, Mode: 0o644,
			Bytes: int64(len(wf.Content)), Lines: countLines(wf.Content)}
		byPath[wf.Path] = f
		r.Files = append(r.Files, f)
	}
	sort.Slice(r.Files, func(i, j int) bool { return r.Files[i].Path < r.Files[j].Path })
}
