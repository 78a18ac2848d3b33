package device

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/device/devkit"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

var deviceTypeCompareExample = rule.Example{
	Before: `pin = x.device.type == "cuda"
device_type = "cuda" if "cuda" in device else "cpu"
if args.device != "cuda":
    print("running on the CPU")
`,
	Portable: `pin = x.device.type != "cpu"
device_type = "cuda" if "cpu" not in device else "cpu"
if args.device == "cpu":
    print("running on the CPU")
`,
	TPU: `pin = x.device.type == "tpu"
device_type = "cuda" if "tpu" in device else "cpu"
if args.device != "tpu":
    print("running on the CPU")
`,
}

// DeviceTypeCompare rewrites comparisons of a device (or its type) with "cuda".
var DeviceTypeCompare = &rule.Rule{
	Code:    "PDV003",
	Name:    "device-type-compare",
	Family:  Family,
	Safety:  rule.Safe,
	Example: deviceTypeCompareExample,
	Doc: devkit.Doc(devkit.DocSpec{
		Title: "Device compared with \"cuda\"",
		What: "Finds `<device> == \"cuda\"`, `!=`, `\"cuda\" in <device>` and `not in`, where `<device>` is a name or " +
			"attribute about a device (`device`, `args.device`, `device_type`, `x.device.type`, `dev`) or " +
			"`str(<device>)`.\n\n" +
			"Portable: the test asks \"is this the accelerator?\", which on every machine the portable code runs " +
			"on means \"is this not the CPU?\": `== \"cuda\"` becomes `!= \"cpu\"`, `\"cuda\" in d` becomes " +
			"`\"cpu\" not in d`, and the negations likewise. An `assert` of `==`/`!=` checks the configured device " +
			"instead, so there `\"cuda\"` becomes `DEVICE.type` (the value the device rules give device settings). " +
			"TPU: `\"cuda\"` becomes `\"tpu\"`.\n\n" +
			"Other strings, comparisons of unrelated values (`name == \"cuda\"`), chained comparisons and the " +
			"`DEVICE.type == \"cuda\"` tests pallasify itself writes are left alone. The `\"cuda\"` values such a " +
			"comparison selects (`\"cuda\" if ... else \"cpu\"`) are rewritten by cuda-device-default (PDV004) " +
			"when they are assigned to a device setting.",
		Why: "After the device strings are rewritten the device is `\"tpu\"` (or whatever accelerator is present), " +
			"so a test for `\"cuda\"` silently takes the CPU branch: no pinned memory, no autocast, wrong dtype.",
		Safety: "Safe: on a CUDA or CPU machine the portable test gives the same answer as before (devices other " +
			"than `cpu` and the accelerator, such as `meta`, now count as accelerators). The tpu test is the literal " +
			"counterpart of the original.",
	}, deviceTypeCompareExample),
	Run: runDeviceTypeCompare,
}

var flip = map[string]string{"==": "!=", "!=": "==", "in": "not in", "not in": "in"}

func runDeviceTypeCompare(p *rule.Pass) {
	if !devkit.Mentions(p.Src, "cuda") {
		return
	}
	devkit.WalkHits(p, []string{"cuda"}, func(n *ts.Node) bool {
		switch n.Type() {
		case "comment":
			return false
		case "comparison_operator":
			compare(p, n)
		}
		return true
	})
}

func compare(p *rule.Pass, n *ts.Node) {
	if n.NamedChildCount() != 2 {
		return
	}
	left, right := n.NamedChild(0), n.NamedChild(1)
	// The operator tokens sit between the operands.
	var opStart, opEnd = -1, -1
	for i := 0; i < int(n.ChildCount()); i++ {
		c := n.Child(i)
		if c.IsNamed() || c.Type() == "comment" {
			continue
		}
		if opStart < 0 {
			opStart = devkit.Start(c)
		}
		opEnd = devkit.End(c)
	}
	if opStart < 0 {
		return
	}
	op := strings.Join(strings.Fields(string(p.Src[opStart:opEnd])), " ")
	if _, ok := flip[op]; !ok {
		return
	}
	var str devkit.Str
	var other *ts.Node
	if s, ok := devkit.DeviceString(p, left); ok {
		str, other = s, right
	} else if s, ok := devkit.DeviceString(p, right); ok && (op == "==" || op == "!=") {
		str, other = s, left
	} else {
		return
	}
	if str.FString || str.Index != "" || !devkit.DeviceIsh(p, other) || ownTest(p, other) {
		return
	}
	f := rule.Finding{Start: devkit.Start(n), End: devkit.End(n),
		Message: "`" + p.Text(n) + "` tests for CUDA; on another accelerator it takes the CPU branch"}
	if p.Target == rule.TPU {
		f.Fix = &rule.Fix{Title: `Compare with "tpu"`, Safety: rule.Safe, Edits: []rule.Edit{str.Replace(str.Literal("tpu"))}}
	} else if par := n.Parent(); par != nil && par.Type() == "assert_statement" && (op == "==" || op == "!=") {
		// `assert cfg.device == "cuda"` checks the configured device, which
		// the device rules make DEVICE.type: compare with that.
		dv := devkit.NewDev(p)
		f.Fix = dv.Fix("Compare with "+dv.Type(), rule.Safe, str.Replace(dv.Type()))
	} else {
		f.Fix = &rule.Fix{Title: "Test for a non-CPU device", Safety: rule.Safe, Edits: []rule.Edit{
			str.Replace(str.Literal("cpu")),
			{Start: opStart, End: opEnd, New: flip[op]},
		}}
	}
	devkit.Report(p, f)
}

// ownTest reports the tests pallasify's own rewrites write, such as
// `DEVICE.type == "cuda"` (GradScaler enabled=, DDP device_ids=).
func ownTest(p *rule.Pass, n *ts.Node) bool {
	t := p.Text(n)
	name, ok := strings.CutSuffix(t, ".type")
	return ok && strings.ToUpper(name) == name && strings.Contains(name, "DEVICE")
}
