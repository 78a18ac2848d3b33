package cudaapi

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

// apiNeedles are the cuda-api rules' Needles. The `\q` mark
// (rule.StringStart: inside a string literal the match must open it) is
// sound: every finding is a call cudaCalls accepts, whose callee qualifies
// (kit.Callee: the callee's dotted text, through Imports an import's module
// or name) to torch.cuda.<name>. Each part of that name is the text of a
// name in code, in the callee's chain or an import statement, never of a
// string literal, so `cuda` occurs in code, as a whole name: `\b` holds at
// both ends. (rng_state reads a "cuda" device argument too, but only inside
// such a call.)
var apiNeedles = []string{`\q\bcuda\b`}

// apiCall is one call of torch.cuda.<name>.
type apiCall struct {
	call *ts.Node
	fn   *ts.Node // the function expression, replaced by the new callee
	name string   // the torch.cuda attribute called
	args kit.ArgList
}

// cudaCalls visits calls of torch.cuda.<name> for the given names.
func cudaCalls(p *rule.Pass, names []string, fn func(apiCall)) {
	if !kit.Mentions(p.Src, "cuda") {
		return
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	kit.CallsWith(p, []string{"cuda"}, func(call *ts.Node) {
		f, q := kit.Callee(p, call)
		name, ok := strings.CutPrefix(q, "torch.cuda.")
		if !ok || !want[name] {
			return
		}
		al, ok := kit.Arguments(p, call)
		if !ok {
			return
		}
		fn(apiCall{call: call, fn: f, name: name, args: al})
	})
}

// callee returns the edit replacing the called function with text.
func (c apiCall) callee(text string) rule.Edit {
	return rule.Edit{Start: kit.Start(c.fn), End: kit.End(c.fn), New: text}
}

// whole returns the edit replacing the whole call with text.
func (c apiCall) whole(text string) rule.Edit {
	return rule.Edit{Start: kit.Start(c.call), End: kit.End(c.call), New: text}
}

func (c apiCall) finding(p *rule.Pass, msg string) rule.Finding {
	return rule.Finding{Start: kit.Start(c.call), End: kit.End(c.call), Message: "`" + oneLine(p.Text(c.fn)) + "()` " + msg}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// simpleReplace is the shape of the rules that only swap the callee.
func simpleReplace(p *rule.Pass, names []string, portable, tpu, msg string) {
	cudaCalls(p, names, func(c apiCall) {
		f := c.finding(p, msg)
		if p.Target == rule.TPU {
			f.Fix = kit.TorchFix("Call "+tpu, rule.Safe, c.callee(tpu))
		} else {
			f.Fix = kit.TorchFix("Call "+portable, rule.Safe, c.callee(portable))
		}
		kit.Report(p, f)
	})
}

// positional returns the edit that turns the keyword argument `name=value`
// of the call into the positional `value` (none when there is no such
// keyword): torch.accelerator's device parameters are positional-only
// (`synchronize(device=None, /)`, `set_device_index(device, /)`,
// `random.get_rng_state(device=None, /)`), where torch.cuda's are not. Only
// the `name=` part is deleted, so edits around the value still apply.
func (c apiCall) positional(name string) []rule.Edit {
	kw := c.args.Keywords[name]
	if kw == nil {
		return nil
	}
	v := kw.ChildByFieldName("value")
	if v == nil {
		return nil
	}
	return []rule.Edit{{Start: kit.Start(kw), End: kit.Start(v)}}
}
