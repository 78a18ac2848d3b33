package kit

import (
	"bytes"
	"sort"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// CUDAOnlyGuardCode is the code of the cuda-only-guard rule (cudaapi), which
// reports each CUDAOnlyGuard; the fixes the other rules drop inside one name it.
const CUDAOnlyGuardCode = "PCU012"

// CUDAOnlyGuardNote ends the message of a finding whose fix was dropped
// because it lies in a CUDAOnlyGuard (its condition or its CUDA branch).
const CUDAOnlyGuardNote = "; left CUDA-only: the CUDA branch this guard selects does CUDA-only work (" +
	CUDAOnlyGuardCode + ")"

// CUDAOnlyGuard is a condition that checks for CUDA (`torch.cuda.is_available()`,
// `x.is_cuda`, `device.type == "cuda"`, `impl == "cuda"`, ...) in front of a
// branch that does work which stays CUDA-only after the migration: no rule
// makes it device-agnostic, so on a TPU host the branch would fail. Such a
// guard and its branch are left as they are (the TPU takes the other path,
// as it did before the migration).
type CUDAOnlyGuard struct {
	Cond *ts.Node
	// Ranges are the byte ranges left alone: the condition and the branch
	// taken when it finds CUDA.
	Ranges [][2]int
	// What names the CUDA-only work ("`torch.cuda.Stream()`"), with Line
	// its 1-based line and Via the same-module function it was found
	// through ("" when it is in the branch itself).
	What string
	Line int
	Via  string
	// Test marks a test function or class kept CUDA-only as a whole
	// (testGuard): Cond is its decorator, and cuda-only-test (PCU013)
	// reports it instead of cuda-only-guard.
	Test bool
}

// Reason is the guard's CUDA-only work in words, for messages.
func (g CUDAOnlyGuard) Reason() string {
	s := g.What
	if !g.Test || g.Via != "" || !strings.HasPrefix(g.What, "its decorator") {
		s += " (line " + strconv.Itoa(g.Line) + ")"
	}
	if g.Via != "" {
		s += ", reached through " + g.Via
	}
	return s
}

// cudaAgnostic are the torch.cuda names whose calls the device, cuda-api and
// amp rules make device-agnostic (cudaapi's rules, legacy tensor types,
// torch.cuda.amp): a branch calling only these migrates as a whole.
var cudaAgnostic = map[string]bool{
	"is_available": true, "device_count": true, "current_device": true, "set_device": true, "synchronize": true,
	"manual_seed": true, "manual_seed_all": true, "get_device_name": true, "get_device_properties": true,
	"is_bf16_supported": true, "get_rng_state": true, "set_rng_state": true, "device": true,
	"memory_allocated": true, "max_memory_allocated": true, "memory_reserved": true, "max_memory_reserved": true,
	"memory_cached": true, "max_memory_cached": true, "memory_stats": true, "memory_summary": true,
	"mem_get_info": true, "empty_cache": true, "reset_peak_memory_stats": true, "reset_max_memory_allocated": true,
	"reset_max_memory_cached": true, "reset_accumulated_memory_stats": true,
}

// cudaOnlyModules are modules whose every use is CUDA-only: NVIDIA
// libraries, CUDA kernels and cuDNN/CUDA backend settings (the hazards
// family reports them; no rule makes them device-agnostic).
var cudaOnlyModules = []string{"torch.backends.cudnn", "torch.backends.cuda", "torch.cuda.nccl", "pynvml",
	"nvidia_smi", "cupy", "cupyx", "pycuda", "numba.cuda", "triton", "apex", "flash_attn", "xformers",
	"bitsandbytes", "transformer_engine", "tensorrt", "torch_tensorrt", "torch.utils.cpp_extension"}

// cudaPropFields are the fields of torch.cuda.get_device_properties(...)
// that only a CUDA device has (TorchTPU's properties carry name,
// total_memory and multi_processor_count).
var cudaPropFields = map[string]bool{"major": true, "minor": true, "gcnArchName": true, "L2_cache_size": true,
	"uuid": true, "is_integrated": true, "is_multi_gpu_board": true, "max_threads_per_multi_processor": true,
	"regs_per_multiprocessor": true, "warp_size": true, "shared_memory_per_block": true,
	"shared_memory_per_multiprocessor": true, "shared_memory_per_block_optin": true, "pci_bus_id": true,
	"pci_device_id": true, "pci_domain_id": true}

// cudaOnlyStrings are string literals that select CUDA-only software
// (ONNX Runtime's GPU providers), with what they are.
var cudaOnlyStrings = map[string]string{"CUDAExecutionProvider": "ONNX Runtime's CUDA provider",
	"TensorrtExecutionProvider": "ONNX Runtime's CUDA provider"}

// cudaOnlyCommands are NVIDIA's command-line tools: a string literal that
// starts with one (`["nvidia-smi", "topo", "-m"]`, "nvidia-smi -L") runs
// CUDA-only software, which a TPU host does not have.
var cudaOnlyCommands = []string{"nvidia-smi", "nvcc", "nvidia-debugdump", "nvidia-ctk", "dcgmi"}

// guardDepth bounds how deep same-module calls are followed from a branch.
const guardDepth = 3

// CUDAOnlyGuards returns the module's CUDAOnlyGuards, computed once per file.
// A guard is an if/elif condition, the condition of `a if c else b` or the
// left operand of `c and work` that
// mentions cuda in code or as a device string, or is a flag (a name or
// attribute, maybe under `not`) the module assigns a value mentioning cuda
// (`self.is_cuda = device.type == "cuda"`); its CUDA branch is the body (the
// else part for `not ...`, `!=` and `is not`). A kept flag's values are kept
// too. The branch, and the
// functions of the same module it calls (followed guardDepth calls deep),
// are judged CUDA-only when they call a torch.cuda API no rule rewrites
// (streams, events, graphs, nvtx, get_device_capability, ...), read a field
// of get_device_properties that only CUDA has (`.major`), use a CUDA-only
// module (cudnn/CUDA backend flags, pynvml, cupy, triton, cpp_extension,
// ...), name ONNX Runtime's CUDA provider, pick Lightning's CUDA
// accelerator (a LightningSite value), call a custom extension (a name
// bound by cpp_extension.load/load_inline, or a callee named for CUDA such as
// `ext.forward_cuda`) outside a path the kernel stage wired for tpu tensors
// (`... if x.device.type == "tpu" else ext.f(x)`), or return a CUDA device
// string (which no rule rewrites there).
func CUDAOnlyGuards(p *rule.Pass) []CUDAOnlyGuard {
	return p.Memo("kit.cudaonlyguards", func() any {
		var out []CUDAOnlyGuard
		if !Mentions(p.Src, "cuda") {
			return out
		}
		j := newGuardJudge(p)
		for _, typ := range []string{"if_statement", "elif_clause", "conditional_expression", "boolean_operator"} {
			Nodes(p, typ, func(n *ts.Node) {
				if g, ok := j.guard(n); ok {
					out = append(out, g)
				}
			})
		}
		Nodes(p, "decorated_definition", func(n *ts.Node) {
			if g, ok := j.testGuard(n); ok {
				out = append(out, g)
			}
		})
		sort.Slice(out, func(a, b int) bool { return Start(out[a].Cond) < Start(out[b].Cond) })
		return out
	}).([]CUDAOnlyGuard)
}

// Note is what a finding whose fix the guard dropped says of it.
func (g CUDAOnlyGuard) Note() string {
	if g.Test {
		return CUDAOnlyTestNote
	}
	return CUDAOnlyGuardNote
}

// InCUDAOnlyGuard returns the CUDAOnlyGuard whose condition or CUDA branch
// holds [start, end).
func InCUDAOnlyGuard(p *rule.Pass, start, end int) (CUDAOnlyGuard, bool) {
	for _, g := range CUDAOnlyGuards(p) {
		for _, r := range g.Ranges {
			if r[0] <= start && end <= r[1] {
				return g, true
			}
		}
	}
	return CUDAOnlyGuard{}, false
}

// guardJudge holds what judging a branch needs of the module.
type guardJudge struct {
	p     *rule.Pass
	funcs map[string]*ts.Node // module-level functions by name
	exts  map[string]bool     // names bound to a loaded custom extension
	// flags are the values assigned to a name or attribute (by its text:
	// "use_gpu", "self.is_cuda") that mention cuda: a condition made of
	// the name is a CUDA check too.
	flags map[string][]*ts.Node
	fns   map[int]*fnVerdict // judged functions by their start
}

// fnVerdict is what judging a function found.
type fnVerdict struct {
	g     CUDAOnlyGuard
	found bool
}

func newGuardJudge(p *rule.Pass) *guardJudge {
	j := &guardJudge{p: p, funcs: map[string]*ts.Node{}, exts: map[string]bool{}, flags: map[string][]*ts.Node{},
		fns: map[int]*fnVerdict{}}
	root := p.Tree.Root()
	for _, st := range ts.Children(root) {
		def := st
		if def.Type() == "decorated_definition" {
			def = def.ChildByFieldName("definition")
		}
		if def != nil && def.Type() == "function_definition" {
			if name := def.ChildByFieldName("name"); name != nil {
				j.funcs[p.Text(name)] = def
			}
		}
	}
	Nodes(p, "assignment", func(a *ts.Node) {
		right := a.ChildByFieldName("right")
		left := a.ChildByFieldName("left")
		if right == nil || left == nil {
			return
		}
		if (left.Type() == "identifier" || left.Type() == "attribute") && mentionsCUDA(p, right) {
			j.flags[p.Text(left)] = append(j.flags[p.Text(left)], right)
		}
		if right.Type() != "call" {
			return
		}
		fn := p.Dotted(right.ChildByFieldName("function"))
		last := fn[strings.LastIndexByte(fn, '.')+1:]
		switch q := CallName(p, right); {
		case strings.HasPrefix(q, "torch.utils.cpp_extension.load"), last == "lazy_extension",
			last == "load_ext": // mmcv's ext_loader.load_ext
			j.exts[p.Text(left)] = true
		}
	})
	for local, q := range p.Imports.Modules {
		if extModule(q) {
			j.exts[local] = true
		}
	}
	for local, q := range p.Imports.Names {
		// `from . import _C`, and `from ._C import nms`: an op of one.
		if extModule(q) || strings.Contains(q, ".") && extModule(q[:strings.LastIndexByte(q, '.')]) {
			j.exts[local] = true
		}
	}
	return j
}

// extModule reports whether a module name reads as a compiled extension
// (pkg._C, pkg._ext, fused_cuda), torch's own excepted.
func extModule(q string) bool {
	if q == "torch" || strings.HasPrefix(q, "torch.") {
		return false
	}
	leaf := q[strings.LastIndexByte(q, '.')+1:]
	return leaf == "_C" || leaf == "_ext" || strings.HasSuffix(leaf, "_cuda") || strings.HasSuffix(leaf, "_C")
}

// guard judges one if statement, elif clause or conditional expression.
func (j *guardJudge) guard(n *ts.Node) (CUDAOnlyGuard, bool) {
	p := j.p
	var cond *ts.Node
	var pos, neg []*ts.Node // the branches taken when the condition holds / fails
	switch n.Type() {
	case "boolean_operator":
		// `check and work`: work runs only where check holds.
		op := n.ChildByFieldName("operator")
		if op == nil || p.Text(op) != "and" {
			return CUDAOnlyGuard{}, false
		}
		cond = n.ChildByFieldName("left")
		if r := n.ChildByFieldName("right"); r != nil {
			pos = []*ts.Node{r}
		}
	case "conditional_expression":
		if n.NamedChildCount() != 3 {
			return CUDAOnlyGuard{}, false
		}
		cond = n.NamedChild(1)
		pos, neg = []*ts.Node{n.NamedChild(0)}, []*ts.Node{n.NamedChild(2)}
	default:
		cond = n.ChildByFieldName("condition")
		if c := n.ChildByFieldName("consequence"); c != nil {
			pos = []*ts.Node{c}
		}
		if n.Type() == "if_statement" {
			for _, c := range ts.Children(n) {
				switch c.Type() {
				case "elif_clause", "else_clause":
					neg = append(neg, c)
				}
			}
		}
	}
	if cond == nil {
		return CUDAOnlyGuard{}, false
	}
	flags := j.flags[p.Text(unNot(cond))]
	if len(flags) == 0 && !mentionsCUDA(p, cond) || ownCUDACheck(p, cond) {
		return CUDAOnlyGuard{}, false
	}
	branch := pos
	if negated(p, cond) {
		branch = neg
	}
	for _, b := range branch {
		if g, ok := j.judge(b, n, 0); ok {
			g.Cond = cond
			g.Ranges = append(g.Ranges, [2]int{Start(cond), End(cond)})
			for _, b := range branch {
				g.Ranges = append(g.Ranges, [2]int{Start(b), End(b)})
			}
			for _, v := range flags {
				// The flag's value stays the CUDA check it was.
				g.Ranges = append(g.Ranges, [2]int{Start(v), End(v)})
			}
			return g, true
		}
	}
	if sel := implSelector(p, cond); sel != nil && !wiredIn(p, branch) {
		// `impl == "cuda" and x.device.type == "cuda"`: the code's own
		// choice of its CUDA implementation; the device check beside it
		// keeps tpu tensors out of it, as it did before.
		g := j.at(sel, "`"+oneLine(p.Text(sel))+"` selects the CUDA implementation")
		g.Cond = cond
		g.Ranges = append(g.Ranges, [2]int{Start(cond), End(cond)})
		for _, b := range branch {
			g.Ranges = append(g.Ranges, [2]int{Start(b), End(b)})
		}
		return g, true
	}
	return CUDAOnlyGuard{}, false
}

// unNot is cond without parentheses and one `not`.
func unNot(cond *ts.Node) *ts.Node {
	for cond.Type() == "parenthesized_expression" && cond.NamedChildCount() == 1 {
		cond = cond.NamedChild(0)
	}
	if cond.Type() == "not_operator" {
		if a := cond.ChildByFieldName("argument"); a != nil {
			return unNot(a)
		}
	}
	return cond
}

// negated reports whether cond holds where CUDA is absent: `not ...`,
// `... != "cuda"`, `... is not ...`.
func negated(p *rule.Pass, cond *ts.Node) bool {
	for cond.Type() == "parenthesized_expression" && cond.NamedChildCount() == 1 {
		cond = cond.NamedChild(0)
	}
	switch cond.Type() {
	case "not_operator":
		return true
	case "comparison_operator":
		for _, c := range ts.Children(cond) {
			if !c.IsNamed() {
				if op := strings.Join(strings.Fields(p.Text(c)), " "); op == "!=" || op == "is not" || op == "not in" {
					return true
				}
			}
		}
	}
	return false
}

// judge looks for CUDA-only work in n, following calls of the module's own
// functions (and of methods of ctx's class through self.) depth levels deep.
func (j *guardJudge) judge(n, ctx *ts.Node, depth int) (CUDAOnlyGuard, bool) {
	p := j.p
	var g CUDAOnlyGuard
	found := false
	props := map[string]bool{} // names bound to get_device_properties(...)
	ts.Walk(n, func(c *ts.Node) bool {
		if found {
			return false
		}
		switch c.Type() {
		case "comment":
			return false
		case "if_statement":
			// The statement form of a wired call site: `if x.device.type ==
			// "tpu": <Pallas> else: <CUDA op>`.
			if cond := c.ChildByFieldName("condition"); cond != nil && !negated(p, cond) &&
				bytes.Contains(p.Src[Start(cond):End(cond)], []byte(`"tpu"`)) {
				if body := c.ChildByFieldName("consequence"); body != nil {
					g, found = j.judge(body, ctx, depth)
				}
				return false
			}
		case "conditional_expression":
			// A kernel call site the kernel stage wired: tpu tensors take the
			// Pallas path, the CUDA op is in the else arm.
			if c.NamedChildCount() == 3 && bytes.Contains(p.Src[Start(c.NamedChild(1)):End(c.NamedChild(1))], []byte(`"tpu"`)) {
				g, found = j.judge(c.NamedChild(0), ctx, depth)
				return false
			}
		case "string":
			for str, what := range cudaOnlyStrings {
				if strings.Contains(p.Text(c), str) {
					g, found = j.at(c, "`"+oneLine(p.Text(c))+"` ("+what+")"), true
					return false
				}
			}
			if content := strings.TrimLeft(p.Text(c), "rRbBuU"); len(content) > 1 {
				content = strings.TrimLeft(content[1:], `"'`)
				for _, cmd := range cudaOnlyCommands {
					if rest, ok := strings.CutPrefix(content, cmd); ok && (rest == "" || strings.ContainsAny(rest[:1], ` "'`)) {
						g, found = j.at(c, "`"+oneLine(p.Text(c))+"` (NVIDIA's command-line tool)"), true
						return false
					}
				}
			}
			if s, ok := LightningSiteAt(p, c); ok && !s.Check && s.Value != "tpu" {
				g, found = j.at(c, "`"+oneLine(p.Text(c))+"` (a Lightning accelerator: Lightning has none for TorchTPU)"), true
				return false
			}
			if _, ok := DeviceString(p, c); ok && returned(c) {
				g, found = j.at(c, "returns the CUDA device string "+oneLine(p.Text(c))), true
				return false
			}
			return false
		case "assignment":
			if r, l := c.ChildByFieldName("right"), c.ChildByFieldName("left"); r != nil && l != nil && r.Type() == "call" &&
				strings.HasSuffix(CallName(p, r), "get_device_properties") && l.Type() == "identifier" {
				props[p.Text(l)] = true
			}
		case "attribute":
			obj, attr := c.ChildByFieldName("object"), c.ChildByFieldName("attribute")
			if obj != nil && attr != nil && cudaPropFields[p.Text(attr)] {
				if (obj.Type() == "identifier" && props[p.Text(obj)]) ||
					(obj.Type() == "call" && strings.HasSuffix(CallName(p, obj), "get_device_properties")) {
					g, found = j.at(c, "`"+oneLine(p.Text(c))+"` (a CUDA device property)"), true
					return false
				}
			}
			if q := Qualified(p, c); q != "" && cudaOnlyModule(q) {
				g, found = j.at(c, "`"+q+"`"), true
				return false
			}
		case "call":
			if what, ok := j.cudaOnlyCall(c); ok {
				g, found = j.at(c, what), true
				return false
			}
			if depth < guardDepth {
				if def := j.callee(c, ctx); def != nil {
					if sub, ok := j.judgeFunc(def, depth+1); ok {
						g, found = sub, true
						return false
					}
				}
			}
		}
		return true
	})
	return g, found
}

// judgeFunc judges a function's body once per module (the first call's
// depth bounds it); a recursive call finds nothing.
func (j *guardJudge) judgeFunc(def *ts.Node, depth int) (CUDAOnlyGuard, bool) {
	if v, ok := j.fns[Start(def)]; ok {
		return v.g, v.found
	}
	v := &fnVerdict{}
	j.fns[Start(def)] = v
	if body := def.ChildByFieldName("body"); body != nil {
		v.g, v.found = j.judge(body, def, depth)
		if v.found && v.g.Via == "" {
			v.g.Via = "`" + j.p.Text(def.ChildByFieldName("name")) + "()`"
		}
	}
	return v.g, v.found
}

// at is a CUDAOnlyGuard naming what at n.
func (j *guardJudge) at(n *ts.Node, what string) CUDAOnlyGuard {
	return CUDAOnlyGuard{What: what, Line: bytes.Count(j.p.Src[:Start(n)], []byte("\n")) + 1}
}

// cudaOnlyCall says what is CUDA-only about a call, if anything.
func (j *guardJudge) cudaOnlyCall(call *ts.Node) (string, bool) {
	p := j.p
	fn := call.ChildByFieldName("function")
	q := CallName(p, call)
	if name, ok := strings.CutPrefix(q, "torch.cuda."); ok {
		head, _, _ := strings.Cut(name, ".")
		if cudaAgnostic[name] || head == "amp" || strings.HasSuffix(name, "Tensor") {
			return "", false
		}
		return "`" + q + "()`", true
	}
	if q != "" && cudaOnlyModule(q) {
		return "`" + q + "()`", true
	}
	d := p.Dotted(fn)
	if d == "" {
		return "", false
	}
	parts := strings.Split(d, ".")
	if j.exts[parts[0]] {
		return "`" + d + "()` (a custom CUDA extension)", true
	}
	if parts[0] == "torch" || parts[0] == "self" && len(parts) == 2 || len(parts) == 1 && j.funcs[d] != nil {
		return "", false
	}
	// An extension module or op named for CUDA (selective_scan_cuda.fwd,
	// ext.forward_cuda): a custom CUDA op. x.cuda() is the device rules'.
	for i, part := range parts {
		l := strings.ToLower(part)
		if i < len(parts)-1 && strings.Contains(l, "cuda") ||
			i == len(parts)-1 && (strings.HasSuffix(l, "_cuda") || strings.HasPrefix(l, "cuda_")) && !helperName(l) {
			return "`" + d + "()` (named for CUDA)", true
		}
	}
	return "", false
}

// helperName reports whether a function name reads as a device helper or
// predicate (use_cuda, to_cuda, is_cuda), not an op.
func helperName(l string) bool {
	for _, pre := range []string{"is_", "use_", "has_", "to_", "move_", "get_", "with_", "set_"} {
		if strings.HasPrefix(l, pre) {
			return true
		}
	}
	return false
}

// callee returns the definition of a function of the module a call invokes:
// a module-level function by name, or a method of ctx's class through self.
func (j *guardJudge) callee(call, ctx *ts.Node) *ts.Node {
	p := j.p
	fn := call.ChildByFieldName("function")
	if fn == nil {
		return nil
	}
	switch fn.Type() {
	case "identifier":
		return j.funcs[p.Text(fn)]
	case "attribute":
		obj, attr := fn.ChildByFieldName("object"), fn.ChildByFieldName("attribute")
		if obj == nil || attr == nil || p.Text(obj) != "self" {
			return nil
		}
		cls := ts.Ancestor(ctx, "class_definition")
		if cls == nil {
			return nil
		}
		body := cls.ChildByFieldName("body")
		if body == nil {
			return nil
		}
		for _, st := range ts.Children(body) {
			def := st
			if def.Type() == "decorated_definition" {
				def = def.ChildByFieldName("definition")
			}
			if def != nil && def.Type() == "function_definition" {
				if name := def.ChildByFieldName("name"); name != nil && p.Text(name) == p.Text(attr) {
					return def
				}
			}
		}
	}
	return nil
}

// cudaOnlyModule reports whether a qualified name is in a cudaOnlyModules
// module.
func cudaOnlyModule(q string) bool {
	if strings.HasPrefix(q, "torch.backends.cuda.SDPBackend") {
		return false // the attention backends' enum (torch.nn.attention's), not a setting
	}
	for _, m := range cudaOnlyModules {
		if q == m || strings.HasPrefix(q, m+".") {
			return true
		}
	}
	return false
}

// returned reports whether a value is what a return statement returns
// (through parentheses and conditional expressions).
func returned(n *ts.Node) bool {
	for par := n.Parent(); par != nil; par = par.Parent() {
		switch par.Type() {
		case "parenthesized_expression", "conditional_expression":
			continue
		case "return_statement":
			return true
		}
		return false
	}
	return false
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// CUDAAgnostic reports whether the torch.cuda name is one the device,
// cuda-api and amp rules rewrite (is_available, device_count, ...): code
// that called it calls something else after the migration.
func CUDAAgnostic(name string) bool { return cudaAgnostic[name] }

// implSelector returns the comparison in cond (`impl == "cuda"`,
// `backend != 'cuda'`) that tests a name which is not a device (not a
// device setting, a `.type`, an accelerator, GPU or platform name) against
// the plain string "cuda": the code choosing its own CUDA implementation of
// something, not a device check, or nil.
func implSelector(p *rule.Pass, cond *ts.Node) *ts.Node {
	var sel *ts.Node
	ts.Walk(cond, func(n *ts.Node) bool {
		if sel != nil {
			return false
		}
		if n.Type() == "lambda" || n.Type() == "call" {
			return false
		}
		if n.Type() != "comparison_operator" || n.NamedChildCount() != 2 {
			return true
		}
		for i := 0; i < 2; i++ {
			s, other := n.NamedChild(i), n.NamedChild(1-i)
			if str, ok := DeviceString(p, s); !ok || str.FString || str.Index != "" {
				continue
			}
			if (other.Type() == "identifier" || other.Type() == "attribute") && !DeviceIsh(p, other) && !hardwareName(p.Text(other)) {
				sel = n
				return false
			}
		}
		return false
	})
	return sel
}

// hardwareName reports whether a name's last part names the hardware the
// code runs on rather than one of its implementations.
func hardwareName(name string) bool {
	l := strings.ToLower(name[strings.LastIndexByte(name, '.')+1:])
	for _, w := range []string{"accel", "gpu", "platform", "hardware", "target", "host", "backend_device"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// wiredIn reports whether a branch holds a call site the kernel stage wired
// (it sends tpu tensors to a Pallas kernel: `... if x.device.type == "tpu"
// else ext.f(x)`): then the guard in front of it is the kernel's, judged by
// what the branch does.
func wiredIn(p *rule.Pass, branch []*ts.Node) bool {
	for _, b := range branch {
		if bytes.Contains(p.Src[Start(b):End(b)], []byte(`.type == "tpu"`)) {
			return true
		}
	}
	return false
}

// ownCUDACheck reports whether cond is the check the portable rewrites
// write in front of work that stays CUDA-only (`if DEVICE.type == "cuda":
// torch.accelerator.set_device_index(i)`, `pallasify_device().type ==
// "cuda"`): its branch is CUDA-only by construction, which a second pass
// must not report (FuzzEngine 451b691269654e5a).
func ownCUDACheck(p *rule.Pass, cond *ts.Node) bool {
	for cond.Type() == "parenthesized_expression" && cond.NamedChildCount() == 1 {
		cond = cond.NamedChild(0)
	}
	if cond.Type() != "comparison_operator" || cond.NamedChildCount() != 2 {
		return false
	}
	name, ok := strings.CutSuffix(p.Text(cond.NamedChild(0)), ".type")
	if !ok || !(name == LazyDevice || strings.ToUpper(name) == name && strings.Contains(name, "DEVICE")) {
		return false
	}
	s, ok := PlainString(p, cond.NamedChild(1))
	return ok && s == "cuda" && strings.Contains(p.Text(cond), "==")
}
