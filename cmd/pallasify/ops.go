package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/report"
	"github.com/pallasify/pallasify/validators/tpuhost"
)

// opsOptions are ops' parsed flags.
type opsOptions struct {
	IO                        *streams
	Path                      string
	Command                   []string
	Python                    string
	Timeout                   time.Duration
	NoSandbox                 bool
	Format                    string
	All                       bool
	TPUDevices                int
	TPUPrecision, TPUFallback string
}

func newOpsCmd(io *streams) *cobra.Command {
	o := &opsOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "ops [flags] PATH -- CMD [ARG...]",
		Short: "Which of your workload's ops TorchTPU implements: run CMD and classify every aten op",
		Long: `Run CMD once in the tree at PATH, as it is (nothing is migrated), inside the sandbox,
with every aten op it executes recorded — on any device — and classified against
TorchTPU 0.2.0's own registrations, read from the installed torch-tpu:

  native     a TPU kernel for the op
  out        reached through its .out variant's TPU kernel
  composite  decomposes into other ops (each checked as it runs)
  fallback   TorchTPU's backend fallback: NotImplementedError on a TPU unless its
             CPU fallback is switched on (then it runs on the host CPU)
  unsupported nothing for the device at all

The table lists the ops without a TPU kernel first, with their counts and first Python
call site (code PTH001); --all lists every op. Use it before migrating: "check your
ops". The command runs on pallasify's simulated TPU host (see verify --tpu), so a
workload that already says "tpu" runs as on a TPU host.

--format html writes one self-contained page (redirect it): the op-coverage table with
every op, the calls by class, and the run's other findings.

Exit codes: 0 every op has a TPU kernel, 1 some op has none (or the command reached
a CUDA-only call or custom CUDA op on tpu tensors), 2 usage or I/O error.`,
		Example: `  pallasify ops . -- python train.py --steps 1
  pallasify ops --format json . -- 'python -m pytest -q tests/test_model.py'
  pallasify ops --format html . -- python train.py --steps 1 > ops.html`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash != 1 || len(args) < 2 {
				return usageErr(fmt.Errorf("ops takes PATH -- CMD (got %d argument(s), %d before --)", len(args), dash))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path, o.Command = args[0], args[1:]
			return runOps(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Python, "python", "", "the interpreter `python` resolves to (default $PALLASIFY_PYTHON, else python3); torch-tpu must be installed there")
	fl.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "time limit of the run")
	fl.BoolVar(&o.NoSandbox, "no-sandbox", false, "run the command directly instead of in the sandbox (trusted code only)")
	bindFormat(fl, &o.Format, nil, "output", opsFormats...)
	fl.BoolVar(&o.All, "all", false, "list every op, not only those without a TPU kernel")
	bindTPUFlags(fl, &o.TPUDevices, &o.TPUPrecision, &o.TPUFallback)
	return cmd
}

func runOps(ctx context.Context, o *opsOptions) error {
	format, err := resolveFormat(nil, o.Format, false, opsFormats...)
	if err != nil {
		return err
	}
	o.Format = format
	if fi, err := os.Stat(o.Path); err != nil || !fi.IsDir() {
		return usageErr(fmt.Errorf("%s: not a directory", o.Path))
	}
	host, err := tpuHost(ctx, o.Python, o.TPUDevices, o.TPUPrecision, o.TPUFallback)
	if err != nil {
		return err
	}
	rep, run, err := pipeline.Ops(ctx, pipeline.VerifyOptions{Original: o.Path, Command: o.Command, Python: o.Python,
		Timeout: o.Timeout, NoSandbox: o.NoSandbox, TPUHost: host})
	if err != nil {
		return runErr(ctx, err)
	}
	missing := 0
	for _, op := range rep.Ops {
		if op.Class == "fallback" || op.Class == "unsupported" {
			missing++
		}
	}
	bad := missing + len(rep.CUDAOnlyCalls) + len(rep.CustomCUDAOps) + len(rep.DeviceMixups)
	switch o.Format {
	case "json":
		if err := writeJSON(o.IO.Out, schemaOps, struct {
			Ops        int                `json:"ops"`
			WithoutTPU int                `json:"without_tpu_kernel"`
			Run        pipeline.VerifyRun `json:"run"`
			Report     *tpuhost.Report    `json:"report"`
		}{len(rep.Ops), missing, run, rep}); err != nil {
			return usageErr(err)
		}
	case "html":
		opts := []string{"time limit " + o.Timeout.String(), tpuHostOptions(o.TPUDevices, o.TPUPrecision, o.TPUFallback)}
		if o.NoSandbox {
			opts = append(opts, "no sandbox")
		}
		if err := report.WriteVerifyHTML(o.IO.Out, &report.VerifyPage{Kind: "ops", Version: version, Root: o.Path,
			Command: o.Command, Options: opts, Run: &run, TPU: rep}); err != nil {
			return usageErr(err)
		}
	default:
		writeOpsTable(o.IO.Out, rep, o.All, run)
	}
	if bad > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// opsFormats are ops' --format values.
var opsFormats = []string{"text", "json", "html"}

// writeOpsTable prints the ops without a TPU kernel (every op with all),
// then the run's other findings and how the command ended.
func writeOpsTable(w io.Writer, rep *tpuhost.Report, all bool, run pipeline.VerifyRun) {
	ops := slices.Clone(rep.Ops)
	missing := func(c string) bool { return c == "fallback" || c == "unsupported" }
	sort.SliceStable(ops, func(i, j int) bool {
		if mi, mj := missing(ops[i].Class), missing(ops[j].Class); mi != mj {
			return mi
		}
		if ops[i].Count != ops[j].Count {
			return ops[i].Count > ops[j].Count
		}
		return ops[i].Op < ops[j].Op
	})
	n := 0
	for _, op := range ops {
		if missing(op.Class) {
			n++
		}
	}
	fmt.Fprintf(w, "%d aten ops ran; %d without a TPU kernel in TorchTPU\n", len(ops), n)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  OP\tCLASS\tCALLS\tFIRST SITE")
	for _, op := range ops {
		if !all && !missing(op.Class) {
			continue
		}
		code := ""
		if missing(op.Class) {
			code = pipeline.CodeTPUOp + " "
		}
		fmt.Fprintf(tw, "  %s\t%s%s\t%d\t%s\n", report.Printable(op.Op), code, op.Class, op.Count, report.Printable(op.Site))
	}
	tw.Flush()
	rest := *rep
	rest.UnsupportedOps = nil
	if rest.Findings() > 0 || len(rest.Errors) > 0 {
		fmt.Fprint(w, report.Printable(pipeline.TPUReportText(&rest)))
	}
	fmt.Fprintf(w, "command exit code %d", run.ExitCode)
	if run.Error != "" {
		fmt.Fprintf(w, " (%s)", run.Error)
	}
	fmt.Fprintln(w)
	if run.ExitCode != 0 {
		fmt.Fprint(w, report.Printable(lastLines(run.Stderr, 10)))
	}
}

// lastLines returns the last n lines of s, each indented.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString("  | " + l + "\n")
		}
	}
	return b.String()
}
