package device

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var deviceTypeListExample = rule.Example{
	Before: `import torch

FUSED_DEVICES = ["cuda", "xpu", "hpu"]


def fused_ok(p):
    return p.device.type in FUSED_DEVICES
`,
}

// deviceTypes are torch's device type names (c10's DeviceType strings).
var deviceTypes = map[string]bool{"cpu": true, "cuda": true, "xpu": true, "hpu": true, "mps": true, "npu": true,
	"xla": true, "meta": true, "mtia": true, "tpu": true, "privateuseone": true, "hip": true, "ve": true,
	"lazy": true, "ipu": true, "fpga": true, "maia": true, "vulkan": true, "mkldnn": true}

// DeviceTypeList reports lists of device types that name CUDA and not TPU.
var DeviceTypeList = &rule.Rule{
	Code:    "PDV007",
	Name:    "device-type-list",
	Family:  Family,
	Safety:  rule.DisplayOnly,
	Needles: []string{`"cuda"`, `'cuda'`},
	Example: deviceTypeListExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "A list of device types that names CUDA but not TPU",
		What: "Reports a list, tuple or set literal of two or more device type names (`\"cuda\"`, `\"xpu\"`, " +
			"`\"hpu\"`, `\"mps\"`, `\"cpu\"`, ...) that holds `\"cuda\"` and not `\"tpu\"`, kept in a variable or " +
			"passed on (`SUPPORTED = [\"cuda\", \"xpu\"]`, `capturable_devices = (\"cuda\", \"xla\")`). A literal " +
			"tested directly (`device.type in (\"cuda\", \"xpu\")`) is device-type-compare's (PDV003), which adds " +
			"`\"tpu\"` there.",
		Why: "Such a list says which devices a code path supports (fused optimizers, capturable steps, a kernel's " +
			"devices). Whether a TPU belongs in it is a judgement the code's own authors make: TorchTPU's device " +
			"type is `\"tpu\"` (torch's privateuse1 backend, so code that appends " +
			"`torch._C._get_privateuse1_backend_name()` already lists it), and not every CUDA path has a TPU one.",
		Safety: "Diagnostic only: add `\"tpu\"` where the path it selects runs on a TPU.",
	}, deviceTypeListExample),
	Run: runDeviceTypeList,
}

func runDeviceTypeList(p *rule.Pass) {
	if !kit.Mentions(p.Src, "cuda") {
		return
	}
	for _, typ := range []string{"list", "tuple", "set"} {
		kit.Nodes(p, typ, func(coll *ts.Node) {
			n, cuda := 0, false
			for _, c := range ts.Children(coll) {
				if !c.IsNamed() || c.Type() == "comment" {
					continue
				}
				v, ok := kit.PlainString(p, c)
				if !ok || !deviceTypes[v] || v == "tpu" {
					return
				}
				n++
				cuda = cuda || v == "cuda"
			}
			if n < 2 || !cuda || testedDirectly(p, coll) {
				return
			}
			kit.Report(p, kit.Finding(coll, "`"+p.Text(coll)+"` lists device types with CUDA and without TPU: "+
				"add \"tpu\" where the path it selects runs on a TPU", nil))
		})
	}
}

// testedDirectly reports whether coll is the right operand of an `in` /
// `not in` test (device-type-compare's).
func testedDirectly(p *rule.Pass, coll *ts.Node) bool {
	par := p.Parent(coll)
	for par != nil && par.Type() == "parenthesized_expression" {
		coll, par = par, p.Parent(par)
	}
	return par != nil && par.Type() == "comparison_operator" && par.NamedChildCount() == 2 && par.NamedChild(1).Equal(coll)
}
