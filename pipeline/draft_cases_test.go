package pipeline

import (
	"context"
	"testing"

	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/transforms/kernels"
)

// casesValidator proves "good" and rejects anything else, each verdict with
// its per-case results (the second case of a rejection failed).
type casesValidator struct{}

func (casesValidator) Validate(ctx context.Context, k *kernels.Kernel, module []byte) (*DraftVerdict, error) {
	r := 0.25
	ok := CaseResult{Sizes: map[string]int64{"n": 257}, Output: "out", DType: "float32", Shape: []int64{257},
		Seed: 1, Distribution: "normal", ULPMax: 1, NaNMaskOK: true, RTol: 1.3e-6, ATol: 1e-5, TolRatio: &r}
	if string(module) == "good" {
		return &DraftVerdict{Verdict: VerdictProven, Results: []CaseResult{ok, ok}}, nil
	}
	bad := ok
	bad.Mismatches, bad.ULPMax = 3, 900
	return &DraftVerdict{Verdict: VerdictRejected, Reason: "V-MISMATCH: 3 elements differ", Results: []CaseResult{ok, bad}}, nil
}

// TestDraftKeepsCaseResults: the verdict's per-case results reach the run
// model (Draft.Cases) for a proven and for a rejected draft.
func TestDraftKeepsCaseResults(t *testing.T) {
	for _, c := range []struct {
		module, verdict string
		failed          int
	}{{"good", VerdictProven, 0}, {"bad", VerdictRejected, 1}} {
		w := &KernelWork{Validator: casesValidator{}}
		d := &scriptedDrafter{name: "rules", module: c.module}
		w.Drafters = append(w.Drafters, d)
		first, _ := d.Draft(context.Background(), nil, draft.Turn{Round: 1})
		st := &kernelState{drafter: d, cand: first, next: 1}
		pk := &Kernel{ID: "k-1", Draft: &Draft{Drafter: "rules"}}
		if err := w.validateKernel(context.Background(), &kernels.Kernel{ID: "k-1"}, pk, st); err != nil {
			t.Fatal(err)
		}
		if pk.Draft.Verdict != c.verdict || len(pk.Draft.Cases) != 2 {
			t.Fatalf("%s: verdict %s with %d cases; want %s with 2", c.module, pk.Draft.Verdict, len(pk.Draft.Cases), c.verdict)
		}
		failed := 0
		for _, cr := range pk.Draft.Cases {
			if cr.Failed() {
				failed++
			}
			if cr.DType != "float32" || cr.TolRatio == nil || len(cr.Shape) != 1 {
				t.Errorf("%s: case %+v lost its dtype, shape or tolerance ratio", c.module, cr)
			}
		}
		if failed != c.failed {
			t.Errorf("%s: %d failed cases; want %d", c.module, failed, c.failed)
		}
	}
}
