package hf

import (
	"strconv"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

// placement is what a device argument asks for.
type placement int

const (
	placeNone     placement = iota // not a CUDA placement we understand (cpu, a variable, ...)
	placeDevice                    // one CUDA device
	placeStrategy                  // "auto", "balanced", ...: spread over devices
	placeMap                       // an explicit map over several devices or offload
)

// strategies are device_map values that spread a model over devices.
var strategies = map[string]bool{"auto": true, "balanced": true, "balanced_low_0": true, "sequential": true}

// classify reads a device or device_map value: a CUDA device ("cuda",
// "cuda:N", an int N >= 0, or a dict mapping "" or every module to the same
// one) or a placement strategy. index is the CUDA index (-1: none given).
func classify(p *rule.Pass, v *ts.Node, allowDict bool) (placement, int) {
	if s, ok := kit.PlainString(p, v); ok {
		if i, ok := kit.CudaDevice(s); ok {
			return placeDevice, i
		}
		if strategies[s] {
			return placeStrategy, -1
		}
		return placeNone, -1
	}
	if i, ok := kit.Int(p, v); ok {
		if i >= 0 {
			return placeDevice, i
		}
		return placeNone, -1
	}
	if v != nil && v.Type() == "dictionary" && allowDict {
		idx, n := -2, 0
		for _, c := range ts.Children(v) {
			if c.Type() == "comment" {
				continue
			}
			if c.Type() != "pair" {
				return placeMap, -1
			}
			k, i := classify(p, c.ChildByFieldName("value"), false)
			if k != placeDevice || (idx != -2 && i != idx) {
				return placeMap, -1
			}
			idx = i
			n++
		}
		if n == 0 {
			return placeNone, -1
		}
		return placeDevice, idx
	}
	return placeNone, -1
}

// deviceExpr is the device expression for the target: the TPU literal, or
// the module's DEVICE (an index N > 0 through the device-index helper,
// device_at(N): that device on CUDA, DEVICE elsewhere). Portable fixes using
// it must be made with devFix.
func deviceExpr(p *rule.Pass, dev *kit.Dev, torch string, index int, literal bool) string {
	if p.Target == rule.TPU {
		if literal {
			return `"tpu"`
		}
		return torch + `.device("tpu")`
	}
	if index > 0 {
		return dev.At(strconv.Itoa(index))
	}
	return dev.Name()
}

// devFix is the portable fix for edits using deviceExpr(…, index, …): it
// relies on DEVICE, and on the device-index helper when index > 0.
func devFix(dev *kit.Dev, index int, title string, safety rule.Safety, edits ...rule.Edit) *rule.Fix {
	if index > 0 {
		return dev.AtFix(title, safety, edits...)
	}
	return dev.Fix(title, safety, edits...)
}

// torchName is how the module spells torch in new code.
func torchName(p *rule.Pass) string {
	if a := p.Imports.TorchAlias(); a != "" {
		return a
	}
	return "torch"
}

// lastName is the last component of a call's function.
func lastName(p *rule.Pass, call *ts.Node) string {
	fn := call.ChildByFieldName("function")
	if fn == nil {
		return ""
	}
	switch fn.Type() {
	case "identifier":
		return p.Text(fn)
	case "attribute":
		return p.Text(fn.ChildByFieldName("attribute"))
	}
	return ""
}

// safetyFor is Safe for one device kept on the process's own chip, Unsafe
// when the placement changes (a strategy, or an index other than 0 on tpu).
func safetyFor(p *rule.Pass, kind placement, index int) rule.Safety {
	if kind == placeStrategy || (p.Target == rule.TPU && index > 0) {
		return rule.Unsafe
	}
	return rule.Safe
}
