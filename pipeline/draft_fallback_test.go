package pipeline

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/transforms/kernels"
)

type scriptedDrafter struct {
	name   string
	module string // "" refuses
	calls  int
}

func (d *scriptedDrafter) Name() string         { return d.name }
func (d *scriptedDrafter) Budget() draft.Budget { return draft.One }
func (d *scriptedDrafter) Draft(ctx context.Context, k *kernels.Kernel, _ draft.Turn) (*Candidate, error) {
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
			first, _ := c.drafters[0].Draft(context.Background(), nil, draft.Turn{Round: 1})
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

// repairDrafter answers each turn from a script: modules[sample][round-1]
// ("?" is an unreadable reply), recording the turns it was given.
type repairDrafter struct {
	budget  draft.Budget
	modules [][]string
	mu      sync.Mutex
	turns   []draft.Turn
}

func (d *repairDrafter) Name() string         { return "llm" }
func (d *repairDrafter) Budget() draft.Budget { return d.budget }
func (d *repairDrafter) Draft(ctx context.Context, k *kernels.Kernel, t draft.Turn) (*Candidate, error) {
	d.mu.Lock()
	d.turns = append(d.turns, t)
	d.mu.Unlock()
	m := d.modules[t.Sample][t.Round-1]
	c := &Candidate{Drafter: "llm", Module: m, Untrusted: true, Tokens: 10, Calls: 1}
	if m == "?" {
		c.Module, c.Unreadable = "", "the reply is empty"
	}
	return c, nil
}

// gateBans refuses the module "banned" before it runs.
type gateBans struct{ n int }

func (g *gateBans) Check(ctx context.Context, module []byte, class, name string) (string, error) {
	g.n++
	if string(module) == "banned" {
		return "line 1: import of 'socket' is not allowed\nline 2: call to open()", nil
	}
	return "", nil
}

// countingValidator counts validations of goodOnly.
type countingValidator struct {
	mu sync.Mutex
	n  int
}

func (v *countingValidator) Validate(ctx context.Context, k *kernels.Kernel, module []byte) (*DraftVerdict, error) {
	v.mu.Lock()
	v.n++
	v.mu.Unlock()
	dv, err := goodOnly{}.Validate(ctx, k, module)
	if dv.Verdict == VerdictRejected {
		dv.Feedback = &draft.Feedback{Kind: draft.KindVerdict, Reason: dv.Reason, Case: "seed 3"}
	}
	return dv, err
}

// The draft stage owns the repair loop: every failure (an unreadable reply,
// the gate's refusal, the validator's rejection) goes back to the drafter as
// the next round's feedback, with the previous candidate; samples are tried
// while none is proven; usage adds up over every turn.
func TestRepairLoop(t *testing.T) {
	cases := []struct {
		name                 string
		budget               draft.Budget
		modules              [][]string
		wantVerdict          string
		wantRounds           int
		wantValidations      int
		wantFeedback         []string // kinds of the feedback given in rounds 2..
		wantReason           string
		wantTurns, wantCalls int
	}{
		{"rejected then repaired", draft.Budget{Samples: 1, Rounds: 3, Parallel: 1}, [][]string{{"bad", "good", "x"}},
			VerdictProven, 2, 2, []string{draft.KindVerdict}, "", 2, 2},
		{"unreadable, gated, then proven", draft.Budget{Samples: 1, Rounds: 4, Parallel: 1}, [][]string{{"?", "banned", "good", "x"}},
			VerdictProven, 3, 1, []string{draft.KindUnreadable, draft.KindGate}, "", 3, 3},
		{"rounds spent", draft.Budget{Samples: 1, Rounds: 2, Parallel: 1}, [][]string{{"bad", "banned"}},
			VerdictRejected, 2, 1, []string{draft.KindVerdict}, "L-GATE: line 1: import of 'socket' is not allowed (after 2 rounds)", 2, 2},
		{"second sample proves", draft.Budget{Samples: 2, Rounds: 1, Parallel: 1}, [][]string{{"bad"}, {"good"}},
			VerdictProven, 1, 2, nil, "", 2, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &repairDrafter{budget: c.budget, modules: c.modules}
			v, g := &countingValidator{}, &gateBans{}
			w := &KernelWork{Validator: v, Gate: g, Drafters: []KernelDrafter{d}}
			k := &kernels.Kernel{ID: "k-1", Name: "k"}
			first, _ := d.Draft(context.Background(), k, draft.Turn{Round: 1})
			st := &kernelState{drafter: d, cand: first, next: 1}
			pk := &Kernel{ID: "k-1", Draft: &Draft{Drafter: "llm"}}
			addUsage(pk.Draft, first)
			if err := w.validateKernel(context.Background(), k, pk, st); err != nil {
				t.Fatal(err)
			}
			if pk.Draft.Verdict != c.wantVerdict || pk.Draft.Rounds != c.wantRounds || v.n != c.wantValidations {
				t.Fatalf("verdict %s after %d rounds, %d validations (%s); want %s, %d, %d",
					pk.Draft.Verdict, pk.Draft.Rounds, v.n, pk.Draft.Reason, c.wantVerdict, c.wantRounds, c.wantValidations)
			}
			if c.wantReason != "" && pk.Draft.Reason != c.wantReason {
				t.Errorf("reason %q, want %q", pk.Draft.Reason, c.wantReason)
			}
			var kinds []string
			for i, turn := range d.turns {
				if turn.Round == 1 {
					if turn.Feedback != nil || turn.Previous != nil {
						t.Errorf("turn %d: round 1 with feedback %+v", i, turn.Feedback)
					}
					continue
				}
				if turn.Feedback == nil || turn.Previous == nil {
					t.Fatalf("turn %d (round %d): no feedback or previous candidate", i, turn.Round)
				}
				kinds = append(kinds, turn.Feedback.Kind)
				switch turn.Feedback.Kind {
				case draft.KindVerdict:
					if turn.Feedback.Case != "seed 3" || turn.Previous.Module != "bad" {
						t.Errorf("verdict feedback %+v on %q", turn.Feedback, turn.Previous.Module)
					}
				case draft.KindGate:
					if !strings.Contains(turn.Feedback.Detail, "call to open()") {
						t.Errorf("gate feedback %+v", turn.Feedback)
					}
				case draft.KindUnreadable:
					if turn.Feedback.Detail != "the reply is empty" {
						t.Errorf("unreadable feedback %+v", turn.Feedback)
					}
				}
			}
			if strings.Join(kinds, ",") != strings.Join(c.wantFeedback, ",") {
				t.Errorf("feedback kinds %v, want %v", kinds, c.wantFeedback)
			}
			if len(d.turns) != c.wantTurns || pk.Draft.Calls != c.wantCalls || pk.Draft.Tokens != 10*c.wantCalls {
				t.Errorf("%d turns, %d calls, %d tokens; want %d turns, %d calls", len(d.turns), pk.Draft.Calls, pk.Draft.Tokens, c.wantTurns, c.wantCalls)
			}
			if proven := len(w.Proven()); (c.wantVerdict == VerdictProven) != (proven == 1) {
				t.Fatalf("%d proofs recorded", proven)
			}
		})
	}
}
