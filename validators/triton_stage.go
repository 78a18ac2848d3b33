package validators

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/triton"
)

// The StageValidator is the pipeline's TritonValidator too: the Triton
// kernel's reference is the original run by Triton's interpreter in the
// sandbox (reference.py of the kernel-mode call), and a candidate is proven
// against it with the same protocol and TPU compile gate as a CUDA draft.

var _ draft.TritonValidator = (*StageValidator)(nil)

// ProbeTriton implements draft.TritonValidator: one case of the kernel's
// spec through the interpreter, with the launches of the kernel it recorded.
func (s *StageValidator) ProbeTriton(ctx context.Context, k *kernels.Kernel, call triton.Call) (*draft.TritonRun, error) {
	if k.Spec == nil {
		return nil, fmt.Errorf("triton kernel %s has no spec", k.ID)
	}
	opt := s.Options
	if opt.Timeout <= 0 || opt.Timeout > 120*time.Second {
		opt.Timeout = 120 * time.Second
	}
	p, err := ProbeTriton(ctx, k.Spec, call, opt)
	if err != nil {
		return nil, err
	}
	run := &draft.TritonRun{OK: p.OK, Error: p.Error}
	for _, l := range p.Launches {
		if l.Kernel == k.Name {
			run.Launches++
		}
	}
	if p.OK && run.Launches == 0 {
		run.OK, run.Error = false, fmt.Sprintf("the interpreter ran but recorded no launch of %s", k.Name)
	}
	return run, nil
}

// ValidateTriton implements draft.TritonValidator.
func (s *StageValidator) ValidateTriton(ctx context.Context, k *kernels.Kernel, call triton.Call, module []byte) (*draft.Verdict, error) {
	if k.Spec == nil {
		return nil, fmt.Errorf("triton kernel %s has no spec", k.ID)
	}
	dir, err := s.tritonDir(k)
	if err != nil {
		return nil, err
	}
	req, err := TritonRequest(k.Spec, call, dir)
	if err != nil {
		return nil, err
	}
	req.Candidate = module
	if k.SpecStatus == kernels.SpecCaptured && !s.Options.Quick {
		req.Shapes = len(k.Spec.Domain.Sweep) // the captured sizes and the inferred sweep, all of them
	}
	t0 := time.Now()
	v, err := Validate(ctx, req, s.Options)
	if err != nil {
		return nil, err
	}
	return &draft.Verdict{Verdict: v.Verdict, Reason: v.Reason, Stats: v.ErrorStats(), Shapes: v.ShapeStrings(),
		Summary: Summary(v), Duration: time.Since(t0), TPU: tpuCompiled(v.TPU),
		Chips: wireChips(v.TPU), Cases: wireCases(v), Results: v.CaseResults()}, nil
}

// tritonDir is the kernel's directory under the validator's work dir (its
// reference.py lives there; Close removes it).
func (s *StageValidator) tritonDir(k *kernels.Kernel) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		d, err := os.MkdirTemp("", "pallasify-refs-")
		if err != nil {
			return "", err
		}
		s.dir = d
	}
	dir := filepath.Join(s.dir, "triton-"+k.ID)
	return dir, os.MkdirAll(dir, 0o755)
}
