package kernels

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// launchSite is one kernel<<<...>>>(...) call in host code.
type launchSite struct {
	file   *cudaFile
	items  []*item
	call   *ts.Node // call_expression in the masked tree
	mark   Masked
	name   string   // kernel name (unqualified)
	targs  []string // explicit template arguments
	hostFn *ts.Node
}

// findLaunches returns the launch sites of a parsed file.
func findLaunches(f *cudaFile, items []*item) []*launchSite {
	var out []*launchSite
	for _, m := range f.marks {
		if m.Kind != "launch" {
			continue
		}
		var call *ts.Node
		ts.Walk(f.tree.Root(), func(n *ts.Node) bool {
			if call != nil || int(n.EndByte()) < m.End || int(n.StartByte()) > m.Start {
				return call == nil && int(n.StartByte()) <= m.Start
			}
			if n.Type() == "call_expression" {
				fn := n.ChildByFieldName("function")
				args := n.ChildByFieldName("arguments")
				if fn != nil && args != nil && int(fn.EndByte()) <= m.Start && int(args.StartByte()) >= m.End {
					call = n
					return false
				}
			}
			return true
		})
		if call == nil {
			continue
		}
		s := &launchSite{file: f, items: items, call: call, mark: m}
		fn := call.ChildByFieldName("function")
		for fn.Type() == "qualified_identifier" && fn.ChildByFieldName("name") != nil {
			fn = fn.ChildByFieldName("name")
		}
		if fn.Type() == "template_function" {
			for _, a := range ts.Children(fn.ChildByFieldName("arguments")) {
				s.targs = append(s.targs, strings.Join(strings.Fields(f.text(a)), " "))
			}
			fn = fn.ChildByFieldName("name")
		}
		s.name = lastName(f.text(fn))
		s.hostFn = ts.Ancestor(call, "function_definition")
		out = append(out, s)
	}
	return out
}

var dtypes = map[string]string{
	"float": "float32", "double": "float64", "half": "float16", "__half": "float16", "at::Half": "float16", "c10::Half": "float16",
	"__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "at::BFloat16": "bfloat16", "c10::BFloat16": "bfloat16",
	"int": "int32", "int32_t": "int32", "signed int": "int32", "long long": "int64", "int64_t": "int64", "long": "int64",
	"long long int": "int64", "size_t": "int64", "unsigned": "uint32", "unsigned int": "uint32", "uint32_t": "uint32",
	"uint8_t": "uint8", "unsigned char": "uint8", "bool": "bool",
	"int8_t": "int8", "signed char": "int8", "int16_t": "int16", "short": "int16", "uint16_t": "uint16",
	"unsigned short": "uint16", "uint64_t": "uint64", "unsigned long long": "uint64", "unsigned long": "uint64",
	"unsigned long long int": "uint64", "unsigned long int": "uint64",
}

func dtypeOf(base string) (string, bool) {
	b := strings.TrimSpace(strings.NewReplacer("const ", "", "volatile ", "").Replace(base + " "))
	d, ok := dtypes[b]
	return d, ok
}

var dtypeCType = map[string]string{
	"float": "float", "double": "double", "at::Half": "half", "c10::Half": "half", "half": "half", "__half": "half",
	"at::BFloat16": "__nv_bfloat16", "c10::BFloat16": "__nv_bfloat16", "__nv_bfloat16": "__nv_bfloat16",
	"int": "int", "int32_t": "int", "int64_t": "int64_t", "long": "int64_t", "uint8_t": "uint8_t", "bool": "bool",
}

// inference is the result of inferring a spec from one launch site.
type inference struct {
	spec   *Spec
	reason string   // non-empty: needs-spec
	targs  []string // template arguments at the site, when resolved
}

// inferSpec builds a Spec for kernel k from a launch site.
func inferSpec(ctx context.Context, p *ts.Parser, k *item, closure []*item, site *launchSite, ft features) inference {
	var tlist []string
	fail := func(format string, a ...any) inference {
		return inference{reason: fmt.Sprintf(format, a...), targs: tlist}
	}
	f := k.file
	kps := kernelParams(f, k.node)
	tps := templateParams(f, k.template)
	args := ts.Children(site.call.ChildByFieldName("arguments"))
	h := newHost(ctx, p, site.file, site.items, site.hostFn)
	defer h.close()
	off := site.mark.Start
	src := site.file.masked

	// template arguments
	targs := map[string]string{}
	if len(tps) > 0 {
		for i, tp := range tps {
			v := ""
			if i < len(site.targs) {
				v = site.targs[i]
				if tp.typed {
					if c, ok := dtypeCType[v]; ok {
						v = c
					} else if _, ok := dtypes[v]; !ok {
						v = "float" // a dispatch type variable (scalar_t): float by default
					}
				} else if e, err := h.snippet(v, off); err == nil && e.Op == "lit" {
					v = strconv.FormatInt(e.Val, 10)
				} else {
					tlist = nil
					return fail("template argument %s = %q is not a constant", tp.name, v)
				}
			}
			if v == "" && tp.typed {
				v = deduceType(tp.name, kps, args, src)
			}
			if v == "" {
				v = tp.deflt
			}
			if v == "" {
				tlist = nil
				return fail("template parameter %s has no value at the launch site", tp.name)
			}
			targs[tp.name] = v
			tlist = append(tlist, v)
		}
	}
	if len(args) != len(kps) {
		return fail("the launch at %s:%d passes %d arguments to %d parameters", site.file.path, site.file.line(site.mark.Start), len(args), len(kps))
	}
	spec := &Spec{Schema: SpecSchema, Name: k.names[0], Class: classOf(ft), Deterministic: !ft.floatAtomic}
	if len(targs) > 0 {
		spec.TemplateArgs = targs
	}
	aa := &accessAnalysis{f: f, funcs: map[string]*item{}}
	for _, it := range closure {
		if it.kind == itemDevice || it.kind == itemConstFn {
			aa.funcs[it.names[0]] = it
		}
	}
	acc := aa.params(k)
	for i, kp := range kps {
		base := substIdents(kp.base, targs)
		dt, ok := dtypeOf(base)
		if !ok {
			return fail("parameter %s has type %s, which has no dtype", kp.name, base)
		}
		prm := Param{Name: kp.name, CType: kp.ctype, DType: dt}
		if kp.pointer {
			prm.Kind = "pointer"
			a := acc[kp.name]
			if a != nil && strings.HasPrefix(kp.ctype, "const ") && !strings.Contains(kp.ctype, "* const") {
				a.write = false // a pointer to const is never written through
			}
			switch {
			case a == nil || !a.read && !a.write:
				prm.Role = "input"
			case a.read && a.write:
				prm.Role = "inout"
			case a.write:
				prm.Role = "output"
			default:
				prm.Role = "input"
			}
			t, err := h.tensorArg(args[i], src, off)
			if err != nil {
				// a raw pointer the host function received: the kernel's
				// indexing is all there is to go by
				if a := stripCasts(args[i], src); a.Type() == "identifier" && h.params[ts.Text(a, src)] != "" {
					if s := shapeFromIndexing(k, kp.name, hostSizes(h, kps, args, src, off)); s != nil {
						for _, d := range s {
							prm.Shape = append(prm.Shape, d.String())
						}
						spec.Params = append(spec.Params, prm)
						continue
					}
				}
				return fail("argument %d (%s): %v", i+1, kp.name, err)
			}
			shp, err := h.shape(t, off)
			if err != nil && strings.HasPrefix(err.Error(), "nothing in the host code") {
				// the host says nothing about this tensor: use how the kernel
				// indexes it, when every access is p[i] with i bounded by a size
				if s := shapeFromIndexing(k, kp.name, hostSizes(h, kps, args, src, off)); s != nil {
					shp, err = s, nil
				}
			}
			if err != nil {
				return fail("argument %d (%s): %v", i+1, kp.name, err)
			}
			for _, d := range shp {
				prm.Shape = append(prm.Shape, d.String())
			}
		} else {
			prm.Kind = "scalar"
			if isIntDType(dt) {
				e, err := h.tr(args[i], src, off)
				if err != nil {
					return fail("argument %d (%s): %v", i+1, kp.name, err)
				}
				if e.Op == "lit" {
					prm.Role = "scalar"
					v := float64(e.Val)
					prm.Value = &v
				} else {
					prm.Role = "size"
					prm.Expr = e.String()
				}
			} else {
				prm.Role = "scalar"
				if v, err := strconv.ParseFloat(strings.TrimRight(ts.Text(stripCasts(args[i], src), src), "fF"), 64); err == nil {
					prm.Value = &v
				}
			}
		}
		spec.Params = append(spec.Params, prm)
	}
	cfg := LaunchConfig(site.mark.Text)
	if len(cfg) < 2 {
		return fail("launch configuration %q has fewer than two parts", site.mark.Text)
	}
	grid, err := h.dim3Text(cfg[0], off)
	if err != nil {
		return fail("grid %q: %v", cfg[0], err)
	}
	block, err := h.dim3Text(cfg[1], off)
	if err != nil {
		return fail("block %q: %v", cfg[1], err)
	}
	shared := Lit(0)
	if len(cfg) > 2 {
		if shared, err = h.snippet(cfg[2], off); err != nil {
			return fail("shared memory %q: %v", cfg[2], err)
		}
	}
	for i := range 3 {
		spec.Launch.Grid[i] = grid[i].String()
		spec.Launch.Block[i] = block[i].String()
	}
	spec.Launch.SharedBytes = shared.String()
	// constraints from the host's checks
	var cons []*Expr
	for _, c := range h.checks {
		e, err := h.tr(c.n, c.src, off)
		if err != nil || !isComparison(e) || Equivalent(e, Lit(1)) {
			continue
		}
		cons = append(cons, e)
	}
	cons = append(cons, tileConstraints(k, kps, spec, grid)...)
	finishSpec(spec, cons)
	if spec.Class == ClassRowReduction || spec.Class == ClassScan || spec.Class == ClassMatmulTile || spec.Class == ClassHistogram {
		spec.ReductionLength = reductionLength(spec)
	}
	return inference{spec: spec, targs: tlist}
}

func isIntDType(dt string) bool {
	return strings.HasPrefix(dt, "int") || strings.HasPrefix(dt, "uint") || dt == "bool"
}

func isComparison(e *Expr) bool {
	switch e.Op {
	case "==", "!=", "<", "<=", ">", ">=":
		return true
	case "&&":
		return isComparison(e.L) && isComparison(e.R)
	}
	return false
}

// deduceType finds T from a parameter "T*" and an argument data_ptr<X>().
func deduceType(t string, kps []kparam, args []*ts.Node, src []byte) string {
	for i, kp := range kps {
		if strings.TrimSpace(strings.TrimPrefix(kp.base, "const ")) != t || i >= len(args) {
			continue
		}
		a := stripCasts(args[i], src)
		if a.Type() == "call_expression" {
			if fn := a.ChildByFieldName("function"); fn.Type() == "field_expression" {
				if fld := fn.ChildByFieldName("field"); fld != nil && fld.Type() == "template_method" {
					if ta := ts.Children(fld.ChildByFieldName("arguments")); len(ta) == 1 {
						if c, ok := dtypeCType[ts.Text(ta[0], src)]; ok {
							return c
						}
					}
				}
			}
		}
	}
	return "float"
}

// tensorArg finds the tensor variable behind a pointer argument.
func (h *host) tensorArg(n *ts.Node, src []byte, off int) (string, error) {
	for range 10 {
		n = stripCasts(n, src)
		switch n.Type() {
		case "call_expression":
			fn := n.ChildByFieldName("function")
			if fn.Type() == "field_expression" {
				field := fn.ChildByFieldName("field")
				name := ts.Text(field, src)
				if field.Type() == "template_method" {
					name = ts.Text(field.ChildByFieldName("name"), src)
				}
				switch name {
				case "data_ptr", "data", "mutable_data_ptr", "const_data_ptr":
					obj := stripCasts(fn.ChildByFieldName("argument"), src)
					if obj.Type() == "identifier" {
						return ts.Text(obj, src), nil
					}
					if t, ok := dataRoot(obj, src); ok {
						return t, nil
					}
				}
			}
			return "", fmt.Errorf("cannot tell which tensor %q points into", oneLine(ts.Text(n, src)))
		case "identifier":
			b := h.lookup(ts.Text(n, src), off)
			if b == nil || b.value == nil {
				return "", fmt.Errorf("cannot tell which tensor %s points into", ts.Text(n, src))
			}
			n, src, off = b.value, h.f.src, b.off
		default:
			return "", fmt.Errorf("cannot tell which tensor %q points into", oneLine(ts.Text(n, src)))
		}
	}
	return "", fmt.Errorf("pointer chain too long")
}

// dim3Text parses a launch-config part and translates it as a dim3.
func (h *host) dim3Text(text string, off int) ([3]*Expr, error) {
	src := []byte("auto __pallasify_x = (" + text + ");\n")
	tree, err := h.p.Parse(h.ctx, src)
	if err != nil {
		return [3]*Expr{}, err
	}
	h.trees = append(h.trees, tree)
	var val *ts.Node
	ts.Walk(tree.Root(), func(n *ts.Node) bool {
		if val == nil && n.Type() == "init_declarator" {
			val = n.ChildByFieldName("value")
		}
		return val == nil
	})
	if val == nil || tree.ErrorCount() > 0 {
		return [3]*Expr{}, fmt.Errorf("cannot parse %q", text)
	}
	return h.dim3(val, src, off)
}

// tileConstraints adds "s % T == 0" where the grid covers only whole tiles
// (s / T) or where the kernel never compares a size parameter (no bound
// guard) and the grid rounds up.
func tileConstraints(k *item, kps []kparam, spec *Spec, grid [3]*Expr) []*Expr {
	body := string(k.file.masked[k.start:k.end])
	guarded := false
	for _, p := range spec.Params {
		if p.Role != "size" {
			continue
		}
		if containsComparison(body, p.Name) {
			guarded = true
		}
	}
	var out []*Expr
	for _, g := range grid {
		if g.Op != "/" || g.R.Op != "lit" {
			continue
		}
		num := g.L
		switch {
		case num.Op == "+" && num.R.Op == "lit" && num.R.Val == g.R.Val-1:
			if !guarded {
				out = append(out, Bin("==", Bin("%", num.L, g.R), Lit(0)))
			}
		case num.Op != "lit":
			out = append(out, Bin("==", Bin("%", num, g.R), Lit(0)))
		}
	}
	return out
}

func containsComparison(body, name string) bool {
	q := `\b` + name + `\b`
	return reMatch(`[<>]=?\s*(\(?\s*\w+\s*[-+*]\s*)?`+q, body) || reMatch(q+`\s*[<>]=?`, body)
}

// finishSpec collects symbols, renames them after size parameters, and adds
// the default domain (every size at least 1) and sweep bounds.
func finishSpec(s *Spec, cons []*Expr) {
	// rename symbols after the kernel's size parameters
	used := map[string]bool{}
	var order []string
	add := func(e string) {
		x, err := ParseExpr(e)
		if err != nil {
			return
		}
		for _, sym := range symbolsInOrder(x) {
			if !used[sym] {
				used[sym] = true
				order = append(order, sym)
			}
		}
	}
	for _, p := range s.Params {
		for _, d := range p.Shape {
			add(d)
		}
		if p.Expr != "" {
			add(p.Expr)
		}
	}
	for _, g := range s.Launch.Grid {
		add(g)
	}
	for _, g := range s.Launch.Block {
		add(g)
	}
	add(s.Launch.SharedBytes)
	ren := map[string]string{}
	taken := map[string]bool{}
	for _, sym := range order {
		taken[sym] = true
	}
	for _, p := range s.Params {
		if p.Role == "size" && p.Expr != "" && p.Expr != p.Name && !taken[p.Name] && identRE.FindString(p.Expr) == p.Expr {
			if _, done := ren[p.Expr]; !done {
				ren[p.Expr] = p.Name
				taken[p.Name] = true
			}
		}
	}
	r := func(e string) string {
		x, err := ParseExpr(e)
		if err != nil {
			return e
		}
		return x.Rename(ren).String()
	}
	for i := range s.Params {
		p := &s.Params[i]
		for j := range p.Shape {
			p.Shape[j] = r(p.Shape[j])
		}
		if p.Expr != "" {
			p.Expr = r(p.Expr)
		}
	}
	for i := range 3 {
		s.Launch.Grid[i] = r(s.Launch.Grid[i])
		s.Launch.Block[i] = r(s.Launch.Block[i])
	}
	s.Launch.SharedBytes = r(s.Launch.SharedBytes)
	s.Symbols = nil
	for _, sym := range order {
		if n, ok := ren[sym]; ok {
			sym = n
		}
		s.Symbols = append(s.Symbols, sym)
	}
	symSet := map[string]bool{}
	for _, sym := range s.Symbols {
		symSet[sym] = true
	}
	seen := map[string]bool{}
	s.Domain.Constraints = nil
	for _, sym := range s.Symbols {
		c := sym + " >= 1"
		seen[c] = true
		s.Domain.Constraints = append(s.Domain.Constraints, c)
	}
	for _, c := range cons {
		c = c.Rename(ren)
		ok := true
		for _, sym := range c.Symbols() {
			if !symSet[sym] {
				ok = false
			}
		}
		if !ok || len(c.Symbols()) == 0 || seen[c.String()] {
			continue
		}
		seen[c.String()] = true
		s.Domain.Constraints = append(s.Domain.Constraints, c.String())
	}
	// sweep bounds: 1-D sizes up to 70000, sizes of multi-dimensional buffers up to 300.
	s.Domain.Max = map[string]int64{}
	for _, sym := range s.Symbols {
		s.Domain.Max[sym] = 70000
	}
	for _, p := range s.Params {
		if len(p.Shape) < 2 {
			continue
		}
		for _, d := range p.Shape {
			if x, err := ParseExpr(d); err == nil {
				for _, sym := range x.Symbols() {
					s.Domain.Max[sym] = 300
				}
			}
		}
	}
	if len(s.Domain.Max) == 0 {
		s.Domain.Max = nil
	}
}

func symbolsInOrder(e *Expr) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(*Expr)
	walk = func(x *Expr) {
		if x == nil {
			return
		}
		if x.Op == "sym" && !seen[x.Name] {
			seen[x.Name] = true
			out = append(out, x.Name)
		}
		walk(x.L)
		walk(x.R)
	}
	walk(e)
	return out
}

// reductionLength guesses the length summed over, for tolerance scaling.
func reductionLength(s *Spec) string {
	var in, out [][]string
	for _, p := range s.Params {
		if p.Kind != "pointer" {
			continue
		}
		if p.Role == "input" {
			in = append(in, p.Shape)
		} else {
			out = append(out, p.Shape)
		}
	}
	if s.Class == ClassMatmulTile {
		outSyms := map[string]bool{}
		for _, sh := range out {
			for _, d := range sh {
				outSyms[d] = true
			}
		}
		for _, sh := range in {
			for _, d := range sh {
				if !outSyms[d] {
					return d
				}
			}
		}
	}
	if len(in) > 0 && len(in[0]) >= 2 {
		return in[0][len(in[0])-1]
	}
	if len(in) > 0 && len(in[0]) == 1 {
		return in[0][0]
	}
	return ""
}

// hostSizes translates the integer scalar arguments of a launch, by kernel
// parameter name (failures left out).
func hostSizes(h *host, kps []kparam, args []*ts.Node, src []byte, off int) map[string]*Expr {
	out := map[string]*Expr{}
	for i, kp := range kps {
		if kp.pointer || i >= len(args) {
			continue
		}
		if dt, ok := dtypeOf(kp.base); !ok || !isIntDType(dt) {
			continue
		}
		if e, err := h.tr(args[i], src, off); err == nil {
			out[kp.name] = e
		}
	}
	return out
}
