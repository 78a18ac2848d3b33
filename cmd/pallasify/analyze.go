package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/report"
)

// analyzeOptions are analyze's parsed flags and dependencies.
type analyzeOptions struct {
	IO *streams
	treeFlags
	// NoEmulator skips compiling each kernel against the CUDA-on-CPU
	// emulator (its status is then not-run); NoSandbox compiles without
	// bubblewrap.
	NoEmulator, NoSandbox bool
	// Explicit names the flags given on the command line that the config
	// file can also set: those win over the file.
	Explicit map[string]bool
}

func newAnalyzeCmd(io *streams, runF func(context.Context, *analyzeOptions) error) *cobra.Command {
	opts := &analyzeOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "analyze PATH",
		Short: "Report the CUDA-specific sites, kernels and migration effort of a tree (writes nothing)",
		Long: `Walk the tree at PATH and report, per file and in total, every CUDA-specific
site the rules find, which of them the migration fixes automatically and which a
human must handle, the custom kernels found, and an effort estimate
(low/medium/high). Nothing is written.

Options not given as flags come from the repository's config: pallasify.yaml
or the [tool.pallasify] table of pyproject.toml, the closest from PATH up to
the repository's root (pallasify config validate --help); the text report
names the file.

Exit codes: 0 ok (whatever the report finds), 1 sites are left for a human
under --exit-nonzero-on-findings, 2 usage or I/O error.`,
		Example: `  pallasify analyze .
  pallasify analyze --format markdown ./repo > MIGRATION.md
  pallasify analyze --format sarif ./repo > pallasify.sarif
  pallasify analyze --format html ./repo > report.html
  pallasify analyze --exit-nonzero-on-findings --format json . > report.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr(fmt.Errorf("analyze takes exactly one PATH (got %d)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			opts.Explicit = explicitFlags(cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return analyzeRun(cmd.Context(), opts)
		},
	}
	opts.treeFlags.bind(cmd)
	cmd.Flags().BoolVar(&opts.NoEmulator, "no-emulator", false, "do not compile kernels against the CUDA-on-CPU emulator (emulator status not-run)")
	cmd.Flags().BoolVar(&opts.NoSandbox, "no-sandbox", false, "compile kernels for the emulator without bubblewrap (untrusted code runs unconfined)")
	return cmd
}

func analyzeRun(ctx context.Context, o *analyzeOptions) error {
	cfg, cfgFile, err := loadLocalConfig(o.IO, o.Path, "")
	if err != nil {
		return err
	}
	applyConfig(cfg, o.Explicit, &o.Target, &o.Select, &o.Ignore, &o.Include, &o.Exclude, &o.UnsafeFixes, nil)
	popts, format, err := o.options(false)
	if err != nil {
		return err
	}
	if !o.NoEmulator {
		popts.Emulator = &pipeline.EmulatorCheck{NoSandbox: o.NoSandbox}
	}
	run, err := runPipeline(ctx, o.IO, popts, pipeline.Analyze)
	if err != nil {
		return err
	}
	rep := report.Build(run, "analyze", o.rules())
	rep.Options = report.OptionList(popts)
	rep.Config = cfgFile
	if err := report.Write(o.IO.Out, rep, format); err != nil {
		return usageErr(err)
	}
	return o.findingsExit(rep)
}
