package compile

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

// portableChoice is `(tpuValue if DEVICE.type == "tpu" else other)`.
func portableChoice(dev *kit.Dev, tpuValue, other string) string {
	return "(" + tpuValue + " if " + dev.Type() + ` == "tpu" else ` + other + ")"
}

// isPortableChoice reports whether n already is a choice on DEVICE.type.
func isPortableChoice(p *rule.Pass, n *ts.Node) bool {
	if n == nil {
		return false
	}
	for n.Type() == "parenthesized_expression" && n.NamedChildCount() == 1 {
		n = n.NamedChild(0)
	}
	return n.Type() == "conditional_expression" && strings.Contains(p.Text(n), `.type == "tpu"`)
}

// compileKwargs are the keyword arguments a new compile call gets.
func compileKwargs(target rule.Target, dev *kit.Dev) []string {
	if target == rule.TPU {
		return []string{`backend="tpu"`, `dynamic=False`}
	}
	return []string{"backend=" + portableChoice(dev, `"tpu"`, `"inductor"`), "dynamic=" + portableChoice(dev, "False", "None")}
}

// fixFor wraps edits into a fix, with the device prelude for portable code.
func fixFor(dev *kit.Dev, title string, safety rule.Safety, edits []rule.Edit, needsDevice bool) *rule.Fix {
	if needsDevice {
		return dev.Fix(title, safety, edits...)
	}
	return kit.TorchFix(title, safety, edits...)
}

// torchName is how the module spells torch in new code.
func torchName(p *rule.Pass) string {
	if a := p.Imports.TorchAlias(); a != "" {
		return a
	}
	return "torch"
}
