package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/pallas"
	"github.com/pallasify/pallasify/transforms/repofs"
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

// The drafters' contract (transforms/draft), as the stages name it.
type (
	// Candidate is one drafted Pallas module for a kernel.
	Candidate = draft.Candidate
	// KernelDrafter drafts Pallas candidates turn by turn (draft.Drafter).
	KernelDrafter = draft.Drafter
	// DraftVerdict is what the validator said about one candidate.
	DraftVerdict = draft.Verdict
	// KernelValidator proves a candidate against the original kernel
	// (validators.StageValidator is the real one).
	KernelValidator = draft.Validator
)

// RuleDrafter is the built-in drafter: transforms/pallas rules.
type RuleDrafter struct {
	// Mutate rewrites every drafted module before validation. Tests only: it
	// shows that a broken translation is never wired in.
	Mutate func(module string) string
}

// Name implements KernelDrafter.
func (RuleDrafter) Name() string { return pallas.DrafterRules }

// Budget implements KernelDrafter: rules draft once (a rejected rule draft
// has no repair; the next drafter gets the kernel).
func (RuleDrafter) Budget() draft.Budget { return draft.One }

// Draft implements KernelDrafter.
func (d RuleDrafter) Draft(ctx context.Context, k *kernels.Kernel, _ draft.Turn) (*Candidate, error) {
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
	// Gate checks untrusted candidates (an LLM's) before the validator runs
	// them (validators.Gate); nil: they go to the validator unchecked.
	Gate draft.Gate
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
	// pending: no round-1 candidate yet, the validate stage drafts one (a
	// Triton kernel the rules refused goes to the LLM after its reference ran).
	pending bool
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
			if err := w.firstDraft(ctx, k, pk, st); err != nil {
				return err
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

// firstDraft drafts round 1 of k: the first drafter that does not refuse
// wins; when all refuse, the kernel gets its verdict here.
func (w *KernelWork) firstDraft(ctx context.Context, k *kernels.Kernel, pk *Kernel, st *kernelState) error {
	var reasons []string
	for i, d := range w.drafters() {
		c, err := d.Draft(ctx, k, draft.Turn{Round: 1})
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
		addUsage(pk.Draft, c)
		return nil
	}
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
	return nil
}

// DraftKernel drafts and proves one kernel with the stages' drafters, gate
// and validator outside a run: round 1 by the first drafter that does not
// refuse, then the repair loop. A proof lands in Proven(); nothing is wired.
func (w *KernelWork) DraftKernel(ctx context.Context, k *kernels.Kernel) (*Draft, error) {
	pk := &Kernel{ID: k.ID, Name: k.Name, Path: k.Path, Draft: &Draft{Drafter: "none"}}
	st := &kernelState{start: time.Now()}
	if err := w.firstDraft(ctx, k, pk, st); err != nil {
		return nil, err
	}
	st.took = time.Since(st.start)
	pk.Draft.Duration = st.took
	if st.cand == nil {
		return pk.Draft, nil
	}
	if w.Validator == nil {
		pk.Draft.Verdict, pk.Draft.Reason = VerdictUnvalidated, "no validator: drafts are never wired unproven"
		return pk.Draft, nil
	}
	if err := w.validateKernel(ctx, k, pk, st); err != nil {
		return nil, err
	}
	return pk.Draft, nil
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
		if st == nil || st.cand == nil && !st.pending {
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

// validateKernel runs the repair loop for a drafted kernel; the draft stage
// owns it for every drafter. The drafter's samples (round 1 of sample 0 was
// drafted by the draft stage) go through the gate and the validator; a
// failure goes back to the drafter as the next round's feedback while its
// budget allows, and the first proven candidate wins. When a drafter's
// budget is spent without a proof, the next drafter in line (the LLM after
// the rules) gets its turn, so a rejected rule draft does not end the search.
func (w *KernelWork) validateKernel(ctx context.Context, k *kernels.Kernel, pk *Kernel, st *kernelState) error {
	t0 := time.Now()
	proof, err := w.repair(ctx, k, pk, w.Validator, st.drafter, st.cand, w.drafters()[st.next:], nil)
	if err != nil {
		return err
	}
	if proof == nil && k.UseNarrow() {
		// not proven at the shapes the host function's sizes added (a
		// mismatch there, or the time limit): the spec of the shapes the
		// tests launched, drafted again, keeps their guard (its shapes are
		// what the report lists)
		if proof, err = w.repair(ctx, k, pk, w.Validator, nil, nil, w.drafters(), nil); err != nil {
			return err
		}
	}
	if proof != nil {
		w.mu.Lock()
		w.proven = append(w.proven, proof)
		w.mu.Unlock()
	}
	pk.Draft.Duration = st.took + time.Since(t0)
	return nil
}

// repair is the search over drafters: d's candidate cand (nil: none yet)
// through its samples and rounds, checked by v, then each drafter of next
// in turn from its round 1. It returns the first proof; without one, the
// kernel's reason is every drafter's outcome in order (history holds the
// ones before d: a rule refusal).
func (w *KernelWork) repair(ctx context.Context, k *kernels.Kernel, pk *Kernel, v KernelValidator, d KernelDrafter,
	cand *Candidate, next []KernelDrafter, history []string) (*Proof, error) {
	for i := 0; ; {
		if cand != nil {
			proof, err := w.search(ctx, k, pk, v, d, cand)
			if err != nil || proof != nil {
				return proof, err
			}
			history = append(history, d.Name()+": "+pk.Draft.Reason)
			cand = nil
		}
		for cand == nil && i < len(next) {
			nd := next[i]
			i++
			c, err := nd.Draft(ctx, k, draft.Turn{Round: 1})
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				history = append(history, nd.Name()+": "+err.Error())
				continue
			}
			d, cand = nd, c
			pk.Draft.Drafter = d.Name()
			addUsage(pk.Draft, c)
		}
		if cand == nil {
			break
		}
	}
	if len(history) > 1 {
		pk.Draft.Reason = strings.Join(history, "; ")
	}
	return nil, nil
}

func addUsage(d *Draft, c *Candidate) {
	d.Tokens += c.Tokens
	d.Calls += c.Calls
	d.CostUSD += c.CostUSD
}

// sampleResult is how one sample of a drafter ended.
type sampleResult struct {
	verdict, reason string
	rounds          int
	v               *DraftVerdict
	proof           *Proof
	usage           Draft // Tokens, Calls, CostUSD of the turns after the first
}

// search runs d's samples on k (first is sample 0's round-1 candidate),
// Parallel at once, each candidate checked by v; the first proven sample
// stops the others. It records the outcome on pk.Draft and returns the
// proof (nil: none proven).
func (w *KernelWork) search(ctx context.Context, k *kernels.Kernel, pk *Kernel, v KernelValidator, d KernelDrafter, first *Candidate) (*Proof, error) {
	b := d.Budget()
	b.Samples, b.Rounds, b.Parallel = max(1, b.Samples), max(1, b.Rounds), max(1, b.Parallel)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]*sampleResult, b.Samples)
	p := pool.New().WithMaxGoroutines(b.Parallel)
	for s := range b.Samples {
		var c *Candidate
		if s == 0 {
			c = first
		}
		p.Go(func() {
			r := w.sample(sctx, k, v, d, s, b.Rounds, c)
			results[s] = r
			if r.proof != nil {
				cancel() // first proven wins: stop the other samples
			}
		})
	}
	p.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var best *sampleResult
	for _, r := range results {
		addUsage(pk.Draft, &Candidate{Tokens: r.usage.Tokens, Calls: r.usage.Calls, CostUSD: r.usage.CostUSD})
		switch {
		case best == nil, r.proof != nil && best.proof == nil:
			best = r
		case best.proof != nil:
		case r.verdict == VerdictRejected && best.verdict != VerdictRejected:
			best = r
		case r.verdict == best.verdict && r.rounds > best.rounds:
			best = r
		}
	}
	pk.Draft.Rounds = best.rounds
	pk.Draft.Verdict, pk.Draft.Reason = best.verdict, best.reason
	if v := best.v; v != nil {
		stats := v.Stats
		pk.Draft.Stats = &stats
		pk.Draft.Shapes = v.Shapes
		pk.Draft.Cases = v.Results
		pk.TPUCompiled = v.TPU
	}
	return best.proof, nil
}

// sample runs one sample's rounds: cand (nil: drafted here) is checked; a
// failure is fed back to d for the next round, while rounds remain.
func (w *KernelWork) sample(ctx context.Context, k *kernels.Kernel, v KernelValidator, d KernelDrafter, s, rounds int, cand *Candidate) *sampleResult {
	r := &sampleResult{verdict: VerdictRejected}
	var prev *Candidate
	var fb *draft.Feedback
	for round := 1; round <= rounds; round++ {
		r.rounds = round
		if cand == nil {
			c, err := d.Draft(ctx, k, draft.Turn{Sample: s, Round: round, Previous: prev, Feedback: fb})
			if err != nil {
				switch {
				case ctx.Err() != nil:
					r.verdict, r.reason = VerdictError, "cancelled"
				case round == 1:
					r.verdict, r.reason = VerdictError, err.Error()
				default:
					r.reason += "; next draft failed: " + err.Error()
				}
				return r
			}
			addUsage(&r.usage, c)
			cand = c
		}
		var stop bool
		fb, stop = w.check(ctx, k, v, round, cand, r)
		if stop {
			return r
		}
		prev, cand = cand, nil
	}
	if rounds > 1 {
		r.reason = fmt.Sprintf("%s (after %d rounds)", r.reason, r.rounds)
	}
	return r
}

// check gates (when untrusted) and validates one candidate with v, recording
// the outcome on r; it returns the feedback for the next round, or stop when
// another round cannot help (proven, or the validator could not decide).
func (w *KernelWork) check(ctx context.Context, k *kernels.Kernel, val KernelValidator, round int, c *Candidate, r *sampleResult) (*draft.Feedback, bool) {
	if c.Unreadable != "" {
		r.verdict, r.reason = VerdictRejected, CodeLLMUnreadable+": "+c.Unreadable
		return &draft.Feedback{Kind: draft.KindUnreadable, Detail: c.Unreadable}, false
	}
	if c.Untrusted && w.Gate != nil {
		problems, err := w.Gate.Check(ctx, []byte(c.Module), c.Class, k.Name)
		if err != nil {
			r.verdict, r.reason = VerdictError, "static gate could not run: "+err.Error()
			if ctx.Err() != nil {
				r.reason = "cancelled"
			}
			return nil, true
		}
		if problems != "" {
			first, _, _ := strings.Cut(problems, "\n")
			r.verdict, r.reason = VerdictRejected, CodeLLMGate+": "+first
			return &draft.Feedback{Kind: draft.KindGate, Detail: problems}, false
		}
	}
	v, err := val.Validate(ctx, k, []byte(c.Module))
	if err != nil {
		r.verdict, r.reason = VerdictError, err.Error()
		if ctx.Err() != nil {
			r.reason = "cancelled"
		}
		return nil, true
	}
	r.v, r.verdict, r.reason = v, v.Verdict, v.Reason
	switch v.Verdict {
	case VerdictProven:
		r.proof = &Proof{Kernel: k, Candidate: c, Verdict: v, Rounds: round}
		return nil, true
	case VerdictError:
		// The validator could not decide (reference failed, degenerate test):
		// not the draft's fault, and another round cannot help.
		return nil, true
	}
	if v.Feedback != nil {
		return v.Feedback, false
	}
	return &draft.Feedback{Kind: draft.KindVerdict, Reason: v.Reason}, false
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
	var py, srcs []string
	for _, f := range r.Files {
		byPath[f.Path] = f
		switch {
		case f.Lang == LangPython && f.Skipped == "":
			py = append(py, f.Path)
		case f.Lang != LangPython && f.Lang != LangNotebook && f.Skipped == "":
			srcs = append(srcs, f.Path)
		}
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
	var wks []pallas.WireKernel
	for _, p := range proofs {
		wks = append(wks, pallas.WireKernel{Kernel: p.Kernel, Module: p.Candidate.Module, Drafter: p.Candidate.Drafter,
			Verdict: verdictLine(p.Verdict), Cases: p.Verdict.Cases, TPU: p.Verdict.Chips})
	}
	files, wired, probs := pallas.Wire(ctx, wks, read, py, srcs)
	applyWireFiles(r, byPath, read, files)
	for _, wd := range wired {
		for _, pk := range r.Kernels {
			if pk.ID == wd.Kernel && pk.Draft != nil {
				pk.Draft.Module = wd.Module
			}
		}
	}
	unmarkWired(r)
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

// customKernelMark is the --mark comment of the custom-kernel rule, and
// markContinuation starts each further line of a mark the rule engine
// wrapped at the line limit.
const (
	customKernelMark = "# pallasify: PDX006 "
	markContinuation = "#   "
)

// unmarkWired takes the --mark comment of the custom-kernel rule out of the
// Python files whose kernels the stages replaced (proven and wired: every
// kernel of the run, or every kernel defined in the file, as the report
// counts the site replaced): nothing is left to a human there.
func unmarkWired(r *Run) {
	wired := func(k *Kernel) bool {
		return k.Draft != nil && k.Draft.Verdict == VerdictProven && k.Draft.Module != ""
	}
	all := len(r.Kernels) > 0
	inFile := map[string]bool{}
	for _, k := range r.Kernels {
		w := wired(k)
		all = all && w
		if v, seen := inFile[k.Path]; seen {
			inFile[k.Path] = v && w
		} else {
			inFile[k.Path] = w
		}
	}
	for _, f := range r.Files {
		if f.Lang != LangPython || f.Updated == nil || !(all || inFile[f.Path]) || !bytes.Contains(f.Updated, []byte(customKernelMark)) {
			continue
		}
		lines := bytes.SplitAfter(f.Updated, []byte("\n"))
		out := make([]byte, 0, len(f.Updated))
		inMark := false // in a wrapped mark: its further lines go with it
		for _, l := range lines {
			code := bytes.TrimLeft(l, " \t")
			if bytes.HasPrefix(code, []byte(customKernelMark)) || inMark && bytes.HasPrefix(code, []byte(markContinuation)) {
				inMark = true
				continue
			}
			inMark = false
			out = append(out, l...)
		}
		f.Updated = out
	}
}

func verdictLine(v *DraftVerdict) string {
	s := v.Stats
	return fmt.Sprintf("PROVEN over %d cases (%s): max abs %.3g, max rel %.3g, ULP p99 %.0f max %.0f, mismatches %d",
		s.Cases, strings.Join(v.Shapes, " "), s.MaxAbs, s.MaxRel, s.ULPP99, s.ULPMax, s.Mismatches)
}
