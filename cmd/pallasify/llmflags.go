package main

import (
	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/llm"
	"github.com/pallasify/pallasify/pipeline/config"
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
	fl.BoolVar(&f.NoLLM, "no-llm", false, "never call an LLM: kernels the rules cannot draft are reported needs-llm")
	fl.BoolVar(&f.NoCache, "no-cache", false, "do not reuse cached LLM replies, drafting outcomes and verdicts")
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
