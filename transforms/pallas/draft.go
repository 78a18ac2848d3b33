// Package pallas drafts TPU-style Pallas kernels from CUDA kernels by rule:
// it classifies an isolated kernel by structure, translates its CUDA AST to
// jnp array code with C semantics (float32 math library, truncating integer
// division, predicated branches), lays the data out in lane-dense blocks and
// emits a candidate module (def run(args, *, interpret) -> dict) for the
// validator. Anything it cannot translate exactly is refused with a coded
// reason (the PPL family); it never guesses.
package pallas

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Drafter names recorded with a draft.
const DrafterRules = "rules"

// Result is one rule draft: the candidate module's source and what the
// translation had to say about it.
type Result struct {
	Kernel string // kernel id
	Class  string // the structural class the draft was made for
	// Module is the candidate module (validators/CONTRACTS.md).
	Module string
	// Notes are translation remarks (e.g. fast-math intrinsics taken as
	// their accurate counterparts); the validator decides if they matter.
	Notes []string
}

// Options tune the drafter.
type Options struct {
	// Mutate, when set, rewrites the generated module before it is returned.
	// It exists for tests that must show a broken translation is never wired
	// in; production code leaves it nil.
	Mutate func(module string) string
}

// Draft drafts a Pallas candidate for k by rule, or returns a *Refusal.
func Draft(ctx context.Context, k *kernels.Kernel, opt Options) (res *Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, refuse(CodeInternal, "the drafter failed on this kernel (%v); please report it", p)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k.Spec == nil {
		return nil, refuse(CodeNoSpec, "no KernelSpec (%s): write %s", k.Reason, kernels.UserSpecPath(k.ID))
	}
	class := k.Class
	if k.Spec.Class != "" {
		class = k.Spec.Class
	}
	switch class {
	case kernels.ClassElementwise, kernels.ClassRowReduction:
	default:
		return nil, refuse(CodeClass, "class %s has no rule template (elementwise and row-reduction only); an LLM draft may help", class)
	}
	u, err := parseUnit(ctx, k)
	if err != nil {
		return nil, err
	}
	if u.tree.ErrorCount() > 0 {
		u.close()
		return nil, refuse(CodeUnsupported, "the kernel's isolated unit does not parse cleanly after preprocessing")
	}
	defer u.close()
	body, t, err := translate(k, u, class, nil)
	if _, refused := AsRefusal(err); refused || wholeBodySplit(u, k.Spec) != "" {
		// a whole-body helper's bool is split first: a ?: on it may give the
		// domain's extent, which run() needs as a number, not a traced value
		if p := splitParam(u, k.Spec); p != "" {
			if b, tt, ok := splitDraft(k, u, class, p); ok {
				body, t, err = b, tt, nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if h := usedHelpers(body); h != "" {
		body += "\n\n" + h + "\n"
	}
	mod := header(k, class, t.notes) + moduleImports(body) + "\n\n\n" + body
	mod = FormatPython(ctx, mod)
	if opt.Mutate != nil {
		mod = opt.Mutate(mod)
	}
	return &Result{Kernel: k.ID, Class: class, Module: mod, Notes: t.notes}, nil
}

// translate translates the kernel body in class's mode into the module's
// kernel and run() (helpers not yet appended); pins fixes bool parameters.
func translate(k *kernels.Kernel, u *unit, class string, pins map[string]bool) (string, *tr, error) {
	t := &tr{u: u, spec: k.Spec, params: map[string]*kernels.Param{}, path: truth(), alive: truth(), pins: pins}
	for i := range k.Spec.Params {
		t.params[k.Spec.Params[i].Name] = &k.Spec.Params[i]
	}
	t.env.push()
	var body string
	var err error
	switch class {
	case kernels.ClassElementwise:
		m := newEWMode()
		t.mode = m
		t.halfMath = true
		t.halfBits = true
		if err := t.block(u.kernel.ChildByFieldName("body")); err != nil {
			return "", t, err
		}
		body, err = m.generate(t, k)
	case kernels.ClassRowReduction:
		m := newRowMode()
		t.mode = m
		t.halfBits = true
		if err := m.prepare(t); err != nil {
			return "", t, err
		}
		if err := t.block(u.kernel.ChildByFieldName("body")); err != nil {
			return "", t, err
		}
		body, err = m.generate(t, k)
	}
	if err != nil {
		return "", t, err
	}
	if len(t.missing) > 0 {
		return "", t, refuse(CodeUnsupported, "size symbol %s cannot be read from the arguments", strings.Join(t.missing, ", "))
	}
	return body, t, nil
}

// splitParam is the bool scalar parameter a top-level `if (p) ... else ...`
// of the kernel body tests (mmcv's bbox_overlaps: `if (aligned)`), or the
// one a whole-body helper branches on (wholeBodySplit), or "".
func splitParam(u *unit, spec *kernels.Spec) string {
	for _, c := range ts.Children(u.kernel.ChildByFieldName("body")) {
		if c.Type() != "if_statement" || c.ChildByFieldName("alternative") == nil {
			continue
		}
		if name := u.text(strip(c.ChildByFieldName("condition"))); isBoolParam(spec, name) {
			return name
		}
	}
	return wholeBodySplit(u, spec)
}

// isBoolParam reports a bool scalar parameter of spec.
func isBoolParam(spec *kernels.Spec, name string) bool {
	for _, p := range spec.Params {
		if p.Name == name && p.Kind == "scalar" && p.DType == "bool" {
			return true
		}
	}
	return false
}

// wholeBodySplit is splitParam for a kernel whose body is one call of a
// void helper (mmcv's bbox_overlaps_cuda_kernel<at::Half>): a bool
// parameter of the kernel passed as it is to a helper parameter that is the
// condition of a ?: or an if/else there (aligned ? index : index / n).
func wholeBodySplit(u *unit, spec *kernels.Spec) string {
	body := u.kernel.ChildByFieldName("body")
	if body == nil || body.NamedChildCount() != 1 || body.NamedChild(0).Type() != "expression_statement" {
		return ""
	}
	call := strip(body.NamedChild(0).NamedChild(0))
	if call == nil || call.Type() != "call_expression" {
		return ""
	}
	fn, ok := u.funcs[u.text(call.ChildByFieldName("function"))]
	if !ok {
		return ""
	}
	decl := fn.ChildByFieldName("declarator")
	for decl != nil && decl.Type() != "function_declarator" {
		decl = decl.ChildByFieldName("declarator")
	}
	if decl == nil {
		return ""
	}
	var params []string
	for _, p := range ts.Children(decl.ChildByFieldName("parameters")) {
		if p.Type() == "parameter_declaration" {
			params = append(params, declName(p.ChildByFieldName("declarator"), u))
		}
	}
	conds := map[string]bool{}
	var walk func(n *ts.Node)
	walk = func(n *ts.Node) {
		switch n.Type() {
		case "conditional_expression":
			conds[u.text(strip(n.ChildByFieldName("condition")))] = true
		case "if_statement":
			if n.ChildByFieldName("alternative") != nil {
				conds[u.text(strip(n.ChildByFieldName("condition")))] = true
			}
		}
		for _, c := range ts.Children(n) {
			walk(c)
		}
	}
	walk(fn.ChildByFieldName("body"))
	args := ts.Children(call.ChildByFieldName("arguments"))
	for i, a := range args {
		if name := u.text(strip(a)); i < len(params) && isBoolParam(spec, name) && conds[params[i]] {
			return name
		}
	}
	return ""
}

// splitDraft drafts the kernel once per value of the bool parameter p (each
// translation takes only its branch, as for a NULL test) and joins them
// under one run() that picks the draft by the value the call passes: both
// branches are code, neither is guessed. ok is false when either value's
// draft is refused.
func splitDraft(k *kernels.Kernel, u *unit, class, p string) (string, *tr, bool) {
	var parts []string
	var last *tr
	for _, v := range []bool{true, false} {
		body, t, err := translate(k, u, class, map[string]bool{p: v})
		if err != nil {
			return "", nil, false
		}
		suffix := "_" + p
		if !v {
			suffix = "_not_" + p
		}
		body = reKernelName.ReplaceAllString(renameXLAForm(body, suffix), "_kernel"+suffix)
		body = strings.Replace(body, "\ndef run(args, *, interpret):", "\ndef _run"+suffix+"(args, *, interpret):", 1)
		parts = append(parts, strings.TrimRight(body, "\n"))
		last = t
	}
	run := fmt.Sprintf("def run(args, *, interpret):\n    if args[%q]:\n        return _run_%s(args, interpret=interpret)\n    return _run_not_%s(args, interpret=interpret)\n", p, p, p)
	return strings.Join(parts, "\n\n\n") + "\n\n\n" + run, last, true
}

var reKernelName = regexp.MustCompile(`\b_kernel\b`)

func header(k *kernels.Kernel, class string, notes []string) string {
	var b strings.Builder
	b.WriteString(`"""` + WrapText(fmt.Sprintf("Pallas TPU draft of CUDA kernel %s (%s:%d), drafted by pallasify rules (%s).",
		k.Name, k.Path, k.Line, class), maxLine-3))
	for _, n := range notes {
		b.WriteString("\n" + WrapText("Note: "+n+".", maxLine))
	}
	b.WriteString(`"""` + "\n")
	return b.String()
}
