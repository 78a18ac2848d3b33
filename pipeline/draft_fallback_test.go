package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
)

type scriptedDrafter struct {
	name   string
	module string // "" refuses
	calls  int
}

func (d *scriptedDrafter) Name() string { return d.name }
func (d *scriptedDrafter) Rounds() int  { return 1 }
func (d *scriptedDrafter) Draft(ctx context.Context, k *kernels.Kernel, fb *Feedback) (*Candidate, error) {
	d.calls++
	if d.module == "" {
		return nil, errors.New("refused")
	}
	return &Candidate{Drafter: d.name, Module: d.module, Tokens: 7, Calls: 1}, nil
}

// goodOnly proves exactly the module "good".
type goodOnly struct{}

func (goodOnly) Validate(ctx context.Context, k *kernels.Kernel, module []byte) (*DraftVerdict, error) {
	if string(module) == "good" {
		return &DraftVerdict{Verdict: VerdictProven}, nil
	}
	return &DraftVerdict{Verdict: VerdictRejected, Reason: "V-MISMATCH: numbers differ"}, nil
}

// A rejected rule draft hands the kernel to the next drafter (the LLM)
// instead of ending the search; a drafter that refuses is skipped.
func TestRejectedDraftFallsThroughToNextDrafter(t *testing.T) {
	cases := []struct {
		name        string
		drafters    []*scriptedDrafter
		wantVerdict string
		wantDrafter string
		wantReason  string
	}{
		{"rules rejected, llm proves", []*scriptedDrafter{{name: "rules", module: "bad"}, {name: "llm", module: "good"}},
			VerdictProven, "llm", ""},
		{"rules rejected, refusal, third proves", []*scriptedDrafter{{name: "rules", module: "bad"}, {name: "x"}, {name: "llm", module: "good"}},
			VerdictProven, "llm", ""},
		{"all rejected", []*scriptedDrafter{{name: "rules", module: "bad"}, {name: "llm", module: "worse"}},
			VerdictRejected, "llm", "rules: V-MISMATCH: numbers differ; llm: V-MISMATCH: numbers differ"},
		{"rules proves, llm never asked", []*scriptedDrafter{{name: "rules", module: "good"}, {name: "llm", module: "good"}},
			VerdictProven, "rules", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := &KernelWork{Validator: goodOnly{}}
			for _, d := range c.drafters {
				w.Drafters = append(w.Drafters, d)
			}
			first, _ := c.drafters[0].Draft(context.Background(), nil, nil)
			st := &kernelState{drafter: c.drafters[0], cand: first, next: 1}
			pk := &Kernel{ID: "k-1", Draft: &Draft{Drafter: "rules"}}
			if err := w.validateKernel(context.Background(), &kernels.Kernel{ID: "k-1"}, pk, st); err != nil {
				t.Fatal(err)
			}
			if pk.Draft.Verdict != c.wantVerdict || pk.Draft.Drafter != c.wantDrafter {
				t.Fatalf("verdict %s by %s, want %s by %s (%s)", pk.Draft.Verdict, pk.Draft.Drafter, c.wantVerdict, c.wantDrafter, pk.Draft.Reason)
			}
			if c.wantReason != "" && !strings.Contains(pk.Draft.Reason, c.wantReason) {
				t.Fatalf("reason %q, want it to contain %q", pk.Draft.Reason, c.wantReason)
			}
			if c.wantDrafter == "rules" && c.drafters[1].calls != 0 {
				t.Fatalf("llm asked %d times after a proof", c.drafters[1].calls)
			}
			if proven := len(w.Proven()); (c.wantVerdict == VerdictProven) != (proven == 1) {
				t.Fatalf("%d proofs recorded", proven)
			}
		})
	}
}
