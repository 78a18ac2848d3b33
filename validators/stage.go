package validators

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/transforms/kernels"
)

// StageValidator is the draft stage's validator (draft.Validator): it builds each kernel's
// reference once (the isolated unit compiled with the CUDA-on-CPU emulator)
// and runs the full protocol on every candidate.
type StageValidator struct {
	Options Options

	mu   sync.Mutex
	dir  string
	refs map[string]*stageRef
}

type stageRef struct {
	once sync.Once
	so   string
	err  error
}

// NewStageValidator returns a validator for the pipeline's validate stage.
// Close it to remove the references it built.
func NewStageValidator(opt Options) *StageValidator {
	return &StageValidator{Options: opt, refs: map[string]*stageRef{}}
}

// Close removes the built references.
func (s *StageValidator) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		return nil
	}
	err := os.RemoveAll(s.dir)
	s.dir = ""
	return err
}

func (s *StageValidator) reference(ctx context.Context, k *kernels.Kernel) (string, error) {
	s.mu.Lock()
	if s.dir == "" {
		d, err := os.MkdirTemp("", "pallasify-refs-")
		if err != nil {
			s.mu.Unlock()
			return "", err
		}
		s.dir = d
	}
	key := k.Unit.Hash + "|" + k.ID
	r := s.refs[key]
	if r == nil {
		r = &stageRef{}
		s.refs[key] = r
	}
	dir := filepath.Join(s.dir, k.ID)
	s.mu.Unlock()
	r.once.Do(func() {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			r.err = err
			return
		}
		so, log, err := BuildReference(ctx, s.Options.NoSandbox, dir, k.Unit.Source, k.Spec)
		if err != nil {
			r.err = fmt.Errorf("%w %s", err, firstLine(log))
		}
		r.so = so
	})
	return r.so, r.err
}

var _ draft.Validator = (*StageValidator)(nil)

// Validate implements draft.Validator; a rejection carries its Feedback.
func (s *StageValidator) Validate(ctx context.Context, k *kernels.Kernel, module []byte) (*draft.Verdict, error) {
	if k.Spec == nil || k.Unit == nil {
		return nil, fmt.Errorf("kernel %s has no spec or isolated unit", k.ID)
	}
	so, err := s.reference(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("reference of %s: %w", k.Name, err)
	}
	var captured []byte
	if k.Captured != nil && len(k.Captured.Cases) > 0 {
		// the original's launches from the repository's tests (harness captured.py)
		if captured, err = kernels.CapturedCasesJSON(k.ID, k.Captured.Cases); err != nil {
			return nil, fmt.Errorf("captured cases of %s: %w", k.Name, err)
		}
	}
	t0 := time.Now()
	v, err := Validate(ctx, Request{Spec: *k.Spec, ReferenceSO: so, KernelTU: k.Unit.Source, Candidate: module, Captured: captured}, s.Options)
	if err != nil {
		return nil, err
	}
	dv := &draft.Verdict{Verdict: v.Verdict, Reason: v.Reason, Stats: v.ErrorStats(), Shapes: v.ShapeStrings(),
		Summary: Summary(v), Duration: time.Since(t0), TPU: tpuCompiled(v.TPU),
		Chips: wireChips(v.TPU), Cases: wireCases(v), Results: v.CaseResults()}
	if !v.Proven() {
		dv.Feedback = v.Feedback()
	}
	return dv, nil
}

// tpuCompiled reduces the TPU compile gate's per-chip outcome to compiled or
// not, for the kernel report (nil when the gate did not run).
func tpuCompiled(gate map[string]ChipCompile) map[string]bool {
	if len(gate) == 0 {
		return nil
	}
	out := make(map[string]bool, len(gate))
	for chip, c := range gate {
		out[chip] = c.Compiled
	}
	return out
}
