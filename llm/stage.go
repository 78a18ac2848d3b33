package llm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators"
)

// DrafterName is the drafter name recorded with LLM drafts.
const DrafterName = "llm"

// StageDrafter plugs the LLM drafter into the pipeline's draft stage
// (pipeline.KernelDrafter). It runs the whole repair loop — static gate,
// validator, feedback, best-of-k, cache — inside its first Draft call and
// returns the proven module (or the last rejected one, which the validate
// stage then rejects again from the verdict cache); Rounds is therefore 1.
type StageDrafter struct {
	Drafter *Drafter
	Root    string
	// Validation tunes the validator runs inside the loop (sandbox, seeds,
	// verdict cache).
	Validation validators.Options

	mu       sync.Mutex
	outcomes map[string]*Outcome
}

var _ pipeline.KernelDrafter = (*StageDrafter)(nil)

// Name implements pipeline.KernelDrafter.
func (s *StageDrafter) Name() string { return DrafterName }

// Rounds implements pipeline.KernelDrafter: repairs happen inside Draft.
func (s *StageDrafter) Rounds() int { return 1 }

// Outcome returns the loop's outcome for a kernel id (rounds, usage,
// attempts), once Draft ran.
func (s *StageDrafter) Outcome(id string) *Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outcomes[id]
}

// Draft implements pipeline.KernelDrafter.
func (s *StageDrafter) Draft(ctx context.Context, k *kernels.Kernel, fb *pipeline.Feedback) (*pipeline.Candidate, error) {
	if fb != nil {
		return nil, errors.New("llm: repairs run inside the first draft call")
	}
	if k.Spec == nil {
		return nil, fmt.Errorf("llm: no KernelSpec: write %s", kernels.UserSpecPath(k.ID))
	}
	validate, cleanup, err := KernelValidation(ctx, k, s.Validation)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	o, err := s.Drafter.Draft(ctx, Job{Kernel: FromKernel(s.Root, k), Validate: validate})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.outcomes == nil {
		s.outcomes = map[string]*Outcome{}
	}
	s.outcomes[k.ID] = o
	s.mu.Unlock()
	class := k.Class
	if k.Spec.Class != "" {
		class = k.Spec.Class
	}
	note := fmt.Sprintf("llm: %s after %d rounds, %d calls, %d tokens", o.Status, o.Rounds, o.Usage.Calls, o.Usage.Tokens())
	if o.Cached {
		note += " (cached outcome)"
	}
	switch {
	case o.Status == StatusProven, o.Status == StatusRejected && o.Code != "":
		return &pipeline.Candidate{Drafter: DrafterName, Class: class, Module: o.Code, Notes: []string{note},
			Tokens: o.Usage.Tokens(), Calls: o.Usage.Calls}, nil
	}
	return nil, fmt.Errorf("llm: %s (%s)", o.Reason, note)
}

// KernelValidation builds k's reference once (its isolated unit compiled
// with the CUDA-on-CPU emulator, in the sandbox) and returns the function
// that validates candidates against it, and a cleanup.
func KernelValidation(ctx context.Context, k *kernels.Kernel, opt validators.Options) (ValidateFunc, func(), error) {
	if k.Unit == nil || strings.TrimSpace(k.Unit.Source) == "" {
		return nil, func() {}, fmt.Errorf("llm: kernel %s has no isolated unit to build a reference from", k.Name)
	}
	if len(k.Unit.Unsupported) > 0 {
		return nil, func() {}, fmt.Errorf("llm: the reference cannot be built: unsupported %s", strings.Join(k.Unit.Unsupported, ", "))
	}
	work, err := os.MkdirTemp("", "pallasify-llm-ref-")
	if err != nil {
		return nil, func() {}, fmt.Errorf("llm: %w", err)
	}
	cleanup := func() { os.RemoveAll(work) }
	so, log, err := validators.BuildReference(ctx, opt.NoSandbox, work, k.Unit.Source, k.Spec)
	if err != nil {
		cleanup()
		return nil, func() {}, fmt.Errorf("llm: reference build: %w%s", err, logTail(log))
	}
	req := validators.Request{Spec: *k.Spec, ReferenceSO: so, KernelTU: k.Unit.Source}
	return func(ctx context.Context, cand []byte) (*validators.Verdict, error) {
		r := req
		r.Candidate = cand
		return validators.Validate(ctx, r, opt)
	}, cleanup, nil
}

func logTail(log string) string {
	if log = strings.TrimSpace(log); log == "" {
		return ""
	}
	return ": " + lastLines(log, 5, 600)
}
