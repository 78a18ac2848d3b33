package pyq

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
)

// DocSpec is the prose of a rule's documentation; Doc renders it together
// with the rule's Example so that the page and the tested example never drift.
type DocSpec struct {
	Title  string
	What   string
	Why    string
	Safety string // "## Fix safety" section; required unless the rule is Safe
	Refs   string // optional "## References"
}

// Doc renders the Markdown page of a rule.
func Doc(d DocSpec, ex rule.Example) string {
	var b strings.Builder
	b.WriteString(d.Title + "\n\n## What it does\n\n" + strings.TrimSpace(d.What) + "\n\n## Why\n\n" + strings.TrimSpace(d.Why) + "\n\n## Example\n\n")
	block := func(label, code string) {
		b.WriteString(label + ":\n\n```python\n" + strings.TrimRight(code, "\n") + "\n```\n\n")
	}
	block("Before", ex.Before)
	for _, t := range []struct{ label, out string }{{"After, --target portable", ex.Portable}, {"After, --target tpu", ex.TPU}} {
		if t.out == "" {
			b.WriteString(t.label + ": unchanged (reported only).\n\n")
			continue
		}
		block(t.label, t.out)
	}
	if d.Safety != "" {
		b.WriteString("## Fix safety\n\n" + strings.TrimSpace(d.Safety) + "\n\n")
	}
	if d.Refs != "" {
		b.WriteString("## References\n\n" + strings.TrimSpace(d.Refs) + "\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
