package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/validators"
)

// validateOptions are validate's parsed flags.
type validateOptions struct {
	IO      *streams
	Files   validators.FilesRequest
	Format  string
	JSON    bool // deprecated --json
	NoCache bool
	Timeout time.Duration
	TPU     tpuChipsFlag
}

func newValidateCmd(io *streams) *cobra.Command {
	o := &validateOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "validate [KERNEL-ID] --candidate FILE",
		Short: "Prove a Pallas candidate against the original CUDA kernel (numeric validation)",
		Long: `Run the validation protocol: the candidate in JAX TPU interpret mode against the
original kernel (compiled for the CUDA-on-CPU emulator, or a given ref.so or
reference.py), several seeds, distributions and shapes, poisoned outputs,
determinism, launch and ban checks — all inside the bubblewrap sandbox; then
the TPU compile gate: the proven candidate is lowered with Mosaic and compiled
deviceless (libtpu) for each --tpu-chips chip over the validated shapes.
Exits 0 when proven, 1 when rejected or undecided, 2 on usage errors.`,
		Example: `  pallasify validate --kernel-spec spec.json --kernel-src kernel.cu --candidate cand.py
  pallasify validate --kernel-spec spec.json --reference-py reference.py --candidate cand.py --format json
  pallasify validate --repo ./repo <kernel-id> --candidate cand.py`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Files.KernelID = args[0]
			}
			return validateRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Files.SpecPath, "kernel-spec", "", "KernelSpec file (JSON or YAML)")
	f.StringVar(&o.Files.ReferenceSO, "reference", "", "reference shared library (pallasify_launch ABI)")
	f.StringVar(&o.Files.ReferencePy, "reference-py", "", "plain-Python reference (def reference(args) -> dict); fallback when the emulator build fails")
	f.StringVar(&o.Files.KernelSrc, "kernel-src", "", "CUDA source of the kernel, built with the emulator")
	f.StringVar(&o.Files.Repo, "repo", ".", "repository to find KERNEL-ID in")
	f.StringVar(&o.Files.CandidatePath, "candidate", "", "candidate module (def run(args, *, interpret) -> dict)")
	bindFormat(f, &o.Format, &o.JSON, "verdict", textJSON...)
	f.BoolVar(&o.Files.Options.NoSandbox, "no-sandbox", false, "run without bubblewrap (untrusted code runs unconfined)")
	f.BoolVar(&o.NoCache, "no-cache", false, "do not use the verdict cache")
	f.BoolVar(&o.Files.Options.Quick, "quick", false, "fewer shapes (screening only)")
	f.IntVar(&o.Files.Options.Seeds, "seeds", 5, "seeds per shape")
	f.DurationVar(&o.Timeout, "timeout", 120*time.Second, "wall limit of one harness run")
	bindTPUChips(f, &o.TPU)
	return cmd
}

func validateRun(ctx context.Context, o *validateOptions) error {
	format, err := resolveFormat(o.IO.ErrOut, o.Format, o.JSON, textJSON...)
	if err != nil {
		return err
	}
	if o.Files.CandidatePath == "" {
		return usageErr(errors.New("--candidate is required"))
	}
	if o.Files.KernelID == "" && o.Files.SpecPath == "" {
		return usageErr(errors.New("give a KERNEL-ID or --kernel-spec"))
	}
	o.Files.Options.Timeout = o.Timeout
	o.TPU.apply(&o.Files.Options)
	if !o.NoCache {
		o.Files.Options.CacheDir = validators.DefaultCacheDir()
	}
	v, err := validators.ValidateFiles(ctx, o.Files)
	if err != nil {
		return usageErr(err)
	}
	if format == "json" {
		if err := writeJSON(o.IO.Out, schemaValidate, v); err != nil {
			return usageErr(err)
		}
	} else {
		fmt.Fprint(o.IO.Out, validators.Summary(v))
	}
	if !v.Proven() {
		return &exitError{code: 1}
	}
	return nil
}
