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
	mod := header(k, class, t.notes) + prelude + "\n\n" + body
	if opt.Mutate != nil {
		mod = opt.Mutate(mod)
	}
	return &Result{Kernel: k.ID, Class: class, Module: mod, Notes: t.notes}, nil
}

func header(k *kernels.Kernel, class string, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\"\"\"Pallas TPU draft of CUDA kernel %s (%s:%d), drafted by pallasify rules (%s).\n", k.Name, k.Path, k.Line, class)
	for _, n := range notes {
		fmt.Fprintf(&b, "\nNote: %s.", n)
	}
	b.WriteString("\n\"\"\"\n")
	return b.String()
}

// prelude holds the helpers every draft uses: C integer semantics, casts and
// the lane-dense layout.
const prelude = `import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _round_up(v, m):
    return (v + m - 1) // m * m


def _c_div(a, b, dt):
    """C integer division (truncates toward zero)."""
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    a, b = jnp.broadcast_arrays(jnp.asarray(a, dt), jnp.asarray(b, dt))
    return lax.div(a, b)


def _c_rem(a, b, dt):
    """C remainder (takes the sign of the dividend)."""
    if isinstance(a, int) and isinstance(b, int):
        return a - _c_div(a, b, dt) * b
    a, b = jnp.broadcast_arrays(jnp.asarray(a, dt), jnp.asarray(b, dt))
    return lax.rem(a, b)


def _cast(x, dt):
    return jnp.asarray(x).astype(dt)


def _fill(v, ref):
    return jnp.broadcast_to(jnp.asarray(v).astype(ref.dtype), ref.shape)


def _layout(n, sub):
    """Lane-dense layout of n elements: (lanes, block rows, padded rows)."""
    lanes = 512 if n >= 512 * 64 else 128
    rows = pl.cdiv(n, lanes)
    br = min(_round_up(rows, sub), 64 if lanes == 512 else 256)
    br = _round_up(br, sub)
    return lanes, br, _round_up(rows, br)


def _blocked(a, dp, lanes):
    flat = a.reshape(-1)
    return jnp.pad(flat, (0, dp - flat.shape[0])).reshape(dp // lanes, lanes)


def _gather(a, idx, dp, lanes):
    idx = jnp.broadcast_to(jnp.asarray(idx, jnp.int32), (dp,))
    return jnp.take(a.reshape(-1), idx, mode="clip").reshape(dp // lanes, lanes)


def _unblock(o, n, shape, dt):
    return o.reshape(-1)[:n].reshape(shape).astype(dt)


def _scatter(base, idx, mask, o, d, n):
    dp = d.shape[0]
    idx = jnp.broadcast_to(jnp.asarray(idx, jnp.int32), (dp,))
    keep = jnp.logical_and(jnp.broadcast_to(jnp.asarray(mask), (dp,)), d < n)
    return base.at[jnp.where(keep, idx, base.shape[0])].set(o.reshape(-1).astype(base.dtype), mode="drop")
`
