package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"

	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/report"
	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/safefs"
	"github.com/pallasify/pallasify/validators"
)

// treeFlags are the flags analyze and migrate share.
type treeFlags struct {
	Path        string
	Target      string
	Select      []string
	Ignore      []string
	Include     []string
	Exclude     []string
	UnsafeFixes bool
	Format      string
	Jobs        int
	// ExitOnFindings exits 1 while sites are left for a human
	// (--exit-nonzero-on-findings).
	ExitOnFindings bool
	// Capture builds the tree's extensions for the CPU and runs its tests
	// with every kernel launch captured (kernel specs from the captures).
	Capture bool
	// Drive calls the tree's Triton launchers under Triton's interpreter
	// (sandboxed) where no test gave a kernel's spec (on by default).
	Drive bool
	// Rules overrides the registry (tests).
	Rules []*rule.Rule
}

func (f *treeFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.Target, "target", "portable", "rewrite target: portable (torch.accelerator, still runs on CUDA/CPU) or tpu")
	fl.StringSliceVar(&f.Select, "select", nil, "only these rule codes or prefixes (comma-separated)")
	fl.StringSliceVar(&f.Ignore, "ignore", nil, "skip these rule codes or prefixes (comma-separated)")
	fl.StringSliceVar(&f.Include, "include", nil, "only files matching these globs")
	fl.StringSliceVar(&f.Exclude, "exclude", nil, "leave out files and directories matching these globs")
	fl.BoolVar(&f.UnsafeFixes, "unsafe-fixes", false, "also apply fixes marked unsafe (e.g. wrapping a model in torch.compile)")
	bindFormat(fl, &f.Format, nil, "report", report.Formats()...)
	fl.Lookup("format").Usage += "; html is one self-contained page: redirect it to a file"
	fl.BoolVar(&f.ExitOnFindings, "exit-nonzero-on-findings", false,
		"exit 1 while sites are left for a human: the report's \"need a human\" count (findings not fixed under these options: diagnostic-only rules, unsafe fixes without --unsafe-fixes, fixes that could not be applied) is not 0, even when no file would change; opt-in suggestions and PIO problems do not count")
	fl.IntVarP(&f.Jobs, "jobs", "j", 0, "files processed at once (default: number of CPUs)")
	fl.BoolVar(&f.Drive, "drive", true, "call the tree's Triton launchers under Triton's interpreter, and the ops of its CUDA extensions on their CPU build (sandboxed), on inputs made from their code to capture the specs no test gives")
	fl.BoolVar(&f.Capture, "capture", false, "build the tree's CUDA extensions for the CPU and run its tests (sandboxed) to capture every kernel launch as its spec")
}

// options validates the flags and builds the pipeline options.
func (f *treeFlags) options(mark bool) (pipeline.Options, report.Format, error) {
	target, err := rule.ParseTarget(f.Target)
	if err != nil {
		return pipeline.Options{}, "", usageErr(err)
	}
	name := f.Format
	if name == "md" {
		name = string(report.Markdown)
	}
	name, err = resolveFormat(nil, name, false, report.Formats()...)
	if err != nil {
		return pipeline.Options{}, "", err
	}
	format := report.Format(name)
	if f.Jobs < 0 {
		return pipeline.Options{}, "", usageErr(fmt.Errorf("--jobs must be positive"))
	}
	opts := pipeline.Options{
		Root: f.Path, Target: target, UnsafeFixes: f.UnsafeFixes, Mark: mark,
		Select: f.Select, Ignore: f.Ignore, Include: f.Include, Exclude: f.Exclude,
		Concurrency: f.Jobs, Version: version, Rules: f.Rules,
	}
	if f.Capture {
		opts.Capture = &pipeline.CaptureConfig{Triton: validators.TritonTests{}}
	}
	if f.Drive {
		opts.TritonDrive = &pipeline.TritonDriveConfig{Driver: validators.TritonDrive{}}
	}
	switch {
	case f.Drive && opts.Capture == nil:
		// the CUDA extensions' ops driven on their CPU build, no tests run
		opts.Capture = &pipeline.CaptureConfig{NoTests: true}
	case !f.Drive && opts.Capture != nil:
		opts.Capture.NoDrive = true
	}
	return opts, format, nil
}

// findingsExit is --exit-nonzero-on-findings: exit 1, saying why, when the
// report has sites left for a human; nil otherwise (or without the flag).
func (f *treeFlags) findingsExit(rep *report.Report) error {
	if !f.ExitOnFindings || rep.Manual == 0 {
		return nil
	}
	return &exitError{code: 1, err: fmt.Errorf("%d site(s) left for a human (--exit-nonzero-on-findings)", rep.Manual)}
}

// explicitFlags names the flags a config file can also set that were given
// on the command line (nil when none): those win over the file.
func explicitFlags(cmd *cobra.Command) map[string]bool {
	var explicit map[string]bool
	for _, name := range []string{"target", "select", "ignore", "include", "exclude", "unsafe-fixes", "mark", "bench"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			if explicit == nil {
				explicit = map[string]bool{}
			}
			explicit[name] = true
		}
	}
	return explicit
}

func (f *treeFlags) rules() []*rule.Rule {
	if f.Rules != nil {
		return f.Rules
	}
	return transforms.All()
}

// runPipeline runs fn with a progress bar on a terminal stderr, and maps
// failures to exit code 2.
func runPipeline(ctx context.Context, io *streams, opts pipeline.Options,
	fn func(context.Context, pipeline.Options) (*pipeline.Run, error)) (*pipeline.Run, error) {
	var bar *fileBar
	if isTerminal(io.ErrOut) {
		start := time.Now()
		opts.Progress = func(done, total int) {
			// Only long runs get a bar: it appears after half a second.
			if bar == nil && time.Since(start) > 500*time.Millisecond && done < total {
				bar = newFileBar(io.ErrOut, total)
			}
			if bar != nil {
				bar.set(done)
			}
		}
	}
	run, err := fn(ctx, opts)
	if bar != nil {
		if ctx.Err() != nil {
			bar.abort() // leave the line as it is; no 100%
			fmt.Fprintln(io.ErrOut)
		} else {
			bar.finish()
		}
	}
	if err != nil {
		return nil, runErr(ctx, err)
	}
	return run, nil
}

// errInterrupted is the one line an interrupted run prints (instead of one
// "context canceled" per file in flight).
var errInterrupted = errors.New("interrupted: nothing was written")

// runErr maps a run's error to its exit: 130 and one line when the run
// was interrupted, else a usage/IO error.
func runErr(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return &exitError{code: 130, err: errInterrupted}
	}
	return usageErr(err)
}

// migrateOptions are migrate's parsed flags and dependencies.
type migrateOptions struct {
	IO *streams
	treeFlags
	Mark  bool
	Check bool
	Write bool
	Out   string
	Patch string
	Color string // auto, always, never
	// Getenv reads the environment (NO_COLOR); tests replace it.
	Getenv func(string) string
	// Delivery: git URLs, pallasify.yaml, --branch/--push/--pr (deliver.go).
	Delivery deliveryFlags
	// Kernels: draft, validate and wire custom kernels (kernels.go).
	Kernels kernelFlags
	// LLM: the LLM drafter of the kernel stages (llmflags.go).
	LLM llmFlags
	// Bench: --bench, --bench-dir (bench.go).
	Bench benchFlags
	// Explicit names the flags pallasify.yaml can also set that were given on
	// the command line (nil when none): those win over the file.
	Explicit map[string]bool
}

func newMigrateCmd(io *streams, runF func(context.Context, *migrateOptions) error) *cobra.Command {
	opts := &migrateOptions{IO: io, Getenv: os.Getenv}
	cmd := &cobra.Command{
		Use:   "migrate PATH",
		Short: "Rewrite CUDA-specific PyTorch for TPUs (dry run: prints the diff and a summary)",
		Long: `Rewrite the CUDA-specific PyTorch in the tree at PATH for the chosen target.

By default nothing is written: the unified diff (git apply-able) and a summary
are printed. --write rewrites changed files in place (atomically, modes kept),
--out DIR writes a migrated copy of the whole tree, --patch FILE writes the
diff to a file.

For CI, as ruff's: --check exits 1 when files would change (the run is still
a dry run unless --write, --out or --patch is given); --exit-nonzero-on-findings
exits 1 while sites are left for a human (the report's "need a human" count is
not 0), even when no file would change. With both, either makes it 1.

The repository's config is read from pallasify.yaml or the [tool.pallasify]
table of pyproject.toml, the closest from PATH up to the repository's root
(pallasify config validate --help); the text report names the file.

Exit codes: 0 ok, 1 files would change under --check or sites are left for a
human under --exit-nonzero-on-findings, 2 usage or I/O error.`,
		Example: `  pallasify migrate .
  pallasify migrate --target tpu --patch tpu.patch ./repo
  pallasify migrate --write --select PDV,PCA ./repo
  pallasify migrate --check --format sarif . > pallasify.sarif
  pallasify migrate --write --exit-nonzero-on-findings .
  pallasify migrate --format html ./repo > report.html`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr(fmt.Errorf("migrate takes exactly one PATH (got %d)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			// The flags the config file can also set: an explicit one wins.
			opts.Explicit = explicitFlags(cmd)
			switch opts.Color {
			case "auto", "always", "never":
			default:
				return usageErr(fmt.Errorf("unknown --color %q (want auto, always or never)", opts.Color))
			}
			if opts.Write && opts.Out != "" {
				return usageErr(errors.New("--write and --out cannot be combined"))
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return migrateRun(cmd.Context(), opts)
		},
	}
	opts.treeFlags.bind(cmd)
	opts.Delivery.bind(cmd)
	opts.Kernels.bind(cmd)
	opts.LLM.bind(cmd)
	opts.Bench.bind(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&opts.Mark, "mark", false, "insert a '# pallasify: CODE …' comment above each site left to a human")
	fl.BoolVar(&opts.Check, "check", false, "exit 1 when files would change")
	fl.BoolVar(&opts.Write, "write", false, "write changed files in place (atomically, modes kept)")
	fl.StringVar(&opts.Out, "out", "", "write a migrated copy of the tree into `DIR` (must not exist or be empty)")
	fl.StringVar(&opts.Patch, "patch", "", "write the unified diff to `FILE` (a regular file; - for standard output)")
	fl.StringVar(&opts.Color, "color", "auto", "colour the diff: auto (on a terminal, unless NO_COLOR is set), always, never")
	return cmd
}

func migrateRun(ctx context.Context, o *migrateOptions) error {
	given := o.Path
	root, _, err := o.Delivery.open(ctx, o.IO, o.Path)
	if err != nil {
		return err
	}
	defer o.Delivery.close()
	o.Path = root
	o.Delivery.applyConfig(o.Explicit, &o.Target, &o.Select, &o.Ignore, &o.Include, &o.Exclude, &o.UnsafeFixes, &o.Mark)
	popts, format, err := o.options(o.Mark)
	if err != nil {
		return err
	}
	popts.Bench = o.Bench.options(o.Delivery.cfg, o.Explicit)
	if err := o.LLM.setup(&o.Kernels, root, o.Delivery.cfg, o.Getenv); err != nil {
		return err
	}
	defer o.Kernels.install(&popts)()
	if o.Out != "" {
		// What an --out run killed before it finished left beside the
		// destination goes before the walk (it may lie inside the tree).
		if n := pipeline.RemoveStaleOut(o.Out); n > 0 {
			fmt.Fprintf(o.IO.ErrOut, "removed %d partial copies left by an interrupted --out %s\n", n, o.Out)
		}
	}
	run, err := runPipeline(ctx, o.IO, popts, pipeline.Migrate)
	if err != nil {
		return err
	}
	rep := report.Build(run, "migrate", o.rules())
	rep.Options = report.OptionList(popts)
	rep.Config = o.Delivery.cfgFile
	dry := !o.Write && o.Out == "" && o.Patch == ""
	var outputs []string
	switch o.Patch {
	case "":
	case "-":
		if err := run.WritePatch(o.IO.Out); err != nil {
			return usageErr(err)
		}
		outputs = append(outputs, "patch written to standard output")
	default:
		if err := safefs.WriteFile(o.Patch, 0o644, run.WritePatch); err != nil {
			if errors.Is(err, safefs.ErrNotRegular) {
				err = fmt.Errorf("%w; --patch - writes the patch to standard output", err)
			}
			return usageErr(err)
		}
		outputs = append(outputs, "patch written to "+o.Patch)
	}
	if o.Out != "" {
		if err := writeTree(ctx, run, o.Out); err != nil {
			return err
		}
		outputs = append(outputs, "written to "+o.Out)
	}
	if o.Write {
		written, err := pipeline.WriteInPlace(ctx, run)
		if err != nil && ctx.Err() != nil {
			return &exitError{code: 130, err: fmt.Errorf("interrupted: %d of %d changed files written in place, each whole (run again to finish)",
				len(written), len(run.ChangedFiles()))}
		}
		if err != nil {
			return usageErr(fmt.Errorf("%w (%d files written before the error)", err, len(written)))
		}
		outputs = append(outputs, fmt.Sprintf("written in place (%d files)", len(written)))
	}
	if dry {
		outputs = append(outputs, "dry run")
	}
	rep.Output = strings.Join(outputs, ", ")
	if format == report.Text && dry && rep.FilesChanged > 0 {
		// One file at a time (made a few files ahead on every core): a large
		// run never holds the whole diff.
		out := bufio.NewWriterSize(o.IO.Out, 64<<10)
		colour := o.colour()
		if err := pipeline.EachFileDiff(run.ChangedFiles(), func(_ *pipeline.File, diff string) error {
			return report.ColorDiff(out, []byte(diff), colour)
		}); err != nil {
			return usageErr(err)
		}
		fmt.Fprintln(out)
		if err := out.Flush(); err != nil {
			return usageErr(err)
		}
	}
	if err := report.Write(o.IO.Out, rep, format); err != nil {
		return usageErr(err)
	}
	if err := o.Delivery.deliver(ctx, o.IO, run, reproduceCmd(given, o.Target)); err != nil {
		return err
	}
	if o.Check && rep.FilesChanged > 0 {
		return &exitError{code: 1}
	}
	return o.findingsExit(rep)
}

// writeTree is pipeline.WriteTree with the CLI's exit codes: the copy is
// built beside dir and renamed onto it when whole, so a failed or
// interrupted run leaves dir as it was (WriteTree removes only what it made).
func writeTree(ctx context.Context, run *pipeline.Run, dir string) error {
	err := pipeline.WriteTree(ctx, run, dir)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return &exitError{code: 130, err: fmt.Errorf("interrupted: %s left as it was", dir)}
	}
	return usageErr(err)
}

func (o *migrateOptions) colour() bool {
	switch o.Color {
	case "always":
		return true
	case "never":
		return false
	}
	return report.ColorEnabled(isTerminal(o.IO.Out), o.Getenv)
}
