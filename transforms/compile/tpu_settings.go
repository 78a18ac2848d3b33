package compile

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/device/devkit"
	"github.com/pallasify/pallasify/transforms/hazards/pyq"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

var tpuSettingsExample = rule.Example{
	Before: `import torch

model = torch.compile(model)
`,
	Portable: `import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

model = torch.compile(model, backend=("tpu" if DEVICE.type == "tpu" else "inductor"), dynamic=(False if DEVICE.type == "tpu" else None))
`,
	TPU: `import torch

model = torch.compile(model, backend="tpu", dynamic=False)
`,
}

// TPUSettings gives existing torch.compile calls the TPU backend and static shapes.
var TPUSettings = &rule.Rule{
	Code:    "PCM001",
	Name:    "compile-tpu-settings",
	Family:  Family,
	Safety:  rule.Safe,
	Needles: []string{"compile"},
	Example: tpuSettingsExample,
	Doc: pyq.Doc(pyq.DocSpec{
		Title: "torch.compile without backend=\"tpu\" and dynamic=False",
		What: "Adds `backend=` and `dynamic=` to `torch.compile(...)` calls and `@torch.compile` decorators that lack " +
			"them, and adjusts existing values: for `--target tpu` the backend becomes `\"tpu\"` and `dynamic` becomes " +
			"`False`; for `--target portable` each value becomes a choice on `DEVICE.type`, so CUDA and CPU keep the " +
			"backend and `dynamic` they had. Inductor-only `mode=`/`options=` are dropped for tpu and made conditional " +
			"for portable. The `eager` and `aot_eager` debugging backends are kept.",
		Why: "TorchTPU compiles through `backend=\"tpu\"` (FX → StableHLO → XLA, not Inductor), which is currently " +
			"required, and `dynamic=False` is mandatory: every shape change recompiles, and compiles take minutes " +
			"(torchtpu.md §7, §13.5). Inductor's `mode=\"reduce-overhead\"` uses CUDA graphs, which do not exist on TPU.",
		Safety: "Safe when only missing keywords are added, an explicit `\"inductor\"` (the default) is replaced, or " +
			"`dynamic=None` becomes `False`, and always for the portable target, whose choices leave CUDA and CPU runs " +
			"unchanged. Unsafe for `--target tpu` when the code chose another backend (`\"cudagraphs\"`, a variable), " +
			"asked for `dynamic=True` or a computed value, or passed `mode=`/`options=`: the rewrite drops that choice, " +
			"so variable-shape inputs must be padded or bucketed.",
	}, tpuSettingsExample),
	Run: runTPUSettings,
}

// debugBackends run on any device and are kept as they are.
var debugBackends = map[string]bool{"eager": true, "aot_eager": true, "tpu": true}

func runTPUSettings(p *rule.Pass) {
	dev := devkit.NewDev(p)
	pyq.Calls(p, func(call *ts.Node) {
		if pyq.CallName(p, call) != "torch.compile" {
			return
		}
		args := pyq.Args(call)
		if args == nil || pyq.HasSplat(args) {
			return
		}
		if len(pyq.Positional(args)) > 1 {
			return // positional fullgraph/dynamic/backend: too unusual to edit
		}
		settingsFinding(p, dev, call, args)
	})
	pyq.Nodes(p, "decorator", func(d *ts.Node) {
		for _, c := range ts.Children(d) {
			if c.Type() != "call" && pyq.Qualified(p, c) == "torch.compile" {
				kws := compileKwargs(p.Target, dev)
				p.Report(pyq.Finding(c, compileMessage(p.Target, nil),
					fixFor(dev, "Pass the TPU compile settings", rule.Safe,
						[]rule.Edit{{Start: pyq.End(c), End: pyq.End(c), New: "(" + strings.Join(kws, ", ") + ")"}},
						p.Target == rule.Portable)))
			}
		}
	})
}

func compileMessage(target rule.Target, extra []string) string {
	msg := `torch.compile needs backend="tpu" and dynamic=False on TPU (torchtpu.md §7)`
	if target == rule.Portable {
		msg += `; choose them by DEVICE.type so CUDA keeps its settings`
	}
	if len(extra) > 0 {
		msg += "; " + strings.Join(extra, "; ")
	}
	return msg
}

func settingsFinding(p *rule.Pass, dev *devkit.Dev, call, args *ts.Node) {
	var edits []rule.Edit
	var add []string
	var notes []string
	safety := rule.Safe
	portable := p.Target == rule.Portable
	replace := func(n *ts.Node, text string) {
		edits = append(edits, rule.Edit{Start: pyq.Start(n), End: pyq.End(n), New: text})
	}

	// backend=
	if v := pyq.KwargValue(p, args, "backend"); v == nil {
		if portable {
			add = append(add, "backend="+portableChoice(dev, `"tpu"`, `"inductor"`))
		} else {
			add = append(add, `backend="tpu"`)
		}
	} else if s, lit := pyq.Str(p, v); lit && debugBackends[s] {
		// kept
	} else if !isPortableChoice(p, v) {
		if portable {
			replace(v, portableChoice(dev, `"tpu"`, p.Text(v)))
		} else {
			replace(v, `"tpu"`)
			if !lit || s != "inductor" {
				safety = rule.Unsafe
				notes = append(notes, "backend "+p.Text(v)+" does not run on TPU")
			}
		}
	}

	// dynamic=
	if v := pyq.KwargValue(p, args, "dynamic"); v == nil {
		if portable {
			add = append(add, "dynamic="+portableChoice(dev, "False", "None"))
		} else {
			add = append(add, "dynamic=False")
		}
	} else if b, lit := pyq.Bool(v); (lit && !b) || isPortableChoice(p, v) {
		// already static, or already chosen by device
	} else if portable {
		replace(v, portableChoice(dev, "False", p.Text(v)))
	} else {
		replace(v, "False")
		if !pyq.IsNone(v) {
			safety = rule.Unsafe
			notes = append(notes, "dynamic="+p.Text(v)+" becomes False: pad or bucket variable shapes")
		}
	}

	// mode= and options= are Inductor settings.
	for _, name := range []string{"mode", "options"} {
		kw := pyq.Kwarg(p, args, name)
		if kw == nil {
			continue
		}
		v := kw.ChildByFieldName("value")
		if s, lit := pyq.Str(p, v); pyq.IsNone(v) || (lit && s == "default") || isPortableChoice(p, v) {
			continue
		}
		if portable {
			replace(v, portableChoice(dev, "None", p.Text(v)))
		} else {
			edits = append(edits, pyq.DropKwarg(p, args, kw))
			safety = rule.Unsafe
			notes = append(notes, name+"= is an Inductor setting the tpu backend does not take")
		}
	}
	if len(add) > 0 {
		edits = append(edits, pyq.AddKwargs(p, args, add)...)
	}
	if len(edits) == 0 {
		return
	}
	uses := portable && (len(add) > 0 || len(edits) > 0)
	p.Report(pyq.Finding(call, compileMessage(p.Target, notes), fixFor(dev, "Pass the TPU compile settings", safety, edits, uses)))
}
