package triton

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// Launches captured from the repository's own tests: the tests run under
// Triton's interpreter on the CPU with every kernel[grid](...) launch
// recorded (validators/harness/pallasify_harness/triton_capture.py), and a
// kernel's launches make its spec (spec source "tests"). A kernel the rules
// translate keeps its inferred spec and gets the captured sizes in front of
// its sweep (CapturedSizes); a kernel they refuse gets a spec of one
// captured launch as it happened (SpecFromCapture), so another drafter can
// draft it against the same interpreter reference.

// CapturedLaunch is one launch a test made under the interpreter.
type CapturedLaunch struct {
	Kernel string `json:"kernel"`
	// Module is the dotted module the kernel was defined in.
	Module string `json:"module"`
	// Test is the pytest node id of the test that made it.
	Test string  `json:"test"`
	Grid []int64 `json:"grid"`
	// Order is the runtime (non-constexpr) parameters in signature order.
	Order      []string               `json:"order"`
	Args       map[string]CapturedArg `json:"args"`
	Constexprs map[string]CapturedArg `json:"constexprs"`
	// OK: the interpreter finished the launch; else Error says why not.
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// CapturedArg is one runtime argument of a launch: a tensor by shape, dtype,
// strides and storage extent (elements from its first to its last one),
// whether the launch wrote it and, for integers, its value range; or a
// scalar's value.
type CapturedArg struct {
	Tensor     bool
	Shape      []int64
	DType      string
	Strides    []int64
	Contiguous bool
	Extent     int64
	Written    bool
	Min, Max   *int64
	// Scalar is a scalar's Python type (bool, int, float, str, none,
	// other: its repr) and Value its value.
	Scalar string
	Value  any
}

// UnmarshalJSON reads a tensor's description (an object) or a scalar.
func (a *CapturedArg) UnmarshalJSON(b []byte) error {
	var t struct {
		Tensor     bool    `json:"tensor"`
		Shape      []int64 `json:"shape"`
		DType      string  `json:"dtype"`
		Strides    []int64 `json:"strides"`
		Contiguous bool    `json:"contiguous"`
		Extent     int64   `json:"extent"`
		Written    bool    `json:"written"`
		Min        *int64  `json:"min"`
		Max        *int64  `json:"max"`
		Scalar     string  `json:"scalar"`
		Value      any     `json:"value"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return err
	}
	*a = CapturedArg{Tensor: t.Tensor, Shape: t.Shape, DType: t.DType, Strides: t.Strides, Contiguous: t.Contiguous,
		Extent: t.Extent, Written: t.Written, Min: t.Min, Max: t.Max, Scalar: t.Scalar, Value: t.Value}
	return nil
}

// elements is the number of elements of a tensor argument.
func (a CapturedArg) elements() int64 {
	n := int64(1)
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

// maxCapturedElements bounds the tensors of a captured launch the
// validation replays (its sizes run through the Pallas interpreter too).
const maxCapturedElements = 1 << 20

// work is a launch's largest tensor, in elements.
func (l CapturedLaunch) work() int64 {
	var w int64
	for _, a := range l.Args {
		if a.Tensor && a.elements() > w {
			w = a.elements()
		}
	}
	return w
}

// ForKernel splits the launches of k (its name, in a module whose dotted
// path ends k's file) into the finished ones, smallest first (the spec
// takes the first), and the ones the interpreter did not finish.
func ForKernel(ls []CapturedLaunch, k *Kernel) (ok, failed []CapturedLaunch) {
	file := strings.ReplaceAll(strings.TrimSuffix(k.Path, ".py"), "/", ".")
	for _, l := range ls {
		if l.Kernel != k.Name || (l.Module != "" && file != l.Module && !strings.HasSuffix(file, "."+l.Module)) {
			continue
		}
		if l.OK {
			ok = append(ok, l)
		} else {
			failed = append(failed, l)
		}
	}
	sort.SliceStable(ok, func(i, j int) bool { return ok[i].work() < ok[j].work() })
	return ok, failed
}

// CapturedSizes reads the size symbols of an inferred spec off captured
// launches (the inputs call.Symbols names, at their axes), keeping the
// launches the spec describes exactly: every pointer's shape, every size
// parameter's value and every literal constexpr of the call (a specialized
// flag) as captured, float32 tensors, at most maxCapturedElements each. It
// returns the distinct assignments, in launch order, and why the others
// were left out.
func CapturedSizes(spec *kernels.Spec, call Call, ls []CapturedLaunch) ([]map[string]int64, []string) {
	var sizes []map[string]int64
	var skipped []string
	seen := map[string]bool{}
	for _, l := range ls {
		env, why := sizesOf(spec, call, l)
		if why != "" {
			skipped = append(skipped, why)
			continue
		}
		key := fmt.Sprint(env)
		if !seen[key] {
			seen[key] = true
			sizes = append(sizes, env)
		}
	}
	return sizes, skipped
}

func sizesOf(spec *kernels.Spec, call Call, l CapturedLaunch) (map[string]int64, string) {
	env := map[string]int64{}
	for _, sym := range sortedKeys(call.Symbols) {
		r := call.Symbols[sym]
		a, ok := l.Args[r.Param]
		if !ok || !a.Tensor || r.Axis >= len(a.Shape) {
			return nil, fmt.Sprintf("%s: no axis %d of %s", l.Test, r.Axis, r.Param)
		}
		div := int64(r.Div)
		if div <= 1 {
			div = 1
		}
		env[sym] = a.Shape[r.Axis] / div
	}
	for _, p := range spec.Params {
		a, ok := l.Args[p.Name]
		if !ok {
			return nil, fmt.Sprintf("%s: no argument %s", l.Test, p.Name)
		}
		switch {
		case p.Kind == "pointer":
			if !a.Tensor || a.DType != p.DType || !a.Contiguous || len(a.Shape) != len(p.Shape) {
				return nil, fmt.Sprintf("%s: %s is %s %v (contiguous %v), the spec has %s %v", l.Test, p.Name, a.DType, a.Shape,
					a.Contiguous, p.DType, p.Shape)
			}
			if a.elements() > maxCapturedElements {
				return nil, fmt.Sprintf("%s: %s has %d elements (more than %d)", l.Test, p.Name, a.elements(), maxCapturedElements)
			}
			for i, e := range p.Shape {
				if v, ok := evalSize(e, env); !ok || v != a.Shape[i] {
					return nil, fmt.Sprintf("%s: %s is %v, the spec's %v", l.Test, p.Name, a.Shape, p.Shape)
				}
			}
		case p.Role == "size":
			v, ok := evalSize(p.Expr, env)
			if got, isNum := number(a.Value); !ok || !isNum || a.Scalar != "int" || got != float64(v) {
				return nil, fmt.Sprintf("%s: %s = %v, the spec's %s = %d", l.Test, p.Name, a.Value, p.Expr, v)
			}
		}
	}
	for name, expr := range call.Constexprs {
		if lit, ok := literal(expr); ok {
			if got, ok := l.Constexprs[name]; ok && fmt.Sprint(got.Value) != lit {
				return nil, fmt.Sprintf("%s: %s = %v, the draft is specialized on %s", l.Test, name, got.Value, expr)
			}
		}
	}
	return env, ""
}

// evalSize evaluates a shape or size expression of the inferred specs: a
// number, a symbol, or "<k> * <symbol>".
func evalSize(e string, env map[string]int64) (int64, bool) {
	e = strings.TrimSpace(e)
	if v, err := strconv.ParseInt(e, 10, 64); err == nil {
		return v, true
	}
	if v, ok := env[e]; ok {
		return v, true
	}
	if l, r, ok := strings.Cut(e, "*"); ok {
		a, okA := evalSize(l, env)
		b, okB := evalSize(r, env)
		return a * b, okA && okB
	}
	return 0, false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// literal is a constexpr expression that is a literal (a number, True,
// False), as Python's JSON prints it back.
func literal(expr string) (string, bool) {
	switch expr {
	case "True":
		return "true", true
	case "False":
		return "false", true
	}
	if _, err := strconv.ParseFloat(expr, 64); err == nil {
		return expr, true
	}
	return "", false
}

// SpecFromCapture is the spec of one captured launch of k as it happened
// (the first of ls, the smallest) and the kernel-mode call that replays it
// on the isolated kernel: every tensor at its captured shape and dtype (one
// that is not contiguous as a flat buffer of its extent, addressed through
// its captured strides), written ones inout, integer inputs drawn within
// their captured range, scalars fixed at their captured values, the grid
// and constexprs as captured.
func SpecFromCapture(inv *Inventory, k *Kernel, ls []CapturedLaunch) (*kernels.Spec, Call, error) {
	if len(ls) == 0 {
		return nil, Call{}, fmt.Errorf("no finished launch of %s was captured", k.Name)
	}
	l := ls[0]
	grid := [3]string{"1", "1", "1"}
	call := Call{Module: isolatedModule(k), Entry: k.Name, Mode: "kernel", Constexprs: map[string]string{}}
	for i, g := range l.Grid {
		if i < 3 {
			grid[i] = strconv.FormatInt(g, 10)
		}
		call.Grid = append(call.Grid, strconv.FormatInt(g, 10))
	}
	s := &kernels.Spec{Schema: kernels.SpecSchema, ID: kernels.KernelID(k.Path, k.Name), Name: k.Name,
		Source: kernels.SpecSource{Path: k.Path, Line: k.Line, Origin: kernels.OriginTriton}, Deterministic: true,
		Class: kernels.ClassOther, Launch: kernels.Launch{Grid: grid, Block: [3]string{"1", "1", "1"}, SharedBytes: "0"}}
	for _, name := range l.Order {
		a := l.Args[name]
		call.Args = append(call.Args, name)
		if !a.Tensor {
			p, err := capturedScalar(name, a)
			if err != nil {
				return nil, Call{}, err
			}
			s.Params = append(s.Params, p)
			continue
		}
		p := kernels.Param{Name: name, Kind: "pointer", CType: "tl.pointer_type(tl." + a.DType + ")", DType: a.DType, Role: "input"}
		if a.Contiguous {
			for _, d := range a.Shape {
				p.Shape = append(p.Shape, strconv.FormatInt(d, 10))
			}
		} else {
			p.Shape = []string{strconv.FormatInt(a.Extent, 10)}
		}
		if len(p.Shape) == 0 {
			p.Shape = []string{"1"}
		}
		if a.Written {
			p.Role = "inout"
			call.Returns = append(call.Returns, name)
		}
		if a.Min != nil && a.Max != nil && !a.Written {
			p.IntRange = []int64{*a.Min, *a.Max + 1}
		}
		s.Params = append(s.Params, p)
	}
	for _, name := range sortedKeys(l.Constexprs) {
		v, err := pyLiteral(l.Constexprs[name])
		if err != nil {
			return nil, Call{}, fmt.Errorf("constexpr %s of %s: %w", name, k.Name, err)
		}
		call.Constexprs[name] = v
	}
	if len(call.Returns) == 0 {
		return nil, Call{}, fmt.Errorf("the captured launch of %s (%s) wrote no tensor", k.Name, l.Test)
	}
	from := "captured from the repository's tests"
	if strings.HasPrefix(l.Test, DrivePrefix) {
		from = "captured by driving its launcher without tests"
	}
	s.Note = fmt.Sprintf("%s: %s's launch in %s, grid %v, constexprs %s (%d finished launch(es) captured)",
		from, k.Name, l.Test, l.Grid, constexprList(call.Constexprs), len(ls))
	call.Files = Isolate(inv, k)
	return s, call, nil
}

// capturedScalar is a scalar argument fixed at its captured value, typed
// as Triton types it at a launch: an int as int32 (int64 past its range), a
// float as float32, a flag as int32 0 or 1.
func capturedScalar(name string, a CapturedArg) (kernels.Param, error) {
	p := kernels.Param{Name: name, Kind: "scalar", Role: "scalar"}
	v, isNum := number(a.Value)
	if !isNum {
		return p, fmt.Errorf("argument %s: a captured %s (%v) is not a number", name, a.Scalar, a.Value)
	}
	p.Value = &v
	switch a.Scalar {
	case "float":
		p.CType, p.DType = "float", "float32"
	case "int":
		p.CType, p.DType = "int", "int32"
		if v < math.MinInt32 || v > math.MaxInt32 {
			p.CType, p.DType = "long long", "int64"
		}
	case "bool":
		p.CType, p.DType = "int", "int32"
	default:
		return p, fmt.Errorf("argument %s: a captured %s is not a scalar type", name, a.Scalar)
	}
	return p, nil
}

// pyLiteral is a captured constexpr value as a Python expression.
func pyLiteral(a CapturedArg) (string, error) {
	switch x := a.Value.(type) {
	case nil:
		return "None", nil
	case bool:
		if x {
			return "True", nil
		}
		return "False", nil
	case float64:
		if a.Scalar == "int" {
			return strconv.FormatInt(int64(x), 10), nil
		}
		f := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(f, ".eEn") {
			f += ".0"
		}
		return f, nil
	case string:
		b, _ := json.Marshal(x)
		return string(b), nil
	}
	return "", fmt.Errorf("a captured %s is no Python literal", a.Scalar)
}

// TestRun asks for a tree's Triton launches from its own tests
// (validators.TritonTests runs it in the sandbox).
type TestRun struct {
	// Files are the tree's Python files by slash path: the tests, the
	// wrappers and what they import.
	Files map[string][]byte
	// Tests are the test files to run, in order.
	Tests []string
	// ImportRoots are the tree's directories put on sys.path ("" the root,
	// "src" for a src layout); Packages the tree's top-level packages the
	// tests import (their absent modules get stand-ins).
	ImportRoots, Packages []string
	// MaxLaunches bounds the launches recorded per kernel (default 4).
	MaxLaunches int
	// PerTest, PerFile and Wall bound one test, one file's tests and the run.
	PerTest, PerFile, Wall time.Duration
	Python                 string
	NoSandbox              bool
}

// TestFile is how one test file's run ended: pytest's exit code and
// counts ("standin": passed, having called a stand-in), its first error.
type TestFile struct {
	File    string  `json:"file"`
	Exit    int     `json:"exit"`
	Passed  int     `json:"passed"`
	Failed  int     `json:"failed"`
	Skipped int     `json:"skipped"`
	Standin int     `json:"standin"`
	Error   string  `json:"error"`
	Seconds float64 `json:"seconds"`
}

// Probe is one backward probe: an autograd.Function called again with
// gradients on and differentiated.
type Probe struct {
	Function string `json:"function"`
	OK       bool   `json:"ok"`
	Error    string `json:"error,omitempty"`
}

// TestResult is what a TestRun recorded (pallasify.triton-capture/v1).
type TestResult struct {
	Tests    []TestFile       `json:"tests"`
	Launches []CapturedLaunch `json:"launches"`
	Probes   []Probe          `json:"probes"`
	StandIns []string         `json:"standins"`
	Error    string           `json:"error"`
}

// TestRunner runs a TestRun. Digest names its version (the harness), for
// the capture cache.
type TestRunner interface {
	RunTests(ctx context.Context, req TestRun) (*TestResult, error)
	Digest() string
}
