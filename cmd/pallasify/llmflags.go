package main

import (
	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/transforms/llm"
	"github.com/pallasify/pallasify/validators"
)

// llmFlags are the LLM drafting flags of migrate.
type llmFlags struct {
	llm.Flags
}

func (f *llmFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.BaseURL, "llm-base-url", "", "OpenAI-compatible endpoint drafting the kernels the rules cannot, e.g. http://localhost:11434/v1 (env "+llm.EnvBaseURL+")")
	fl.StringVar(&f.Model, "llm-model", "", "model for LLM drafts (env "+llm.EnvModel+")")
	fl.StringVar(&f.KeyEnv, "llm-api-key-env", "", "environment variable holding the LLM API key (default "+llm.EnvKey+")")
	fl.IntVar(&f.Rounds, "llm-rounds", 0, "repair rounds per kernel: the validator's verdict goes back to the model (default 4)")
	fl.IntVar(&f.Samples, "llm-samples", 0, "best-of-k: independent samples per kernel, first proven wins (default 1)")
	fl.DurationVar(&f.Timeout, "llm-timeout", 0, "deadline of one LLM call, retries included (default 2m)")
	fl.BoolVar(&f.Stream, "llm-stream", false, "stream replies (a stream silent for 60s is cut)")
	fl.BoolVar(&f.NoLLM, "no-llm", false, "never call an LLM: kernels the rules cannot draft are reported needs-llm")
	fl.BoolVar(&f.NoCache, "no-cache", false, "do not reuse cached LLM replies and verdicts")
}

// settings resolves the LLM settings: flags over environment over the
// config (whose llm.base_url and api_key_env only an operator's file may set).
func (f *llmFlags) settings(cfg *config.Config, getenv func(string) string) (llm.Settings, error) {
	c := config.Defaults().LLM
	if cfg != nil {
		c = cfg.LLM
	}
	fl := f.Flags
	if fl.CacheDir == "" {
		fl.CacheDir = llm.DefaultCacheDir()
	}
	s, err := llm.Resolve(c, fl, getenv)
	if err != nil {
		return s, usageErr(err)
	}
	return s, nil
}

// setup adds the LLM drafter after the rule drafter to migrate's kernel
// stages, with the static gate its drafts pass before validation, when an
// endpoint is configured; otherwise it sets the one-line fix reported on
// needs-llm kernels. The draft stage runs its repair rounds.
func (f *llmFlags) setup(k *kernelFlags, root string, cfg *config.Config, getenv func(string) string) error {
	if !k.Enabled {
		return nil
	}
	s, err := f.settings(cfg, getenv)
	if err != nil {
		return err
	}
	if ok, fix := s.Configured(); !ok {
		k.LLMHint = fix
		return nil
	}
	if s.NoCache {
		k.FreshVerdicts = true // --no-cache: fresh verdicts too (still written)
	}
	d, _, err := llm.New(s, root, validators.PinnedJAX())
	if err != nil {
		return usageErr(err)
	}
	k.Drafters = append(k.Drafters, d)
	k.Gate = &validators.Gate{NoSandbox: k.NoSandbox, UnsandboxedLLMCode: k.UnsandboxedLLMCode}
	return nil
}

// llmCheck is doctor's line about the LLM drafter (from the environment; no
// call is made).
func llmCheck(getenv func(string) string) validators.Check {
	c := validators.Check{Name: "llm endpoint", Why: "drafting kernels the rules cannot (optional; without it they are reported needs-llm)"}
	s, err := llm.Resolve(config.Defaults().LLM, llm.Flags{}, getenv)
	if err != nil {
		c.Status, c.Detail, c.Fix = validators.CheckWarn, err.Error(), "fix the PALLASIFY_LLM_* variables"
		return c
	}
	if ok, fix := s.Configured(); !ok {
		c.Status, c.Detail, c.Fix = validators.CheckInfo, "not configured", fix
		return c
	}
	c.Status, c.Detail = validators.CheckOK, s.String()
	return c
}
