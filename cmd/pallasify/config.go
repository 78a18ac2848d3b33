package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/pallasify/pallasify/pipeline/config"
)

// configOptions are the config command's arguments.
type configOptions struct {
	IO       *streams
	File     string
	Operator bool
}

func newConfigCmd(io *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check or show pallasify.yaml, the file that drives local, batch and bot runs",
	}
	opts := &configOptions{IO: io}
	validate := &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check a config file (default: the one found from .): unknown keys and bad values are errors with line numbers",
		Long: `Check a config file. Unknown keys, wrong types and bad values are errors
with their line numbers; exit 1 when there is any error.

FILE is a pallasify.yaml (any YAML file) or a pyproject.toml, whose
[tool.pallasify] table takes the same keys. Without FILE, the file a run
over . reads: from . upward to the repository's root (the directory with
.git), the first pallasify.yaml or pyproject.toml with a [tool.pallasify]
table (pallasify.yaml first in one directory); ./pallasify.yaml when none.

A repository's own pallasify.yaml may not set operator-only keys (github,
batch, bot, llm.base_url, llm.api_key_env): they are reported as warnings and
ignored. Pass --operator to check an operator's file (given with --config).`,
		Example: "  pallasify config validate\n  pallasify config validate pyproject.toml\n  pallasify config validate --operator ops.yaml",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErr(fmt.Errorf("validate takes at most one FILE (got %d)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = config.FileName
			if len(args) == 1 {
				opts.File = args[0]
			} else if found, err := config.Discover("."); err == nil && found != "" {
				opts.File = displayPath(found)
			}
			return configValidateRun(cmd.Context(), opts)
		},
	}
	validate.Flags().BoolVar(&opts.Operator, "operator", false, "check an operator's config (may set github, batch, bot and LLM endpoint keys)")
	show := &cobra.Command{
		Use:   "show [FILE]",
		Short: "Print the effective configuration: the defaults merged with FILE",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = ""
			if len(args) == 1 {
				opts.File = args[0]
			}
			return configShowRun(cmd.Context(), opts)
		},
	}
	show.Flags().BoolVar(&opts.Operator, "operator", false, "treat FILE as an operator's config")
	cmd.AddCommand(validate, show)
	return cmd
}

// loadLocalConfig loads the config of a run over the local path: the
// repository's file config.Discover finds from path (trusted: the user's
// own tree) merged with flagPath (--config; "" none). Problems go to
// io.ErrOut; it returns the config and the file read, as config.Describe
// names it ("" when none).
func loadLocalConfig(io *streams, path, flagPath string) (*config.Config, string, error) {
	file, err := config.Discover(path)
	if err != nil {
		return nil, "", usageErr(err)
	}
	name := displayPath(file)
	cfg, probs, err := config.LoadFile(file, name, true, flagPath)
	for _, p := range probs {
		fmt.Fprintln(io.ErrOut, p.String())
	}
	if err != nil {
		return nil, "", usageErr(err)
	}
	if file == "" {
		return cfg, "", nil
	}
	return cfg, config.Describe(name), nil
}

// displayPath is path relative to the working directory when it lies
// under it, else path as it is.
func displayPath(path string) string {
	if path == "" {
		return ""
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return rel
		}
	}
	return path
}

func readConfig(o *configOptions) (*config.Config, []config.Problem, error) {
	if o.File == "" {
		return config.Defaults(), nil, nil
	}
	src, err := config.ReadFile(o.File, filepath.Base(o.File), o.Operator)
	var ce *config.Error
	switch {
	case errors.As(err, &ce):
		return nil, ce.Problems, err
	case err != nil:
		return nil, nil, usageErr(err)
	}
	return config.Parse(src)
}

func configValidateRun(ctx context.Context, o *configOptions) error {
	_, probs, err := readConfig(o)
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	for _, p := range probs {
		fmt.Fprintln(o.IO.Out, p.String())
	}
	if err != nil {
		return &exitError{code: 1}
	}
	fmt.Fprintf(o.IO.Out, "%s: ok\n", o.File)
	return nil
}

func configShowRun(ctx context.Context, o *configOptions) error {
	cfg, probs, err := readConfig(o)
	for _, p := range probs {
		fmt.Fprintln(o.IO.ErrOut, p.String())
	}
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return &exitError{code: 1}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return usageErr(err)
	}
	_, err = o.IO.Out.Write(out)
	return err
}
