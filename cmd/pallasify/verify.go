package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/report"
	"github.com/pallasify/pallasify/transforms/rule"
)

// verifyOptions are verify's parsed flags.
type verifyOptions struct {
	IO *streams
	treeFlags
	Against     string
	RTol, ATol  float64
	IgnoreLines []string
	Timeout     time.Duration
	NoSandbox   bool
	Python      string
	JSON        bool
	Command     []string
	// The simulated TPU host (--tpu).
	TPU          bool
	TPUDevices   int
	TPUPrecision string
	TPUFallback  string
	// Imports runs the import check instead of a command (verify --imports).
	Imports       bool
	ModuleTimeout time.Duration
}

func newVerifyCmd(io *streams, rules []*rule.Rule) *cobra.Command {
	o := &verifyOptions{IO: io}
	o.Rules, o.Format = rules, "text"
	cmd := &cobra.Command{
		Use:   "verify [flags] PATH -- CMD [ARG...]",
		Short: "Run your own command before and after the migration and compare what it prints",
		Long: `Migrate the tree at PATH (as migrate would, in memory), then run CMD — a test, a few
training steps — once in the original tree and once in the migrated one, on the CPU,
inside the sandbox and under a time limit, and compare what it prints: the text line
by line and every number in it. Numbers must be printed identically unless --rtol or
--atol allow a difference. Both runs see their tree at the same path. CMD given as
one word is run by /bin/sh -c; "python" is the interpreter of $PALLASIFY_PYTHON (or
--python). --against DIR compares with a tree migrated earlier instead.

--tpu runs the migrated tree on the simulated TPU host instead of the plain CPU: a
Python process where "tpu" is a device (its data and compute on the CPU), every aten
op reaching a tpu tensor is checked against TorchTPU 0.2.0's own registrations (read
from the installed torch-tpu), and CUDA-only calls, custom CUDA ops called with tpu
tensors and tpu/CPU device mix-ups are recorded with their call sites (codes
PTH001-PTH004; validators/tpuhost/python/README.md says what it does not emulate).
--target tpu is then the usual choice.

--format html writes one self-contained page to standard output (redirect it): the
verdict, both runs and the differences and, with --tpu, the simulated host's op-coverage
table (every aten op the migrated run executed, with its calls, whether TorchTPU
implements it and where it was first reached; the host records every op for it) and its
other findings.

--imports takes no CMD: it imports every module of the migrated tree on the CPU, in the
sandbox, once with torch-tpu as installed and once with it hidden, and collects its tests
with pytest; a module or test file that fails after the migration but not before is
PIM001/PIM002, a missing third-party dependency PIM003 and a failure the original has
too PIM004, neither counted (validators/importcheck/README.md).

Exit codes: 0 same behaviour (and, with --tpu, nothing reached that fails on a TPU;
with --imports, nothing that no longer imports), 1 different or a finding, 2 usage or
I/O error.`,
		Example: `  pallasify verify . -- python train.py --steps 3
  pallasify verify --target tpu --rtol 1e-6 . -- 'pytest -q tests/test_model.py'
  pallasify verify --ignore-lines '^took ' --against ../migrated . -- python bench.py
  pallasify verify --tpu --target tpu --format json . -- python -m pytest -q tests/test_model.py
  pallasify verify --tpu --target tpu --format html . -- python train.py --steps 1 > verify.html
  pallasify verify --imports --target tpu .
  pallasify verify --imports --against ../migrated --format json .`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.Imports {
				if len(args) != 1 || cmd.ArgsLenAtDash() >= 0 {
					return usageErr(fmt.Errorf("verify --imports takes PATH and no command (got %d argument(s))", len(args)))
				}
				return nil
			}
			dash := cmd.ArgsLenAtDash()
			if dash != 1 || len(args) < 2 {
				return usageErr(fmt.Errorf("verify takes PATH -- CMD (got %d argument(s), %d before --)", len(args), dash))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path, o.Command = args[0], args[1:]
			if o.Imports {
				if !cmd.Flags().Changed("timeout") {
					o.Timeout = 0 // the import check's own default
				}
				return runVerifyImports(cmd.Context(), o)
			}
			return runVerify(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Target, "target", "portable", "rewrite target: portable or tpu")
	fl.StringSliceVar(&o.Select, "select", nil, "only these rule codes or prefixes (comma-separated)")
	fl.StringSliceVar(&o.Ignore, "ignore", nil, "skip these rule codes or prefixes (comma-separated)")
	fl.StringSliceVar(&o.Exclude, "exclude", nil, "leave out files and directories matching these globs")
	fl.BoolVar(&o.UnsafeFixes, "unsafe-fixes", false, "also apply fixes marked unsafe")
	fl.StringVar(&o.Against, "against", "", "compare with this already migrated tree instead of migrating PATH")
	fl.Float64Var(&o.RTol, "rtol", 0, "relative tolerance for printed numbers (default: identical)")
	fl.Float64Var(&o.ATol, "atol", 0, "absolute tolerance for printed numbers (default: identical)")
	fl.StringArrayVar(&o.IgnoreLines, "ignore-lines", nil, "drop output lines matching this regular expression from both runs (repeatable)")
	fl.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "time limit of each run")
	fl.BoolVar(&o.NoSandbox, "no-sandbox", false, "run the command directly instead of in the sandbox (trusted code only)")
	fl.StringVar(&o.Python, "python", "", "the interpreter `python` resolves to (default $PALLASIFY_PYTHON, else python3)")
	bindFormat(fl, &o.Format, &o.JSON, "output", verifyFormats...)
	fl.BoolVar(&o.TPU, "tpu", false, "run the migrated tree on the simulated TPU host and report what would fail on a TPU")
	bindTPUFlags(fl, &o.TPUDevices, &o.TPUPrecision, &o.TPUFallback)
	fl.BoolVar(&o.Imports, "imports", false, "import every module and collect the tests of the migrated tree, with and without torch-tpu (no CMD)")
	fl.DurationVar(&o.ModuleTimeout, "module-timeout", time.Minute, "with --imports: time limit of one module's import (--timeout bounds the whole check)")
	return cmd
}

// bindTPUFlags adds the simulated TPU host's settings (verify --tpu, ops).
func bindTPUFlags(fl *pflag.FlagSet, devices *int, precision, fallback *string) {
	fl.IntVar(devices, "tpu-devices", 1, "TPU devices the simulated host reports (torch.accelerator.device_count())")
	fl.StringVar(precision, "tpu-precision", "highest", "float32 matmuls and convolutions: highest (exact, as on the CPU) or default (inputs rounded to bfloat16, as TorchTPU's default precision runs them)")
	fl.StringVar(fallback, "tpu-fallback", "record", "an op without a TPU kernel: record (run it on the CPU and report it, so one run lists them all) or raise (NotImplementedError, as TorchTPU 0.2.0 does by default)")
}

// tpuHost sets up the simulated TPU host for a command run with python.
func tpuHost(ctx context.Context, python string, devices int, precision, fallback string) (*pipeline.TPUHost, error) {
	if devices < 1 {
		return nil, usageErr(fmt.Errorf("--tpu-devices must be at least 1"))
	}
	if precision != "highest" && precision != "default" {
		return nil, usageErr(fmt.Errorf("--tpu-precision %q: want highest or default", precision))
	}
	if fallback != "record" && fallback != "raise" {
		return nil, usageErr(fmt.Errorf("--tpu-fallback %q: want record or raise", fallback))
	}
	h, err := pipeline.NewTPUHost(ctx, python, "")
	if err != nil {
		return nil, runErr(ctx, err)
	}
	h.Devices, h.Precision, h.Fallback = devices, precision, fallback
	return h, nil
}

func runVerify(ctx context.Context, o *verifyOptions) error {
	if o.RTol < 0 || o.ATol < 0 {
		return usageErr(fmt.Errorf("--rtol and --atol must not be negative"))
	}
	if err := o.resolveFormat(verifyFormats...); err != nil {
		return err
	}
	vo := pipeline.VerifyOptions{Original: o.Path, Command: o.Command, Python: o.Python, Timeout: o.Timeout,
		RTol: o.RTol, ATol: o.ATol, NoSandbox: o.NoSandbox}
	for _, expr := range o.IgnoreLines {
		re, err := regexp.Compile(expr)
		if err != nil {
			return usageErr(fmt.Errorf("--ignore-lines %q: %w", expr, err))
		}
		vo.IgnoreLines = append(vo.IgnoreLines, re)
	}
	if fi, err := os.Stat(o.Path); err != nil || !fi.IsDir() {
		return usageErr(fmt.Errorf("%s: not a directory", o.Path))
	}
	if o.TPU {
		h, err := tpuHost(ctx, o.Python, o.TPUDevices, o.TPUPrecision, o.TPUFallback)
		if err != nil {
			return err
		}
		// the page's op-coverage table lists every op the run executed
		h.AllOps = o.Format == "html"
		vo.TPUHost = h
	}
	vo.Migrated = o.Against
	if vo.Migrated == "" {
		dir, changed, err := migrateForVerify(ctx, o)
		if err != nil {
			return err
		}
		defer os.RemoveAll(filepath.Dir(dir))
		vo.Migrated = dir
		fmt.Fprintf(o.IO.ErrOut, "migrated %d file(s); running %q in both trees\n", changed, o.Command)
	}
	res, err := pipeline.Verify(ctx, vo)
	if err != nil {
		return runErr(ctx, err)
	}
	switch o.Format {
	case "json":
		if err := writeJSON(o.IO.Out, schemaVerify, struct {
			Same  bool `json:"same"`
			Clean bool `json:"clean"`
			*pipeline.VerifyResult
		}{res.Same(), res.Clean(), res}); err != nil {
			return usageErr(err)
		}
	case "html":
		if err := report.WriteVerifyHTML(o.IO.Out, &report.VerifyPage{Kind: "verify", Version: version, Root: o.Path,
			Against: o.Against, Command: o.Command, Target: o.Target, Options: o.optionList(), Result: res, TPU: res.TPU}); err != nil {
			return usageErr(err)
		}
	default:
		fmt.Fprint(o.IO.Out, res.Summary())
		fmt.Fprint(o.IO.Out, report.Printable(res.TPUSummary()))
	}
	if !res.Clean() {
		return &exitError{code: 1}
	}
	return nil
}

// verifyFormats are verify's --format values (verify --imports takes
// textJSON).
var verifyFormats = []string{"text", "json", "html"}

// resolveFormat checks --format (and the deprecated --json) against
// allowed: o.JSON is then whether to print JSON.
func (o *verifyOptions) resolveFormat(allowed ...string) error {
	format, err := resolveFormat(o.IO.ErrOut, o.Format, o.JSON, allowed...)
	if err != nil {
		return err
	}
	o.Format, o.JSON = format, format == "json"
	return nil
}

// optionList is the run's settings for the HTML page, one phrase each:
// the migration's (report.OptionList) and the comparison's.
func (o *verifyOptions) optionList() []string {
	out := report.OptionList(pipeline.Options{Select: o.Select, Ignore: o.Ignore, Exclude: o.Exclude, UnsafeFixes: o.UnsafeFixes})
	if o.RTol > 0 || o.ATol > 0 {
		out = append(out, fmt.Sprintf("numbers within rtol %g, atol %g", o.RTol, o.ATol))
	}
	for _, re := range o.IgnoreLines {
		out = append(out, "lines matching "+re+" ignored")
	}
	out = append(out, "time limit "+o.Timeout.String()+" per run")
	if o.NoSandbox {
		out = append(out, "no sandbox")
	}
	if o.TPU {
		out = append(out, tpuHostOptions(o.TPUDevices, o.TPUPrecision, o.TPUFallback))
	}
	return out
}

// tpuHostOptions describes the simulated TPU host's settings.
func tpuHostOptions(devices int, precision, fallback string) string {
	unit := "devices"
	if devices == 1 {
		unit = "device"
	}
	return fmt.Sprintf("simulated TPU host: %d %s, precision %s, op without a TPU kernel: %s", devices, unit, precision, fallback)
}

// migrateForVerify migrates the tree in memory and writes the result into a
// fresh temporary directory (as --out would); it returns the directory and
// how many files changed.
func migrateForVerify(ctx context.Context, o *verifyOptions) (string, int, error) {
	opts, _, err := o.options(false)
	if err != nil {
		return "", 0, err
	}
	run, err := pipeline.Migrate(ctx, opts)
	if err != nil {
		return "", 0, runErr(ctx, err)
	}
	tmp, err := os.MkdirTemp("", "pallasify-verify-out-*")
	if err != nil {
		return "", 0, usageErr(err)
	}
	dir := filepath.Join(tmp, "migrated")
	if err := pipeline.WriteTree(ctx, run, dir); err != nil {
		os.RemoveAll(tmp)
		return "", 0, runErr(ctx, err)
	}
	return dir, len(run.ChangedFiles()), nil
}
