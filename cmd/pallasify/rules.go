package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/codes"
	"github.com/pallasify/pallasify/transforms/rule"
)

// rulesOptions are the rules command's arguments and dependencies.
type rulesOptions struct {
	IO    *streams
	Code  string       // empty: list every rule
	Rules []*rule.Rule // nil: the registry
}

func newRulesCmd(io *streams, runF func(context.Context, *rulesOptions) error) *cobra.Command {
	opts := &rulesOptions{IO: io}
	return &cobra.Command{
		Use:   "rules [CODE]",
		Short: "List every diagnostic code (rules first) or print one code's full doc",
		Long: `Without an argument, list every code of the code registry: the rules (code,
fix safety: safe, unsafe, diagnostic; name and title), then every other family
(input problems PIO, kernels PKN, capture CAP-, emulator EMU-, sandbox SBX-,
drafts PPL/PTR/PDR, the LLM drafter L-, verdict reasons V-) with its group.
With a code, print its full documentation: for a rule, its page and its
before/after example for both targets.`,
		Example: "  pallasify rules\n  pallasify rules PDV001\n  pallasify rules V-MISMATCH",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErr(fmt.Errorf("rules takes at most one CODE (got %d)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Code = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return rulesRun(cmd.Context(), opts)
		},
	}
}

func rulesRun(ctx context.Context, o *rulesOptions) error {
	all := o.Rules
	if all == nil {
		all = transforms.All()
	}
	if o.Code == "" {
		tw := tabwriter.NewWriter(o.IO.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CODE\tSAFETY\tNAME\tTITLE")
		for _, r := range all {
			title := r.Title()
			if r.Removed {
				title = "(removed) " + title
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Code, r.Safety, r.Name, title)
		}
		for _, e := range codes.All() {
			if !e.Rule {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Code.Code, e.Group, e.Name, e.Title)
			}
		}
		return tw.Flush()
	}
	code := strings.ToUpper(strings.TrimSpace(o.Code))
	for _, r := range all {
		if r.Code == code || r.Name == o.Code {
			printRule(o.IO, r)
			return nil
		}
	}
	if e, ok := codes.Lookup(code); ok && !e.Rule {
		fmt.Fprintf(o.IO.Out, "%s %s (%s, %s)\n\n%s\n\n%s\n", e.Code.Code, e.Name, e.About, e.Severity, e.Title, e.Doc)
		return nil
	}
	return usageErr(fmt.Errorf("no diagnostic code %q (run `pallasify rules` for the list)", o.Code))
}

func printRule(io *streams, r *rule.Rule) {
	w := io.Out
	fmt.Fprintf(w, "%s %s — %s\n", r.Code, r.Name, r.Title())
	fmt.Fprintf(w, "family: %s; fix safety: %s", orNone(r.Family), r.Safety)
	if r.Removed {
		fmt.Fprint(w, "; REMOVED")
	}
	fmt.Fprint(w, "\n\n")
	doc := strings.TrimSpace(r.Doc)
	if first, rest, ok := strings.Cut(doc, "\n"); ok && strings.Contains(first, r.Title()) {
		doc = strings.TrimSpace(rest)
	}
	if doc != "" {
		fmt.Fprintln(w, doc)
		fmt.Fprintln(w)
	}
	ex := r.Example
	if strings.TrimSpace(ex.Before) == "" || strings.Contains(r.Doc, strings.TrimSpace(ex.Before)) {
		return // no example, or the doc already shows it with both targets
	}
	fmt.Fprintln(w, "Example (before):")
	fmt.Fprintln(w, indent(ex.Before))
	for _, t := range []struct {
		name rule.Target
		want string
	}{{rule.Portable, ex.Portable}, {rule.TPU, ex.TPU}} {
		fmt.Fprintf(w, "After, --target %s:\n", t.name)
		if t.want == "" {
			if r.Safety == rule.DisplayOnly {
				fmt.Fprintln(w, "    (unchanged: reported, and marked with --mark)")
			} else {
				fmt.Fprintln(w, "    (unchanged)")
			}
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintln(w, indent(t.want))
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "    " + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
