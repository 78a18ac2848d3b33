package hf

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var deviceMapExample = rule.Example{
	Before: `import torch
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16, device_map="cuda")
`,
	Portable: `import torch
from transformers import AutoModelForCausalLM

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

with DEVICE:
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
`,
	TPU: `import torch
from transformers import AutoModelForCausalLM

with torch.device("tpu"):
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
`,
}

// DeviceMap moves from_pretrained(device_map=...) placement into a device context.
var DeviceMap = &rule.Rule{
	Code:   "PHF001",
	Name:   "hf-device-map",
	Family: Family,
	Safety: rule.Safe,
	// Every finding is a from_pretrained(...) call's device_map keyword
	// argument (kit.Kwarg): the name, a whole identifier in code, then its
	// "=" after blanks or comments, so `\bdevice_map\=` holds there; the call
	// and the keyword are code, never a string literal, so `\q` is sound.
	Needles: []string{`\q\bfrom_pretrained\( & \q\bdevice_map\=`},
	Example: deviceMapExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "from_pretrained(..., device_map=<CUDA device or strategy>)",
		What: "Finds `X.from_pretrained(..., device_map=...)` where the map is `\"cuda\"`, `\"cuda:N\"`, an int `N` " +
			"(transformers reads it as `cuda:N`), a dict that sends every module to one such device, or a placement " +
			"strategy (`\"auto\"`, `\"balanced\"`, `\"balanced_low_0\"`, `\"sequential\"`). It removes `device_map` and " +
			"wraps the statement in `with torch.device(\"tpu\"):` (tpu) or `with DEVICE:` (portable; " +
			"`with device_at(N):` for an index N > 0: device N on CUDA, DEVICE elsewhere). A statement that cannot hold a `with` " +
			"(inside a lambda or comprehension, sharing its line, or loading several models) and dicts that " +
			"spread a model over several devices or offload it are reported without a fix. `\"cpu\"` and " +
			"computed values are left alone.",
		Why: "`device_map=\"tpu\"` is not confirmed by any documentation, and `device_map=\"auto\"` does not place " +
			"weights on XLA/TPU devices (diffusers#11788, accelerate#3813). Loading " +
			"inside `with torch.device(...)` is the form TorchTPU's own Hugging Face utility uses, and transformers " +
			"turns a device context into a one-device placement, so CUDA runs load exactly as before.",
		Safety: "Safe for one CUDA device (`\"cuda\"`, `\"cuda:0\"`, `0`, `{\"\": 0}`): the model lands on the same " +
			"device. Unsafe for a strategy such as `\"auto\"`, on both targets: the whole model is placed on one " +
			"device, so a model that needed several GPUs or CPU/disk offload must fit one chip's HBM. Unsafe on " +
			"the tpu target for an index N > 0: a process owns one TPU chip.",
	}, deviceMapExample),
	Run: runDeviceMap,
}

func runDeviceMap(p *rule.Pass) {
	dev := kit.NewDev(p)
	type cand struct {
		call, args, kw *ts.Node
		kind           placement
		index          int
	}
	var cands []cand
	perStmt := map[uint32]int{}
	kit.Calls(p, func(call *ts.Node) {
		if lastName(p, call) != "from_pretrained" {
			return
		}
		args := kit.Args(call)
		kw := kit.Kwarg(p, args, "device_map")
		if kw == nil {
			return
		}
		kind, index := classify(p, kw.ChildByFieldName("value"), true)
		if kind == placeNone {
			return
		}
		cands = append(cands, cand{call, args, kw, kind, index})
		if st := kit.EnclosingStatement(call); st != nil {
			perStmt[st.StartByte()]++
		}
	})
	for _, c := range cands {
		val := p.Text(c.kw.ChildByFieldName("value"))
		if c.kind == placeMap {
			p.Report(kit.Finding(c.kw, "device_map="+oneLine(val)+" spreads the model over several devices or offloads it; "+
				"TorchTPU gives each process one chip: load inside `with torch.device(\"tpu\"):` if the model fits, "+
				"or shard it with FSDPv2 or DTensor, which TorchTPU supports", nil))
			continue
		}
		st := kit.EnclosingStatement(c.call)
		var wrap []rule.Edit
		ok := st != nil && perStmt[st.StartByte()] == 1
		if ok {
			target := deviceExpr(p, dev, torchName(p), c.index, false)
			wrap, ok = wrapWith(p, st, c.call, target)
		}
		msg := "device_map=" + oneLine(val) + " asks for CUDA"
		if c.kind == placeStrategy {
			msg = "device_map=" + val + " does not place weights on TPU"
		}
		if !ok {
			p.Report(kit.Finding(c.kw, msg+"; load the model inside `with torch.device(...)` instead (this statement "+
				"cannot be wrapped automatically)", nil))
			continue
		}
		drop := kit.DropKwarg(p, c.args, c.kw)
		edits := []rule.Edit{drop}
		for _, e := range wrap {
			if e.Start > drop.Start && e.Start < drop.End {
				continue // the line is being removed
			}
			if e.Start == drop.Start && drop.End > drop.Start && e.Start != kit.LineStart(p.Src, kit.Start(st)) {
				// a re-indent of the removed line's start: indent the kept text instead
				if drop.New == "" {
					continue
				}
			}
			edits = append(edits, e)
		}
		safety := safetyFor(p, c.kind, c.index)
		var fix *rule.Fix
		if p.Target == rule.Portable {
			fix = devFix(dev, c.index, "Load the model inside a device context", safety, edits...)
		} else {
			fix = kit.TorchFix("Load the model inside a device context", safety, edits...)
		}
		if c.kind == placeStrategy {
			msg += "; load it on one device inside a device context (all of the model must fit that device)"
		} else {
			msg += "; load it inside a device context instead (no documentation confirms device_map=\"tpu\")"
		}
		p.Report(kit.Finding(c.kw, msg, fix))
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// wrapWith returns the edits that put statement st inside
// `with <target>:`, re-indenting its lines; ok is false when st cannot be
// wrapped (it shares a line, or call sits in a lambda or comprehension).
func wrapWith(p *rule.Pass, st, call *ts.Node, target string) ([]rule.Edit, bool) {
	switch st.Type() {
	case "expression_statement", "return_statement":
	default:
		return nil, false
	}
	if kit.InsideLambdaOrComprehension(call, st) {
		return nil, false
	}
	src := p.Src
	ls := kit.LineStart(src, kit.Start(st))
	if strings.TrimSpace(string(src[ls:kit.Start(st)])) != "" {
		return nil, false // something precedes it on its line
	}
	end := kit.End(st)
	rest := string(src[end:kit.LineEnd(src, end)])
	if r := strings.TrimSpace(rest); r != "" && !strings.HasPrefix(r, "#") {
		return nil, false // "a = f(); b = g()"
	}
	indent := string(src[ls:kit.Start(st)])
	unit := "    "
	if strings.Contains(indent, "\t") {
		unit = "\t"
	}
	// Lines inside a multi-line string keep their text.
	var strs [][2]int
	ts.Walk(st, func(n *ts.Node) bool {
		if n.Type() == "string" {
			strs = append(strs, [2]int{kit.Start(n), kit.End(n)})
			return false
		}
		return true
	})
	inString := func(off int) bool {
		for _, s := range strs {
			if s[0] < off && off < s[1] {
				return true
			}
		}
		return false
	}
	edits := []rule.Edit{{Start: ls, End: ls, New: indent + "with " + target + ":\n" + unit}}
	for i := kit.Start(st); i < end; i++ {
		if src[i] == '\n' && i+1 < end && !inString(i+1) {
			edits = append(edits, rule.Edit{Start: i + 1, End: i + 1, New: unit})
		}
	}
	return edits, true
}
