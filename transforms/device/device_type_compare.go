package device

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var deviceTypeCompareExample = rule.Example{
	Before: `pin = x.device.type == "cuda"
device_type = "cuda" if "cuda" in device else "cpu"
if args.device != "cuda":
    print("running on the CPU")
`,
	Portable: `import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

pin = DEVICE.type != "cpu" and x.device.type == DEVICE.type
device_type = "cuda" if DEVICE.type != "cpu" and DEVICE.type in device else "cpu"
if DEVICE.type == "cpu" or args.device != DEVICE.type:
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
	Code:   "PDV003",
	Name:   "device-type-compare",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run). `\q`
	// (rule.StringStart) is sound: each finding holds a kit.DeviceString
	// operand or set element, whose content is `cuda` (or `cuda:N`, an
	// f-string: never reported), so `cuda` opens a literal, between its
	// opening quote and a quote or ":": `\b` holds at both ends.
	Needles: []string{`\q\bcuda\b`},
	Example: deviceTypeCompareExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Device compared with \"cuda\"",
		What: "Finds `<device> == \"cuda\"`, `!=`, `\"cuda\" in <device>` and `not in`, where `<device>` is a name or " +
			"attribute about a device (`device`, `args.device`, `device_type`, `x.device.type`, `dev`) or " +
			"`str(<device>)`. `<device>.startswith(\"cuda\")` (or `\"cuda:\"`) is reported without a fix: what it " +
			"selects is written for `\"cuda:N\"` strings (`torch.cuda.set_device(device)`), and a TPU host, whose " +
			"device string is `\"tpu\"` or `\"tpu:0\"`, rightly skips it, as any host without CUDA does.\n\n" +
			"Portable: `\"cuda\"` becomes `DEVICE.type` (the value the device rules give device settings), and " +
			"the test is true only when `DEVICE` is an accelerator: `d == \"cuda\"` becomes " +
			"`DEVICE.type != \"cpu\" and d == DEVICE.type`, `\"cuda\" in d` becomes " +
			"`DEVICE.type != \"cpu\" and DEVICE.type in d`, and the negations `d != \"cuda\"` / `not in` become " +
			"`DEVICE.type == \"cpu\" or d != DEVICE.type` / `DEVICE.type == \"cpu\" or DEVICE.type not in d` " +
			"(parenthesised where the context needs it). On a CUDA machine this is exactly the original test; on " +
			"TPU it tests for `\"tpu\"`; on a CPU-only machine it is false, as the original was for a CPU run, so " +
			"code gated on CUDA (pinned memory, AMP, synchronisation) stays off there. A plain `d == DEVICE.type` " +
			"would be true on the CPU and switch that code on; `d != \"cpu\"` would be wrong for `\"cuda:0\"`, " +
			"`\"meta\"` or `\"mps\"`. An `assert` checks the configured device rather than gating code, so " +
			"there `\"cuda\"` becomes `DEVICE.type` alone (the assertion holds on every machine, as it did on CUDA). " +
			"TPU: `\"cuda\"` becomes `\"tpu\"`.\n\n" +
			"Other strings, comparisons of unrelated values (`name == \"cuda\"`), chained comparisons and the " +
			"`DEVICE.type == \"cuda\"` tests pallasify itself writes are left alone. The `\"cuda\"` values such a " +
			"comparison selects (`\"cuda\" if ... else \"cpu\"`) are rewritten by cuda-device-default (PDV004) " +
			"when they are assigned to a device setting.",
		Why: "A membership test against a literal collection of device types (`assert device_type in " +
			"{\"cuda\"}`, `if dev.type in (\"cuda\", \"cpu\")`) gets `\"tpu\"` added next to `\"cuda\"`, for both " +
			"targets: nothing off TPU has that type, so CUDA, CPU and MPS hosts get the answer they got before.\n\n" +
			"After the device strings are rewritten the device is `\"tpu\"` (or whatever accelerator is present), " +
			"so a test for `\"cuda\"` silently takes the CPU branch: no pinned memory, no autocast, wrong dtype.",
		Safety: "Safe: on a CUDA machine the portable test gives the same answer as before, on a CPU-only machine " +
			"the answer a CPU run of the original gave (false), and on TPU the literal counterpart. The tpu test is " +
			"the literal counterpart of the original.",
	}, deviceTypeCompareExample),
	Run: runDeviceTypeCompare,
}

var flip = map[string]string{"==": "!=", "!=": "==", "in": "not in", "not in": "in"}

func runDeviceTypeCompare(p *rule.Pass) {
	if !kit.Mentions(p.Src, "cuda") {
		return
	}
	kit.WalkHits(p, []string{"cuda"}, func(n *ts.Node) bool {
		switch n.Type() {
		case "comment":
			return false
		case "comparison_operator":
			compare(p, n)
		case "call":
			prefixTest(p, n)
		}
		return true
	})
}

// prefixTest reports `device.startswith("cuda")` (or "cuda:") on a device
// string: no fix, since the branch it selects is written for CUDA device
// strings (`torch.cuda.set_device(device)` with "cuda:3"), which on a TPU
// host, where the string is "tpu" or "tpu:0", it rightly skips, as on any
// host without CUDA.
func prefixTest(p *rule.Pass, call *ts.Node) {
	fn := call.ChildByFieldName("function")
	if fn == nil || fn.Type() != "attribute" || p.Text(fn.ChildByFieldName("attribute")) != "startswith" {
		return
	}
	if !kit.DeviceIsh(p, fn.ChildByFieldName("object")) {
		return
	}
	al, ok := kit.Arguments(p, call)
	if !ok || len(al.Positional) != 1 {
		return
	}
	if v, ok := kit.PlainString(p, al.Positional[0]); !ok || v != "cuda" && v != "cuda:" {
		return
	}
	kit.Report(p, rule.Finding{Start: kit.Start(call), End: kit.End(call),
		Message: "`" + p.Text(call) + "` tests a device string for CUDA; on a TPU host it is false, so what it " +
			"selects (written for \"cuda:N\" strings) is skipped there, as on any host without CUDA"})
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
			opStart = kit.Start(c)
		}
		opEnd = kit.End(c)
	}
	if opStart < 0 {
		return
	}
	op := strings.Join(strings.Fields(string(p.Src[opStart:opEnd])), " ")
	if _, ok := flip[op]; !ok {
		return
	}
	if (op == "in" || op == "not in") && kit.DeviceIsh(p, left) && !ownTest(p, left) {
		if e, ok := addTPUChoice(p, right); ok {
			kit.Report(p, rule.Finding{Start: kit.Start(n), End: kit.End(n),
				Message: "`" + p.Text(n) + "` accepts CUDA as the only accelerator; TorchTPU's device type is \"tpu\"",
				Fix:     &rule.Fix{Title: `Accept "tpu" too`, Safety: rule.Safe, Edits: []rule.Edit{e}}})
			return
		}
	}
	var str kit.Str
	var other *ts.Node
	if s, ok := kit.DeviceString(p, left); ok {
		str, other = s, right
	} else if s, ok := kit.DeviceString(p, right); ok && (op == "==" || op == "!=") {
		str, other = s, left
	} else {
		return
	}
	if str.FString || str.Index != "" || !kit.DeviceIsh(p, other) || ownTest(p, other) {
		return
	}
	f := rule.Finding{Start: kit.Start(n), End: kit.End(n),
		Message: "`" + p.Text(n) + "` tests for CUDA; on another accelerator it takes the CPU branch"}
	if p.Target == rule.TPU {
		f.Fix = &rule.Fix{Title: `Compare with "tpu"`, Safety: rule.Safe, Edits: []rule.Edit{str.Replace(str.Literal("tpu"))}}
		kit.Report(p, f)
		return
	}
	dv := kit.NewDev(p)
	typ := dv.Type()
	if par := n.Parent(); par != nil && par.Type() == "assert_statement" {
		// `assert cfg.device == "cuda"` checks the configured device, which
		// the device rules make DEVICE.type: compare with that.
		f.Fix = dv.Fix("Compare with "+typ, rule.Safe, str.Replace(typ))
		kit.Report(p, f)
		return
	}
	// Elsewhere the test gates accelerator-only code: true for DEVICE's type
	// when DEVICE is an accelerator, false on the CPU (as the original was
	// for a CPU run).
	var cmp rule.Edit
	var guard string
	if op == "==" || op == "in" {
		guard, cmp = typ+` != "cpu" and `, str.Replace(typ)
	} else {
		guard, cmp = typ+` == "cpu" or `, str.Replace(typ)
	}
	edits := []rule.Edit{cmp}
	paren := kit.Paren(n, "x", op == "!=" || op == "not in") != "x"
	pre, post := guard, ""
	if paren {
		pre, post = "("+guard, ")"
	}
	edits = append(edits, rule.Edit{Start: kit.Start(n), End: kit.Start(n), New: pre})
	if post != "" {
		edits = append(edits, rule.Edit{Start: kit.End(n), End: kit.End(n), New: post})
	}
	f.Fix = dv.Fix("Compare with "+typ+" when it is an accelerator", rule.Safe, edits...)
	kit.Report(p, f)
}

// addTPUChoice returns the edit adding "tpu" after the "cuda" element of a
// set, list or tuple literal of plain strings ({"cuda"}, ("cuda", "cpu")),
// which must not hold "tpu" already. Off TPU nothing has the device type
// "tpu", so the membership test answers as before on every other host.
func addTPUChoice(p *rule.Pass, coll *ts.Node) (rule.Edit, bool) {
	switch coll.Type() {
	case "set", "list", "tuple":
	default:
		return rule.Edit{}, false
	}
	var cuda *kit.Str
	for _, c := range ts.Children(coll) {
		if !c.IsNamed() || c.Type() == "comment" {
			continue
		}
		v, ok := kit.PlainString(p, c)
		if !ok {
			return rule.Edit{}, false
		}
		switch v {
		case "tpu":
			return rule.Edit{}, false
		case "cuda":
			if s, ok := kit.DeviceString(p, c); ok && cuda == nil {
				cuda = &s
			}
		}
	}
	if cuda == nil {
		return rule.Edit{}, false
	}
	at := kit.End(cuda.Node)
	// ('cuda',) grows into ('cuda', 'tpu'), not ('cuda', 'tpu',): a
	// trailing comma right before the closing bracket goes; one before a
	// line break (black's magic comma: one element a line) gets "tpu" on a
	// line of its own.
	end, text := at, ", "+cuda.Literal("tpu")
	for i := 0; i+2 < int(coll.ChildCount()); i++ {
		c, comma, next := coll.Child(i), coll.Child(i+1), coll.Child(i+2)
		if !c.Equal(cuda.Node) || comma.Type() != "," || next.IsNamed() || !strings.ContainsAny(next.Type(), ")]}") {
			continue
		}
		if gap := string(p.Src[kit.End(comma):next.StartByte()]); !strings.Contains(gap, "\n") {
			end = kit.End(comma)
		} else {
			ls := int(c.StartByte())
			for ls > 0 && p.Src[ls-1] != '\n' {
				ls--
			}
			at, end = kit.End(comma), kit.End(comma)
			text = "\n" + string(p.Src[ls:c.StartByte()]) + cuda.Literal("tpu") + ","
		}
	}
	return rule.Edit{Start: at, End: end, New: text}, true
}

// ownTest reports the tests pallasify's own rewrites write, such as
// `DEVICE.type == "cuda"` (GradScaler enabled=, DDP device_ids=).
func ownTest(p *rule.Pass, n *ts.Node) bool {
	t := p.Text(n)
	name, ok := strings.CutSuffix(t, ".type")
	return ok && (name == kit.LazyDevice || strings.ToUpper(name) == name && strings.Contains(name, "DEVICE"))
}
