package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline"
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

Exit codes: 0 same behaviour, 1 different, 2 usage or I/O error.`,
		Example: `  pallasify verify . -- python train.py --steps 3
  pallasify verify --target tpu --rtol 1e-6 . -- 'pytest -q tests/test_model.py'
  pallasify verify --ignore-lines '^took ' --against ../migrated . -- python bench.py`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash != 1 || len(args) < 2 {
				return usageErr(fmt.Errorf("verify takes PATH -- CMD (got %d argument(s), %d before --)", len(args), dash))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path, o.Command = args[0], args[1:]
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
	fl.BoolVar(&o.JSON, "json", false, "print the comparison as JSON")
	return cmd
}

func runVerify(ctx context.Context, o *verifyOptions) error {
	if o.RTol < 0 || o.ATol < 0 {
		return usageErr(fmt.Errorf("--rtol and --atol must not be negative"))
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
	if o.JSON {
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Same bool `json:"same"`
			*pipeline.VerifyResult
		}{res.Same(), res}); err != nil {
			return usageErr(err)
		}
	} else {
		fmt.Fprint(o.IO.Out, res.Summary())
	}
	if !res.Same() {
		return &exitError{code: 1}
	}
	return nil
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
