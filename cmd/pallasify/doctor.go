package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/validators"
)

func newDoctorCmd(io *streams) *cobra.Command {
	var format string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check what kernel validation needs (Python venv, jax, libtpu and a deviceless TPU compile, torch/torch_tpu/triton, g++, bubblewrap, git; GPU info)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := resolveFormat(io.ErrOut, format, asJSON, textJSON...)
			if err != nil {
				return err
			}
			checks := validators.Doctor(cmd.Context(), validators.DoctorOptions{})
			checks = append(checks, llmCheck(os.Getenv))
			if format == "json" {
				// An array, as before JSON documents were versioned: no schema_version.
				enc := json.NewEncoder(io.Out)
				enc.SetIndent("", " ")
				if err := enc.Encode(checks); err != nil {
					return usageErr(err)
				}
			} else {
				for _, c := range checks {
					fmt.Fprintf(io.Out, "%-5s %-22s %s\n", strings.ToUpper(c.Status), c.Name, c.Detail)
					fmt.Fprintf(io.Out, "      %-22s needed for: %s\n", "", c.Why)
					if c.Fix != "" {
						fmt.Fprintf(io.Out, "      %-22s fix: %s\n", "", c.Fix)
					}
				}
			}
			for _, c := range checks {
				if c.Status == validators.CheckFail {
					return &exitError{code: 1}
				}
			}
			return nil
		},
	}
	bindFormat(cmd.Flags(), &format, &asJSON, "output", textJSON...)
	return cmd
}
