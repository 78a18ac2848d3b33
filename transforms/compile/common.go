package compile

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/hazards/pyq"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// onTPU is the condition the portable forms test.
const onTPU = pyq.DeviceName + `.type == "tpu"`

// portableChoice is `(tpuValue if DEVICE.type == "tpu" else other)`.
func portableChoice(tpuValue, other string) string {
	return "(" + tpuValue + " if " + onTPU + " else " + other + ")"
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
func compileKwargs(target rule.Target) []string {
	if target == rule.TPU {
		return []string{`backend="tpu"`, `dynamic=False`}
	}
	return []string{"backend=" + portableChoice(`"tpu"`, `"inductor"`), "dynamic=" + portableChoice("False", "None")}
}

// fixFor wraps edits into a fix, with the device prelude for portable code.
func fixFor(p *rule.Pass, title string, safety rule.Safety, edits []rule.Edit, needsDevice bool) *rule.Fix {
	f := &rule.Fix{Title: title, Safety: safety, Edits: edits, Imports: []string{"import torch"}}
	if needsDevice {
		f.Preludes = []rule.Prelude{pyq.DevicePrelude()}
	}
	return f
}

// torchName is how the module spells torch in new code.
func torchName(p *rule.Pass) string {
	if a := p.Imports.TorchAlias(); a != "" {
		return a
	}
	return "torch"
}
