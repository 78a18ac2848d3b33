package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/fatih/color"

	"github.com/pallasify/pallasify/pipeline"
)

// Format is a report format.
type Format string

// Formats.
const (
	Text     Format = "text"
	JSON     Format = "json"
	Markdown Format = "markdown"
	SARIF    Format = "sarif"
	// HTML is one self-contained page (inline CSS and SVG, no script and no
	// external resource): summary, sites by rule and by file with each
	// file's diff, kernels with their proof.
	HTML Format = "html"
)

// Formats are the --format values ParseFormat takes (and "md" for
// markdown), in the order help texts list them.
func Formats() []string {
	return []string{string(Text), string(JSON), string(Markdown), string(SARIF), string(HTML)}
}

// ParseFormat parses a --format value.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case Text, JSON, Markdown, SARIF, HTML:
		return Format(s), nil
	case "md":
		return Markdown, nil
	}
	f := Formats()
	return "", fmt.Errorf("unknown format %q (want %s or %s)", s, strings.Join(f[:len(f)-1], ", "), f[len(f)-1])
}

// Write renders rep in format f.
func Write(w io.Writer, rep *Report, f Format) error {
	switch f {
	case Text, "":
		p := &printable{w: w}
		if err := writeText(p, rep); err != nil {
			return err
		}
		return p.Close()
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case Markdown:
		p := &printable{w: w}
		if err := writeMarkdown(p, rep); err != nil {
			return err
		}
		return p.Close()
	case SARIF:
		return writeSARIF(w, rep)
	case HTML:
		return writeHTML(w, rep)
	}
	return fmt.Errorf("unknown format %q", f)
}

// maxListed caps the per-site lists of the text and Markdown reports; JSON
// and SARIF always hold every site.
const maxListed = 200

func writeText(w io.Writer, rep *Report) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "pallasify %s: %s (target %s)", rep.Kind, rep.Root, rep.Target)
	if rep.Output != "" {
		fmt.Fprintf(b, ", %s", rep.Output)
	}
	b.WriteString("\n")
	if rep.Config != "" {
		fmt.Fprintf(b, "  config    %s\n", rep.Config)
	}
	verb := "would change"
	if strings.HasPrefix(rep.Output, "written") {
		verb = "changed"
	}
	fmt.Fprintf(b, "  files     %d source file%s, %d lines; %d with findings; %s %d%s\n", rep.Files, plural(rep.Files), rep.Lines,
		rep.FilesWithHit, verb, rep.FilesChanged, addedNote(rep))
	fmt.Fprintf(b, "  sites     %d: %s, %d need a human\n", rep.Sites, siteSplit(rep), rep.Manual)
	if rep.OptIn > 0 {
		fmt.Fprintf(b, "            %d opt-in suggestion%s (not counted as work; --unsafe-fixes applies them)\n", rep.OptIn, plural(rep.OptIn))
	}
	fmt.Fprintf(b, "  kernels   %s\n", kernelCount(rep))
	fmt.Fprintf(b, "  problems  %d\n", len(rep.Problems))
	fmt.Fprintf(b, "  effort    %s (%s)\n", rep.Effort.Level, rep.Effort.Reason)
	if len(rep.ByRule) > 0 {
		b.WriteString("\nBy rule:\n")
		tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  CODE\tNAME\tSAFETY\tSITES\tFIXED\tMANUAL"+replacedCell(rep, "\tREPLACED"))
		for _, rc := range rep.ByRule {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d%s\n", rc.Code, rc.Name, rc.Safety, rc.Sites, rc.Applied, rc.Manual,
				replacedCell(rep, fmt.Sprintf("\t%d", rc.Replaced)))
		}
		tw.Flush()
	}
	if rep.Kind == "analyze" && len(rep.PerFile) > 0 {
		b.WriteString("\nBy file:\n")
		tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  PATH\tLINES\tSITES\tFIXED\tMANUAL\t"+replacedCell(rep, "REPLACED\t")+"RULES")
		for i, fr := range rep.PerFile {
			if i == maxListed {
				fmt.Fprintf(tw, "  … %d more (see --format json)\n", len(rep.PerFile)-maxListed)
				break
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%s%s\n", fr.Path, fr.Lines, fr.Sites, fr.Applied, fr.Manual,
				replacedCell(rep, fmt.Sprintf("%d\t", fr.Replaced)), ruleList(fr.ByRule, fr.Skipped))
		}
		tw.Flush()
	}
	if len(rep.ManualSites) > 0 {
		b.WriteString("\nNeeds a human:\n")
		for i, d := range rep.ManualSites {
			if i == maxListed {
				fmt.Fprintf(b, "  … %d more (see --format json)\n", len(rep.ManualSites)-maxListed)
				break
			}
			fmt.Fprintf(b, "  %s: %s %s%s\n", loc(d), d.Code, d.Message, skippedNote(d))
		}
	}
	if len(rep.Problems) > 0 {
		b.WriteString("\nLeft untouched:\n")
		for i, d := range rep.Problems {
			if i == maxListed {
				fmt.Fprintf(b, "  … %d more (see --format json)\n", len(rep.Problems)-maxListed)
				break
			}
			fmt.Fprintf(b, "  %s: %s %s\n", loc(d), d.Code, d.Message)
		}
	}
	if len(rep.Kernels) > 0 {
		b.WriteString("\nKernels:\n")
		tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ID\tNAME\tWHERE\tORIGIN\tCLASS\tSPEC\tEMULATOR\tDRAFT\tVERDICT")
		for _, k := range rep.Kernels {
			fmt.Fprintf(tw, "  %s\t%s\t%s:%d\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Path, k.Line, k.Origin, k.Class, k.Spec, k.Emulator, k.Drafter, k.Verdict)
		}
		tw.Flush()
		writeDraftLines(b, rep, "  ", false)
		writeLLMText(b, rep)
	}
	if len(rep.KernelNotes) > 0 {
		b.WriteString("\nKernel notes:\n")
		for i, d := range rep.KernelNotes {
			if i == maxListed {
				fmt.Fprintf(b, "  … %d more (see --format json)\n", len(rep.KernelNotes)-maxListed)
				break
			}
			fmt.Fprintf(b, "  %s: %s %s\n", loc(d), d.Code, d.Message)
		}
	}
	writeNextStepsText(b, rep)
	if len(rep.Timings) > 0 {
		parts := make([]string, len(rep.Timings))
		for i, t := range rep.Timings {
			parts[i] = t.Stage + " " + dur(t.Seconds)
		}
		b.WriteString("\nTimings: " + strings.Join(parts, "; ") + "\n")
	}
	return b.Flush()
}

func ruleList(m map[string]int, skipped string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys)+1)
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s×%d", k, m[k]))
	}
	if skipped != "" {
		parts = append(parts, "untouched:"+skipped)
	}
	return strings.Join(parts, " ")
}

func skippedNote(d pipeline.Diagnostic) string {
	if d.Skipped != "" {
		return " (" + d.Skipped + ")"
	}
	return ""
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}

func writeMarkdown(w io.Writer, rep *Report) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "## pallasify %s report\n\n", rep.Kind)
	fmt.Fprintf(b, "Target **%s**", rep.Target)
	if rep.Version != "" {
		fmt.Fprintf(b, ", pallasify %s", rep.Version)
	}
	if rep.Output != "" {
		fmt.Fprintf(b, ", %s", rep.Output)
	}
	b.WriteString(".\n\n")
	b.WriteString("| | |\n|---|---|\n")
	fmt.Fprintf(b, "| Source files | %d (%d lines) |\n", rep.Files, rep.Lines)
	fmt.Fprintf(b, "| Files with findings | %d |\n", rep.FilesWithHit)
	fmt.Fprintf(b, "| Files changed | %d%s |\n", rep.FilesChanged, addedNote(rep))
	fmt.Fprintf(b, "| Sites | %d: %s, %d need a human |\n", rep.Sites, siteSplit(rep), rep.Manual)
	if rep.OptIn > 0 {
		fmt.Fprintf(b, "| Opt-in | %d suggestion%s, not counted as work (`--unsafe-fixes` applies them) |\n", rep.OptIn, plural(rep.OptIn))
	}
	fmt.Fprintf(b, "| Custom kernels | %s |\n", kernelCount(rep))
	fmt.Fprintf(b, "| Files left untouched | %d |\n", len(rep.Problems))
	fmt.Fprintf(b, "| Effort | **%s** (%s) |\n\n", rep.Effort.Level, mdEscape(rep.Effort.Reason))
	writeNextStepsMarkdown(b, rep)
	if len(rep.ByRule) > 0 {
		b.WriteString("### By rule\n\n| Code | Rule | Safety | Sites | Fixed | Manual |" + replacedCell(rep, " Replaced |") +
			"\n|---|---|---|---:|---:|---:|" + replacedCell(rep, "---:|") + "\n")
		for _, rc := range rep.ByRule {
			fmt.Fprintf(b, "| `%s` | %s | %s | %d | %d | %d |%s\n", rc.Code, mdEscape(orDash(rc.Title, rc.Name)), rc.Safety, rc.Sites, rc.Applied, rc.Manual,
				replacedCell(rep, fmt.Sprintf(" %d |", rc.Replaced)))
		}
		b.WriteString("\n")
	}
	if len(rep.PerFile) > 0 {
		b.WriteString("### By file\n\n| File | Lines | Sites | Fixed | Manual |" + replacedCell(rep, " Replaced |") +
			" Changed |\n|---|---:|---:|---:|---:|" + replacedCell(rep, "---:|") + "---|\n")
		for i, fr := range rep.PerFile {
			if i == maxListed {
				fmt.Fprintf(b, "| … %d more | | | | |%s |\n", len(rep.PerFile)-maxListed, replacedCell(rep, " |"))
				break
			}
			ch := ""
			if fr.Changed {
				ch = "yes"
			} else if fr.Skipped != "" {
				ch = "untouched (`" + fr.Skipped + "`)"
			}
			fmt.Fprintf(b, "| `%s` | %d | %d | %d | %d |%s %s |\n", mdEscape(fr.Path), fr.Lines, fr.Sites, fr.Applied, fr.Manual,
				replacedCell(rep, fmt.Sprintf(" %d |", fr.Replaced)), ch)
		}
		b.WriteString("\n")
	}
	if len(rep.ManualSites) > 0 {
		b.WriteString("### Needs a human\n\n")
		for i, d := range rep.ManualSites {
			if i == maxListed {
				fmt.Fprintf(b, "- … %d more\n", len(rep.ManualSites)-maxListed)
				break
			}
			fmt.Fprintf(b, "- `%s` **%s** %s%s\n", mdEscape(loc(d)), d.Code, mdEscape(d.Message), mdEscape(skippedNote(d)))
		}
		b.WriteString("\n")
	}
	if len(rep.Problems) > 0 {
		b.WriteString("### Left untouched\n\n")
		for _, d := range rep.Problems {
			fmt.Fprintf(b, "- `%s` **%s** %s\n", mdEscape(loc(d)), d.Code, mdEscape(d.Message))
		}
		b.WriteString("\n")
	}
	if len(rep.Kernels) > 0 {
		b.WriteString("### Kernels\n\n| Kernel | Where | Origin | Class | Spec | Emulator | Draft | Verdict |\n|---|---|---|---|---|---|---|---|\n")
		for _, k := range rep.Kernels {
			fmt.Fprintf(b, "| `%s` | `%s:%d` | %s | %s | %s | %s | %s | %s |\n", mdEscape(k.Name), mdEscape(k.Path), k.Line, k.Origin, k.Class, k.Spec, mdEscape(k.Emulator), k.Drafter, k.Verdict)
		}
		b.WriteString("\n")
		writeDraftLines(b, rep, "- ", true)
		if t := rep.LLM; t != nil {
			fmt.Fprintf(b, "LLM drafting: %d kernels (%d proven), %d calls, %d tokens", t.Kernels, t.Proven, t.Calls, t.Tokens)
			for _, k := range rep.Kernels {
				if k.Drafter == "llm" {
					fmt.Fprintf(b, "; `%s` %s in %d rounds, %d tokens", mdEscape(k.Name), k.Verdict, k.Rounds, k.Tokens)
				}
			}
			b.WriteString(".\n")
			if t.NeedsLLM > 0 {
				fmt.Fprintf(b, "%d kernels need an LLM: %s\n", t.NeedsLLM, mdEscape(t.Fix))
			}
			b.WriteString("\n")
		}
	}
	if len(rep.KernelNotes) > 0 {
		b.WriteString("### Kernel notes\n\n")
		for _, d := range rep.KernelNotes {
			fmt.Fprintf(b, "- `%s` **%s** %s\n", mdEscape(loc(d)), d.Code, mdEscape(d.Message))
		}
		b.WriteString("\n")
	}
	if len(rep.Timings) > 0 {
		b.WriteString("<sub>Timings:")
		for _, t := range rep.Timings {
			fmt.Fprintf(b, " %s %s;", t.Stage, dur(t.Seconds))
		}
		b.WriteString(" effort buckets: " + mdEscape(Thresholds()) + ".</sub>\n")
	}
	return b.Flush()
}

func orDash(s, alt string) string {
	if s != "" {
		return s
	}
	if alt != "" {
		return alt
	}
	return "-"
}

// ColorDiff writes a unified diff, coloured when enabled is true: headers
// bold, hunks cyan, removals red, additions green. Callers decide enabled
// (a TTY and NO_COLOR unset); see ColorEnabled.
func ColorDiff(w io.Writer, patch []byte, enabled bool) error {
	if !enabled {
		_, err := w.Write(patch)
		return err
	}
	bold, cyan, red, green := color.New(color.Bold), color.New(color.FgCyan), color.New(color.FgRed), color.New(color.FgGreen)
	for _, c := range []*color.Color{bold, cyan, red, green} {
		c.EnableColor()
	}
	b := bufio.NewWriter(w)
	for _, line := range bytes.SplitAfter(patch, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		text := strings.TrimSuffix(string(line), "\n")
		var c *color.Color
		switch {
		case strings.HasPrefix(text, "diff --git "), strings.HasPrefix(text, "--- "), strings.HasPrefix(text, "+++ "),
			strings.HasPrefix(text, "new file mode"):
			c = bold
		case strings.HasPrefix(text, "@@"):
			c = cyan
		case strings.HasPrefix(text, "-"):
			c = red
		case strings.HasPrefix(text, "+"):
			c = green
		}
		if c == nil {
			b.WriteString(text)
		} else {
			b.WriteString(c.Sprint(text))
		}
		if strings.HasSuffix(string(line), "\n") {
			b.WriteByte('\n')
		}
	}
	return b.Flush()
}

// ColorEnabled reports whether output should be coloured: only on a
// terminal, and never when NO_COLOR is set to anything non-empty.
func ColorEnabled(isTTY bool, getenv func(string) string) bool {
	return isTTY && getenv("NO_COLOR") == ""
}

// writeLLMText adds the LLM drafter's per-kernel rounds, tokens and verdicts
// and the run's totals under the kernel table.
func writeLLMText(b *bufio.Writer, rep *Report) {
	t := rep.LLM
	if t == nil {
		return
	}
	for _, k := range rep.Kernels {
		if k.Drafter != "llm" {
			continue
		}
		fmt.Fprintf(b, "  %s: llm draft %s after %d rounds, %d tokens, %d calls", k.Name, k.Verdict, k.Rounds, k.Tokens, k.Calls)
		if k.Reason != "" && k.Verdict != "proven" {
			fmt.Fprintf(b, " (%s)", k.Reason)
		}
		b.WriteString("\n")
	}
	if t.Kernels > 0 || t.Calls > 0 {
		fmt.Fprintf(b, "  LLM total: %d calls, %d tokens", t.Calls, t.Tokens)
		if t.CostUSD > 0 {
			fmt.Fprintf(b, " (~$%.4f)", t.CostUSD)
		}
		fmt.Fprintf(b, "; %d of %d drafted kernels proven\n", t.Proven, t.Kernels)
	}
	if t.NeedsLLM > 0 {
		fmt.Fprintf(b, "  needs-llm: %d kernels; %s\n", t.NeedsLLM, t.Fix)
	}
}

// writeDraftLines lists what the draft and validate stages did per kernel:
// the verdict with its error statistics, shapes and time, the generated
// module, or why there is no proven draft.
func writeDraftLines(b io.StringWriter, rep *Report, prefix string, md bool) {
	any := false
	for _, k := range rep.Kernels {
		any = any || k.Verdict != "-"
	}
	if !any {
		return
	}
	esc := func(s string) string {
		if md {
			return mdEscape(s)
		}
		return s
	}
	if md {
		b.WriteString("**Kernel drafts**\n\n")
	} else {
		b.WriteString("\nKernel drafts:\n")
	}
	for _, k := range rep.Kernels {
		if k.Verdict == "-" {
			continue
		}
		line := fmt.Sprintf("%s: %s", k.Name, k.Verdict)
		if k.Drafter != "" && k.Drafter != "none" {
			line += " (" + k.Drafter + " draft, " + k.Class + ")"
		}
		if s := k.Stats; s != nil && s.Cases > 0 {
			line += fmt.Sprintf(", %d cases over %s: max abs %.3g, max rel %.3g, ULP p99 %.0f max %.0f, mismatches %d",
				s.Cases, strings.Join(k.Shapes, " "), s.MaxAbs, s.MaxRel, s.ULPP99, s.ULPMax, s.Mismatches)
		}
		if k.DurationMS > 0 {
			line += fmt.Sprintf(", %.1fs", float64(k.DurationMS)/1000)
		}
		if k.Module != "" {
			line += "; wired in as " + k.Module
		} else if k.Reason != "" {
			line += " — " + k.Reason
		}
		b.WriteString(prefix + esc(line) + "\n")
	}
	if md {
		b.WriteString("\n")
	}
}

// siteSplit is how the sites divide between the rules' fixes and the kernel
// stages: "12 auto-fixable (92.3%)", or, where a kernel the stages proved
// and wired in replaced a custom-kernel site, "1 auto-fixable, 1 replaced by
// a proven Pallas kernel" (a share of all sites would mix the two). A
// diagnostic rule's site is never counted as fixed.
func siteSplit(rep *Report) string {
	if rep.Replaced == 0 {
		return fmt.Sprintf("%d auto-fixable (%s)", rep.AutoFixable, pct(rep.AutoFixable, rep.Sites))
	}
	return fmt.Sprintf("%d auto-fixable, %d replaced by a proven Pallas kernel", rep.AutoFixable, rep.Replaced)
}

// kernelCount is the number of custom kernels and, when the kernel stages
// proved and wired in any, how many: "1 (1 proven and wired in)".
func kernelCount(rep *Report) string {
	n := fmt.Sprint(len(rep.Kernels))
	if w := rep.Effort.Wired; w > 0 {
		n += fmt.Sprintf(" (%d proven and wired in)", w)
	}
	return n
}

// replacedCell is cell, a header or a value of the tables' replaced column
// (sites whose kernel the kernel stages proved and wired in), when the run
// has such a site; "" otherwise, so the column shows only where it counts.
func replacedCell(rep *Report, cell string) string {
	if rep.Replaced == 0 {
		return ""
	}
	return cell
}

// addedNote says how many of the changed files the run creates: " (2 new)".
func addedNote(rep *Report) string {
	if rep.FilesAdded == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d new)", rep.FilesAdded)
}
