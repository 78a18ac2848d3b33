package batch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/llm"
	"github.com/pallasify/pallasify/validators"
)

// Stages are the kernel stages of a batch or bot run — draft (rules, then
// an LLM when one is configured), validate (the full protocol and the TPU
// compile gate, in the sandbox), wire — with the same settings `migrate`
// takes from its flags (--kernels, --no-sandbox, --no-verdict-cache,
// --kernel-timeout, --tpu-chips, the --llm-* flags).
type Stages struct {
	// Off turns the kernel stages off (--kernels=false).
	Off bool
	// Validation are the validator's options (migrate's kernelFlags build
	// them).
	Validation validators.Options
	// LLM are the LLM flags; the endpoint and key variable come from the
	// operator's config or the environment (Getenv), never from a
	// repository's pallasify.yaml.
	LLM    llm.Flags
	Getenv func(string) string
	// Validator replaces the real validator (tests).
	Validator pipeline.KernelValidator
	// Reserve is the part of a repository's time limit kept for writing
	// artifacts and delivering after the kernel stages (default a quarter
	// of what is left when the stages start, at most 5 minutes). Kernels
	// still unvalidated when the budget is spent are reported (PDR005), the
	// rewrites are delivered all the same.
	Reserve time.Duration
}

// DefaultStages are the kernel stages as `migrate` runs them by default:
// sandboxed, verdict cache in the user's cache directory,
// validators.DefaultTimeout per validation, the LLM drafter when the
// environment or config names one.
func DefaultStages() Stages {
	return Stages{Validation: validators.Options{Timeout: validators.DefaultTimeout, CacheDir: validators.DefaultCacheDir()}}
}

// Migrator is the production Migrator with these kernel stages:
// pipeline.Migrate with the config's target, rules and filters, then
// draft, validate and wire within the repository's time budget.
func (s Stages) Migrator(version string) Migrator {
	return func(ctx context.Context, root string, cfg *config.Config) (*pipeline.Run, error) {
		opts := PipelineOptions(root, cfg, version)
		done, err := s.install(ctx, &opts, root, cfg)
		if err != nil {
			return nil, err
		}
		run, err := pipeline.Migrate(ctx, opts)
		done(run)
		return run, err
	}
}

// install adds the kernel stages to opts; done releases what validation
// built.
func (s Stages) install(ctx context.Context, opts *pipeline.Options, root string, cfg *config.Config) (done func(*pipeline.Run), err error) {
	if s.Off {
		return func(*pipeline.Run) {}, nil
	}
	deadline := s.budget(ctx)
	drafters := []pipeline.KernelDrafter{pipeline.RuleDrafter{}}
	ld, fresh, hint, err := s.llmDrafter(root, cfg)
	if err != nil {
		return nil, err
	}
	var gate draft.Gate
	if ld != nil {
		drafters = append(drafters, budgetDrafter{ld, deadline})
		gate = &validators.Gate{NoSandbox: s.Validation.NoSandbox}
	}
	v := s.Validator
	cleanup := func() {}
	if v == nil {
		vo := s.Validation
		vo.NoCache = vo.NoCache || fresh
		sv := validators.NewStageValidator(vo)
		v, cleanup = sv, func() { sv.Close() }
	}
	w := pipeline.NewKernelWork(budgetValidator{v, deadline}, drafters...)
	w.Wire = true
	w.LLMHint = hint
	w.Gate = gate
	w.Install(opts)
	return func(*pipeline.Run) { cleanup() }, nil
}

// budget is when the kernel stages must stop: the context's deadline less
// the reserve (zero: no deadline).
func (s Stages) budget(ctx context.Context) time.Time {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Time{}
	}
	reserve := s.Reserve
	if reserve <= 0 {
		reserve = min(time.Until(dl)/4, 5*time.Minute)
	}
	return dl.Add(-reserve)
}

// llmDrafter is the LLM drafter when an endpoint is configured (fresh:
// --no-cache, verdicts are not read from the cache either); otherwise hint
// is the one line that configures one.
func (s Stages) llmDrafter(root string, cfg *config.Config) (d *llm.Drafter, fresh bool, hint string, err error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	fl := s.LLM
	if fl.CacheDir == "" {
		fl.CacheDir = llm.DefaultCacheDir()
	}
	set, err := llm.Resolve(cfg.LLM, fl, getenv)
	if err != nil {
		return nil, false, "", fmt.Errorf("llm settings: %w", err)
	}
	if ok, fix := set.Configured(); !ok {
		return nil, false, fix, nil
	}
	d, _, err = llm.New(set, root, validators.PinnedJAX())
	if err != nil {
		return nil, false, "", err
	}
	return d, set.NoCache, "", nil
}

// ErrBudget is wrapped by the errors of kernel work refused because the
// repository's time budget for the kernel stages is spent.
var ErrBudget = errors.New("the repository's time budget for the kernel stages is spent")

// budgetValidator validates within the kernel stages' deadline. A kernel
// whose turn comes after it is not validated: its error is recorded on the
// kernel (PDR005) and the run goes on to delivery.
type budgetValidator struct {
	v        pipeline.KernelValidator
	deadline time.Time
}

func (b budgetValidator) Validate(ctx context.Context, k *kernels.Kernel, module []byte) (*pipeline.DraftVerdict, error) {
	if b.deadline.IsZero() {
		return b.v.Validate(ctx, k, module)
	}
	if time.Until(b.deadline) <= 0 {
		return nil, fmt.Errorf("%w: %s not validated", ErrBudget, k.Name)
	}
	vctx, cancel := context.WithDeadline(ctx, b.deadline)
	defer cancel()
	v, err := b.v.Validate(vctx, k, module)
	if err != nil && ctx.Err() == nil && vctx.Err() != nil {
		return nil, fmt.Errorf("%w: validation of %s stopped", ErrBudget, k.Name)
	}
	return v, err
}

// budgetDrafter refuses to start drafting after the deadline (an LLM loop
// can take minutes) and stops one that runs past it.
type budgetDrafter struct {
	d        pipeline.KernelDrafter
	deadline time.Time
}

func (b budgetDrafter) Name() string         { return b.d.Name() }
func (b budgetDrafter) Budget() draft.Budget { return b.d.Budget() }

func (b budgetDrafter) Draft(ctx context.Context, k *kernels.Kernel, t draft.Turn) (*pipeline.Candidate, error) {
	if b.deadline.IsZero() {
		return b.d.Draft(ctx, k, t)
	}
	if time.Until(b.deadline) <= 0 {
		return nil, fmt.Errorf("%w: %s not drafted", ErrBudget, k.Name)
	}
	dctx, cancel := context.WithDeadline(ctx, b.deadline)
	defer cancel()
	c, err := b.d.Draft(dctx, k, t)
	if err != nil && ctx.Err() == nil && dctx.Err() != nil {
		return nil, fmt.Errorf("%w: drafting %s stopped", ErrBudget, k.Name)
	}
	return c, err
}
