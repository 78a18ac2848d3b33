package pallas

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// ValidatedCase is one case the validator proved: the size symbols and the
// values the harness gave the kernel's scalar parameters.
type ValidatedCase struct {
	Sizes   map[string]int64
	Scalars map[string]float64
}

// ChipCompile is one chip's outcome of the validator's TPU compile gate
// (validators.ChipCompile), as the generated module's header records it.
type ChipCompile struct {
	Compiled bool
	Error    string
	// Sizes is the validated case the numbers below are for.
	Sizes         map[string]int64
	BytesAccessed float64
	RooflineS     float64
}

// maxLine is the longest line wiring writes into a user's Python when it can
// choose (generated modules, rewritten call sites).
const maxLine = 100

// header is the generated kernel module's machine-readable record,
// PALLASIFY_KERNEL: which kernel it replaces, the jax_op-ready function and
// its parameters (tensors first, then static scalars), one validated case to
// call it with, and the TPU compile gate's outcome per chip when it ran.
func (p *plan) header() string {
	k := p.wk.Kernel
	var b strings.Builder
	w := func(key, val string) { fmt.Fprintf(&b, "    %s: %s,\n", pyStr(key), val) }
	b.WriteString("PALLASIFY_KERNEL = {\n")
	w("id", pyStr(k.ID))
	w("kernel", pyStr(k.Name))
	w("function", pyStr(p.jaxName()))
	w("tensors", pyStrList(p.paramNames(p.tensors)))
	w("static", pyStrList(p.paramNames(p.static)))
	ex, exCase := p.example()
	w("example", ex)
	if len(p.wk.TPU) > 0 {
		b.WriteString("    \"tpu\": {\n")
		chips := make([]string, 0, len(p.wk.TPU))
		for c := range p.wk.TPU {
			chips = append(chips, c)
		}
		sort.Strings(chips)
		for _, c := range chips {
			fmt.Fprintf(&b, "        %s: %s,\n", pyStr(c), chipRecord(p.wk.TPU[c], exCase))
		}
		b.WriteString("    },\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func (p *plan) paramNames(idx []int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, p.host.params[i].name)
	}
	return out
}

// exampleCase picks the validated case the header quotes: the one the TPU
// compile gate measured when there is one, else the largest.
func (p *plan) exampleCase() *ValidatedCase {
	cases := p.wk.Cases
	for _, cc := range p.wk.TPU {
		for i := range cases {
			if len(cc.Sizes) > 0 && sameSizes(cases[i].Sizes, cc.Sizes) {
				return &cases[i]
			}
		}
	}
	var best *ValidatedCase
	bestN := int64(-1)
	for i := range cases {
		n := int64(1)
		for _, v := range cases[i].Sizes {
			n *= max(v, 1)
		}
		if n > bestN {
			best, bestN = &cases[i], n
		}
	}
	return best
}

func sameSizes(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// example renders one validated case in the JAX function's terms: each
// tensor's shape and dtype (the kernel parameter it feeds, at the case's
// sizes) and each static scalar's value, with the case it renders. None
// when the validator reported no case or a shape cannot be evaluated.
func (p *plan) example() (string, *ValidatedCase) {
	c := p.exampleCase()
	if c == nil {
		return "None", nil
	}
	var items []string
	for _, hi := range p.tensors {
		written := slices.Contains(p.inplace, hi) // its shape is the output's
		prm := p.kernelParam(hi, func(q *kernels.Param) bool { return q.Kind == "pointer" && (q.Role != "output" || written) })
		if prm == nil && p.stageJax != "" && p.kernelParam(hi, func(*kernels.Param) bool { return true }) == nil {
			// a tensor of the host another of its kernels uses, this one
			// never reads: any array is the validated one
			items = append(items, fmt.Sprintf(`%s: {"shape": [1], "dtype": "float32"}`, pyStr(p.host.params[hi].name)))
			continue
		}
		if prm == nil {
			return "None", nil
		}
		var dims []string
		for _, d := range prm.Shape {
			e, err := kernels.ParseExpr(d)
			if err != nil {
				return "None", nil
			}
			v, err := e.Eval(c.Sizes)
			if err != nil {
				return "None", nil
			}
			dims = append(dims, strconv.FormatInt(v, 10))
		}
		items = append(items, fmt.Sprintf(`%s: {"shape": [%s], "dtype": %s}`,
			pyStr(p.host.params[hi].name), strings.Join(dims, ", "), pyStr(prm.DType)))
	}
	for _, hi := range p.static {
		hp := p.host.params[hi]
		v := 0.0 // a static the kernel never reads: any value is the validated one
		if b, ok := p.branchValue(hp.name); ok {
			v = b // the host's condition picks this kernel at it
		}
		if prm := p.kernelParam(hi, func(q *kernels.Param) bool { return q.Role == "scalar" || q.Role == "size" }); prm != nil {
			got, ok := c.Scalars[prm.Name]
			if !ok {
				return "None", nil
			}
			v = got
		}
		items = append(items, pyStr(hp.name)+": "+pyScalar(pyScalarType(hp.ctype), v))
	}
	one := "{" + strings.Join(items, ", ") + "}"
	if len(`    "example": `)+len(one)+1 <= maxLine {
		return one, c
	}
	return "{\n        " + strings.Join(items, ",\n        ") + ",\n    }", c
}

// kernelParam is the first kernel parameter fed from host parameter hi that
// ok accepts.
func (p *plan) kernelParam(hi int, ok func(*kernels.Param) bool) *kernels.Param {
	spec := p.wk.Kernel.Spec
	for i := range spec.Params {
		if p.host.args[i].param == hi && ok(&spec.Params[i]) {
			return &spec.Params[i]
		}
	}
	return nil
}

// chipRecord is one chip's entry under "tpu"; its numbers are for the
// example's sizes unless it names others.
func chipRecord(c ChipCompile, example *ValidatedCase) string {
	parts := []string{`"compiled": ` + pyBool(c.Compiled)}
	if len(c.Sizes) > 0 && (example == nil || !sameSizes(c.Sizes, example.Sizes)) {
		keys := make([]string, 0, len(c.Sizes))
		for k := range c.Sizes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var s []string
		for _, k := range keys {
			s = append(s, pyStr(k)+": "+strconv.FormatInt(c.Sizes[k], 10))
		}
		parts = append(parts, `"sizes": {`+strings.Join(s, ", ")+"}")
	}
	if c.Compiled {
		parts = append(parts, `"bytes_accessed": `+pyLiteralFloat(c.BytesAccessed),
			`"roofline_s": `+pyLiteralFloat(roundSig(c.RooflineS, 4)))
	} else if c.Error != "" {
		parts = append(parts, `"error": `+pyStr(c.Error))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// pyStr is a Python string literal (Go's quoted form is one: every escape it
// writes means the same in Python).
func pyStr(s string) string { return strconv.Quote(s) }

func pyStrList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = pyStr(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// pyLiteralFloat is a Python float literal; None for values a literal
// cannot hold.
func pyLiteralFloat(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return "None"
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// roundSig rounds v to n significant digits.
func roundSig(v float64, n int) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', n, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// pyScalar renders v as a literal of the Python type typ (float, int, bool).
func pyScalar(typ string, v float64) string {
	switch typ {
	case "bool":
		return pyBool(v != 0)
	case "int":
		return strconv.FormatInt(int64(v), 10)
	}
	return pyLiteralFloat(v)
}

// pyDef is a def line, its parameters wrapped onto one indented line when the
// whole would pass maxLine.
func pyDef(name string, params []string, ret string) string {
	one := fmt.Sprintf("def %s(%s) -> %s:", name, strings.Join(params, ", "), ret)
	if len(one) <= maxLine {
		return one
	}
	return fmt.Sprintf("def %s(\n    %s\n) -> %s:", name, strings.Join(params, ", "), ret)
}

// pyCall is `prefix(args)` at indent as ruff format writes it: its
// arguments wrapped onto one indented line when the whole would pass
// maxLine, one a line (with a trailing comma) when that line would too.
func pyCall(indent, prefix string, args []string) string {
	one := fmt.Sprintf("%s%s(%s)", indent, prefix, strings.Join(args, ", "))
	if len(one) <= maxLine {
		return one
	}
	return wrapCall(indent, prefix, args)
}

// wrapCall is pyCall's layout of a call that does not fit its line: the
// arguments on one indented line, or one a line where that is too long.
func wrapCall(indent, prefix string, args []string) string {
	in := indent + "    "
	if inner := in + strings.Join(args, ", "); len(inner) <= maxLine || len(args) < 2 {
		return fmt.Sprintf("%s%s(\n%s\n%s)", indent, prefix, inner, indent)
	}
	return fmt.Sprintf("%s%s(\n%s%s,\n%s)", indent, prefix, in, strings.Join(args, ",\n"+in), indent)
}
