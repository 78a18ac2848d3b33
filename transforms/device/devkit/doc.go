package devkit

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
)

// DocSpec is the prose of a rule's documentation page.
type DocSpec struct {
	Title  string // one line, the rule's title
	What   string // "## What it does"
	Why    string // "## Why"
	Safety string // "## Fix safety"
}

// Doc renders a rule's Markdown doc: the title line, "## What it does",
// "## Why", "## Example" with the before text and the output for both
// targets (taken from ex, so the doc and the tested example never drift),
// and "## Fix safety".
func Doc(d DocSpec, ex rule.Example) string {
	var b strings.Builder
	b.WriteString(d.Title + "\n\n## What it does\n\n" + strings.TrimSpace(d.What) + "\n\n## Why\n\n" + strings.TrimSpace(d.Why) + "\n\n## Example\n\n")
	b.WriteString("```python\n" + ex.Before + "```\n\n")
	for _, t := range []struct{ name, out string }{{"portable", ex.Portable}, {"tpu", ex.TPU}} {
		b.WriteString("Use instead (`--target " + t.name + "`):\n\n")
		if t.out == "" {
			b.WriteString("(unchanged)\n\n")
			continue
		}
		b.WriteString("```python\n" + t.out + "```\n\n")
	}
	b.WriteString("## Fix safety\n\n" + strings.TrimSpace(d.Safety) + "\n")
	return b.String()
}
