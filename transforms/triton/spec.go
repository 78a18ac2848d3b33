package triton

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// Call says how the Triton reference (validators/harness/pallasify_harness/
// triton_ref.py) runs a kernel under Triton's interpreter. Mode "call" and
// "backward" go through the repository's own wrapper; mode "kernel" launches
// the kernel itself from a spec: Grid and Constexprs are Python expressions
// of the size symbols, Symbols read each symbol off an input's shape, Alloc
// gives the outputs the reference allocates (poisoned with NaN).
type Call struct {
	// Module is the dotted module holding Entry.
	Module string `json:"module"`
	// File is a fixture's module source relative to the fixture directory
	// (default kernel.py); not sent to the harness.
	File string `json:"file,omitempty"`
	// Entry is the wrapper ("softmax", "RMSNormFunction.apply") or, in
	// kernel mode, the kernel.
	Entry       string   `json:"entry"`
	Mode        string   `json:"mode"`
	Args        []string `json:"args"`
	Returns     []string `json:"returns"`
	GradOf      []string `json:"grad_of,omitempty"`
	GradOutputs []string `json:"grad_outputs,omitempty"`
	// Kernel mode.
	Grid       []string          `json:"grid,omitempty"`
	Constexprs map[string]string `json:"constexprs,omitempty"`
	Symbols    map[string]SymRef `json:"symbols,omitempty"`
	Alloc      map[string]Buffer `json:"alloc,omitempty"`
	// Files are the Python sources the module needs, by path relative to the
	// import root.
	Files map[string]string `json:"files,omitempty"`
}

// SymRef reads a size symbol off an input: its shape's Axis.
type SymRef struct {
	Param string `json:"param"`
	Axis  int    `json:"axis"`
	// Div divides the dimension (a row of two halves of cols: 2); 0 or 1
	// reads it as it is.
	Div int `json:"div,omitempty"`
}

// Buffer is an output the kernel-mode reference allocates.
type Buffer struct {
	Shape []string `json:"shape"`
	DType string   `json:"dtype"`
}

// Check reports a call that cannot work with spec.
func (c Call) Check(spec *kernels.Spec) error {
	if c.Module == "" || c.Entry == "" {
		return errors.New("triton call: module and entry are required")
	}
	roles := map[string]string{}
	for _, p := range spec.Params {
		roles[p.Name] = p.Role
	}
	if c.Mode == "kernel" {
		for _, a := range c.Args {
			if _, ok := roles[a]; !ok {
				return fmt.Errorf("triton call: kernel argument %q is not in the spec", a)
			}
		}
		for name := range c.Alloc {
			if roles[name] != "output" {
				return fmt.Errorf("triton call: allocated %q is not an output of the spec", name)
			}
		}
		if len(c.Grid) == 0 {
			return errors.New("triton call: kernel mode needs a grid")
		}
		return nil
	}
	for _, a := range append(append([]string(nil), c.Args...), c.GradOutputs...) {
		if r, ok := roles[a]; !ok || r == "output" {
			return fmt.Errorf("triton call: argument %q is not an input or scalar of the spec", a)
		}
	}
	for _, r := range c.Returns {
		if r != "" && roles[r] != "output" && roles[r] != "inout" {
			return fmt.Errorf("triton call: return %q is not an output of the spec", r)
		}
	}
	switch c.Mode {
	case "call", "":
	case "backward":
		if len(c.GradOf) != len(c.Returns) || len(c.GradOutputs) == 0 {
			return errors.New("triton call: backward needs grad_outputs and one return per grad_of")
		}
	default:
		return fmt.Errorf("triton call: unknown mode %q", c.Mode)
	}
	return nil
}

// Row and flat sweeps: awkward sizes (not multiples of 8 × 128), a block
// boundary, and one shape with more rows than a row block holds.
var (
	rowSweep  = []map[string]int64{{"rows": 2, "cols": 3}, {"rows": 3, "cols": 31}, {"rows": 7, "cols": 257}, {"rows": 5, "cols": 1000}, {"rows": 130, "cols": 97}}
	flatSweep = []map[string]int64{{"n": 1}, {"n": 127}, {"n": 1025}, {"n": 3001}, {"n": 70001}}
)

// Spec infers the kernel-level KernelSpec of an analysed kernel and the
// kernel-mode call that runs the original under the interpreter: pointer
// shapes from the access pattern, sizes from the strides and mask bound,
// float scalars drawn from [0.5, 2].
func Spec(a *Analysis) (*kernels.Spec, Call, error) {
	k := a.Kernel
	s := &kernels.Spec{Schema: kernels.SpecSchema, ID: kernels.KernelID(k.Path, k.Name), Name: k.Name,
		Source: kernels.SpecSource{Path: k.Path, Line: k.Line, Origin: kernels.OriginTriton}, Deterministic: true,
		Launch: kernels.Launch{Grid: [3]string{"rows", "1", "1"}, Block: [3]string{"1", "1", "1"}, SharedBytes: "0"}}
	call := Call{Module: isolatedModule(k), Entry: k.Name, Mode: "kernel", Grid: []string{"rows"},
		Constexprs: a.Constexprs, Symbols: map[string]SymRef{}, Alloc: map[string]Buffer{}}
	shapes := map[string][]string{access2D: {"rows", "cols"}, accessCol: {"cols"}, accessRow: {"rows"}, accessFlat: {"n"},
		accessOne: {"1"}}
	if a.Mode == ModeRow {
		s.Symbols = []string{"rows", "cols"}
		s.Domain = kernels.Domain{Constraints: []string{"rows >= 1", "cols >= 2"}, Sweep: rowSweep}
		s.Class = kernels.ClassElementwise
		if a.Reductions > 0 {
			s.Class, s.ReductionLength = kernels.ClassRowReduction, "cols"
		}
		if a.ColumnTiles {
			g := []string{"1", "1"}
			g[a.RowAxis] = "rows"
			g[a.TileAxis] = "cdiv(cols, " + a.Constexprs[a.Block] + ")"
			call.Grid = g
		}
	} else {
		s.Symbols = []string{"n"}
		s.Domain = kernels.Domain{Constraints: []string{"n >= 1"}, Sweep: flatSweep}
		s.Class = kernels.ClassElementwise
		block := a.Constexprs[a.Block]
		s.Launch.Grid = [3]string{fmt.Sprintf("(n + %s - 1) / %s", block, block), "1", "1"}
		call.Grid = []string{fmt.Sprintf("cdiv(n, %s)", block)}
	}
	ptrs := map[string]PtrParam{}
	for _, p := range a.Ptrs {
		ptrs[p.Name] = p
	}
	for _, p := range k.Params {
		if p.Constexpr {
			continue
		}
		call.Args = append(call.Args, p.Name)
		if pp, ok := ptrs[p.Name]; ok {
			sp := kernels.Param{Name: p.Name, Kind: "pointer", CType: "tl.pointer_type(tl.float32)", DType: "float32",
				Role: pp.Role(), Shape: shapes[pp.Access]}
			if pp.Segs > 0 { // a row in two halves of cols
				sp.Shape = []string{"rows", fmt.Sprintf("%d * cols", pp.Segs)}
			}
			s.Params = append(s.Params, sp)
			if pp.Stored {
				call.Returns = append(call.Returns, p.Name)
			}
			if pp.Role() == "output" {
				call.Alloc[p.Name] = Buffer{Shape: sp.Shape, DType: "float32"}
			} else {
				for axis, sym := range sp.Shape {
					div := 1
					if pp.Segs > 0 && axis == 1 {
						sym, div = "cols", pp.Segs
					}
					if r, ok := call.Symbols[sym]; !ok || r.Div > 1 && div == 1 {
						call.Symbols[sym] = SymRef{Param: p.Name, Axis: axis, Div: div}
					}
				}
			}
			continue
		}
		if v, ok := a.Sizes[p.Name]; ok {
			if a.Mode == ModeFlat && v == "cols" {
				v = "n"
			}
			s.Params = append(s.Params, kernels.Param{Name: p.Name, Kind: "scalar", CType: "int", DType: "int32", Role: "size", Expr: v})
			continue
		}
		s.Params = append(s.Params, kernels.Param{Name: p.Name, Kind: "scalar", CType: "float", DType: "float32",
			Role: "scalar", Range: []float64{0.5, 2.0}})
	}
	for _, sym := range s.Symbols {
		if _, ok := call.Symbols[sym]; !ok {
			return nil, Call{}, refuse(CodeShape, "no input of %s has the size %s in its shape", k.Name, sym)
		}
	}
	s.Note = fmt.Sprintf("inferred by pallasify's Triton rules from %s's accesses (%s mode); constexprs %s",
		k.Name, a.Mode, constexprList(a.Constexprs))
	if len(a.Specialized) > 0 {
		s.Note += "; specialized on " + constexprList(a.Specialized) + " (the launch computes them; the wiring checks them)"
	}
	return s, call, nil
}

func constexprList(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func isolatedModule(k *Kernel) string {
	return "triton_unit_" + regexp.MustCompile(`[^A-Za-z0-9_]`).ReplaceAllString(k.Name, "_")
}

var importRe = regexp.MustCompile(`^\s*(from\s+(triton[\w.]*)\s+import\s+(.+?)|import\s+(triton[\w.]*)(\s+as\s+\w+)?)\s*(#.*)?$`)

// Isolate builds the standalone module kernel mode imports: the file's
// triton imports (the first binding of each name, taken out of if/try
// blocks), its literal module constants, and every @triton.jit function of
// the file with its Triton decorators reduced to @triton.jit (constexpr
// values come from the spec, not from autotune configs).
func Isolate(inv *Inventory, k *Kernel) map[string]string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Isolated by pallasify from %s: the Triton kernels of the file and what they need.\n", k.Path)
	b.WriteString("import triton\nimport triton.language as tl\n")
	bound := map[string]bool{"triton": true, "tl": true}
	for _, line := range strings.Split(string(inv.Files[k.Path]), "\n") {
		m := importRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		names := []string{}
		if m[2] != "" {
			for _, n := range strings.Split(strings.Trim(m[3], "() "), ",") {
				f := strings.Fields(n)
				if len(f) > 0 {
					names = append(names, f[len(f)-1])
				}
			}
		} else if m[5] != "" {
			names = append(names, strings.Fields(m[5])[1])
		} else {
			names = append(names, strings.Split(m[4], ".")[0])
		}
		fresh := false
		for _, n := range names {
			if !bound[n] {
				fresh = true
			}
		}
		if !fresh {
			continue
		}
		for _, n := range names {
			bound[n] = true
		}
		b.WriteString(strings.TrimSpace(m[1]) + "\n")
	}
	consts := moduleConstants(inv, k)
	for _, name := range sortedKeys(consts) {
		fmt.Fprintf(&b, "%s = %s\n", name, consts[name])
	}
	for _, o := range inv.Kernels {
		if o.Path == k.Path {
			fmt.Fprintf(&b, "\n\n@triton.jit\n%s\n", o.Source)
		}
	}
	return map[string]string{isolatedModule(k) + ".py": b.String()}
}
