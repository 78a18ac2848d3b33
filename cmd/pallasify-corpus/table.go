package main

import (
	"fmt"
	"io"
	"strings"
)

// The tables are Markdown, so the README can hold them as printed.

var columns = []string{"kernels", "found", "built for CPU", "captured", "spec source (tests / call-sites+user-spec / static / none)",
	"emulated", "drafted", "proven", "compiled for TPU", "wired"}

// cell renders a count: "-" when no kernel reported the fact, "N" when every
// kernel did, "N (of K)" when only K of them did.
func cell(c Count, found int) string {
	switch {
	case c.Known == 0:
		return "-"
	case c.Known == found:
		return itoa(c.Yes)
	default:
		return fmt.Sprintf("%d (of %d)", c.Yes, c.Known)
	}
}

func specCell(c Counts) string {
	if c.SpecKnwn == 0 {
		return "-"
	}
	parts := make([]string, 0, len(specSources)+1)
	known := 0
	for _, s := range specSources {
		parts = append(parts, itoa(c.Spec[s]))
		known += c.Spec[s]
	}
	out := strings.Join(parts, " / ")
	if other := c.SpecKnwn - known; other > 0 {
		out += fmt.Sprintf(" (+%d other)", other)
	}
	if c.SpecKnwn < c.Found {
		out += fmt.Sprintf(" (of %d)", c.SpecKnwn)
	}
	return out
}

func row(c Counts) []string {
	return []string{c.Label, itoa(c.Found), cell(c.Built, c.Found), cell(c.Captured, c.Found), specCell(c),
		cell(c.Emulated, c.Found), cell(c.Drafted, c.Found), cell(c.Proven, c.Found), cell(c.TPU, c.Found), cell(c.Wired, c.Found)}
}

func writeTable(w io.Writer, rows []Counts) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(columns, " | "))
	seps := make([]string, len(columns))
	seps[0] = "---"
	for i := 1; i < len(seps); i++ {
		seps[i] = "---:"
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row(r), " | "))
	}
}

func writeReasons(w io.Writer, rs []Reason) {
	if len(rs) == 0 {
		fmt.Fprintln(w, "No kernel is blocked.")
		return
	}
	fmt.Fprintln(w, "| blocking reason (first blocking point) | kernels |")
	fmt.Fprintln(w, "|---|---:|")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %d |\n", strings.ReplaceAll(r.Block, "|", `\|`), r.Count)
	}
}

// writeFolder prints one folder's table and its blocking reasons.
func writeFolder(w io.Writer, f *Folder) {
	fmt.Fprintf(w, "### %s\n\n", f.Name)
	fmt.Fprintf(w, "timing: analyze %.1f s, migrate %.1f s\n\n", f.AnalyzeS, f.MigrateS)
	for _, e := range f.Errors {
		fmt.Fprintf(w, "error: %s\n\n", e)
	}
	writeTable(w, f.Rows)
	fmt.Fprintln(w)
	writeReasons(w, f.Blocking)
	fmt.Fprintln(w)
}

// Legend explains the cells.
const Legend = "Cells: kernels with the fact; `-` where no kernel's report has the key yet (unknown, not zero); " +
	"`N (of K)` where only K kernels report it. built for CPU: the extension built (built_cpu false counts as a " +
	"refusal only with a build_reason; without one it was not tried, unknown). captured: at least one launch " +
	"captured (known once the build's outcome is). compiled for TPU: the " +
	"TPU compile gate passed on every chip it ran for (it runs for proven drafts). Blocking reason: the diagnostic " +
	"code of the first point where a kernel stopped short of being wired, with its reason class."

// writeAggregate prints every folder, then the totals and the timing line.
func writeAggregate(w io.Writer, agg *Aggregate) {
	fmt.Fprintf(w, "## pallasify corpus — %s, %s, target %s\n\n", agg.Date, agg.Corpus, agg.Target)
	for i := range agg.Folders {
		writeFolder(w, &agg.Folders[i])
	}
	fmt.Fprintln(w, "### total")
	fmt.Fprintln(w)
	writeTable(w, agg.Total)
	fmt.Fprintln(w)
	writeReasons(w, agg.Blocking)
	fmt.Fprintln(w)
	fmt.Fprintln(w, Legend)
	fmt.Fprintln(w)
	fmt.Fprintln(w, timingLine(agg))
}

// timingLine is the per-run timing: wall clock and each folder's runs.
func timingLine(agg *Aggregate) string {
	var b strings.Builder
	kernels := 0
	for _, f := range agg.Folders {
		kernels += len(f.Kernels)
	}
	fmt.Fprintf(&b, "timing: %d folders, %d kernels in %.1f s wall (-j %d)", len(agg.Folders), kernels, agg.WallS, agg.Parallel)
	for _, f := range agg.Folders {
		fmt.Fprintf(&b, "; %s analyze %.1f s + migrate %.1f s", f.Name, f.AnalyzeS, f.MigrateS)
	}
	return b.String()
}
