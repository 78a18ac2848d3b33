package triton

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// Modes of a translated kernel.
const (
	ModeRow  = "row"  // one program per row: (rows, cols) tensors, row vectors, per-row values
	ModeFlat = "flat" // pid * BLOCK + arange(0, BLOCK) over flat tensors
)

// Access shapes of a pointer parameter.
const (
	access2D   = "2d"   // ptr + row * stride + cols
	accessCol  = "col"  // ptr + cols: one vector for every row
	accessRow  = "row"  // ptr + row (* stride): one value per row
	accessFlat = "flat" // ptr + pid * BLOCK + arange
	accessOne  = "one"  // ptr itself: one value read by every program
)

// PtrParam is a pointer parameter as the kernel uses it.
type PtrParam struct {
	Name   string
	Access string
	Loaded bool
	Stored bool
	// Segs is 2 for a (rows, 2 * cols) tensor whose rows the kernel reads
	// or writes as two halves of cols (ptr + cols_bound + cols), else 0.
	Segs int

	stride   string       // the row stride parameter of its accesses
	segSeen  map[int]bool // the halves accessed (stores: both must be)
	segBound string       // the column count the second half is offset by
}

// Role is the spec role: input, output or inout.
func (p PtrParam) Role() string {
	switch {
	case p.Loaded && p.Stored:
		return "inout"
	case p.Stored:
		return "output"
	}
	return "input"
}

// Analysis is what the translator learned about a kernel.
type Analysis struct {
	Kernel *Kernel
	Mode   string
	// Ptrs are the pointer parameters in signature order.
	Ptrs []PtrParam
	// Sizes maps integer parameters to their value as an expression of the
	// size symbols (strides, the column count, the element count).
	Sizes map[string]string
	// Scalars are float parameters used as data.
	Scalars []string
	// Constexprs maps each constexpr parameter to its value expression.
	Constexprs map[string]string
	// Bound is the parameter (or constexpr) that bounds the mask.
	Bound string
	// Block is the constexpr of the arange width.
	Block string
	// ColumnTiles: the kernel walks each row in column tiles on a second
	// program-id axis (TileAxis; rows on RowAxis); no reduction then.
	ColumnTiles       bool
	RowAxis, TileAxis int
	// Reductions counts tl.sum/max/min over the block axis.
	Reductions int
	// DataParams are the non-constexpr parameters the body reads as values
	// (scalars, and sizes such as the column count in a mean).
	DataParams []string
	// Body is the translated kernel body (Python lines, 4-space indented).
	Body []string
	// Helpers are translated @triton.jit helper functions.
	Helpers []string
	// Specialized are the constexprs the launch computes, fixed to the
	// values this translation is for (Translate).
	Specialized map[string]string
	// Free are the constexprs the candidate does not depend on (any value
	// at the launch gives the same module).
	Free []string
}

type kind int

const (
	kData    kind = iota
	kParam        // a parameter not yet known as pointer or scalar
	kPid          // tl.program_id(0)
	kOff          // an offset: row * stride, arange, or their sum
	kPtr          // a pointer plus an offset
	kMask         // arange < bound
	kDtype        // a dtype
	kConst        // a compile-time value (constexpr, literal)
	kDataIdx      // an index-valued tensor used as data
	kNone
)

type off struct {
	row    bool
	stride string // "1" for pid itself, a parameter, or a constexpr
	axis   int    // the program-id axis of the row term
	cols   bool
	width  string // the arange's width constexpr
	flat   bool
	taxis  int  // the program-id axis of a flat block (or column tile)
	tiled  bool // cols are pid(taxis) * BLOCK + arange: a column tile of the row
	// seg is the column count added to a row's address (ptr + n_cols +
	// cols: the second half of a [rows, 2 * cols] row, a fused gate-up).
	seg string
}

type val struct {
	k     kind
	axis  int // kPid: the program-id axis
	py    string
	rank  int // data: 0 scalar, 1 per row, 2 tile
	off   off
	param string // kParam, kPtr base
	bound string // kMask
	cval  string // kConst: Python literal
}

type translator struct {
	k       *Kernel
	inv     *Inventory
	src     []byte
	env     map[string]val
	params  map[string]bool
	cexpr   map[string]string // constexpr -> literal value, when known
	modc    map[string]string // module-level constants
	ptrs    map[string]*PtrParam
	strides map[string]string // stride param -> access
	scal    map[string]bool
	bound   string
	block   string
	mode    string
	lines   []string
	helpers map[string]string
	nred    int
	libdev  map[string]bool // local names bound to libdevice / tl.math functions
	// helperSrc are the translated helpers' Python sources.
	helperSrc []string
	// loopBound is the bound of a chunked row loop (it must be the mask's).
	loopBound string
	// rowAxis and tileAxis are the program-id axes of the rows and of the
	// column tiles (flat blocks); -1 until an access shows them.
	rowAxis, tileAxis int
	tiled             bool
	// flatCols reads a flat block with no row term (ptr + pid * BLOCK +
	// arange) as a vector shared by the rows: the second pass over a
	// kernel whose rows are walked in column tiles (a gamma beside x).
	flatCols bool
	lastSeg  int // the half the last pointer access addressed
}

// Translate drafts a Pallas candidate for k: it analyses the kernel (Analyse)
// and renders the module (Render).
//
// A constexpr the launch computes (no literal anywhere) stops the analysis
// at its first use; Translate then specializes: it tries the values the
// kernel compares it with (casting_mode == _CASTING_MODE_LLAMA; module
// constants and literals), or True and False for a flag, in source order,
// and keeps the first combination that translates. The specialization is
// recorded (Analysis.Specialized, the spec's note) and the wiring checks it
// at every launch.
func Translate(ctx context.Context, inv *Inventory, k *Kernel) (*Analysis, []byte, error) {
	a, err := analyse(ctx, inv, k, nil)
	if r, ok := AsRefusal(err); ok && r.Code == CodeConstexpr {
		for _, fixed := range specializations(inv, k) {
			if sa, serr := analyse(ctx, inv, k, fixed); serr == nil {
				sa.Specialized = map[string]string{}
				for n, v := range fixed {
					if sa.Constexprs[n] == v { // not a size the rules compute (the mask bound)
						sa.Specialized[n] = v
					}
				}
				a, err = sa, nil
				break
			}
		}
	}
	if err != nil {
		return nil, nil, err
	}
	src, err := Render(a)
	if err != nil {
		return a, nil, err
	}
	a.Free = freeConstexprs(ctx, inv, k, a, src)
	for _, name := range a.Free {
		delete(a.Specialized, name)
	}
	return a, src, nil
}

// freeConstexprs are the constexprs of a's translation whose value the
// candidate does not depend on: with two other values for one of them the
// translation renders the same module (a flag's branch that the fixed
// values fold away reads it, nothing else). The wiring checks only the
// others at the launch.
func freeConstexprs(ctx context.Context, inv *Inventory, k *Kernel, a *Analysis, src []byte) []string {
	var free []string
	for _, name := range sortedKeys(a.Constexprs) {
		if name == a.Block || name == a.Bound {
			continue
		}
		same := true
		alts := append(comparedValues(k.Body, name, moduleConstants(inv, k)), "True", "False", "0", "1", "7", "-3")
		for _, alt := range alts {
			fixed := map[string]string{name: alt}
			for n, v := range a.Specialized {
				if n != name {
					fixed[n] = v
				}
			}
			b, err := analyse(ctx, inv, k, fixed)
			if err != nil {
				same = false
				break
			}
			out, err := Render(b)
			if err != nil || string(out) != string(src) {
				same = false
				break
			}
		}
		if same {
			free = append(free, name)
		}
	}
	return free
}

// maxSpecializations bounds the constexpr combinations Translate tries.
const maxSpecializations = 16

// specializations are the value combinations to try for k's constexprs
// that have no value: each one's compared values (module constants
// resolved to their literals) or True/False, first seen first.
func specializations(inv *Inventory, k *Kernel) []map[string]string {
	modc := moduleConstants(inv, k)
	var names []string
	var values [][]string
	for _, p := range k.Params {
		if !p.Constexpr || !regexp.MustCompile(`\b`+regexp.QuoteMeta(p.Name)+`\b`).MatchString(k.Body) {
			continue
		}
		if _, ok := launchLiteral(k, p.Name); ok {
			continue
		}
		if _, ok := modc[p.Default]; ok || (p.Default != "" && isLiteral(p.Default)) {
			continue
		}
		if passedAsBlock(k, p.Name) {
			continue
		}
		names = append(names, p.Name)
		values = append(values, comparedValues(k.Body, p.Name, modc))
	}
	if len(names) == 0 {
		return nil
	}
	out := []map[string]string{{}}
	for i, n := range names {
		var next []map[string]string
		for _, m := range out {
			for _, v := range values[i] {
				c := map[string]string{n: v}
				for x, y := range m {
					c[x] = y
				}
				next = append(next, c)
				if len(next) >= maxSpecializations {
					break
				}
			}
		}
		out = next
	}
	return out
}

// passedAsBlock reports a constexpr used as an arange width or loop step
// (a size, not a switch: the row and flat rules give it its value).
func passedAsBlock(k *Kernel, name string) bool {
	return regexp.MustCompile(`tl\.arange\(\s*0\s*,\s*` + regexp.QuoteMeta(name) + `\s*\)`).MatchString(k.Body)
}

// comparedValues are the literals and module constants body compares name
// with (name == X, X == name, name != X), else True and False.
func comparedValues(body, name string, modc map[string]string) []string {
	q := regexp.QuoteMeta(name)
	num := `-?[0-9]+(?:\.[0-9]*)?`
	re := regexp.MustCompile(`\b` + q + `\s*[!=]=\s*([A-Za-z_][A-Za-z0-9_.]*|` + num + `)|([A-Za-z_][A-Za-z0-9_.]*|` + num + `)\s*[!=]=\s*` + q + `\b`)
	var out []string
	seen := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		x := m[1]
		if x == "" {
			x = m[2]
		}
		v := x
		if c, ok := modc[strings.TrimSuffix(x, ".value")]; ok {
			v = c
		} else if !isLiteral(x) {
			continue
		}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return []string{"True", "False"}
	}
	return out
}

// Analyse walks the kernel's statements with an abstract interpretation of
// its values (program id, offsets, masks, pointers, data) and translates the
// data statements to jnp on Pallas blocks.
func Analyse(ctx context.Context, inv *Inventory, k *Kernel) (*Analysis, error) {
	return analyse(ctx, inv, k, nil)
}

// analyse is Analyse with the constexprs of fixed taking those values.
func analyse(ctx context.Context, inv *Inventory, k *Kernel, fixed map[string]string) (*Analysis, error) {
	a, err := analysePass(ctx, inv, k, fixed, false)
	if r, ok := AsRefusal(err); ok && strings.Contains(r.Message, "mixes flat blocks and row accesses") {
		b, berr := analysePass(ctx, inv, k, fixed, true)
		if berr == nil {
			return b, nil
		}
		if os.Getenv("PALLASIFY_TRITON_DEBUG") != "" {
			fmt.Fprintf(os.Stderr, "%s: flat-as-columns pass: %v\n", k.Name, berr)
		}
		if br, ok := AsRefusal(berr); ok && br.Code == CodeConstexpr {
			return nil, berr // the columns pass got further: a value to specialize on is missing
		}
	}
	return a, err
}

// analysePass is one analysis; flatCols as in translator.flatCols.
func analysePass(ctx context.Context, inv *Inventory, k *Kernel, fixed map[string]string, flatCols bool) (a *Analysis, err error) {
	defer func() {
		if r := recover(); r != nil {
			if rf, ok := r.(*Refusal); ok {
				a, err = nil, rf
				return
			}
			a, err = nil, refuse(CodeInternal, "%v", r)
		}
	}()
	if len(k.Launches) == 0 {
		return nil, refuse(CodeNoLaunch, "%s has no kernel[grid](...) launch", k.Name)
	}
	if strings.Contains(k.Body, "tl.atomic_") {
		panic(refuse(CodeRace, "%s uses atomics", k.Name))
	}
	if strings.Contains(k.Body, "tl.dot(") {
		panic(refuse(CodeShape, "%s uses tl.dot (2-D tiles)", k.Name))
	}
	t := &translator{k: k, inv: inv, src: []byte(k.Source), env: map[string]val{}, params: map[string]bool{},
		cexpr: map[string]string{}, modc: moduleConstants(inv, k), ptrs: map[string]*PtrParam{},
		strides: map[string]string{}, scal: map[string]bool{}, helpers: map[string]string{}, libdev: libdeviceNames(inv, k),
		rowAxis: -1, tileAxis: -1, flatCols: flatCols}
	for _, p := range k.Params {
		t.params[p.Name] = true
		if p.Constexpr {
			if v, ok := fixed[p.Name]; ok {
				t.cexpr[p.Name] = v
			} else if v, ok := launchLiteral(k, p.Name); ok {
				t.cexpr[p.Name] = v
			} else if p.Default != "" && isLiteral(p.Default) {
				t.cexpr[p.Name] = p.Default
			} else if c, ok := t.modc[p.Default]; ok {
				t.cexpr[p.Name] = c
			}
			t.env[p.Name] = val{k: kConst, cval: t.cexpr[p.Name], param: p.Name}
		} else {
			t.env[p.Name] = val{k: kParam, param: p.Name}
		}
	}
	p := ts.NewParser(ts.Python)
	defer p.Close()
	tree, err := p.Parse(ctx, t.src)
	if err != nil {
		return nil, err
	}
	defer tree.Close()
	def := tree.Root().Child(0)
	for def != nil && def.Type() != "function_definition" {
		def = def.NextSibling()
	}
	if def == nil {
		return nil, refuse(CodeInternal, "no function in %s's source", k.Name)
	}
	t.stmts(def.ChildByFieldName("body"), 1)
	return t.analysis(), nil
}

func (t *translator) text(n *ts.Node) string { return ts.Text(n, t.src) }

func (t *translator) fail(code string, n *ts.Node, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if n != nil {
		msg += fmt.Sprintf(" (%s line %d: %s)", t.k.Name, t.k.Line+int(n.StartPoint().Row), oneLine(t.text(n)))
	}
	panic(refuse(code, "%s", msg))
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func (t *translator) emit(indent int, format string, a ...any) {
	t.lines = append(t.lines, strings.Repeat("    ", indent)+fmt.Sprintf(format, a...))
}

// stmts translates a statement block.
func (t *translator) stmts(b *ts.Node, indent int) {
	for _, st := range ts.Children(b) {
		t.statement(st, indent)
	}
}

func (t *translator) statement(st *ts.Node, indent int) {
	switch st.Type() {
	case "comment", "pass_statement":
		return
	case "expression_statement":
		c := st.Child(0)
		switch c.Type() {
		case "string":
			return // docstring
		case "assignment":
			t.assign(c, indent)
		case "augmented_assignment":
			t.augAssign(c, indent)
		case "call":
			t.callStatement(c, indent)
		default:
			t.fail(CodeConstruct, st, "statement %s", c.Type())
		}
	case "if_statement":
		t.ifStatement(st, indent)
	case "for_statement":
		t.forStatement(st, indent)
	case "while_statement":
		t.fail(CodeConstruct, st, "while loop inside the kernel")
	case "return_statement":
		if st.NamedChildCount() > 0 {
			t.fail(CodeConstruct, st, "kernel returns a value")
		}
	default:
		t.fail(CodeConstruct, st, "statement %s", st.Type())
	}
}

// forStatement translates the chunked row loop
//
//	for i in range(0, n_cols, BLOCK_SIZE):   (or tl.range)
//
// whose bound is the mask bound and whose step is the arange width: the
// inferred spec sets that width to next_power_of_2(n_cols), so the loop runs
// exactly once, with i = 0, and its body is translated once.
func (t *translator) forStatement(st *ts.Node, indent int) {
	left, right := st.ChildByFieldName("left"), st.ChildByFieldName("right")
	if left == nil || left.Type() != "identifier" || right == nil || right.Type() != "call" {
		t.fail(CodeConstruct, st, "loop that is not for i in range(...)")
	}
	fn := t.text(right.ChildByFieldName("function"))
	pos, _ := t.args(right)
	if (fn != "range" && fn != "tl.range" && fn != "tl.static_range") || len(pos) != 3 || t.text(pos[0]) != "0" {
		t.fail(CodeConstruct, st, "loop that is not range(0, n_cols, BLOCK)")
	}
	bound, step := t.expr(pos[1]), t.expr(pos[2])
	if step.k != kConst || step.param == "" || (t.block != "" && step.param != t.block) {
		t.fail(CodeConstruct, st, "loop step is not the block's constexpr width")
	}
	if bound.param == "" || (t.bound != "" && bound.param != t.bound) {
		t.fail(CodeConstruct, st, "loop bound is not the mask bound")
	}
	if st.ChildByFieldName("alternative") != nil {
		t.fail(CodeConstruct, st, "for ... else")
	}
	t.block = step.param
	t.loopBound = bound.param
	t.env[t.text(left)] = val{k: kConst, cval: "0"}
	t.stmts(st.ChildByFieldName("body"), indent)
}

// ifStatement keeps the branch a compile-time condition selects.
func (t *translator) ifStatement(st *ts.Node, indent int) {
	cond := t.expr(st.ChildByFieldName("condition"))
	if cond.k != kConst || cond.cval == "" {
		t.fail(CodeConstexpr, st, "if on a value unknown at translation (a runtime value or a constexpr without a literal)")
	}
	if truthy(cond.cval) {
		t.stmts(st.ChildByFieldName("consequence"), indent)
		return
	}
	for _, c := range ts.Children(st) {
		switch c.Type() {
		case "elif_clause":
			cv := t.expr(c.ChildByFieldName("condition"))
			if cv.k != kConst || cv.cval == "" {
				t.fail(CodeConstexpr, c, "elif on a value unknown at translation")
			}
			if truthy(cv.cval) {
				t.stmts(c.ChildByFieldName("consequence"), indent)
				return
			}
		case "else_clause":
			t.stmts(c.ChildByFieldName("body"), indent)
			return
		}
	}
}

// pyBool is a Python boolean literal.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func truthy(lit string) bool {
	switch strings.Trim(lit, "()") {
	case "False", "0", "0.0", "None", "", "-0", "-0.0":
		return false
	}
	return true
}

func (t *translator) assign(c *ts.Node, indent int) {
	left, right := c.ChildByFieldName("left"), c.ChildByFieldName("right")
	if right == nil {
		return // annotation only
	}
	if left.Type() != "identifier" {
		t.fail(CodeConstruct, c, "assignment to %s", left.Type())
	}
	t.bind(t.text(left), t.expr(right), indent)
}

// bind names a value; data values are emitted as Python assignments.
func (t *translator) bind(name string, v val, indent int) {
	switch v.k {
	case kData, kDtype, kDataIdx:
		py := "v_" + name
		t.emit(indent, "%s = %s", py, v.py)
		v.py = py
	}
	t.env[name] = v
}

func (t *translator) augAssign(c *ts.Node, indent int) {
	left := c.ChildByFieldName("left")
	if left.Type() != "identifier" {
		t.fail(CodeConstruct, c, "augmented assignment to %s", left.Type())
	}
	op := strings.TrimSuffix(t.text(c.ChildByFieldName("operator")), "=")
	name := t.text(left)
	cur, ok := t.env[name]
	if !ok {
		t.fail(CodeConstruct, c, "%s used before assignment", name)
	}
	t.bind(name, t.binary(op, cur, t.expr(c.ChildByFieldName("right")), c), indent)
}

func (t *translator) callStatement(c *ts.Node, indent int) {
	fn := t.text(c.ChildByFieldName("function"))
	switch fn {
	case "tl.store":
		t.store(c, indent)
	case "tl.static_assert", "tl.device_assert", "tl.debug_barrier":
	default:
		t.fail(CodeConstruct, c, "call %s as a statement", fn)
	}
}

// args splits a call's arguments into positional and keyword ones.
func (t *translator) args(c *ts.Node) ([]*ts.Node, map[string]*ts.Node) {
	var pos []*ts.Node
	kw := map[string]*ts.Node{}
	for _, a := range ts.Children(c.ChildByFieldName("arguments")) {
		switch a.Type() {
		case "(", ")", ",", "comment":
		case "keyword_argument":
			kw[t.text(a.ChildByFieldName("name"))] = a.ChildByFieldName("value")
		default:
			pos = append(pos, a)
		}
	}
	return pos, kw
}

// pointer turns a value used as an address into a pointer access.
func (t *translator) pointer(v val, n *ts.Node) (string, string) {
	if v.k == kParam {
		v = val{k: kPtr, param: v.param}
	}
	if v.k != kPtr {
		t.fail(CodeAddress, n, "address is not a pointer parameter plus an offset")
	}
	o := v.off
	var acc string
	switch {
	case o.flat && !o.row && t.flatCols:
		acc = accessCol
		t.noteAxes(-1, o.taxis, true, n)
	case o.flat && !o.row:
		acc = accessFlat
		t.noteAxes(-1, o.taxis, false, n)
	case o.row && o.cols:
		acc = access2D
		t.noteAxes(o.axis, o.taxis, o.tiled, n)
	case o.cols:
		acc = accessCol
	case o.row:
		acc = accessRow
		t.noteAxes(o.axis, -1, false, n)
	default:
		acc = accessOne
	}
	if o.row && o.stride != "" {
		want := "1"
		if acc == access2D {
			want = "cols"
		}
		if o.stride != "1" {
			if prev := t.strides[o.stride]; prev != "" && prev != want {
				t.fail(CodeAddress, n, "stride %s used for two shapes", o.stride)
			}
			t.strides[o.stride] = want
		} else if acc == access2D {
			t.fail(CodeAddress, n, "2-D access with a unit row stride")
		}
	}
	mode := ModeRow
	if acc == accessFlat {
		mode = ModeFlat
	}
	if acc == accessOne {
		mode = t.mode
	}
	if t.mode != "" && mode != "" && t.mode != mode {
		t.fail(CodeShape, n, "mixes flat blocks and row accesses")
	}
	if mode != "" {
		t.mode = mode
	}
	p := t.ptrs[v.param]
	if p == nil {
		p = &PtrParam{Name: v.param, Access: acc, segSeen: map[int]bool{}}
		t.ptrs[v.param] = p
	}
	if p.Access != acc {
		t.fail(CodeAddress, n, "%s accessed as %s and as %s", v.param, p.Access, acc)
	}
	seg := 0
	if o.seg != "" {
		if acc != access2D || o.tiled {
			t.fail(CodeAddress, n, "offset arithmetic + (a column offset outside a whole row)")
		}
		seg, p.Segs, p.segBound = 1, 2, o.seg
	}
	p.segSeen[seg] = true
	if acc == access2D && o.stride != "" {
		if p.stride != "" && p.stride != o.stride {
			t.fail(CodeAddress, n, "%s with two row strides", v.param)
		}
		p.stride = o.stride
	}
	t.lastSeg = seg
	return v.param, acc
}

// segRef is the placeholder for one half of a pointer's row block,
// resolved by the analysis once every access is known («name#seg»).
func segRef(name string, seg int) string { return fmt.Sprintf("«%s#%d»", name, seg) }

var (
	reSegRef   = regexp.MustCompile(`«([A-Za-z_][A-Za-z0-9_]*)#([01])»`)
	reSegShape = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)_oref\[«[A-Za-z_][A-Za-z0-9_]*#[01]»\]\.shape`)
)

// resolveSegs turns the placeholders into whole-block or half-block
// indexes, checks the halves (a halved pointer's stride is twice the row,
// a halved output is stored in both halves) and retypes their strides.
func (t *translator) resolveSegs() {
	halved := map[string]bool{}
	for _, p := range t.ptrs {
		if p.Segs == 0 {
			continue
		}
		if p.segBound != t.bound {
			panic(refuse(CodeAddress, "%s is offset by %s, not by the column count %s", p.Name, p.segBound, t.bound))
		}
		if p.Stored && !(p.segSeen[0] && p.segSeen[1]) {
			panic(refuse(CodeAddress, "%s stores one half of its rows only", p.Name))
		}
		if p.stride == "" || p.stride == "1" {
			panic(refuse(CodeAddress, "%s is halved without a row stride", p.Name))
		}
		halved[p.stride] = true
	}
	for _, p := range t.ptrs {
		if p.Segs == 0 && p.Access == access2D && halved[p.stride] {
			panic(refuse(CodeAddress, "stride %s used for two shapes", p.stride))
		}
	}
	for st := range halved {
		t.strides[st] = "2 * cols"
	}
	for i, l := range t.lines {
		l = reSegShape.ReplaceAllStringFunc(l, func(m string) string {
			name := reSegShape.FindStringSubmatch(m)[1]
			if t.ptrs[name] == nil || t.ptrs[name].Segs == 0 {
				return name + "_oref.shape"
			}
			return fmt.Sprintf("(%s_oref.shape[0], %s_oref.shape[1] // 2)", name, name)
		})
		t.lines[i] = reSegRef.ReplaceAllStringFunc(l, func(m string) string {
			g := reSegRef.FindStringSubmatch(m)
			name, seg := g[1], g[2]
			ref := name + "_ref"
			if strings.Contains(l, name+"_oref[") {
				ref = name + "_oref"
			}
			if t.ptrs[name] == nil || t.ptrs[name].Segs == 0 {
				return "..."
			}
			if seg == "0" {
				return ":, : " + ref + ".shape[1] // 2"
			}
			return ":, " + ref + ".shape[1] // 2 :"
		})
	}
}

func (t *translator) checkMask(kw map[string]*ts.Node, n *ts.Node) bool {
	m, ok := kw["mask"]
	if !ok {
		return false
	}
	mv := t.expr(m)
	if mv.k != kMask {
		t.fail(CodeConstruct, n, "mask is not arange < bound")
	}
	return true
}

func (t *translator) load(c *ts.Node) val {
	pos, kw := t.args(c)
	if len(pos) == 0 {
		t.fail(CodeConstruct, c, "tl.load without an address")
	}
	name, acc := t.pointer(t.expr(pos[0]), c)
	p := t.ptrs[name]
	if p.Stored {
		t.fail(CodeConstruct, c, "%s loaded after a store to it", name)
	}
	p.Loaded = true
	ref := fmt.Sprintf("%s_ref[...]", name)
	if acc == access2D {
		ref = fmt.Sprintf("%s_ref[%s]", name, segRef(name, t.lastSeg))
	}
	masked := t.checkMask(kw, c)
	other := "0.0"
	if o, ok := kw["other"]; ok {
		ov := t.expr(o)
		if ov.k != kConst && !(ov.k == kData && ov.rank == 0) {
			t.fail(CodeConstruct, c, "other= is not a constant")
		}
		other = t.py(ov)
	}
	for k := range kw {
		switch k {
		case "mask", "other", "eviction_policy", "cache_modifier", "volatile":
		default:
			t.fail(CodeConstruct, c, "tl.load(%s=)", k)
		}
	}
	rank := 2
	switch acc {
	case accessRow:
		rank = 1
	case accessOne:
		rank = 0
	}
	if masked && acc != accessRow && acc != accessOne {
		return val{k: kData, py: fmt.Sprintf("jnp.where(_valid, %s, %s)", ref, other), rank: rank}
	}
	return val{k: kData, py: ref, rank: rank}
}

func (t *translator) store(c *ts.Node, indent int) {
	pos, kw := t.args(c)
	if len(pos) < 2 {
		t.fail(CodeConstruct, c, "tl.store needs an address and a value")
	}
	name, acc := t.pointer(t.expr(pos[0]), c)
	if acc == accessCol || acc == accessOne {
		t.fail(CodeRace, c, "every program stores to %s (no row in the address)", name)
	}
	t.checkMask(kw, c)
	v := t.expr(pos[1])
	if v.k != kData && v.k != kConst {
		t.fail(CodeConstruct, c, "stored value is not data")
	}
	t.ptrs[name].Stored = true
	if acc == access2D {
		sr := segRef(name, t.lastSeg)
		t.emit(indent, "%s_oref[%s] = jnp.broadcast_to(%s, %s_oref[%s].shape).astype(%s_oref.dtype)", name, sr, t.py(v), name, sr, name)
		return
	}
	t.emit(indent, "%s_oref[...] = jnp.broadcast_to(%s, %s_oref.shape).astype(%s_oref.dtype)", name, t.py(v), name, name)
}

// py renders a value as a data expression.
func (t *translator) py(v val) string {
	switch v.k {
	case kData, kDtype, kDataIdx:
		return v.py
	case kConst:
		switch {
		case v.cval != "":
			return v.cval
		case v.param != "" && v.param == t.bound:
			return "_bound"
		case v.param != "" && v.param == t.block:
			return "_block"
		}
		panic(refuse(CodeConstexpr, "constexpr %s has no value (not a literal at the launch)", v.param))
	case kParam:
		t.scal[v.param] = true
		return v.param
	case kPid:
		if v.axis != 0 {
			panic(refuse(CodeShape, "program id of axis %d used as data", v.axis))
		}
		return "(pl.program_id(0) * _bm + lax.broadcasted_iota(jnp.int32, (_bm, 1), 0))"
	case kOff:
		if v.off.cols && !v.off.row && !v.off.flat {
			return "_lane"
		}
	case kMask:
		return "_valid"
	}
	panic(refuse(CodeConstruct, "an index value used as data"))
}

func (t *translator) expr(n *ts.Node) val {
	switch n.Type() {
	case "parenthesized_expression":
		return t.expr(n.NamedChild(0))
	case "integer", "float":
		return val{k: kConst, cval: t.text(n)}
	case "true":
		return val{k: kConst, cval: "True"}
	case "false":
		return val{k: kConst, cval: "False"}
	case "none":
		return val{k: kConst, cval: "None"}
	case "identifier":
		name := t.text(n)
		if v, ok := t.env[name]; ok {
			return v
		}
		if c, ok := t.modc[name]; ok {
			return val{k: kConst, cval: c}
		}
		t.fail(CodeConstruct, n, "unknown name %s", name)
	case "unary_operator":
		v := t.expr(n.ChildByFieldName("argument"))
		op := t.text(n.ChildByFieldName("operator"))
		if v.k == kConst && isNumber(v.cval) {
			return val{k: kConst, cval: "(" + op + v.cval + ")"}
		}
		return val{k: kData, py: "(" + op + t.py(v) + ")", rank: v.rank}
	case "binary_operator":
		return t.binary(t.text(n.ChildByFieldName("operator")), t.expr(n.ChildByFieldName("left")),
			t.expr(n.ChildByFieldName("right")), n)
	case "comparison_operator":
		return t.compare(n)
	case "boolean_operator":
		l, r := t.expr(n.ChildByFieldName("left")), t.expr(n.ChildByFieldName("right"))
		if l.k == kConst && r.k == kConst && l.cval != "" && r.cval != "" {
			op := t.text(n.ChildByFieldName("operator"))
			res := (truthy(l.cval) && truthy(r.cval)) || (op == "or" && (truthy(l.cval) || truthy(r.cval)))
			return val{k: kConst, cval: pyBool(res)}
		}
		t.fail(CodeConstruct, n, "boolean operator on runtime values")
	case "not_operator":
		v := t.expr(n.ChildByFieldName("argument"))
		if v.k == kConst && v.cval != "" {
			if truthy(v.cval) {
				return val{k: kConst, cval: "False"}
			}
			return val{k: kConst, cval: "True"}
		}
		t.fail(CodeConstruct, n, "not on a runtime value")
	case "call":
		return t.call(n)
	case "attribute":
		return t.attribute(n)
	case "subscript":
		t.fail(CodeShape, n, "subscripted block (2-D tiles)")
	case "conditional_expression":
		t.fail(CodeConstruct, n, "conditional expression")
	}
	t.fail(CodeConstruct, n, "expression %s", n.Type())
	return val{}
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.Trim(s, "()"), 64)
	return err == nil
}

func maxRank(a, b val) int {
	r := a.rank
	if b.rank > r {
		r = b.rank
	}
	return r
}

func (t *translator) binary(op string, l, r val, n *ts.Node) val {
	// Index arithmetic first: a loop's i = 0 adds nothing to an offset.
	if op == "+" && l.k == kConst && l.cval == "0" && (r.k == kOff || r.k == kPtr || r.k == kPid) {
		return r
	}
	if op == "+" && r.k == kConst && r.cval == "0" && (l.k == kOff || l.k == kPtr || l.k == kPid) {
		return l
	}
	switch {
	case op == "*" && (l.k == kPid && (r.k == kParam || r.k == kConst) || r.k == kPid && (l.k == kParam || l.k == kConst)):
		s := r
		if r.k == kPid {
			s = l
		}
		stride := s.param
		if stride == "" {
			stride = s.cval
		}
		if s.k == kParam {
			t.sizeParam(s.param)
		}
		ax := l.axis
		if r.k == kPid {
			ax = r.axis
		}
		return val{k: kOff, off: off{row: true, stride: stride, axis: ax}}
	case op == "+" && (l.k == kPtr || l.k == kParam) && (r.k == kOff || r.k == kPid):
		return t.addPtr(l, r, n)
	case op == "+" && (r.k == kPtr || r.k == kParam) && (l.k == kOff || l.k == kPid):
		return t.addPtr(r, l, n)
	case op == "+" && (l.k == kOff || l.k == kPid) && (r.k == kOff || r.k == kPid):
		return val{k: kOff, off: mergeOff(asOff(l), asOff(r), t, n)}
	case op == "+" && l.k == kPtr && r.k == kPtr:
		t.fail(CodeAddress, n, "pointer plus pointer")
	case op == "+" && (l.k == kPtr || l.k == kParam && !t.scal[l.param]) && (r.k == kConst || r.k == kParam) && r.param != "" &&
		(t.bound == "" || r.param == t.bound):
		return t.addSeg(l, r.param, n)
	case (l.k == kPtr || l.k == kOff) && r.k == kData || (r.k == kPtr || r.k == kOff) && l.k == kData:
		t.fail(CodeAddress, n, "address from a loaded or computed value (a gather)")
	case l.k == kOff || r.k == kOff || l.k == kPtr || r.k == kPtr:
		t.fail(CodeAddress, n, "offset arithmetic %s", op)
	case l.k == kConst && r.k == kConst && isNumber(l.cval) && isNumber(r.cval):
		return val{k: kConst, cval: "(" + l.cval + " " + op + " " + r.cval + ")"}
	}
	pyop := op
	switch op {
	case "+", "-", "*", "/", "//", "%", "**":
	case "&", "|", "^":
	case ">>", "<<":
	default:
		t.fail(CodeConstruct, n, "operator %s", op)
	}
	return val{k: kData, py: "(" + t.py(l) + " " + pyop + " " + t.py(r) + ")", rank: maxRank(l, r)}
}

func asOff(v val) off {
	if v.k == kPid {
		return off{row: true, stride: "1", axis: v.axis}
	}
	return v.off
}

// mergeOff adds two offsets; pid * BLOCK + arange(0, BLOCK) is a flat block.
func mergeOff(a, b off, t *translator, n *ts.Node) off {
	if a.flat || b.flat {
		f, o := a, b
		if b.flat {
			f, o = b, a
		}
		if o.flat || o.cols {
			t.fail(CodeAddress, n, "offset adds a column term to a flat block")
		}
		if o.row && o.axis != f.taxis {
			// row * stride + pid(other axis) * BLOCK + arange: a column tile of the row
			return off{row: true, stride: o.stride, axis: o.axis, cols: true, width: f.width, tiled: true, taxis: f.taxis}
		}
		if o.row {
			t.fail(CodeAddress, n, "offset adds a row term to a flat block of the same axis")
		}
		return f
	}
	if a.row && b.row || a.cols && b.cols {
		t.fail(CodeAddress, n, "offset adds two row or two column terms")
	}
	o := off{row: a.row || b.row, cols: a.cols || b.cols, axis: a.axis + b.axis}
	o.stride = a.stride + b.stride
	o.width = a.width + b.width
	if o.row && o.cols && o.stride != "1" && o.stride == o.width {
		return off{flat: true, width: o.width, taxis: o.axis}
	}
	return o
}

func (t *translator) addPtr(p, o val, n *ts.Node) val {
	base := p.param
	cur := p.off
	ov := asOff(o)
	m := mergeOff(cur, ov, t, n)
	m.seg = cur.seg + ov.seg
	return val{k: kPtr, param: base, off: m}
}

// addSeg is ptr + bound: the row's second half of bound columns (the bound
// is checked when the kernel's mask is known).
func (t *translator) addSeg(p val, bound string, n *ts.Node) val {
	if p.k == kParam {
		p = val{k: kPtr, param: p.param}
	}
	if p.off.seg != "" || p.off.flat {
		t.fail(CodeAddress, n, "offset arithmetic + (a second column offset)")
	}
	o := p.off
	o.seg = bound
	return val{k: kPtr, param: p.param, off: o}
}

// noteAxes records which program-id axis walks the rows and which the
// column tiles (or flat blocks); each must stay the same across accesses.
func (t *translator) noteAxes(row, tile int, tiled bool, n *ts.Node) {
	if row >= 0 {
		if t.rowAxis >= 0 && t.rowAxis != row {
			t.fail(CodeShape, n, "rows walked by two program-id axes")
		}
		t.rowAxis = row
	}
	if tile >= 0 && (tiled || row < 0) {
		if t.tileAxis >= 0 && t.tileAxis != tile {
			t.fail(CodeShape, n, "blocks walked by two program-id axes")
		}
		t.tileAxis = tile
		t.tiled = t.tiled || tiled
	}
}

// sizeParam marks a parameter multiplied by the program id (a row stride);
// its value is fixed when an access shows the shape it strides.
func (t *translator) sizeParam(name string) {
	if _, ok := t.strides[name]; !ok && t.params[name] {
		t.strides[name] = ""
	}
}

func (t *translator) compare(n *ts.Node) val {
	if n.ChildCount() != 3 {
		t.fail(CodeConstruct, n, "chained comparison")
	}
	l, r := t.expr(n.Child(0)), t.expr(n.Child(2))
	op := t.text(n.Child(1))
	if (l.k == kOff) && op == "<" && (r.k == kParam || r.k == kConst) {
		if !(l.off.cols && !l.off.row || l.off.flat) {
			t.fail(CodeAddress, n, "mask on an offset that is not the block's arange")
		}
		b := r.param
		if b == "" {
			t.fail(CodeConstexpr, n, "mask bound is a literal")
		}
		if t.bound != "" && t.bound != b {
			t.fail(CodeConstruct, n, "two mask bounds (%s, %s)", t.bound, b)
		}
		t.bound = b
		return val{k: kMask, bound: b}
	}
	if l.k == kConst && r.k == kConst && l.cval != "" && r.cval != "" {
		lf, e1 := strconv.ParseFloat(strings.Trim(l.cval, "()"), 64)
		rf, e2 := strconv.ParseFloat(strings.Trim(r.cval, "()"), 64)
		if e1 == nil && e2 == nil {
			var res bool
			switch op {
			case "==":
				res = lf == rf
			case "!=":
				res = lf != rf
			case "<":
				res = lf < rf
			case "<=":
				res = lf <= rf
			case ">":
				res = lf > rf
			case ">=":
				res = lf >= rf
			}
			return val{k: kConst, cval: pyBool(res)}
		}
		if op == "==" || op == "!=" {
			return val{k: kConst, cval: pyBool((l.cval == r.cval) == (op == "=="))}
		}
	}
	if l.k == kMask || r.k == kMask || l.k == kPtr || r.k == kPtr {
		t.fail(CodeConstruct, n, "comparison of index values")
	}
	return val{k: kData, py: "(" + t.py(l) + " " + op + " " + t.py(r) + ")", rank: maxRank(l, r)}
}

var dtypes = map[string]string{
	"tl.float32": "jnp.float32", "tl.float16": "jnp.float16", "tl.bfloat16": "jnp.bfloat16",
	"tl.int32": "jnp.int32", "tl.int64": "jnp.int32", "tl.int1": "jnp.bool_", "tl.int8": "jnp.int8",
	"tl.uint8": "jnp.uint8", "tl.float64": "jnp.float32",
}

func (t *translator) attribute(n *ts.Node) val {
	full := t.text(n)
	if d, ok := dtypes[full]; ok {
		return val{k: kDtype, py: d}
	}
	obj := t.expr(n.ChildByFieldName("object"))
	attr := t.text(n.ChildByFieldName("attribute"))
	if attr == "dtype" && (obj.k == kData || obj.k == kDtype) {
		return val{k: kDtype, py: obj.py + ".dtype"}
	}
	if attr == "dtype" && obj.k == kPtr || attr == "dtype" && obj.k == kParam {
		return val{k: kDtype, py: "jnp.float32"}
	}
	t.fail(CodeConstruct, n, "attribute %s", full)
	return val{}
}

// unary maps tl / tl.math / libdevice functions to jnp.
var unary = map[string]string{
	"exp": "jnp.exp", "exp2": "jnp.exp2", "log": "jnp.log", "log2": "jnp.log2", "sqrt": "jnp.sqrt",
	"rsqrt": "lax.rsqrt", "abs": "jnp.abs", "fabs": "jnp.abs", "sin": "jnp.sin", "cos": "jnp.cos",
	"tanh": "jnp.tanh", "erf": "lax.erf", "floor": "jnp.floor", "ceil": "jnp.ceil", "log1p": "jnp.log1p",
	"expm1": "jnp.expm1", "sqrt_rn": "jnp.sqrt", "sigmoid": "_sigmoid", "tan": "jnp.tan",
}

var binaryFns = map[string]string{
	"maximum": "_fmax", "minimum": "_fmin", "pow": "jnp.power", "fmax": "_fmax",
	"fmin": "_fmin", "div_rn": "jnp.divide", "fdiv": "jnp.divide", "atan2": "jnp.arctan2",
}

var mathPrefix = regexp.MustCompile(`^(tl\.math\.|tl\.|libdevice\.|tl\.extra\.cuda\.libdevice\.|tl\.extra\.libdevice\.)`)

func (t *translator) call(c *ts.Node) val {
	fnNode := c.ChildByFieldName("function")
	fn := t.text(fnNode)
	pos, kw := t.args(c)
	switch fn {
	case "tl.program_id":
		ax := ""
		if len(pos) == 1 {
			ax = t.text(pos[0])
		} else if a, ok := kw["axis"]; ok {
			ax = t.text(a)
		}
		switch ax {
		case "0":
			return val{k: kPid}
		case "1":
			return val{k: kPid, axis: 1}
		}
		t.fail(CodeShape, c, "program id of axis %s", ax)
	case "tl.num_programs":
		t.fail(CodeConstruct, c, "tl.num_programs")
	case "tl.arange":
		if len(pos) != 2 || t.text(pos[0]) != "0" {
			t.fail(CodeAddress, c, "arange not starting at 0")
		}
		w := t.expr(pos[1])
		if w.k != kConst {
			t.fail(CodeConstexpr, c, "arange width is not a constexpr")
		}
		width := w.param
		if width == "" {
			width = w.cval
		}
		if t.block != "" && t.block != width {
			t.fail(CodeShape, c, "two block widths")
		}
		t.block = width
		return val{k: kOff, off: off{cols: true, width: width}}
	case "tl.load":
		return t.load(c)
	case "float":
		if len(pos) == 1 {
			s := strings.Trim(t.text(pos[0]), `"'`)
			switch strings.ToLower(s) {
			case "inf", "+inf":
				return val{k: kConst, cval: "jnp.inf"}
			case "-inf":
				return val{k: kConst, cval: "(-jnp.inf)"}
			case "nan":
				return val{k: kConst, cval: "jnp.nan"}
			}
			v := t.expr(pos[0])
			if v.k == kConst {
				return val{k: kConst, cval: "float(" + v.cval + ")"}
			}
		}
		t.fail(CodeConstruct, c, "float(...)")
	case "tl.sum", "tl.max", "tl.min":
		return t.reduce(fn, pos, kw, c)
	case "tl.where":
		if len(pos) != 3 {
			t.fail(CodeConstruct, c, "tl.where needs three arguments")
		}
		cond, a, b := t.expr(pos[0]), t.expr(pos[1]), t.expr(pos[2])
		return val{k: kData, py: fmt.Sprintf("jnp.where(%s, %s, %s)", t.py(cond), t.py(a), t.py(b)),
			rank: max(cond.rank, a.rank, b.rank, rankOfMask(cond))}
	case "tl.fma":
		if len(pos) != 3 {
			t.fail(CodeConstruct, c, "tl.fma needs three arguments")
		}
		a, b, d := t.expr(pos[0]), t.expr(pos[1]), t.expr(pos[2])
		return val{k: kData, py: fmt.Sprintf("(%s * %s + %s)", t.py(a), t.py(b), t.py(d)), rank: max(a.rank, b.rank, d.rank)}
	case "tl.cdiv":
		t.fail(CodeConstruct, c, "tl.cdiv in the kernel")
	case "tl.cast":
		if len(pos) < 1 {
			t.fail(CodeConstruct, c, "tl.cast without a value")
		}
		return t.cast(t.expr(pos[0]), pos[1:], kw, c)
	case "tl.maximum", "tl.minimum":
		if len(pos) != 2 {
			t.fail(CodeConstruct, c, "%s needs two arguments", fn)
		}
		a, b := t.expr(pos[0]), t.expr(pos[1])
		f := "_fmax"
		if fn == "tl.minimum" {
			f = "_fmin"
		}
		if pn, ok := kw["propagate_nan"]; ok && strings.HasSuffix(t.text(pn), "ALL") {
			f = "jnp.maximum"
			if fn == "tl.minimum" {
				f = "jnp.minimum"
			}
		}
		return val{k: kData, py: f + "(" + t.py(a) + ", " + t.py(b) + ")", rank: maxRank(a, b)}
	}
	if d, ok := dtypes[fn]; ok && len(pos) == 1 {
		v := t.expr(pos[0])
		return val{k: kData, py: fmt.Sprintf("jnp.asarray(%s, %s)", t.py(v), d), rank: v.rank}
	}
	if fnNode.Type() == "attribute" {
		attr := t.text(fnNode.ChildByFieldName("attribute"))
		if attr == "to" || attr == "cast" {
			return t.cast(t.expr(fnNode.ChildByFieldName("object")), pos, kw, c)
		}
	}
	name := fn
	if m := mathPrefix.FindString(fn); m != "" {
		name = strings.TrimPrefix(fn, m)
	} else if t.libdev[fn] {
		name = fn
	} else if h := t.helper(fn, c); h != "" {
		var parts []string
		rank := 0
		for _, a := range pos {
			v := t.expr(a)
			rank = max(rank, v.rank)
			parts = append(parts, t.py(v))
		}
		if len(kw) > 0 {
			t.fail(CodeConstruct, c, "keyword arguments to helper %s", fn)
		}
		return val{k: kData, py: h + "(" + strings.Join(parts, ", ") + ")", rank: rank}
	} else {
		t.fail(CodeConstruct, c, "call %s", fn)
	}
	if f, ok := unary[name]; ok && len(pos) == 1 {
		v := t.expr(pos[0])
		return val{k: kData, py: f + "(" + t.py(v) + ")", rank: v.rank}
	}
	if f, ok := binaryFns[name]; ok && len(pos) == 2 {
		a, b := t.expr(pos[0]), t.expr(pos[1])
		return val{k: kData, py: f + "(" + t.py(a) + ", " + t.py(b) + ")", rank: maxRank(a, b)}
	}
	t.fail(CodeConstruct, c, "call %s", fn)
	return val{}
}

func rankOfMask(v val) int {
	if v.k == kMask {
		return 2
	}
	return 0
}

func (t *translator) cast(v val, pos []*ts.Node, kw map[string]*ts.Node, c *ts.Node) val {
	var dn *ts.Node
	if len(pos) > 0 {
		dn = pos[0]
	} else if d, ok := kw["dtype"]; ok {
		dn = d
	}
	if dn == nil {
		t.fail(CodeConstruct, c, "cast without a dtype")
	}
	switch v.k {
	case kPid, kOff, kPtr, kMask:
		return v // index widening (program_id(0).to(tl.int64)) changes nothing here
	}
	d := t.expr(dn)
	if d.k != kDtype {
		t.fail(CodeConstruct, c, "cast to something that is not a dtype")
	}
	if v.k == kParam || v.k == kConst {
		return val{k: kData, py: fmt.Sprintf("jnp.asarray(%s, %s)", t.py(v), d.py), rank: 0}
	}
	return val{k: kData, py: fmt.Sprintf("%s.astype(%s)", t.py(v), d.py), rank: v.rank}
}

func (t *translator) reduce(fn string, pos []*ts.Node, kw map[string]*ts.Node, c *ts.Node) val {
	if len(pos) == 0 {
		t.fail(CodeConstruct, c, "%s without an argument", fn)
	}
	axis := "0"
	if len(pos) > 1 {
		axis = t.text(pos[1])
	}
	if a, ok := kw["axis"]; ok {
		axis = t.text(a)
	}
	for k := range kw {
		if k != "axis" && k != "keep_dims" {
			t.fail(CodeConstruct, c, "%s(%s=)", fn, k)
		}
	}
	if kd, ok := kw["keep_dims"]; ok && t.text(kd) != "False" {
		t.fail(CodeConstruct, c, "%s(keep_dims=True)", fn)
	}
	if axis != "0" && axis != "None" && axis != "-1" {
		t.fail(CodeShape, c, "reduction over axis %s", axis)
	}
	v := t.expr(pos[0])
	if v.rank != 2 {
		t.fail(CodeConstruct, c, "%s of a value that is not a block", fn)
	}
	t.nred++
	return val{k: kData, py: fmt.Sprintf("_r%s(%s, _inblk)", strings.TrimPrefix(fn, "tl."), t.py(v)), rank: 1}
}

// helper translates a @triton.jit function of the same file called from
// the kernel (data in, data out) into a Python function and returns its name.
func (t *translator) helper(name string, c *ts.Node) string {
	if h, ok := t.helpers[name]; ok {
		return h
	}
	var hk *Kernel
	for _, k := range t.inv.Kernels {
		if k.Name == name && k.Path == t.k.Path {
			hk = k
		}
	}
	if hk == nil {
		return ""
	}
	sub := &translator{k: hk, inv: t.inv, src: []byte(hk.Source), env: map[string]val{}, params: map[string]bool{},
		cexpr: map[string]string{}, modc: t.modc, ptrs: map[string]*PtrParam{}, strides: map[string]string{},
		scal: map[string]bool{}, helpers: t.helpers, libdev: t.libdev, rowAxis: -1, tileAxis: -1}
	var names []string
	for _, p := range hk.Params {
		sub.env[p.Name] = val{k: kData, py: "v_" + p.Name, rank: 2}
		names = append(names, "v_"+p.Name)
	}
	p := ts.NewParser(ts.Python)
	defer p.Close()
	tree, err := p.Parse(context.Background(), sub.src)
	if err != nil {
		t.fail(CodeInternal, c, "helper %s: %v", name, err)
	}
	defer tree.Close()
	def := tree.Root().Child(0)
	for def != nil && def.Type() != "function_definition" {
		def = def.NextSibling()
	}
	if def == nil {
		t.fail(CodeInternal, c, "helper %s has no function", name)
	}
	var ret string
	for _, st := range ts.Children(def.ChildByFieldName("body")) {
		if st.Type() == "return_statement" {
			if st.NamedChildCount() != 1 {
				t.fail(CodeConstruct, st, "helper %s returns %d values", name, st.NamedChildCount())
			}
			ret = sub.py(sub.expr(st.NamedChild(0)))
			break
		}
		sub.statement(st, 1)
	}
	if ret == "" {
		t.fail(CodeConstruct, c, "helper %s returns nothing", name)
	}
	if len(sub.ptrs) > 0 {
		t.fail(CodeConstruct, c, "helper %s loads or stores", name)
	}
	fn := "_h_" + name
	var b strings.Builder
	fmt.Fprintf(&b, "def %s(%s):\n", fn, strings.Join(names, ", "))
	for _, l := range sub.lines {
		b.WriteString(l + "\n")
	}
	fmt.Fprintf(&b, "    return %s\n", ret)
	t.helpers[name] = fn
	t.helperSrc = append(t.helperSrc, b.String())
	t.nred += sub.nred
	return fn
}

func (t *translator) analysis() *Analysis {
	t.resolveSegs()
	a := &Analysis{Kernel: t.k, Mode: t.mode, Sizes: map[string]string{}, Constexprs: map[string]string{},
		Bound: t.bound, Block: t.block, Reductions: t.nred, Body: t.lines, Helpers: t.helperSrc,
		DataParams: sortedKeys(t.scal)}
	if a.Mode == "" {
		panic(refuse(CodeShape, "%s neither loads nor stores through a block", t.k.Name))
	}
	if len(t.ptrs) == 0 || !slices.ContainsFunc(mapValues(t.ptrs), func(p *PtrParam) bool { return p.Stored }) {
		panic(refuse(CodeShape, "%s stores nothing", t.k.Name))
	}
	if a.Mode == ModeFlat && a.Reductions > 0 {
		panic(refuse(CodeShape, "%s reduces over a flat block", t.k.Name))
	}
	if t.bound == "" {
		panic(refuse(CodeShape, "%s has no mask bound (the column or element count)", t.k.Name))
	}
	if t.tiled && t.nred > 0 {
		panic(refuse(CodeShape, "%s reduces over column tiles (each program sees part of the row)", t.k.Name))
	}
	a.ColumnTiles = t.tiled
	a.RowAxis, a.TileAxis = max(t.rowAxis, 0), t.tileAxis
	if t.flatCols && (t.rowAxis < 0 || !t.tiled) {
		panic(refuse(CodeShape, "%s mixes flat blocks and row accesses without column tiles", t.k.Name))
	}
	if !t.tiled && a.Mode == ModeRow && t.rowAxis > 0 {
		panic(refuse(CodeShape, "%s walks rows with program-id axis %d and nothing with axis 0", t.k.Name, t.rowAxis))
	}
	if t.loopBound != "" && t.loopBound != t.bound {
		panic(refuse(CodeConstruct, "%s loops to %s but masks by %s", t.k.Name, t.loopBound, t.bound))
	}
	sym := "cols"
	if a.Mode == ModeFlat {
		sym = "n"
	}
	for _, p := range t.k.Params {
		if pp, ok := t.ptrs[p.Name]; ok {
			a.Ptrs = append(a.Ptrs, *pp)
			continue
		}
		switch {
		case p.Name == t.bound && p.Constexpr:
			a.Constexprs[p.Name] = sym
		case p.Name == t.bound:
			a.Sizes[p.Name] = sym
		case p.Name == t.block:
			if a.Mode == ModeRow && t.tiled {
				a.Constexprs[p.Name] = "min(1024, next_power_of_2(cols))"
			} else if a.Mode == ModeRow {
				a.Constexprs[p.Name] = "next_power_of_2(cols)"
			} else if v := t.cexpr[p.Name]; v != "" {
				a.Constexprs[p.Name] = v
			} else {
				a.Constexprs[p.Name] = "1024"
			}
		case p.Constexpr:
			if t.cexpr[p.Name] == "" {
				if strings.Contains(t.k.Body, p.Name) {
					panic(refuse(CodeConstexpr, "constexpr %s of %s has no literal at the launch", p.Name, t.k.Name))
				}
				a.Constexprs[p.Name] = "0"
			} else {
				a.Constexprs[p.Name] = t.cexpr[p.Name]
			}
		default:
			if v, ok := t.strides[p.Name]; ok && v != "" {
				a.Sizes[p.Name] = v
			} else if t.scal[p.Name] {
				a.Scalars = append(a.Scalars, p.Name)
			} else if _, ok := t.strides[p.Name]; ok {
				a.Sizes[p.Name] = "cols" // a stride the kernel multiplies by pid but never uses for an access
			} else {
				a.Sizes[p.Name] = "1" // unused by the translated path
			}
		}
	}
	if a.Mode == ModeRow && !slices.ContainsFunc(a.Ptrs, func(p PtrParam) bool { return p.Access == access2D && p.Loaded }) {
		panic(refuse(CodeShape, "%s loads no (rows, cols) tensor", t.k.Name))
	}
	if a.Mode == ModeFlat && !slices.ContainsFunc(a.Ptrs, func(p PtrParam) bool { return p.Loaded }) {
		panic(refuse(CodeShape, "%s loads nothing", t.k.Name))
	}
	return a
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// launchLiteral is the literal the first launch passes for a constexpr:
// written at the launch, or a name the wrapper assigns a literal to (its
// first one) or gives as a parameter default.
func launchLiteral(k *Kernel, name string) (string, bool) {
	for _, l := range k.Launches {
		for _, a := range l.Args {
			if a.Name != name {
				continue
			}
			if isLiteral(a.Expr) {
				return a.Expr, true
			}
			if lits := l.Literals[a.Expr]; len(lits) > 0 {
				return lits[0], true
			}
			return "", false
		}
	}
	return "", false
}

var literalRe = regexp.MustCompile(`^(-?[0-9][0-9_]*(\.[0-9]*)?([eE][-+]?[0-9]+)?|True|False|None)$`)

func isLiteral(s string) bool { return literalRe.MatchString(strings.TrimSpace(s)) }

// moduleConstants are the kernel file's NAME = literal (or
// tl.constexpr(literal)) assignments.
func moduleConstants(inv *Inventory, k *Kernel) map[string]string {
	out := map[string]string{}
	src := inv.Files[k.Path]
	re := regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*tl\.constexpr\s*)?=\s*(?:tl\.constexpr\()?\s*(-?[0-9][0-9_.eE+-]*|True|False)\s*\)?\s*(#.*)?$`)
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// libdeviceNames are names the file imports from libdevice or tl.math
// (from triton.language.extra.libdevice import tanh).
func libdeviceNames(inv *Inventory, k *Kernel) map[string]bool {
	out := map[string]bool{}
	re := regexp.MustCompile(`(?m)^\s*from\s+triton\.language(?:\.extra(?:\.cuda)?\.libdevice|\.math)\s+import\s+([A-Za-z_][A-Za-z0-9_, ]*)`)
	for _, m := range re.FindAllStringSubmatch(string(inv.Files[k.Path]), -1) {
		for _, n := range strings.Split(m[1], ",") {
			n = strings.TrimSpace(n)
			if n != "" {
				out[n] = true
			}
		}
	}
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
