package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/pallas"
)

// Draft verdicts beyond the validator's (proven, rejected, error).
const (
	VerdictProven      = "proven"
	VerdictRejected    = "rejected"
	VerdictError       = "error"
	VerdictNotDrafted  = "not-drafted"
	VerdictNeedsLLM    = "needs-llm"
	VerdictNeedsSpec   = "needs-spec"
	VerdictUnvalidated = "unvalidated"
)

// Codes of the kernel draft stages (PDR family).
const (
	CodeDraftProven   = "PDR001" // a draft was proven and wired in (info)
	CodeDraftRejected = "PDR002" // every draft was rejected by the validator (warning)
	CodeNotDrafted    = "PDR003" // no drafter could draft the kernel (info)
	CodeNotWired      = "PDR004" // proven, but the Python call site could not be rewritten (warning)
	CodeDraftError    = "PDR005" // drafting or validation failed to run (error)
)

// Candidate is one drafted Pallas module for a kernel.
type Candidate struct {
	Drafter string   // rules, llm, ...
	Class   string   // the class the draft was made for
	Module  string   // candidate module source (validators/CONTRACTS.md)
	Notes   []string // translation remarks
	Tokens  int      // LLM usage, when any
	Calls   int
}

// Feedback is the validator's verdict on the previous candidate, given to a
// drafter that drafts again (an LLM repair round).
type Feedback struct {
	Round    int
	Previous *Candidate
	Verdict  *DraftVerdict
}

// KernelDrafter drafts Pallas candidates. Draft is called with nil feedback
// first and, while Rounds allows, again with the verdict of its previous
// candidate. A *pallas.Refusal (or any error wrapping one) means "cannot
// draft this kernel", and the next drafter is tried.
type KernelDrafter interface {
	Name() string
	Rounds() int
	Draft(ctx context.Context, k *kernels.Kernel, fb *Feedback) (*Candidate, error)
}

// DraftVerdict is what the validator said about one candidate.
type DraftVerdict struct {
	Verdict  string // proven, rejected, error
	Reason   string
	Stats    ErrorStats
	Shapes   []string
	Summary  string // the validator's human summary
	Duration time.Duration
	// TPU is the TPU compile gate's result per chip (nil when it did not run).
	TPU map[string]bool
	// Chips is the TPU compile gate's full record per chip, written into the
	// wired module's PALLASIFY_KERNEL header (nil when the gate did not run).
	Chips map[string]pallas.ChipCompile
	// Cases are the proven size assignments with the scalar values the
	// harness used; the wired module's header quotes one of them.
	Cases []pallas.ValidatedCase
}

// KernelValidator proves a candidate against the original kernel
// (validators.StageValidator is the real one).
type KernelValidator interface {
	Validate(ctx context.Context, k *kernels.Kernel, module []byte) (*DraftVerdict, error)
}

// RuleDrafter is the built-in drafter: transforms/pallas rules.
type RuleDrafter struct {
	// Mutate rewrites every drafted module before validation. Tests only: it
	// shows that a broken translation is never wired in.
	Mutate func(module string) string
}

// Name implements KernelDrafter.
func (RuleDrafter) Name() string { return pallas.DrafterRules }

// Rounds implements KernelDrafter: rules draft once.
func (RuleDrafter) Rounds() int { return 1 }

// Draft implements KernelDrafter.
func (d RuleDrafter) Draft(ctx context.Context, k *kernels.Kernel, fb *Feedback) (*Candidate, error) {
	res, err := pallas.Draft(ctx, k, pallas.Options{Mutate: d.Mutate})
	if err != nil {
		return nil, err
	}
	return &Candidate{Drafter: pallas.DrafterRules, Class: res.Class, Module: res.Module, Notes: res.Notes}, nil
}

// KernelWork is what the draft and validate stages share: the inventory,
// the drafters, the validator, and each kernel's candidates and verdicts.
type KernelWork struct {
	Kernels   *KernelStage
	Drafters  []KernelDrafter // tried in order; nil: the rule drafter only
	Validator KernelValidator // nil: drafts stay unvalidated and are never wired
	// Wire generates the Pallas module and the device dispatch for every
	// proven kernel (migrate); analyze leaves it off.
	Wire bool
	// Concurrency bounds validations at once (default 2).
	Concurrency int
	// LLMHint is the one-line fix shown for kernels only an LLM could draft
	// when no LLM drafter is configured.
	LLMHint string

	mu     sync.Mutex
	state  map[string]*kernelState
	proven []*Proof
}

type kernelState struct {
	drafter KernelDrafter
	next    int // index of the first drafter after drafter in w.drafters()
	cand    *Candidate
	refusal string
	start   time.Time
	took    time.Duration
}

// Proof is a proven draft, ready to wire.
type Proof struct {
	Kernel    *kernels.Kernel
	Candidate *Candidate
	Verdict   *DraftVerdict
	Rounds    int
}

// Proven returns the proven drafts after the validate stage, by kernel id.
func (w *KernelWork) Proven() []*Proof {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*Proof(nil), w.proven...)
}

// NewKernelWork returns the shared state of the kernel stages with the
// kernel inventory stage it reads from.
func NewKernelWork(v KernelValidator, drafters ...KernelDrafter) *KernelWork {
	return &KernelWork{Kernels: NewKernelStage(), Validator: v, Drafters: drafters}
}

// Install sets opts' Discover, Draft and Validate stages to this work.
func (w *KernelWork) Install(opts *Options) {
	opts.Discover = w.Kernels
	opts.Draft = draftStage{w}
	opts.Validate = validateStage{w}
}

func (w *KernelWork) drafters() []KernelDrafter {
	if len(w.Drafters) == 0 {
		return []KernelDrafter{RuleDrafter{}}
	}
	return w.Drafters
}

type draftStage struct{ w *KernelWork }
type validateStage struct{ w *KernelWork }

func (draftStage) Name() string    { return StageDraft }
func (validateStage) Name() string { return StageValidate }

// Run drafts every kernel with a spec: the first drafter that does not
// refuse wins. Kernels nobody can draft get their verdict here.
func (s draftStage) Run(ctx context.Context, r *Run) error {
	w := s.w
	w.mu.Lock()
	w.state = map[string]*kernelState{}
	w.proven = nil
	w.mu.Unlock()
	for _, pk := range r.Kernels {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := w.Kernels.Lookup(pk.ID)
		st := &kernelState{start: time.Now()}
		pk.Draft = &Draft{Drafter: "none"}
		switch {
		case k == nil:
			pk.Draft.Verdict, pk.Draft.Reason = VerdictNotDrafted, "kernel analysis did not keep this kernel"
		case k.Origin == kernels.OriginTriton && w.Kernels.Triton != nil:
			w.draftTriton(pk, k, st)
		case k.Origin == kernels.OriginTriton:
			pk.Draft.Verdict, pk.Draft.Reason = VerdictNotDrafted, "Triton kernels are listed only (inventory)"
		case k.Spec == nil:
			pk.Draft.Verdict = VerdictNeedsSpec
			pk.Draft.Reason = fmt.Sprintf("no KernelSpec (%s): write %s", k.Reason, kernels.UserSpecPath(k.ID))
		default:
			var reasons []string
			for i, d := range w.drafters() {
				c, err := d.Draft(ctx, k, nil)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					reasons = append(reasons, d.Name()+": "+err.Error())
					continue
				}
				st.drafter, st.cand, st.next = d, c, i+1
				pk.Draft.Drafter = d.Name()
				pk.Draft.Rounds = 1
				pk.Draft.Tokens, pk.Draft.Calls = c.Tokens, c.Calls
				break
			}
			if st.cand == nil {
				st.refusal = strings.Join(reasons, "; ")
				pk.Draft.Verdict, pk.Draft.Reason = VerdictNotDrafted, st.refusal
				if !w.hasLLM() {
					pk.Draft.Verdict = VerdictNeedsLLM
					hint := w.LLMHint
					if hint == "" {
						hint = "configure an LLM drafter (--llm-base-url/--llm-model) to draft it"
					}
					pk.Draft.Reason = st.refusal + " — " + hint
				}
			}
		}
		st.took = time.Since(st.start)
		pk.Draft.Duration = st.took
		w.mu.Lock()
		w.state[pk.ID] = st
		w.mu.Unlock()
	}
	return nil
}

func (w *KernelWork) hasLLM() bool {
	for _, d := range w.drafters() {
		if d.Name() != pallas.DrafterRules {
			return true
		}
	}
	return false
}

// Run validates every drafted kernel (drafting again with feedback while
// the drafter has rounds left), records verdicts, and wires proven drafts.
func (s validateStage) Run(ctx context.Context, r *Run) error {
	w := s.w
	limit := w.Concurrency
	if limit <= 0 {
		limit = 2
	}
	p := pool.New().WithContext(ctx).WithMaxGoroutines(limit)
	for _, pk := range r.Kernels {
		w.mu.Lock()
		st := w.state[pk.ID]
		w.mu.Unlock()
		if st == nil || st.cand == nil {
			continue
		}
		if w.Validator == nil {
			pk.Draft.Verdict, pk.Draft.Reason = VerdictUnvalidated, "no validator in this run: drafts are never wired unproven"
			continue
		}
		k := w.Kernels.Lookup(pk.ID)
		if k.Origin == kernels.OriginTriton {
			p.Go(func(ctx context.Context) error { return w.validateTriton(ctx, k, pk, st) })
			continue
		}
		p.Go(func(ctx context.Context) error {
			return w.validateKernel(ctx, k, pk, st)
		})
	}
	if err := p.Wait(); err != nil {
		return err
	}
	if w.Wire {
		if err := w.wire(ctx, r); err != nil {
			return err
		}
		if err := w.wireTriton(ctx, r); err != nil {
			return err
		}
	}
	for _, pk := range r.Kernels {
		if pk.Draft == nil {
			continue
		}
		addKernelDiag(r, pk)
	}
	return nil
}

// validateKernel proves the drafted candidate, drafting again with the
// validator's feedback while the drafter has rounds left. When a drafter's
// rounds are spent without a proof, the next drafter in line (the LLM after
// the rules) gets its turn, so a rejected rule draft does not end the search.
func (w *KernelWork) validateKernel(ctx context.Context, k *kernels.Kernel, pk *Kernel, st *kernelState) error {
	t0 := time.Now()
	ds := w.drafters()
	d, cand := st.drafter, st.cand
	var history []string
	i := st.next
	for {
		proven, err := w.rounds(ctx, k, pk, d, cand)
		if err != nil {
			return err
		}
		if proven {
			break
		}
		history = append(history, d.Name()+": "+pk.Draft.Reason)
		cand = nil
		for cand == nil && i < len(ds) {
			nd := ds[i]
			i++
			c, err := nd.Draft(ctx, k, nil)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				history = append(history, nd.Name()+": "+err.Error())
				continue
			}
			d, cand = nd, c
			pk.Draft.Drafter = d.Name()
			pk.Draft.Tokens += c.Tokens
			pk.Draft.Calls += c.Calls
		}
		if cand == nil {
			break
		}
	}
	if pk.Draft.Verdict != VerdictProven && len(history) > 1 {
		pk.Draft.Reason = strings.Join(history, "; ")
	}
	pk.Draft.Duration = st.took + time.Since(t0)
	return nil
}

// rounds validates cand and lets d repair it while it has rounds left.
func (w *KernelWork) rounds(ctx context.Context, k *kernels.Kernel, pk *Kernel, d KernelDrafter, cand *Candidate) (bool, error) {
	rounds := max(1, d.Rounds())
	for round := 1; ; round++ {
		v, err := w.Validator.Validate(ctx, k, []byte(cand.Module))
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			pk.Draft.Verdict, pk.Draft.Reason = VerdictError, err.Error()
			return false, nil
		}
		pk.Draft.Rounds = round
		pk.Draft.Verdict, pk.Draft.Reason = v.Verdict, v.Reason
		stats := v.Stats
		pk.Draft.Stats = &stats
		pk.Draft.Shapes = v.Shapes
		pk.TPUCompiled = v.TPU
		if v.Verdict == VerdictProven {
			w.mu.Lock()
			w.proven = append(w.proven, &Proof{Kernel: k, Candidate: cand, Verdict: v, Rounds: round})
			w.mu.Unlock()
			return true, nil
		}
		if round >= rounds {
			return false, nil
		}
		next, err := d.Draft(ctx, k, &Feedback{Round: round + 1, Previous: cand, Verdict: v})
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			pk.Draft.Reason = v.Reason + "; next draft failed: " + err.Error()
			return false, nil
		}
		pk.Draft.Tokens += next.Tokens
		pk.Draft.Calls += next.Calls
		cand = next
	}
}

func addKernelDiag(r *Run, pk *Kernel) {
	d := Diagnostic{Path: pk.Path, Line: pk.Line, Safety: "diagnostic"}
	switch pk.Draft.Verdict {
	case VerdictProven:
		d.Code, d.Severity = CodeDraftProven, SevInfo
		d.Message = fmt.Sprintf("kernel %s: Pallas draft (%s) proven by the validator", pk.Name, pk.Draft.Drafter)
		if pk.Draft.Module != "" {
			d.Applied, d.Safety, d.Fix = true, "safe", "wire the proven Pallas kernel: "+pk.Draft.Module
		}
		if s := pk.Draft.Stats; s != nil {
			d.Message += fmt.Sprintf(" over %d cases (max abs %.3g, ULP max %.0f)", s.Cases, s.MaxAbs, s.ULPMax)
		}
	case VerdictRejected:
		d.Code, d.Severity = CodeDraftRejected, SevWarning
		d.Message = fmt.Sprintf("kernel %s: Pallas draft (%s) rejected, not wired in: %s", pk.Name, pk.Draft.Drafter, pk.Draft.Reason)
	case VerdictError:
		d.Code, d.Severity = CodeDraftError, SevError
		d.Message = fmt.Sprintf("kernel %s: validation could not run: %s", pk.Name, pk.Draft.Reason)
	default:
		d.Code, d.Severity = CodeNotDrafted, SevInfo
		d.Message = fmt.Sprintf("kernel %s: not drafted (%s): %s", pk.Name, pk.Draft.Verdict, pk.Draft.Reason)
	}
	for _, f := range r.Files {
		if f.Path == pk.Path {
			f.Diagnostics = append(f.Diagnostics, d)
			return
		}
	}
	r.Diagnostics = append(r.Diagnostics, d)
}

// DraftCodes documents the PDR family (draft and validate stages); the PPL
// family (why the rule drafter refused a kernel) is transforms/pallas's.
func DraftCodes() []CodeDoc {
	return []CodeDoc{
		{CodeDraftProven, "draft-proven", SevInfo, "A Pallas draft of a kernel was proven",
			"The draft passed the numeric validation protocol against the original CUDA kernel (run on the CPU " +
				"emulator): every shape, seed and distribution within tolerance, poisoned outputs written, inputs untouched, " +
				"deterministic. Under migrate it is wired in: a generated module next to the kernel's Python entry point and a " +
				"device dispatch at the call site (tpu → Pallas, anything else → the original path)."},
		{CodeDraftRejected, "draft-rejected", SevWarning, "Every Pallas draft of a kernel was rejected",
			"The validator found a difference (the reason code names it). A rejected draft is never written to the tree; " +
				"the kernel keeps its CUDA path and is listed in the report."},
		{CodeNotDrafted, "not-drafted", SevInfo, "No drafter could draft the kernel",
			"Rules draft elementwise maps and one-block-per-row reductions; other classes (matmul tiles, scans, " +
				"histograms, stencils, transposes) or constructs the translator cannot express exactly are refused with a " +
				"PPL code. An LLM drafter, when configured, gets those kernels."},
		{CodeNotWired, "not-wired", SevWarning, "A proven kernel could not be wired into the Python code",
			"The Pallas draft is proven but pallasify could not map the Python call of the extension to the kernel's " +
				"parameters, or could not find the call site. The generated module is not written; call its JAX function yourself."},
		{CodeDraftError, "draft-error", SevError, "Drafting or validation could not run",
			"The validator could not run (no sandbox, no Python with the pinned jax, a reference that does not build). " +
				"Run `pallasify doctor`."},
	}
}

func sortedProofs(ps []*Proof) []*Proof {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Kernel.ID < ps[j].Kernel.ID })
	return ps
}

// wire writes proven kernels into the run: generated modules next to the
// Python call sites and the rewritten calls (tpu → Pallas, else unchanged).
func (w *KernelWork) wire(ctx context.Context, r *Run) error {
	proofs := sortedProofs(w.Proven())
	if len(proofs) == 0 {
		return nil
	}
	byPath := map[string]*File{}
	var py []string
	for _, f := range r.Files {
		byPath[f.Path] = f
		if f.Lang == LangPython && f.Skipped == "" {
			py = append(py, f.Path)
		}
	}
	read := func(p string) ([]byte, bool) {
		if f := byPath[p]; f != nil && f.Updated != nil {
			return f.Updated, true
		}
		if _, ok := byPath[p]; !ok {
			return nil, false
		}
		b, err := readLimited(filepath.Join(r.Root, filepath.FromSlash(p)), DefaultMaxFileBytes)
		return b, err == nil
	}
	var wks []pallas.WireKernel
	for _, p := range proofs {
		wks = append(wks, pallas.WireKernel{Kernel: p.Kernel, Module: p.Candidate.Module, Drafter: p.Candidate.Drafter,
			Verdict: verdictLine(p.Verdict), Cases: p.Verdict.Cases, TPU: p.Verdict.Chips})
	}
	files, wired, probs := pallas.Wire(ctx, wks, read, py)
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

func verdictLine(v *DraftVerdict) string {
	s := v.Stats
	return fmt.Sprintf("PROVEN over %d cases (%s): max abs %.3g, max rel %.3g, ULP p99 %.0f max %.0f, mismatches %d",
		s.Cases, strings.Join(v.Shapes, " "), s.MaxAbs, s.MaxRel, s.ULPP99, s.ULPMax, s.Mismatches)
}
