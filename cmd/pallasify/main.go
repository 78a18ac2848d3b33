// Command pallasify moves PyTorch+CUDA repositories to Google TPUs: it
// analyzes a tree, rewrites CUDA-specific PyTorch deterministically, drafts
// Pallas replacements for CUDA kernels, proves them against the original
// kernel, and delivers the result as a diff, a branch or a pull request.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline/report"
	"github.com/pallasify/pallasify/transforms"
)

// version is set with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// exitError carries a process exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// usageErr marks an error as a usage/IO problem (exit 2).
func usageErr(err error) error { return &exitError{code: 2, err: err} }

// streams are the command's I/O, swappable in tests.
type streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

func newRootCmd(io *streams) *cobra.Command {
	root := &cobra.Command{
		Use:           "pallasify",
		Short:         "Move PyTorch+CUDA repositories to TPUs (TorchTPU + Pallas)",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErr(err) })
	root.AddCommand(
		newVersionCmd(io),
		newConfigCmd(io), newBatchCmd(io), newWorkerCmd(io), newBotCmd(io, transforms.All),
		newAnalyzeCmd(io, nil),
		newMigrateCmd(io, nil),
		newVerifyCmd(io, nil),
		newOpsCmd(io),
		newRulesCmd(io, nil),
		newValidateCmd(io),
		newDoctorCmd(io),
		newEnvironmentTopic(),
	)
	return root
}

func newVersionCmd(io *streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the pallasify version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(io.Out, "pallasify %s\n", version)
			return nil
		},
	}
}

func main() {
	stop := startCPUProfile(os.Getenv("PALLASIFY_CPUPROFILE"))
	code := run(os.Args[1:], &streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	stop()
	os.Exit(code)
}

// startCPUProfile writes a pprof CPU profile of the whole run to path
// (PALLASIFY_CPUPROFILE, for the speed work: `go tool pprof bin/pallasify
// path`); the returned func stops it. An empty path profiles nothing.
func startCPUProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pallasify: PALLASIFY_CPUPROFILE:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "pallasify: PALLASIFY_CPUPROFILE:", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// run executes the CLI and maps errors to exit codes: 0 ok, 1 changes found
// under --check (or a failed verdict), 2 usage or I/O errors.
func run(args []string, io *streams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal cancels the run, which then stops within moments
	// (every stage and the rule engine's loops watch ctx); a second one
	// gets the default action and ends the process at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	root := newRootCmd(io)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(io.ErrOut, "pallasify:", report.Printable(ee.err.Error()))
		}
		return ee.code
	}
	fmt.Fprintln(io.ErrOut, "pallasify:", report.Printable(err.Error()))
	return 2
}
