package pallas

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// hostFn is the C++ host function that launches a kernel, as far as wiring
// needs it: its parameters, how each kernel argument is made from them, what
// it returns and the name Python calls it by.
type hostFn struct {
	name    string
	params  []hostParam
	args    []hostArg // one per kernel parameter, in order
	returns []string  // returned tensor variables
	locals  map[string]string
	// pointers are the pointer locals set to a tensor's data (name -> value)
	pointers map[string]string
	// scalars are the integer locals (int n = x.numel();)
	scalars map[string]string
	// launches are the kernels the body launches, in order (mmcv's softmax
	// focal loss backward launches two: the op is their sequence)
	launches []string
	// branch: the launch runs under a host if/else on a scalar parameter
	// (psamask picks collect or distribute by psa_type); nil for a launch
	// every call runs
	branch *hostBranch
}

// hostBranch is where a launch sits in a host if (cond) A else B: cond in
// Python, and whether the launch is A (then) or B.
type hostBranch struct {
	cond string
	then bool
}

// reBranchCond is a branch condition wiring can evaluate on the JAX side
// as written: a scalar parameter compared with an integer literal.
var reBranchCond = regexp.MustCompile(`^\s*([A-Za-z_]\w*)\s*(==|!=|<=|>=|<|>)\s*(-?\d+)\s*$`)

// branchOf reads the if/else the launch of name sits in (open: the
// constructs open at it): the host body must be one if on a scalar
// parameter whose then-part launches one kernel and whose else-part
// launches the other; anything else (a loop, a switch, a nested or
// data-dependent condition) is not the whole op and is refused.
func (fn *hostFn) branchOf(body string, open []*hostConstruct, name string) (*hostBranch, error) {
	kw := keywordOf(open)
	notWhole := fmt.Errorf("%s launches %s inside an %q of its own: the launch is not the whole op", fn.name, name, kw)
	if len(open) != 1 || (kw != "if" && kw != "else") || len(fn.launches) != 2 || fn.launches[0] == fn.launches[1] {
		return nil, notWhole
	}
	inner := body[1:] // openConstructs scanned from after the brace
	ifs := regexp.MustCompile(`\bif\s*\(`).FindAllStringIndex(inner, -1)
	elses := regexp.MustCompile(`\belse\b`).FindAllStringIndex(inner, -1)
	if len(ifs) != 1 || len(elses) != 1 {
		return nil, notWhole
	}
	args, _, ok := splitArgs(inner, ifs[0][1]-1)
	if !ok || len(args) != 1 {
		return nil, notWhole
	}
	m := reBranchCond.FindStringSubmatch(args[0])
	if m == nil {
		return nil, fmt.Errorf("%s launches %s under if (%s): only a scalar parameter compared with an integer is "+
			"evaluated on the TPU side", fn.name, name, strings.TrimSpace(args[0]))
	}
	if i := fn.paramIdx(m[1]); i < 0 || fn.params[i].tensor {
		return nil, fmt.Errorf("%s launches %s under if (%s): %s is not a scalar parameter", fn.name, name,
			strings.TrimSpace(args[0]), m[1])
	}
	// the then-part launches the first kernel, the else-part the second
	at := elses[0][0]
	if kw == "if" {
		at = ifs[0][0]
	}
	if (kw == "if") != (name == fn.launches[0]) || open[0].at != at {
		return nil, notWhole
	}
	return &hostBranch{cond: m[1] + " " + m[2] + " " + m[3], then: kw == "if"}, nil
}

type hostParam struct {
	name   string
	tensor bool
	ctype  string // for scalars: double, float, int64_t, int, bool
}

type hostArg struct {
	tensor string // the tensor variable whose data pointer is passed
	param  int    // host parameter index of tensor (input) or scalar; -1 if local
	like   string // for a local output: the tensor it is shaped like ("" = spec shape)
	text   string
	// expr: an integer the host computes from its tensors' sizes and its
	// integer parameters (x.numel(), int n = b * x.size(1);), nil for
	// anything else
	expr *hostExpr
}

// sizeRef is a size of a host tensor parameter: its element count (numel)
// or one extent.
type sizeRef struct {
	tensor string
	numel  bool
	dim    int
}

// hostExpr is an integer expression of the host function: sizes of its
// tensor parameters, its integer parameters, literals and + - * / ( ).
type hostExpr struct {
	toks []exprTok
}

// exprTok is one token of a hostExpr: an operator or literal (text), a
// tensor size or an integer parameter.
type exprTok struct {
	text  string
	size  *sizeRef
	param string
}

// reAnyLaunch is a kernel launch (group 1: the kernel's name).
var reAnyLaunch = regexp.MustCompile(`\b(\w+)\s*(?:<[^<>;]*>)?\s*<<<`)

var (
	reScalarLocal = regexp.MustCompile(`(?:const\s+)?(?:int|int32_t|int64_t|long|size_t|unsigned|auto)\s+(\w+)\s*=\s*([^;]+);`)
	reExprTok     = regexp.MustCompile(`^\s*(?:(\w+)\s*\.\s*(numel|size)\s*\(\s*(-?\d*)\s*\)|(\d+)|([A-Za-z_]\w*)|([-+*/()]))`)
)

// exprOf reads kernel argument text a as an integer expression of fn's
// tensor sizes and integer parameters, following integer locals (int
// group_channel = channels / group_size;); nil when it is not one.
func (fn *hostFn) exprOf(a string) *hostExpr {
	e := &hostExpr{}
	if !fn.appendExpr(e, hostArgName(a), 0) {
		return nil
	}
	if len(e.toks) == 0 || !e.wellFormed() {
		return nil
	}
	return e
}

func (fn *hostFn) appendExpr(e *hostExpr, text string, depth int) bool {
	if depth > 4 {
		return false
	}
	for rest := strings.TrimSpace(text); rest != ""; rest = strings.TrimSpace(rest) {
		m := reExprTok.FindStringSubmatch(rest)
		if m == nil {
			return false
		}
		rest = rest[len(m[0]):]
		switch {
		case m[1] != "":
			r := &sizeRef{tensor: fn.aliasOf(m[1]), numel: m[2] == "numel"}
			if i := fn.paramIdx(r.tensor); i < 0 || !fn.params[i].tensor || (m[2] == "numel") != (m[3] == "") {
				return false
			}
			if !r.numel {
				d, err := strconv.Atoi(m[3])
				if err != nil {
					return false
				}
				r.dim = d
			}
			e.toks = append(e.toks, exprTok{size: r})
		case m[4] != "" || m[6] != "":
			e.toks = append(e.toks, exprTok{text: m[4] + m[6]})
		default:
			name := m[5]
			if i := fn.paramIdx(name); i >= 0 && !fn.params[i].tensor && pyScalarType(fn.params[i].ctype) == "int" {
				e.toks = append(e.toks, exprTok{param: name})
				continue
			}
			def, ok := fn.scalars[name]
			if !ok {
				return false
			}
			sub := &hostExpr{}
			if !fn.appendExpr(sub, hostArgName(def), depth+1) {
				return false
			}
			if len(sub.toks) == 1 {
				e.toks = append(e.toks, sub.toks[0])
				continue
			}
			e.toks = append(append(append(e.toks, exprTok{text: "("}), sub.toks...), exprTok{text: ")"})
		}
	}
	return true
}

// py is the expression in the JAX function's terms (tensor parameters are
// arrays there, integer parameters static ints), with C's operator
// precedence and its truncating division: a // b where both sides are
// never negative (sizes, literals and their sums and products), else the
// quotient of the magnitudes with the sign of the operands.
func (e *hostExpr) py() string {
	r := &exprRender{toks: e.toks}
	text, _ := r.sum()
	return text
}

// exprRender renders a hostExpr's tokens by recursive descent.
type exprRender struct {
	toks []exprTok
	i    int
}

func (r *exprRender) peek() string {
	if r.i < len(r.toks) && r.toks[r.i].size == nil && r.toks[r.i].param == "" {
		return r.toks[r.i].text
	}
	return ""
}

// sum, prod, unary and atom return the rendered text and whether its value
// is never negative.
func (r *exprRender) sum() (string, bool) {
	text, nonneg := r.prod()
	for op := r.peek(); op == "+" || op == "-"; op = r.peek() {
		r.i++
		rt, rn := r.prod()
		text, nonneg = text+" "+op+" "+rt, nonneg && rn && op == "+"
	}
	return text, nonneg
}

func (r *exprRender) prod() (string, bool) {
	text, nonneg := r.unary()
	for op := r.peek(); op == "*" || op == "/"; op = r.peek() {
		r.i++
		rt, rn := r.unary()
		switch {
		case op == "*":
			text, nonneg = text+" * "+rt, nonneg && rn
		case nonneg && rn:
			text = text + " // " + rt
		default:
			// C truncates toward zero; Python's // floors
			a, b := grouped(text), grouped(rt)
			text = fmt.Sprintf("(abs(%s) // abs(%s) * (1 if (%s < 0) == (%s < 0) else -1))", ungrouped(a), ungrouped(b),
				ungrouped(a), ungrouped(b))
			nonneg = false
		}
	}
	return text, nonneg
}

// grouped is t as one operand: parenthesised unless it is a name, a
// literal or already one parenthesised group.
func grouped(t string) string {
	if !strings.ContainsAny(t, " ") || ungrouped(t) != t {
		return t
	}
	return "(" + t + ")"
}

// ungrouped is t without the parentheses around all of it, if it has them.
func ungrouped(t string) string {
	if !strings.HasPrefix(t, "(") || !strings.HasSuffix(t, ")") {
		return t
	}
	depth := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i < len(t)-1 {
				return t
			}
		}
	}
	return t[1 : len(t)-1]
}

func (r *exprRender) unary() (string, bool) {
	if r.peek() == "-" {
		r.i++
		t, _ := r.unary()
		return "-" + t, false
	}
	return r.atom()
}

func (r *exprRender) atom() (string, bool) {
	if r.i >= len(r.toks) {
		return "", false
	}
	t := r.toks[r.i]
	r.i++
	switch {
	case t.size != nil:
		return t.size.py(), true
	case t.param != "":
		return t.param, false
	case t.text == "(":
		text, nonneg := r.sum()
		if r.peek() == ")" {
			r.i++
		}
		if ungrouped(text) != text {
			return text, nonneg // one group already
		}
		return "(" + text + ")", nonneg
	}
	return t.text, true // a literal
}

// wellFormed reports whether the tokens are one whole expression: balanced
// parentheses, operands and operators alternating.
func (e *hostExpr) wellFormed() bool {
	depth, operand := 0, false
	for _, t := range e.toks {
		switch {
		case t.size != nil || t.param != "" || t.text != "" && t.text[0] >= '0' && t.text[0] <= '9':
			if operand {
				return false
			}
			operand = true
		case t.text == "(":
			if operand {
				return false
			}
			depth++
		case t.text == ")":
			if !operand || depth == 0 {
				return false
			}
			depth--
		case t.text == "-" && !operand:
			// unary minus
		default:
			if !operand {
				return false
			}
			operand = false
		}
	}
	return depth == 0 && operand
}

// single is the expression's one tensor size, nil when it is more.
func (e *hostExpr) single() *sizeRef {
	if len(e.toks) == 1 {
		return e.toks[0].size
	}
	return nil
}

// seenFrom is e in the terms of caller c, which passes passed[i] for fn's
// parameter i; nil when an operand is not one of c's parameters there.
func (e *hostExpr) seenFrom(fn, c *hostFn, passed []string) *hostExpr {
	out := &hostExpr{}
	for _, t := range e.toks {
		switch {
		case t.size != nil:
			name := fn.nameSeenFrom(c, passed, t.size.tensor)
			if i := c.paramIdx(name); i < 0 || !c.params[i].tensor {
				return nil
			}
			t.size = &sizeRef{tensor: name, numel: t.size.numel, dim: t.size.dim}
		case t.param != "":
			name := hostArgName(passed[fn.paramIdx(t.param)])
			if i := c.paramIdx(name); i < 0 || c.params[i].tensor {
				return nil
			}
			t.param = name
		}
		out.toks = append(out.toks, t)
	}
	return out
}

// py is the size in JAX terms, of the array the tensor parameter becomes.
func (r *sizeRef) py() string {
	if r.numel {
		return r.tensor + ".size"
	}
	return fmt.Sprintf("%s.shape[%d]", r.tensor, r.dim)
}

var (
	reDataPtr = regexp.MustCompile(`\b(\w+)\s*\.\s*(?:data_ptr|data|mutable_data_ptr|const_data_ptr)\s*(?:<[^>]*>)?\s*\(\s*\)`)
	reFnHead  = regexp.MustCompile(`(?m)^[ \t]*(?:static\s+|inline\s+)*([\w:<>]+(?:\s*<[^>]*>)?[\s&*]*)\s+(\w+)\s*\(([^)]*)\)\s*\{`)
	reLike    = regexp.MustCompile(`(?:torch|at)::(?:empty_like|zeros_like|ones_like)\s*\(\s*(\w+)`)
	reLocal   = regexp.MustCompile(`(?:auto|torch::Tensor|at::Tensor)[\s&]+(\w+)\s*=\s*([^;]+);`)
	// any assignment: a pointer local is one whose value is a tensor's data
	// pointer (float* a_ptr = a.contiguous().data_ptr<float>();)
	rePtrAssign = regexp.MustCompile(`\b(\w+)\s*=\s*([^;=][^;]*);`)
	reReturn    = regexp.MustCompile(`\breturn\s+([^;]+);`)
)

// sameData is the tensor whose data expression e is (kernels.HostTensorOf:
// x, x.contiguous(), x.to(at::kFloat).view(...)), "" for anything else.
func sameData(e string) string {
	if name, ptr, ok := kernels.HostTensorOf(e); ok && !ptr {
		return name
	}
	return ""
}

// dataOf is the tensor whose data pointer argument a is: a data accessor
// on the tensor or a same-data expression of it, under casts
// (static_cast<float*>(a.contiguous().data_ptr<float>())), or a pointer
// local set to one (float* a_ptr = a_c.data_ptr<float>()); "" otherwise.
func (fn *hostFn) dataOf(a string) string {
	for range 8 {
		name, ptr, ok := kernels.HostTensorOf(a)
		switch {
		case !ok:
			return ""
		case ptr:
			return fn.aliasOf(name)
		}
		def, local := fn.pointers[name]
		if !local || def == a {
			return ""
		}
		a = def
	}
	return ""
}

// aliasOf follows locals that are another tensor's data (x.contiguous(),
// x.view(...), x.reshape(...), plain copies of the handle) back to the
// tensor they come from; a name that is none of these comes back as is.
func (fn *hostFn) aliasOf(name string) string {
	for range 8 {
		def, ok := fn.locals[name]
		if !ok {
			return name
		}
		src := sameData(def)
		if src == "" || src == name {
			return name
		}
		name = src
	}
	return name
}

// findHost reads the source holding kernel k and analyses the host function
// that launches it.
func findHost(src string, k *kernels.Kernel) (*hostFn, error) {
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(k.Name) + `\s*(?:<[^<>]*>)?\s*<<<`)
	loc := re.FindStringIndex(src)
	if loc == nil {
		return nil, fmt.Errorf("no launch of %s in %s", k.Name, k.Path)
	}
	end := strings.Index(src[loc[1]:], ">>>")
	if end < 0 {
		return nil, fmt.Errorf("launch of %s is not closed", k.Name)
	}
	open := loc[1] + end + 3
	for open < len(src) && (src[open] == ' ' || src[open] == '\n' || src[open] == '\t') {
		open++
	}
	if open >= len(src) || src[open] != '(' {
		return nil, fmt.Errorf("launch of %s has no argument list", k.Name)
	}
	args, _, ok := splitArgs(src, open)
	if !ok {
		return nil, fmt.Errorf("launch arguments of %s", k.Name)
	}
	heads := reFnHead.FindAllStringSubmatchIndex(src[:loc[0]], -1)
	if len(heads) == 0 {
		return nil, fmt.Errorf("no host function around the launch of %s", k.Name)
	}
	fn, body, err := parseHostFn(src, heads[len(heads)-1])
	if err != nil {
		return nil, err
	}
	for _, l := range reAnyLaunch.FindAllStringSubmatch(body, -1) {
		fn.launches = append(fn.launches, l[1])
	}
	bodyStart := heads[len(heads)-1][1] - 1
	if open := openConstructs(src[heads[len(heads)-1][1]:loc[0]]); len(open) > 0 {
		br, err := fn.branchOf(body, open, k.Name)
		if err != nil {
			return nil, err
		}
		fn.branch = br
	}
	for _, a := range args {
		ha := hostArg{text: a, param: -1}
		if t := fn.dataOf(a); t != "" {
			ha.tensor = t
			ha.param = fn.paramIdx(ha.tensor)
			if ha.param < 0 {
				if l := reLike.FindStringSubmatch(fn.locals[ha.tensor]); l != nil {
					ha.like = fn.aliasOf(l[1])
				}
			}
		} else if m := reDataPtr.FindStringSubmatch(a); m != nil {
			ha.tensor = fn.aliasOf(m[1])
			ha.param = fn.paramIdx(ha.tensor)
			if ha.param < 0 {
				if l := reLike.FindStringSubmatch(fn.locals[ha.tensor]); l != nil {
					ha.like = fn.aliasOf(l[1])
				}
			}
		} else {
			ha.param = fn.paramIdx(hostArgName(a))
			if ha.param < 0 {
				ha.expr = fn.exprOf(a)
			}
			if ha.param < 0 && ha.expr == nil {
				ha.expr = fn.valueAt(body, loc[0]-bodyStart, strings.TrimSpace(a))
			}
		}
		fn.args = append(fn.args, ha)
	}
	fn.returns = returnsOf(body)
	return fn, nil
}

// parseHostFn reads the function whose head reFnHead matched at h: its
// name, parameters and tensor locals; it returns the body too.
func parseHostFn(src string, h []int) (*hostFn, string, error) {
	fn := &hostFn{name: src[h[4]:h[5]], locals: map[string]string{}, scalars: map[string]string{}}
	for _, p := range strings.Split(src[h[6]:h[7]], ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if i := strings.Index(p, "="); i >= 0 {
			p = strings.TrimSpace(p[:i])
		}
		f := strings.Fields(strings.NewReplacer("&", " ", "*", " ").Replace(p))
		if len(f) < 2 {
			return nil, "", fmt.Errorf("host parameter %q", p)
		}
		name := f[len(f)-1]
		typ := strings.Join(f[:len(f)-1], " ")
		fn.params = append(fn.params, hostParam{name: name, tensor: strings.Contains(typ, "Tensor"), ctype: strings.TrimPrefix(typ, "const ")})
	}
	// body: from the head to the matching brace
	bodyStart := h[1] - 1
	depth, bodyEnd := 0, len(src)
	for i := bodyStart; i < len(src); i++ {
		if src[i] == '{' {
			depth++
		} else if src[i] == '}' {
			depth--
			if depth == 0 {
				bodyEnd = i
				break
			}
		}
	}
	body := src[bodyStart:bodyEnd]
	for _, m := range reLocal.FindAllStringSubmatch(body, -1) {
		fn.locals[m[1]] = m[2]
	}
	fn.pointers = map[string]string{}
	for _, m := range rePtrAssign.FindAllStringSubmatch(body, -1) {
		if _, ptr, ok := kernels.HostTensorOf(m[2]); ok && ptr {
			fn.pointers[m[1]] = m[2]
		}
	}
	for _, m := range reScalarLocal.FindAllStringSubmatch(body, -1) {
		if _, tensor := fn.locals[m[1]]; !tensor {
			fn.scalars[m[1]] = m[2]
		}
	}
	// a local assigned again later has no one value: mmcv's softmax focal
	// loss backward sets output_size = buff.numel(), launches, then sets
	// output_size = grad_input.numel()
	for name := range fn.scalars {
		if regexp.MustCompile(`(?:^|[;{}\n])\s*`+regexp.QuoteMeta(name)+`\s*(?:[-+*/%&|^]|<<|>>)?=[^=]`).MatchString(body) ||
			regexp.MustCompile(`(?:\+\+|--)\s*`+regexp.QuoteMeta(name)+`\b|\b`+regexp.QuoteMeta(name)+`\s*(?:\+\+|--)`).MatchString(body) {
			delete(fn.scalars, name)
		}
	}
	return fn, body, nil
}

// valueAt is the value of integer local name at offset at of body (a
// launch) when the host assigns it more than once: the last plain
// assignment before at (output_size = grad_input.numel(); between mmcv's
// two softmax focal loss backward launches), read as a host expression.
// Nil when name is not such a local, when an assignment before at sits
// inside an if, else, loop or switch (its value depends on the path), or
// when name is ever changed otherwise (+=, ++).
func (fn *hostFn) valueAt(body string, at int, name string) *hostExpr {
	if !regexp.MustCompile(`^[A-Za-z_]\w*$`).MatchString(name) || at < 0 || at > len(body) {
		return nil
	}
	q := regexp.QuoteMeta(name)
	if regexp.MustCompile(`(?:^|[;{}\n])\s*`+q+`\s*(?:[-+*/%&|^]|<<|>>)=`).MatchString(body) ||
		regexp.MustCompile(`(?:\+\+|--)\s*`+q+`\b|\b`+q+`\s*(?:\+\+|--)`).MatchString(body) {
		return nil
	}
	reSet := regexp.MustCompile(`(?:^|[;{}\n])\s*(?:(?:const\s+)?(?:int|int32_t|int64_t|long|size_t|unsigned|auto)\s+)?` +
		q + `\s*=\s*([^=;][^;]*);`)
	var last []int
	for _, m := range reSet.FindAllStringSubmatchIndex(body[:at], -1) {
		if launchConstruct(body[1:m[0]+1]) != "" {
			return nil
		}
		last = m
	}
	if last == nil {
		return nil
	}
	e := fn.exprOf(strings.TrimSpace(body[last[2]:last[3]]))
	if e == nil || !e.wellFormed() {
		return nil
	}
	return e
}

func (fn *hostFn) paramIdx(name string) int {
	for i, p := range fn.params {
		if p.name == name {
			return i
		}
	}
	return -1
}

var (
	reStaticCast = regexp.MustCompile(`^static_cast\s*<[^>]*>\s*\((.*)\)$`)
	reCCast      = regexp.MustCompile(`^\(\s*[\w:]+\s*\)\s*(.*)$`)
)

// hostArgName is a scalar argument without its static_cast<T>(...) and (T)
// casts.
func hostArgName(a string) string {
	id := strings.TrimSpace(a)
	for {
		if m := reStaticCast.FindStringSubmatch(id); m != nil {
			id = strings.TrimSpace(m[1])
			continue
		}
		if m := reCCast.FindStringSubmatch(id); m != nil {
			id = strings.TrimSpace(m[1])
			continue
		}
		return id
	}
}

// returnsOf is the tensors the body's last return statement returns.
func returnsOf(body string) []string {
	var out []string
	rets := reReturn.FindAllStringSubmatch(body, -1)
	if len(rets) > 0 {
		r := strings.TrimSpace(rets[len(rets)-1][1])
		r = strings.TrimSuffix(strings.TrimPrefix(r, "{"), "}")
		for _, x := range splitTopLevel(r) {
			out = append(out, strings.TrimSpace(x))
		}
	}
	return out
}

// splitTopLevel splits s at the commas outside parentheses, brackets and
// braces.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// reBindingBlock opens a TORCH_LIBRARY, TORCH_LIBRARY_FRAGMENT or
// TORCH_LIBRARY_IMPL block (group 1: its namespace) or a PYBIND11_MODULE.
var reBindingBlock = regexp.MustCompile(`\bTORCH_LIBRARY(?:_FRAGMENT|_IMPL)?\s*\(\s*(\w+)|\bPYBIND11_MODULE\s*\(`)

// pyName is the name Python calls the host function by: a load_inline
// functions= entry (the host's own name), or the binding src holds for it
// (bindingOf).
func pyName(src string, host string) (name, ns string) {
	if b, ok := bindingOf(src, host); ok {
		return b.name, b.ns
	}
	return host, ""
}

// binding is how a registration exposes a host function to Python: its
// name, the torch.library namespace ("" for a PYBIND11_MODULE function)
// and, for a pybind m.def with py::arg(...) entries, the keyword names of
// its parameters in order.
type binding struct {
	name, ns string
	keywords []string
}

// reArgName is one pybind11 py::arg("name") of an m.def.
var reArgName = regexp.MustCompile(`\bpy(?:bind11)?::arg\(\s*"(\w+)"\s*\)`)

// bindingOf is the registration in src of host function host: a PYBIND11
// m.def, or a torch.library op (ns, op) that an impl ("op", [dispatch key,]
// &host) or a def ("op(schema)", &host) registers. The op's namespace is
// the one of the block holding the registration, whatever the block's
// variable is called (m, ops, lib): a TORCH_LIBRARY_IMPL names it too, so
// the TORCH_LIBRARY that defines the op may be in another file. ok is false
// when src registers host nowhere.
func bindingOf(src string, host string) (b binding, ok bool) {
	fn := `\s*,\s*(?:TORCH_FN\(\s*)?&?\s*(?:\w+::)*` + regexp.QuoteMeta(host) + `\b`
	key := `(?:(?:torch|c10|at)::(?:DispatchKey::)?k?\w+\s*,\s*)?`
	reImpl := regexp.MustCompile(`\b\w+\.impl\(\s*"(\w+)"\s*,\s*` + key + `(?:TORCH_FN\(\s*)?&?\s*(?:\w+::)*` + regexp.QuoteMeta(host) + `\b`)
	reDef := regexp.MustCompile(`\b\w+\.def\(\s*"(\w+)(?:\.\w+)?(?:\([^"]*)?"` + fn)
	for _, re := range []*regexp.Regexp{reImpl, reDef} {
		m := re.FindStringSubmatchIndex(src)
		if m == nil {
			continue
		}
		b.name = src[m[2]:m[3]]
		blocks := reBindingBlock.FindAllStringSubmatchIndex(src[:m[0]], -1)
		if len(blocks) > 0 && blocks[len(blocks)-1][2] >= 0 {
			last := blocks[len(blocks)-1]
			b.ns = src[last[2]:last[3]]
			return b, true
		}
		// a PYBIND11_MODULE function: its py::arg names are its keywords
		if args, _, closed := splitArgs(src, strings.IndexByte(src[m[0]:], '(')+m[0]); closed {
			for _, a := range args {
				if k := reArgName.FindStringSubmatch(a); k != nil {
					b.keywords = append(b.keywords, k[1])
				}
			}
		}
		return b, true
	}
	return binding{}, false
}

// callerOf is the host function of src that calls fn, seen as the one that
// launches: its parameters, the kernel arguments in its terms (fn's
// parameters replaced by what the caller passes) and its results. It is how
// an output the launching function takes as a parameter is found allocated:
// KernelBench's GELU has my_gelu allocate output = empty_like(inp) and call
// my_gelu_out(output, inp), the function that launches. nil when no function
// of src calls fn with all of its parameters.
func (fn *hostFn) callerOf(src string) *hostFn {
	if cs := fn.callersIn(src, regexp.MustCompile(`\b`+regexp.QuoteMeta(fn.name)+`\s*\(`), 0); len(cs) > 0 {
		return cs[0]
	}
	return nil
}

// callersIn is every function of src whose body calls fn through reCall
// (the first parenthesis of a match opens the call) with one argument per
// parameter of fn after the first drop ones, in source order, each seen as
// the one that launches (callerOf).
func (fn *hostFn) callersIn(src string, reCall *regexp.Regexp, drop int) []*hostFn {
	var out []*hostFn
	for _, h := range reFnHead.FindAllStringSubmatchIndex(src, -1) {
		if src[h[4]:h[5]] == fn.name {
			continue
		}
		c, body, err := parseHostFn(src, h)
		if err != nil {
			continue
		}
		loc := reCall.FindStringIndex(body)
		if loc == nil {
			continue
		}
		passed, _, ok := splitArgs(body, loc[0]+strings.IndexByte(body[loc[0]:loc[1]], '('))
		if !ok || len(passed) != len(fn.params)+drop {
			continue
		}
		passed = passed[drop:]
		c.args = fn.argsSeenFrom(c, passed)
		for _, r := range returnsOf(body) {
			if reCall.MatchString(r) {
				// return fn(...): fn's results, in the caller's names
				for _, fr := range fn.returns {
					c.returns = append(c.returns, fn.nameSeenFrom(c, passed, fr))
				}
				continue
			}
			c.returns = append(c.returns, r)
		}
		out = append(out, c)
	}
	return out
}

// argsSeenFrom is fn's kernel arguments in the terms of caller c, which
// passes passed[i] for fn's parameter i.
func (fn *hostFn) argsSeenFrom(c *hostFn, passed []string) []hostArg {
	var out []hostArg
	for _, a := range fn.args {
		na := hostArg{text: a.text, param: -1}
		switch {
		case a.param >= 0 && fn.params[a.param].tensor:
			na.tensor = fn.nameSeenFrom(c, passed, a.tensor)
			na.param = c.paramIdx(na.tensor)
			if na.param < 0 {
				if l := reLike.FindStringSubmatch(c.locals[na.tensor]); l != nil {
					na.like = c.aliasOf(l[1])
				}
			}
		case a.param >= 0:
			na.param = c.paramIdx(hostArgName(passed[a.param]))
		case a.expr != nil:
			// computed from fn's sizes and integers: the same of what the caller passes
			na.expr = a.expr.seenFrom(fn, c, passed)
		case a.tensor != "":
			// allocated by fn itself
			na.tensor = a.tensor
			if a.like != "" {
				na.like = fn.nameSeenFrom(c, passed, a.like)
			}
		}
		if na.like != "" && c.paramIdx(na.like) < 0 {
			na.like = "" // shaped like a local of the caller: the spec's shape
		}
		out = append(out, na)
	}
	return out
}

// nameSeenFrom is the caller's tensor behind fn's name v: for a parameter
// of fn, the caller's argument followed through its aliases; a local of fn
// keeps its name.
func (fn *hostFn) nameSeenFrom(c *hostFn, passed []string, v string) string {
	i := fn.paramIdx(v)
	if i < 0 {
		return v
	}
	src := sameData(passed[i])
	if src == "" {
		return strings.TrimSpace(passed[i])
	}
	return c.aliasOf(src)
}

// outputsPassedIn reports whether the host function takes one of kernel
// k's outputs as a parameter (the caller allocates it).
func outputsPassedIn(k *kernels.Kernel, h *hostFn) bool {
	for i, prm := range k.Spec.Params {
		if prm.Kind == "pointer" && prm.Role == "output" && h.args[i].param >= 0 {
			return true
		}
	}
	return false
}
