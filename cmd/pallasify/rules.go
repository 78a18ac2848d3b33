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
	IO     *streams
	Code   string       // empty: list every rule
	Rules  []*rule.Rule // nil: the registry
	Format string       // text or json
}

func newRulesCmd(io *streams, runF func(context.Context, *rulesOptions) error) *cobra.Command {
	opts := &rulesOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "rules [CODE]",
		Short: "List every diagnostic code (rules first) or print one code's full doc",
		Long: `Without an argument, list every code of the code registry: the rules (code,
fix safety: safe, unsafe, diagnostic; name and title), then every other family
(input problems PIO, kernels PKN, capture CAP-, emulator EMU-, sandbox SBX-,
drafts PPL/PTR/PDR, the LLM drafter L-, verdict reasons V-) with its group.
With a code, print its full documentation: for a rule, its page and its
before/after example for both targets.

--format json prints {"schema_version": 1, "codes": [...]}, each code an object
with code, name, rule, group, family, severity, title, about and doc (a rule
also safety, removed, opt_in and example: before, portable, tpu); with a code,
that one object, schema_version added.`,
		Example: "  pallasify rules\n  pallasify rules PDV001\n  pallasify rules V-MISMATCH\n  pallasify rules --format json | jq '.codes[].code'",
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
	bindFormat(cmd.Flags(), &opts.Format, nil, "output", textJSON...)
	return cmd
}

// codeDoc is one code in rules --format json.
type codeDoc struct {
	Code string `json:"code"`
	Name string `json:"name"`
	// Rule is set for a rewrite rule's code.
	Rule bool `json:"rule"`
	// Group is what the text list's SAFETY column shows: a rule's fix
	// safety, else the code's group (input, kernel, verdict, ...).
	Group    string `json:"group"`
	Family   string `json:"family"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
	About    string `json:"about"`
	Doc      string `json:"doc"`
	// A rule's own fields.
	Safety  string      `json:"safety,omitempty"`
	Removed bool        `json:"removed,omitempty"`
	OptIn   bool        `json:"opt_in,omitempty"`
	Example *exampleDoc `json:"example,omitempty"`
}

// exampleDoc is a rule's before/after example (empty: unchanged).
type exampleDoc struct {
	Before   string `json:"before"`
	Portable string `json:"portable"`
	TPU      string `json:"tpu"`
}

func ruleDoc(r *rule.Rule) codeDoc {
	d := codeDoc{Code: r.Code, Name: r.Name, Rule: true, Group: r.Safety.String(), Family: r.Family, Severity: string(codes.Info),
		Title: r.Title(), About: "rewrite rule", Doc: strings.TrimSpace(r.Doc), Safety: r.Safety.String(), Removed: r.Removed, OptIn: r.OptIn}
	if e, ok := codes.Lookup(r.Code); ok {
		d.Severity = string(e.Severity)
	}
	if strings.TrimSpace(r.Example.Before) != "" {
		d.Example = &exampleDoc{Before: r.Example.Before, Portable: r.Example.Portable, TPU: r.Example.TPU}
	}
	return d
}

func entryDoc(e codes.Entry) codeDoc {
	return codeDoc{Code: e.Code.Code, Name: e.Name, Group: e.Group, Family: e.Family(), Severity: string(e.Severity),
		Title: e.Title, About: e.About, Doc: strings.TrimSpace(e.Doc)}
}

func rulesRun(ctx context.Context, o *rulesOptions) error {
	format, err := resolveFormat(nil, o.Format, false, textJSON...)
	if err != nil {
		return err
	}
	all := o.Rules
	if all == nil {
		all = transforms.All()
	}
	if format == "json" {
		return rulesJSON(o, all)
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
	r, e, err := findCode(all, o.Code)
	switch {
	case err != nil:
		return err
	case r != nil:
		printRule(o.IO, r)
	default:
		fmt.Fprintf(o.IO.Out, "%s %s (%s, %s)\n\n%s\n\n%s\n", e.Code.Code, e.Name, e.About, e.Severity, e.Title, e.Doc)
	}
	return nil
}

// findCode finds a code (or a rule's name): the rule, else the registry's
// entry of another code; a usage error when there is none.
func findCode(all []*rule.Rule, name string) (*rule.Rule, codes.Entry, error) {
	code := strings.ToUpper(strings.TrimSpace(name))
	for _, r := range all {
		if r.Code == code || r.Name == name {
			return r, codes.Entry{}, nil
		}
	}
	if e, ok := codes.Lookup(code); ok && !e.Rule {
		return nil, e, nil
	}
	return nil, codes.Entry{}, usageErr(fmt.Errorf("no diagnostic code %q (run `pallasify rules` for the list)", name))
}

// rulesJSON is rules --format json: every code, or o.Code's.
func rulesJSON(o *rulesOptions, all []*rule.Rule) error {
	if o.Code == "" {
		list := []codeDoc{}
		for _, r := range all {
			list = append(list, ruleDoc(r))
		}
		for _, e := range codes.All() {
			if !e.Rule {
				list = append(list, entryDoc(e))
			}
		}
		return writeJSON(o.IO.Out, schemaRules, struct {
			Codes []codeDoc `json:"codes"`
		}{list})
	}
	r, e, err := findCode(all, o.Code)
	switch {
	case err != nil:
		return err
	case r != nil:
		return writeJSON(o.IO.Out, schemaRules, ruleDoc(r))
	}
	return writeJSON(o.IO.Out, schemaRules, entryDoc(e))
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
