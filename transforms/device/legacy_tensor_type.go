package device

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

// legacyDtypes maps the legacy torch.cuda tensor type names to their dtypes.
var legacyDtypes = map[string]string{
	"FloatTensor": "torch.float32", "DoubleTensor": "torch.float64", "HalfTensor": "torch.float16",
	"BFloat16Tensor": "torch.bfloat16", "ByteTensor": "torch.uint8", "CharTensor": "torch.int8",
	"ShortTensor": "torch.int16", "IntTensor": "torch.int32", "LongTensor": "torch.int64", "BoolTensor": "torch.bool",
}

var legacyTensorTypeExample = rule.Example{
	Before: `import torch


def prepare(x, t):
    buf = torch.cuda.FloatTensor(4, 8)
    ids = torch.cuda.LongTensor([1, 2, 3])
    y = x.type(torch.cuda.HalfTensor)
    if isinstance(t, torch.cuda.FloatTensor):
        pass
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


def prepare(x, t):
    buf = torch.empty(4, 8, dtype=torch.float32, device=DEVICE)
    ids = torch.tensor([1, 2, 3], dtype=torch.int64, device=DEVICE)
    y = x.to(DEVICE, torch.float16)
    if isinstance(t, torch.cuda.FloatTensor):
        pass
`,
	TPU: `import torch


def prepare(x, t):
    buf = torch.empty(4, 8, dtype=torch.float32, device="tpu")
    ids = torch.tensor([1, 2, 3], dtype=torch.int64, device="tpu")
    y = x.to("tpu", torch.float16)
    if isinstance(t, torch.cuda.FloatTensor):
        pass
`,
}

// LegacyTensorType rewrites the legacy torch.cuda.<T>Tensor types.
var LegacyTensorType = &rule.Rule{
	Code:    "PDV005",
	Name:    "cuda-legacy-tensor-type",
	Family:  Family,
	Safety:  rule.Safe,
	Example: legacyTensorTypeExample,
	// The rule needs both "cuda" and "Tensor" (see Run); "cuda" is the rarer.
	// `\q` (rule.StringStart) is sound: every finding is an attribute that
	// qualifies to torch.cuda.<T>Tensor through kit.Dotted and Imports: its
	// `cuda` is a whole name in code, in the attribute or an import
	// statement (so `\b` holds at both ends).
	Needles: []string{`\q\bcuda\b`},
	Doc: kit.Doc(kit.DocSpec{
		Title: "Legacy `torch.cuda.FloatTensor`-style tensor types",
		What: "Finds the legacy CUDA tensor types `torch.cuda.FloatTensor`, `DoubleTensor`, `HalfTensor`, " +
			"`BFloat16Tensor`, `ByteTensor`, `CharTensor`, `ShortTensor`, `IntTensor`, `LongTensor` and `BoolTensor`.\n\n" +
			"Rewritten where the meaning is certain: a constructor with literal sizes (or none) becomes " +
			"`torch.empty(sizes, dtype=..., device=DEVICE)`, a constructor with one list or tuple literal becomes " +
			"`torch.tensor(data, dtype=..., device=DEVICE)`, and `x.type(torch.cuda.HalfTensor)` becomes " +
			"`x.to(DEVICE, torch.float16)` (`\"tpu\"` instead of `DEVICE` on the tpu target). " + kit.ImportTimeDoc + "\n\n" +
			"Reported for a human everywhere else: a constructor whose argument may be a size or data " +
			"(`torch.cuda.FloatTensor(n)`), type checks (`isinstance(t, torch.cuda.FloatTensor)`: use " +
			"`t.dtype == torch.float32 and t.device.type == DEVICE.type`), `torch.set_default_tensor_type(...)` " +
			"(use `torch.set_default_dtype` and `torch.set_default_device`), and any other use.",
		Why: "These types exist only for CUDA, and are deprecated: on TPU or CPU `torch.cuda.FloatTensor(...)` fails, " +
			"and a type check against them is false for every tensor that is not on a CUDA device.",
		Safety: "Safe: the rewritten constructors build the same uninitialised or filled tensor of the same dtype " +
			"on the same device on a CUDA machine; `x.to(device, dtype)` is what `x.type(...)` did. The other uses " +
			"get no fix.",
	}, legacyTensorTypeExample),
	Run: runLegacyTensorType,
}

func runLegacyTensorType(p *rule.Pass) {
	if !kit.Mentions(p.Src, "cuda") || !kit.Mentions(p.Src, "Tensor") {
		return
	}
	dv := kit.NewDev(p)
	kit.WalkHits(p, []string{"Tensor"}, func(n *ts.Node) bool {
		switch n.Type() {
		case "comment":
			return false
		case "attribute":
			name, ok := strings.CutPrefix(kit.Qualify(p, kit.Dotted(p, n)), "torch.cuda.")
			if dtype := legacyDtypes[name]; ok && dtype != "" {
				legacyUse(p, dv, n, name, dtype)
				return false
			}
		}
		return true
	})
}

// legacyUse reports one use of torch.cuda.<name> (the attribute node n).
func legacyUse(p *rule.Pass, dv *kit.Dev, n *ts.Node, name, dtype string) {
	f := rule.Finding{Start: kit.Start(n), End: kit.End(n),
		Message: "`torch.cuda." + name + "` is a legacy CUDA-only tensor type"}
	// The tpu target builds a tensor on "tpu", except on import, where it
	// takes the portable form (see kit.ImportTime).
	tpu := p.Target == rule.TPU && !kit.ImportTime(p, n)
	if p.Target == rule.TPU && !tpu {
		f.Message += kit.ImportTimeNote
	}
	dev := `"tpu"`
	if !tpu {
		dev = dv.Name()
	}
	mk := func(title string, edits ...rule.Edit) *rule.Fix {
		if tpu {
			return kit.TorchFix(title, rule.Safe, edits...)
		}
		return dv.Fix(title, rule.Safe, edits...)
	}
	par := n.Parent()
	switch {
	case par != nil && par.Type() == "call" && par.ChildByFieldName("function").Equal(n):
		// torch.cuda.FloatTensor(...): a constructor.
		al, ok := kit.Arguments(p, par)
		if !ok || al.Splat || len(al.Keywords) > 0 {
			break
		}
		kw := "dtype=" + dtype + ", device=" + dev
		fnEdit := func(fn string) rule.Edit { return rule.Edit{Start: kit.Start(n), End: kit.End(n), New: fn} }
		switch {
		case len(al.All) == 0: // FloatTensor() is an empty tensor of size (0,)
			f.Fix = mk("Use torch.empty", fnEdit("torch.empty"), al.Append("0, "+kw))
		case allIntLiterals(al.Positional):
			f.Fix = mk("Use torch.empty", fnEdit("torch.empty"), al.Append(kw))
		case len(al.Positional) == 1 && (al.Positional[0].Type() == "list" || al.Positional[0].Type() == "tuple"):
			f.Fix = mk("Use torch.tensor", fnEdit("torch.tensor"), al.Append(kw))
		default:
			f.Message += "; `" + name + "(x)` builds a tensor of size x or from the data x: use torch.empty(..., dtype=" +
				dtype + ") or torch.tensor(..., dtype=" + dtype + ") on the device"
		}
	case par != nil && par.Type() == "argument_list" && par.NamedChildCount() == 1:
		// x.type(torch.cuda.HalfTensor): a cast and a move.
		call := par.Parent()
		fn := call.ChildByFieldName("function")
		if fn.Type() == "attribute" && p.Text(fn.ChildByFieldName("attribute")) == "type" && kit.Qualify(p, kit.Dotted(p, fn.ChildByFieldName("object"))) == "" {
			attr := fn.ChildByFieldName("attribute")
			f.Fix = mk("Use .to(device, dtype)",
				rule.Edit{Start: kit.Start(attr), End: kit.End(attr), New: "to"},
				rule.Edit{Start: kit.Start(n), End: kit.End(n), New: dev + ", " + dtype})
			break
		}
		f.Message += legacyHint(dtype)
	default:
		f.Message += legacyHint(dtype)
	}
	kit.Report(p, f)
}

func legacyHint(dtype string) string {
	return "; test `t.dtype == " + dtype + "` and the tensor's device instead, or build tensors with torch.empty/torch.tensor(..., dtype=" +
		dtype + ", device=...)"
}

// allIntLiterals reports whether every node is an integer literal.
func allIntLiterals(ns []*ts.Node) bool {
	for _, n := range ns {
		if n.Type() != "integer" {
			return false
		}
	}
	return true
}
