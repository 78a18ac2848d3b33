package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/validators"
)

// kernelFlags are migrate's flags for the kernel stages (draft, validate,
// wire).
type kernelFlags struct {
	Enabled   bool
	NoSandbox bool
	// UnsandboxedLLMCode lets an LLM's drafts run under --no-sandbox.
	UnsandboxedLLMCode bool
	NoCache            bool
	Timeout            time.Duration
	TPU                tpuChipsFlag
	// Drafters run after the rule drafter (the LLM drafter plugs in here).
	Drafters []pipeline.KernelDrafter
	// Validator overrides the real validator (tests).
	Validator pipeline.KernelValidator
	// LLMHint is the one-line fix shown on kernels only an LLM could draft.
	LLMHint string
	// Gate checks untrusted (LLM) drafts before the validator runs them.
	Gate draft.Gate
	// FreshVerdicts bypasses reading the verdict cache (--no-cache with an
	// LLM drafter); verdicts are still written.
	FreshVerdicts bool
}

func (k *kernelFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&k.Enabled, "kernels", true, "draft Pallas replacements for custom CUDA kernels, validate them, and wire in the proven ones")
	fl.BoolVar(&k.NoSandbox, "no-sandbox", false, "run kernel validation without bubblewrap (untrusted code runs unconfined)")
	fl.BoolVar(&k.UnsandboxedLLMCode, "unsandboxed-llm-code", false, "with --no-sandbox, also run LLM-written Python unconfined, as your user (refused otherwise)")
	fl.BoolVar(&k.NoCache, "no-verdict-cache", false, "do not reuse cached validation verdicts")
	fl.DurationVar(&k.Timeout, "kernel-timeout", validators.DefaultTimeout, "wall limit of one kernel validation")
	bindTPUChips(fl, &k.TPU)
}

// validation is the validator's options for these flags (the validate
// stage and the LLM loop use the same, so the stage's check is a cache hit).
func (k *kernelFlags) validation() validators.Options {
	vo := validators.Options{NoSandbox: k.NoSandbox, Timeout: k.Timeout, NoCache: k.FreshVerdicts}
	k.TPU.apply(&vo)
	if !k.NoCache {
		vo.CacheDir = validators.DefaultCacheDir()
	}
	return vo
}

// install adds the kernel stages to opts; the returned function releases
// what validation built.
func (k *kernelFlags) install(opts *pipeline.Options) func() {
	if !k.Enabled {
		return func() {}
	}
	v := k.Validator
	cleanup := func() {}
	if v == nil {
		sv := validators.NewStageValidator(k.validation())
		v, cleanup = sv, func() { sv.Close() }
	}
	drafters := append([]pipeline.KernelDrafter{pipeline.RuleDrafter{}}, k.Drafters...)
	w := pipeline.NewKernelWork(v, drafters...)
	w.Wire = true
	w.LLMHint = k.LLMHint
	w.Gate = k.Gate
	w.Install(opts)
	return cleanup
}
