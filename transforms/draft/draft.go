// Package draft is the contract between the kernel drafters (the rule
// drafter of transforms/pallas, the LLM drafter of transforms/llm) and the
// draft stage that owns the repair loop (pipeline/draft.go): a drafter
// proposes a candidate for a turn; the stage gates and validates it and, when
// it fails, hands the failure back as the next turn's Feedback, for up to the
// drafter's Budget. Nothing here validates or runs anything.
package draft

import (
	"context"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/pallas"
	"github.com/pallasify/pallasify/transforms/triton"
)

// Candidate is one drafted Pallas module for a kernel.
type Candidate struct {
	Drafter string   // rules, llm, ...
	Class   string   // the class the draft was made for
	Module  string   // candidate module source (validators/CONTRACTS.md)
	Notes   []string // translation remarks
	// Unreadable is set when the turn produced no module (an LLM reply that
	// could not be read): the round fails with it as feedback, nothing runs.
	Unreadable string
	// Untrusted drafts (model output) pass the static gate before the
	// validator runs them.
	Untrusted bool
	// LLM usage of this turn, when any.
	Tokens  int
	Calls   int
	CostUSD float64
}

// Feedback kinds: why the previous turn's candidate failed.
const (
	KindUnreadable = "unreadable" // no module could be read from the reply
	KindGate       = "gate"       // the static gate refused it before it ran
	KindVerdict    = "verdict"    // the validator rejected it
)

// Feedback is the failure of the previous turn's candidate, as facts a
// drafter that can repair (the LLM) turns into its next attempt.
type Feedback struct {
	Kind string
	// Reason is the verdict's reason line ("V-MISMATCH: …").
	Reason string
	// Case describes the first failing case (sizes, seed, distribution,
	// errors, first mismatching indices).
	Case string
	// Stats summarises the error statistics.
	Stats string
	// Detail is the parse error, the gate's problems, or the tail of the
	// validator's output.
	Detail string
}

// Turn is what the stage asks a drafter for: round Round (1-based) of
// sample Sample (0-based; each sample is its own conversation). Previous
// and Feedback are nil in round 1.
type Turn struct {
	Sample   int
	Round    int
	Previous *Candidate
	Feedback *Feedback
}

// Budget is how many turns the stage may ask a drafter for, per kernel.
type Budget struct {
	Samples  int // independent conversations (best-of-k); the first proven wins
	Rounds   int // turns per sample: a failed candidate's feedback goes back
	Parallel int // samples drafted at once
}

// One is the budget of a drafter that drafts once (the rule drafter).
var One = Budget{Samples: 1, Rounds: 1, Parallel: 1}

// Drafter drafts Pallas candidates. A *pallas.Refusal (or any error wrapping
// one) in round 1 means "cannot draft this kernel", and the next drafter is
// tried; an error in a later round ends that sample.
type Drafter interface {
	Name() string
	Budget() Budget
	Draft(ctx context.Context, k *kernels.Kernel, t Turn) (*Candidate, error)
}

// ErrorStats are a verdict's error statistics over all cases.
type ErrorStats struct {
	MaxAbs     float64 `json:"max_abs"`
	MaxRel     float64 `json:"max_rel"`
	ULPP50     float64 `json:"ulp_p50"`
	ULPP99     float64 `json:"ulp_p99"`
	ULPMax     float64 `json:"ulp_max"`
	Mismatches int     `json:"mismatches"`
	Cases      int     `json:"cases"`
}

// CaseResult is one compared output of one validated case (the validator's
// per-case record): the size assignment, the output with its dtype and
// array shape, the input seed and distribution, and the errors.
type CaseResult struct {
	Sizes        map[string]int64 `json:"sizes"`
	Output       string           `json:"output"`
	DType        string           `json:"dtype,omitempty"`
	Shape        []int64          `json:"shape,omitempty"`
	Seed         int              `json:"seed"`
	Distribution string           `json:"distribution"`
	MaxAbs       float64          `json:"max_abs"`
	MaxRel       float64          `json:"max_rel"`
	ULPMax       float64          `json:"ulp_max"`
	Mismatches   int              `json:"mismatches"`
	NaNMaskOK    bool             `json:"nan_mask_ok"`
	// RTol and ATol are the tolerance the output was compared with;
	// TolRatio is the largest error over its element's tolerance (above 1:
	// a mismatch; nil when the validator did not report it).
	RTol     float64  `json:"rtol"`
	ATol     float64  `json:"atol"`
	TolRatio *float64 `json:"tol_ratio,omitempty"`
	// Degenerate is set when the case's expected output could not tell a
	// right kernel from a wrong one (all zero, constant): not counted as proof.
	Degenerate bool `json:"degenerate,omitempty"`
}

// Failed reports whether the case's output differed from the original's.
func (c *CaseResult) Failed() bool { return c.Mismatches > 0 || !c.NaNMaskOK }

// Verdict is what the validator said about one candidate.
type Verdict struct {
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
	// Results are the validator's per-case comparisons, in the order it ran
	// them (nil when it reported none).
	Results []CaseResult
	// Feedback is the rejection as the next turn's facts (nil: the stage
	// sends Reason alone).
	Feedback *Feedback
}

// Validator proves a candidate against the original kernel
// (validators.StageValidator is the real one).
type Validator interface {
	Validate(ctx context.Context, k *kernels.Kernel, module []byte) (*Verdict, error)
}

// Gate is the static check of an untrusted candidate before it runs: the
// problems found, one per line ("" when it may run).
type Gate interface {
	Check(ctx context.Context, module []byte, class, name string) (problems string, err error)
}

// TritonRun is what Triton's interpreter did with the original kernel on one
// case of its spec: whether it ran, why not, and how many launches of the
// kernel it recorded (grid, constexprs, argument shapes, dtypes, strides).
type TritonRun struct {
	OK       bool
	Error    string
	Launches int
}

// TritonValidator is what the Triton stages need from the run's validator
// (validators.StageValidator implements it): run the original kernel under
// Triton's interpreter, and prove a candidate against it.
type TritonValidator interface {
	ProbeTriton(ctx context.Context, k *kernels.Kernel, call triton.Call) (*TritonRun, error)
	ValidateTriton(ctx context.Context, k *kernels.Kernel, call triton.Call, module []byte) (*Verdict, error)
}
