package hf

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var pipelineDeviceExample = rule.Example{
	Before: `from transformers import pipeline

clf = pipeline("sentiment-analysis", model=name, device=0)
`,
	Portable: `from transformers import pipeline
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

clf = pipeline("sentiment-analysis", model=name, device=DEVICE)
`,
	TPU: `from transformers import pipeline

clf = pipeline("sentiment-analysis", model=name, device="tpu")
`,
}

// PipelineDevice rewrites pipeline(device=0/"cuda"/...) to a TPU or portable device.
var PipelineDevice = &rule.Rule{
	Code:   "PHF002",
	Name:   "hf-pipeline-device",
	Family: Family,
	Safety: rule.Safe,
	// A finding is a pipeline(...) call's device= or device_map= keyword
	// argument (kit.Kwarg): a whole identifier in code, then its "=" (`\q`:
	// code, never a string literal).
	Needles: []string{`\q\bpipeline\( & \q\bdevice\=`, `\q\bpipeline\( & \q\bdevice_map\=`},
	Example: pipelineDeviceExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "pipeline(..., device=0 / \"cuda\" / \"cuda:N\") or pipeline(..., device_map=...)",
		What: "Rewrites the `device=` of a Hugging Face `pipeline(...)` call when it is an int `N >= 0` (which " +
			"transformers reads as `cuda:N`), `\"cuda\"` or `\"cuda:N\"`: to `\"tpu\"` for the tpu target, to `DEVICE` " +
			"(or `device_at(N)` for N > 0: device N on CUDA, DEVICE elsewhere) for the portable target. A `device_map=` naming one CUDA " +
			"device or a strategy such as `\"auto\"` becomes the same `device=`. `device=-1` (the CPU), `\"cpu\"` " +
			"and computed values are left alone.",
		Why: "An int device is a CUDA ordinal to transformers, so `device=0` fails or lands on the CPU on a TPU host. " +
			"`pipeline` turns a string or `torch.device` into a device and moves the model there with `.to()`, " +
			"which works for `\"tpu\"` once TorchTPU is installed; `device_map=\"auto\"` does not place weights on " +
			"TPU (diffusers#11788, accelerate#3813).",
		Safety: "Safe for the process's own device (`0`, `\"cuda\"`, `\"cuda:0\"`). Unsafe for `device_map=\"auto\"` " +
			"and similar strategies (the model must fit one device) and, on the tpu target, for an index N > 0 " +
			"(one chip per process).",
	}, pipelineDeviceExample),
	Run: runPipelineDevice,
}

func runPipelineDevice(p *rule.Pass) {
	dev := kit.NewDev(p)
	kit.Calls(p, func(call *ts.Node) {
		if lastName(p, call) != "pipeline" {
			return
		}
		args := kit.Args(call)
		devKw := kit.Kwarg(p, args, "device")
		mapKw := kit.Kwarg(p, args, "device_map")
		fix := func(index int, title string, safety rule.Safety, edits ...rule.Edit) *rule.Fix {
			if p.Target == rule.Portable {
				return devFix(dev, index, title, safety, edits...)
			}
			return &rule.Fix{Title: title, Safety: safety, Edits: edits}
		}
		if devKw != nil {
			v := devKw.ChildByFieldName("value")
			kind, index := classify(p, v, false)
			if kind != placeDevice {
				return
			}
			_, isInt := kit.Int(p, v)
			what := "pipeline(device=" + p.Text(v) + ")"
			if isInt {
				what += " is a CUDA ordinal"
			} else {
				what += " names a CUDA device"
			}
			p.Report(kit.Finding(devKw, what+"; pass the TPU/portable device instead",
				fix(index, "Pass a torch device", safetyFor(p, kind, index),
					rule.Edit{Start: kit.Start(v), End: kit.End(v), New: deviceExpr(p, dev, torchName(p), index, true)})))
			if mapKw != nil {
				p.Report(kit.Finding(mapKw, "pipeline() given both device= and device_map=; keep only device=", nil))
			}
			return
		}
		if mapKw == nil {
			return
		}
		v := mapKw.ChildByFieldName("value")
		kind, index := classify(p, v, true)
		switch kind {
		case placeNone:
			return
		case placeMap:
			p.Report(kit.Finding(mapKw, "pipeline(device_map="+oneLine(p.Text(v))+") spreads the model over several "+
				"devices; TorchTPU gives each process one chip: pass device=\"tpu\" if the model fits", nil))
			return
		}
		msg := "pipeline(device_map=" + p.Text(v) + ") does not place weights on TPU; pass device= instead"
		if kind == placeStrategy {
			msg += " (all of the model must fit one device)"
		}
		p.Report(kit.Finding(mapKw, msg, fix(index, "Pass a torch device", safetyFor(p, kind, index),
			rule.Edit{Start: kit.Start(mapKw), End: kit.End(mapKw), New: "device=" + deviceExpr(p, dev, torchName(p), index, true)})))
	})
}
