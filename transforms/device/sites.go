package device

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

// use is what a device literal's context accepts.
type use int

const (
	useNone      use = iota
	useWholeCall     // torch.device("cuda"): the call itself becomes DEVICE
	useIndexed       // torch.device("cuda", idx): the type argument of an indexed device
	useDevice        // a torch API argument that takes a torch.device or a str
	useString        // a value that must stay a str (defaults, config, user APIs)
)

// site is a device literal and what its context accepts.
type site struct {
	s       kit.Str
	use     use
	call    *ts.Node // useWholeCall, useIndexed: the torch.device call
	idx     *ts.Node // useIndexed: the index argument
	isDflt  bool     // a default or config value (PDV004), else a call argument (PDV001)
	parsed  bool     // useString: the callee parses the str as a device type where it is evaluated
	context string   // for messages: "torch.device", "device=", ...
	// sel: the literal is the device of a device-selection idiom ("cuda"
	// if torch.cuda.is_available() else "cpu"), rewritten as a whole
	// (selection.go); selCall is the torch.device(...) call around it or
	// its torch.device("cuda") branch, which DEVICE replaces.
	sel     selection
	selCall *ts.Node
}

// tensorMethods take a device= argument like torch factories do.
var tensorMethods = map[string]bool{"to": true, "new_zeros": true, "new_ones": true, "new_empty": true,
	"new_full": true, "new_tensor": true}

// deviceTypeParams are torch functions whose first parameter (or
// device_type=) is a device type str: "cuda" there is a device type like any
// other. torch.autocast's is the amp rules' (autocast-cuda-device, PAM002).
// Not torch.get_device_module and torch.random.fork_rng: they hand out or
// call the device module, and torch.tpu's device_count/is_available raise in
// TorchTPU 0.2.0 where torch.cuda's answer 0/False.
// The value says whether the call parses the type at once (then "tpu"
// raises where TorchTPU has no chip, so an import-time site takes the
// portable form, see fix); custom_fwd/custom_bwd parse it when the
// decorated function runs.
var deviceTypeParams = map[string]bool{"torch.get_autocast_dtype": true, "torch.set_autocast_dtype": true,
	"torch.is_autocast_enabled": true, "torch.set_autocast_enabled": true, "torch.amp.is_autocast_available": true,
	"torch.amp.autocast_mode.is_autocast_available": true, "torch.amp.custom_fwd": false, "torch.amp.custom_bwd": false}

// skipCallees are left to the Hugging Face rules (device= of pipeline(),
// device_map= of from_pretrained()).
var skipCallees = map[string]bool{"pipeline": true, "from_pretrained": true}

// sites visits every device literal in a device-naming context.
// siteNeedles are the Needles of the rules that report sites
// (cuda-device-string, cuda-device-default). The `\q` mark (rule.StringStart:
// inside a string literal the match must open it) is sound: a site's string
// is a kit.DeviceString (one string_content matching ^cuda(:N)?$, or an
// f-string, which the pre-check reads as code) or the literal of a
// kit.FormattedDevice (a PlainString matching ^cuda:({}|{0}|%d|%s|%i)$ or
// ^cuda:$): its content starts with `cuda`, after the opening quote and
// followed by its closing quote or ":", so `\b` holds at both ends. The sites
// are found by these literals alone.
var siteNeedles = []string{`\q\bcuda\b`}

func sites(p *rule.Pass, fn func(site)) {
	kit.WalkHits(p, []string{"cuda"}, func(n *ts.Node) bool {
		switch n.Type() {
		case "comment":
			return false
		case "call", "binary_operator":
			if s, ok := kit.FormattedDevice(p, n); ok {
				if st, ok := classify(p, s); ok {
					fn(st)
				}
				return false
			}
			return true
		case "string":
			if s, ok := kit.DeviceString(p, n); ok {
				if st, ok := classify(p, s); ok {
					fn(st)
				}
				return false
			}
			return true // an f-string's replacement fields may hold device strings
		}
		return true
	})
}

func classify(p *rule.Pass, s kit.Str) (site, bool) {
	st, ok := classifyContext(p, s)
	if s.FString && s.IndexNode == nil {
		return st, ok
	}
	if sel, isSel := selectionOf(p, s.Node); isSel {
		st.sel = sel
		if st.call != nil && len(kit.Positional(st.call.ChildByFieldName("arguments"))) == 1 && st.context == "torch.device" {
			if al, ok := kit.Arguments(p, st.call); ok && len(al.All) == 1 {
				st.selCall = st.call // torch.device("cuda" if ... else "cpu")
			}
		}
		if !ok {
			st.use, st.context = useString, "a device choice"
		}
		return st, true
	}
	if ok && st.use == useWholeCall {
		if sel, isSel := selectionOf(p, st.call); isSel {
			st.sel = sel // torch.device("cuda") if ... else torch.device("cpu")
			st.selCall = nil
			st.use = useWholeCall
			return st, true
		}
	}
	return st, ok
}

func classifyContext(p *rule.Pass, s kit.Str) (site, bool) {
	top := s.Node
	inCond := false
	for {
		par := top.Parent()
		if par == nil {
			return site{}, false
		}
		if par.Type() == "parenthesized_expression" {
			top = par
			continue
		}
		if par.Type() == "conditional_expression" {
			if par.NamedChildCount() == 3 && par.NamedChild(1).Equal(top) {
				return site{}, false // the condition, not a value
			}
			top = par
			inCond = true
			continue
		}
		break
	}
	st := site{s: s}
	par := top.Parent()
	switch par.Type() {
	case "argument_list":
		call := par.Parent()
		if call == nil || call.Type() != "call" {
			return st, false
		}
		fn, q := kit.Callee(p, call)
		last := kit.LastName(p, call)
		al, ok := kit.Arguments(p, call)
		if !ok {
			return st, false
		}
		pos := -1
		for i, a := range al.Positional {
			if a.Equal(top) {
				pos = i
			}
		}
		switch {
		case q == "torch.device" && pos == 0:
			st.call, st.context = call, "torch.device"
			switch {
			case !inCond && len(al.All) == 1:
				st.use = useWholeCall
			case !inCond && len(al.All) == 2 && len(al.Positional) == 2 && s.Index == "":
				st.use, st.idx = useIndexed, al.Positional[1]
			case !inCond && len(al.All) == 2 && al.KwValue("index") != nil && s.Index == "":
				st.use, st.idx = useIndexed, al.KwValue("index")
			default:
				st.use = useString
			}
		case (q == "torch.distributed.device_mesh.init_device_mesh" || q == "torch.distributed.init_device_mesh") && pos == 0 && !inCond && s.Index == "":
			st.use, st.context = useString, "init_device_mesh's device type"
		case deviceTypeParams[q] && pos == 0 && !inCond && s.Index == "":
			st.use, st.parsed, st.context = useString, deviceTypeParams[q], q+"'s device type"
		case q == "torch.set_default_device" && pos == 0:
			st.use, st.context = useDevice, "torch.set_default_device"
		case last == "to" && fn.Type() == "attribute" && q == "" && pos == 0:
			st.use, st.context = useDevice, ".to()"
		case q == "torch.load" && pos == 1:
			st.use, st.context = useDevice, "map_location"
		case (last == "get" || last == "getenv") && fn.Type() == "attribute" && pos == 1 && stringArgIsDevice(p, al.Positional[0]):
			st.use, st.isDflt, st.context = useString, true, "a device setting's fallback"
		case p.Text(fn) == "getattr" && pos == 2 && stringArgIsDevice(p, al.Positional[1]):
			st.use, st.isDflt, st.context = useString, true, "a device setting's fallback"
		}
	case "keyword_argument":
		args := par.Parent()
		if args == nil || args.Parent() == nil || args.Parent().Type() != "call" {
			return st, false
		}
		call := args.Parent()
		fn, q := kit.Callee(p, call)
		last := kit.LastName(p, call)
		if skipCallees[last] {
			return st, false
		}
		switch p.Text(par.ChildByFieldName("name")) {
		case "map_location":
			st.use, st.context = useDevice, "map_location="
		case "device":
			if q == "torch.cuda.get_rng_state" || q == "torch.cuda.set_rng_state" {
				return st, false // cuda-rng-state (PCU010) rewrites or drops it
			}
			st.context = "device="
			if strings.HasPrefix(q, "torch.") || (fn.Type() == "attribute" && q == "" && tensorMethods[last]) {
				st.use = useDevice
			} else {
				st.use = useString
			}
		case "device_type":
			if (q == "torch.distributed.device_mesh.init_device_mesh" || q == "torch.distributed.init_device_mesh") && s.Index == "" {
				st.use, st.context = useString, "init_device_mesh's device type"
			} else if _, ok := deviceTypeParams[q]; ok && s.Index == "" {
				st.use, st.parsed, st.context = useString, deviceTypeParams[q], "device_type="
			}
		case "pin_memory_device":
			// DataLoader's: a device type str (deprecated and ignored since
			// torch 2.9, where the current accelerator is used).
			st.use, st.context = useString, "pin_memory_device="
		case "default":
			if (last == "add_argument" || last == "option") && optionIsDevice(p, call) {
				st.use, st.isDflt, st.context = useString, true, "the --device option's default"
			}
		}
	case "list", "tuple", "set":
		// choices=["cuda", "cpu"] of the --device option: the rewritten
		// default must stay one of the choices.
		kw := par.Parent()
		if kw == nil || kw.Type() != "keyword_argument" || p.Text(kw.ChildByFieldName("name")) != "choices" {
			return st, false
		}
		if args := kw.Parent(); args != nil && args.Parent() != nil && args.Parent().Type() == "call" {
			call := args.Parent()
			if last := kit.LastName(p, call); (last == "add_argument" || last == "option") && optionIsDevice(p, call) {
				st.use, st.isDflt, st.context = useString, true, "the --device option's choices"
			}
		}
	case "pair":
		if v := par.ChildByFieldName("value"); v != nil && v.Equal(top) {
			if k, ok := kit.PlainString(p, par.ChildByFieldName("key")); ok && kit.DeviceName(k) {
				st.use, st.isDflt, st.context = useString, true, "a config value"
			} else if mapLocationDict(p, par.Parent()) {
				// {saved location: new location}: the keys name where the
				// checkpoint's tensors were saved and stay; torch.load wants
				// each new location as a str.
				st.use, st.context = useString, "a map_location= value"
			}
		}
	case "assignment":
		if r := par.ChildByFieldName("right"); r != nil && r.Equal(top) && targetIsDevice(p, par.ChildByFieldName("left")) {
			st.use, st.isDflt, st.context = useString, true, "a device setting"
		}
	case "default_parameter", "typed_default_parameter":
		if v := par.ChildByFieldName("value"); v != nil && v.Equal(top) && kit.DeviceName(p.Text(par.ChildByFieldName("name"))) {
			st.use, st.isDflt, st.context = useString, true, "a parameter default"
		}
	}
	return st, st.use != useNone
}

// mapLocationDict reports whether dict is the map_location of torch.load
// (the map_location= keyword or the second positional argument).
func mapLocationDict(p *rule.Pass, dict *ts.Node) bool {
	if dict == nil || dict.Type() != "dictionary" {
		return false
	}
	par := dict.Parent()
	if par == nil {
		return false
	}
	if par.Type() == "keyword_argument" {
		return p.Text(par.ChildByFieldName("name")) == "map_location"
	}
	if par.Type() != "argument_list" || par.Parent() == nil || par.Parent().Type() != "call" {
		return false
	}
	_, q := kit.Callee(p, par.Parent())
	al, ok := kit.Arguments(p, par.Parent())
	return ok && q == "torch.load" && len(al.Positional) > 1 && al.Positional[1].Equal(dict)
}

func stringArgIsDevice(p *rule.Pass, n *ts.Node) bool {
	s, ok := kit.PlainString(p, n)
	return ok && kit.DeviceName(s)
}

func targetIsDevice(p *rule.Pass, n *ts.Node) bool {
	if n == nil {
		return false
	}
	switch n.Type() {
	case "identifier":
		return kit.DeviceName(p.Text(n))
	case "attribute":
		return kit.DeviceName(p.Text(n.ChildByFieldName("attribute")))
	}
	return false
}

// optionIsDevice reports whether an add_argument/option call declares a
// device option ("--device", "-d/--device", dest="device").
func optionIsDevice(p *rule.Pass, call *ts.Node) bool {
	al, ok := kit.Arguments(p, call)
	if !ok {
		return false
	}
	for _, a := range al.Positional {
		if s, ok := kit.PlainString(p, a); ok && kit.DeviceName(strings.TrimLeft(s, "-")) {
			return true
		}
	}
	if d := al.KwValue("dest"); d != nil {
		if s, ok := kit.PlainString(p, d); ok && kit.DeviceName(s) {
			return true
		}
	}
	return false
}

// fix builds the rewrite of a device site for the pass's target. On the
// tpu target a site that builds a device (or a tensor, or a move) when the
// module is imported gets the portable rewrite, with the tpu fix's safety:
// torch.device("tpu") at import would fail on every host without a TPU (see
// kit.ImportTime).
func fix(p *rule.Pass, dv *kit.Dev, st site) (*rule.Fix, string) {
	if st.sel.expr != nil {
		return selFix(p, dv, st), ""
	}
	if p.Target != rule.TPU {
		return portableFix(dv, st), ""
	}
	f, note := tpuFix(p, st)
	if (buildsDevice(st) || feedsDeviceOnImport(p, st)) && kit.ImportTime(p, st.s.Node) {
		g := portableFix(dv, st)
		g.Safety = f.Safety
		return g, note + kit.ImportTimeNote
	}
	return f, note
}

// buildsDevice reports whether the site's value becomes a torch.device
// where it is evaluated: a torch.device(...) argument, or a torch API's
// device (a tensor built there, a move, map_location), or a device type a
// torch call parses there (torch.is_autocast_enabled("cuda")). A value that
// stays a str (a default, a config entry) builds nothing.
func buildsDevice(st site) bool {
	return st.call != nil || st.use == useDevice || st.parsed
}

// feedsDeviceOnImport reports whether the site's value is assigned to a
// name that code running on import passes where torch builds a device
// (`name = "cuda"` then `DEFAULT = torch.device(name)` at module level): the
// str builds nothing itself, but "tpu" there would make the import fail all
// the same.
func feedsDeviceOnImport(p *rule.Pass, st site) bool {
	top := st.s.Node
	for top.Parent() != nil && (top.Parent().Type() == "parenthesized_expression" || top.Parent().Type() == "conditional_expression") {
		top = top.Parent()
	}
	asg := top.Parent()
	if asg == nil || asg.Type() != "assignment" || !kit.IsField(asg, "right", top) {
		return false
	}
	left := asg.ChildByFieldName("left")
	if left == nil || left.Type() != "identifier" {
		return false
	}
	name := p.Text(left)
	found := false
	kit.WalkHits(p, []string{name}, func(n *ts.Node) bool {
		switch {
		case found, n.Type() == "comment", n.Type() == "string":
			return false
		case n.Type() != "identifier" || p.Text(n) != name:
			return true
		}
		found = deviceArgument(p, n) && kit.ImportTime(p, n) // see flow.go
		return false
	})
	return found
}

// tpuFix is the tpu target's rewrite of a device site: the literal "tpu".
func tpuFix(p *rule.Pass, st site) (*rule.Fix, string) {
	s := st.s
	safety := rule.Safe
	note := ""
	switch {
	case st.use == useIndexed && strings.Contains(p.Text(st.idx), "current_device"):
		// torch.device("cuda", torch.cuda.current_device()): the current
		// device is the process's chip (tpu:0); the index is kept for
		// cuda-current-device (PCU003) to rewrite.
		return &rule.Fix{Title: "Use the TPU device", Safety: rule.Safe, Edits: []rule.Edit{s.Replace(s.Literal("tpu"))}}, ""
	case st.use == useIndexed:
		if !kit.PerProcessIndex(p.Text(st.idx)) {
			safety, note = rule.Unsafe, indexNote(p.Text(st.idx))
		}
		lit := s.Literal("tpu")
		return kit.TorchFix("Use the TPU device", safety, rule.Edit{Start: kit.Start(s.Node), End: kit.End(st.idx), New: lit}), note
	case s.Index != "" && !kit.PerProcessIndex(s.Index):
		safety, note = rule.Unsafe, indexNote(s.Index)
	}
	return &rule.Fix{Title: "Use the TPU device", Safety: safety, Edits: []rule.Edit{s.Replace(s.TPULiteral())}}, note
}

// portableFix is the portable rewrite of a device site: DEVICE, its type,
// or the device-index helper.
func portableFix(dv *kit.Dev, st site) *rule.Fix {
	s := st.s
	dev, typ := dv.Name(), dv.Type()
	if s.Index != "" {
		return indexFix(dv, st)
	}
	var e rule.Edit
	switch {
	case s.FString:
		e = s.ReplaceWord("{" + typ + "}")
	case st.use == useWholeCall:
		e = rule.Edit{Start: kit.Start(st.call), End: kit.End(st.call), New: dev}
	case st.use == useIndexed:
		return indexFix(dv, st)
	case st.use == useDevice:
		e = s.Replace(dev)
	default:
		e = s.Replace(typ)
	}
	return dv.Fix("Use "+dev, rule.Safe, e)
}

// indexFix is the portable rewrite of a device with an index ("cuda:1",
// f"cuda:{rank}", torch.device("cuda", i)): the device-index helper
// (kit.AtPrelude), which keeps the index on CUDA and is DEVICE elsewhere;
// wrapped in str() where the value must stay a string. The index expression
// itself is never part of an edit, so fixes inside it still apply.
func indexFix(dv *kit.Dev, st site) *rule.Fix {
	s := st.s
	open, closing := dv.AtName()+"(", ")"
	if st.use == useString {
		open, closing = "str("+open, "))"
	}
	var edits []rule.Edit
	whole := s.Node // the text the helper call replaces
	if st.use == useWholeCall || st.use == useIndexed {
		whole = st.call
	}
	switch {
	case st.use == useIndexed:
		edits = []rule.Edit{
			{Start: kit.Start(whole), End: kit.Start(st.idx), New: open},
			{Start: kit.End(st.idx), End: kit.End(whole), New: closing},
		}
	case s.IndexNode != nil:
		edits = []rule.Edit{
			{Start: kit.Start(whole), End: kit.Start(s.IndexNode), New: open},
			{Start: kit.End(s.IndexNode), End: kit.End(whole), New: closing},
		}
	default:
		edits = []rule.Edit{{Start: kit.Start(whole), End: kit.End(whole), New: open + s.Index + closing}}
	}
	return dv.AtFix("Use "+dv.AtName()+"(...)", rule.Safe, edits...)
}

func indexNote(idx string) string {
	return "; TorchTPU has one chip per process (tpu:0), so device index " + idx +
		" cannot be kept: code that spreads work over several devices in one process now puts it all on one chip"
}
