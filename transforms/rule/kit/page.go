package kit

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
)

// DocSpec is the prose of a rule's documentation page; Doc renders it
// together with the rule's Example, so the page and the tested example never
// drift.
type DocSpec struct {
	Title  string // one line, the rule's title
	What   string // "## What it does"
	Why    string // "## Why"
	Safety string // "## Fix safety"; required unless the rule is Safe (ruletest.Docs checks)
	Refs   string // optional "## References"
}

// Doc renders a rule's Markdown page: the title line, "## What it does",
// "## Why", "## Example" (the before text and the output for each target,
// taken from ex; a target whose output is empty is "unchanged (reported
// only)", which ruletest.Docs holds true by requiring a finding of the rule
// on the example), "## Fix safety" and "## References" when given. Every
// rule family renders its page here, so `pallasify rules CODE` prints one
// style.
func Doc(d DocSpec, ex rule.Example) string {
	var b strings.Builder
	b.WriteString(d.Title + "\n\n## What it does\n\n" + strings.TrimSpace(d.What) + "\n\n## Why\n\n" + strings.TrimSpace(d.Why) + "\n\n## Example\n\n")
	block := func(label, code string) {
		b.WriteString(label + ":\n\n```python\n" + strings.TrimRight(code, "\n") + "\n```\n\n")
	}
	block("Before", ex.Before)
	for _, t := range []struct {
		target rule.Target
		out    string
	}{{rule.Portable, ex.Portable}, {rule.TPU, ex.TPU}} {
		label := "After, --target " + string(t.target)
		if t.out == "" {
			b.WriteString(label + ": unchanged (reported only).\n\n")
			continue
		}
		block(label, t.out)
	}
	if d.Safety != "" {
		b.WriteString("## Fix safety\n\n" + strings.TrimSpace(d.Safety) + "\n\n")
	}
	if strings.Contains(ex.Portable, "DEVICE = torch.device(") {
		b.WriteString("## Where DEVICE is defined\n\n" + PlacementDoc + "\n\n")
	}
	if d.Refs != "" {
		b.WriteString("## References\n\n" + strings.TrimSpace(d.Refs) + "\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
