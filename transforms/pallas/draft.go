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
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
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
	t := &tr{u: u, spec: k.Spec, params: map[string]*kernels.Param{}, path: truth(), alive: truth()}
	for i := range k.Spec.Params {
		t.params[k.Spec.Params[i].Name] = &k.Spec.Params[i]
	}
	t.env.push()
	var body string
	switch class {
	case kernels.ClassElementwise:
		m := newEWMode()
		t.mode = m
		if err := t.block(u.kernel.ChildByFieldName("body")); err != nil {
			return nil, err
		}
		body, err = m.generate(t, k)
	case kernels.ClassRowReduction:
		m := newRowMode()
		t.mode = m
		if err := m.prepare(t); err != nil {
			return nil, err
		}
		if err := t.block(u.kernel.ChildByFieldName("body")); err != nil {
			return nil, err
		}
		body, err = m.generate(t, k)
	}
	if err != nil {
		return nil, err
	}
	if len(t.missing) > 0 {
		return nil, refuse(CodeUnsupported, "size symbol %s cannot be read from the arguments", strings.Join(t.missing, ", "))
	}
	mod := header(k, class, t.notes) + moduleImports(body) + "\n\n\n" + body
	mod = formatPython(ctx, mod)
	if opt.Mutate != nil {
		mod = opt.Mutate(mod)
	}
	return &Result{Kernel: k.ID, Class: class, Module: mod, Notes: t.notes}, nil
}

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
