package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline/batch"
)

// stageFlags are the kernel-stage flags batch and worker share with
// migrate: the same names, defaults and meaning (kernelFlags, llmFlags).
type stageFlags struct {
	Kernels kernelFlags
	LLM     llmFlags
}

func (s *stageFlags) bind(cmd *cobra.Command) {
	s.Kernels.bind(cmd)
	s.LLM.bind(cmd)
}

// migrator is the per-repository pipeline with these kernel stages; a
// test's override wins.
func (s *stageFlags) migrator(override batch.Migrator, getenv func(string) string) batch.Migrator {
	if override != nil {
		return override
	}
	st := batch.Stages{Off: !s.Kernels.Enabled, Validation: s.Kernels.validation(), LLM: s.LLM.Flags, Getenv: getenv,
		Validator: s.Kernels.Validator}
	return st.Migrator(version)
}

// fingerprint names the kernel-stage settings a repository's result
// depends on, so a batch whose flags changed runs its repositories again.
func (s *stageFlags) fingerprint() string {
	k, l := &s.Kernels, s.LLM.Flags
	return fmt.Sprintf("kernels=%v sandbox=%v timeout=%s tpu=%v llm=%s/%s rounds=%d samples=%d nollm=%v",
		k.Enabled, !k.NoSandbox, k.Timeout, k.validation().TPUChips, l.BaseURL, l.Model, l.Rounds, l.Samples, l.NoLLM)
}
