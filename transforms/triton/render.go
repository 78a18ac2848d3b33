package triton

import (
	"fmt"
	"strings"
)

// TPU block rules the rendered module follows: the last two dims of a block
// are multiples of (8, 128) or the whole array; row blocks keep the
// double-buffered tiles within about 12 MiB of VMEM.
const (
	lanes      = 128
	vmemBudget = 12 << 20
)

const prelude = `import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _round_up(v, m):
    return (v + m - 1) // m * m


def _next_pow2(v):
    return 1 if v <= 1 else 1 << (v - 1).bit_length()


def _sigmoid(v):
    return 1.0 / (1.0 + jnp.exp(-v))


# tl.maximum / tl.minimum do not propagate NaN (the other operand wins).
def _fmax(a, b):
    return jnp.where(a != a, b, jnp.where(b != b, a, jnp.maximum(a, b)))


def _fmin(a, b):
    return jnp.where(a != a, b, jnp.where(b != b, a, jnp.minimum(a, b)))
`

// The Triton block has _block lanes (the next power of two of the column
// count); lanes past it exist only in the padded TPU tile and stay out of
// every reduction, so masked lanes count exactly as often as in Triton.
const rowHelpers = `

def _rsum(v, inblk):
    return jnp.sum(jnp.where(inblk, v, jnp.zeros((), v.dtype)), axis=1, keepdims=True)


def _rmax(v, inblk):
    return jnp.max(jnp.where(inblk, v, -jnp.inf), axis=1, keepdims=True)


def _rmin(v, inblk):
    return jnp.min(jnp.where(inblk, v, jnp.inf), axis=1, keepdims=True)
`

// Render writes the Pallas candidate module (run(args, *, interpret)) for a.
func Render(a *Analysis) ([]byte, error) {
	var b strings.Builder
	shape := "row kernel: blocks of whole rows, columns padded to 128 lanes and masked"
	if a.Mode == ModeFlat {
		shape = "flat blocks: the tensors in lane-dense (rows, 128) tiles, tail padded and masked"
	}
	fmt.Fprintf(&b, "\"\"\"Pallas TPU draft of the Triton kernel %s (%s:%d), translated by pallasify's Triton rules (%s).\"\"\"\n",
		a.Kernel.Name, a.Kernel.Path, a.Kernel.Line, shape)
	b.WriteString(prelude)
	if a.Mode == ModeRow {
		b.WriteString(rowHelpers)
	}
	for _, h := range a.Helpers {
		b.WriteString("\n\n" + h)
	}
	var ins, outs []PtrParam
	for _, p := range a.Ptrs {
		if p.Loaded {
			ins = append(ins, p)
		}
		if p.Stored {
			outs = append(outs, p)
		}
	}
	var refs []string
	for _, p := range ins {
		refs = append(refs, p.Name+"_ref")
	}
	for _, p := range outs {
		refs = append(refs, p.Name+"_oref")
	}
	kw := append([]string{"_bound", "_block", "_bm"}, a.DataParams...)
	fmt.Fprintf(&b, "\n\ndef _kernel(%s, *, %s):\n", strings.Join(refs, ", "), strings.Join(kw, ", "))
	if a.Mode == ModeRow {
		first, width := ins[0].Name+"_ref", ".shape[1]"
		for _, p := range ins {
			if p.Access == access2D && p.Segs == 0 {
				first, width = p.Name+"_ref", ".shape[1]"
				break
			}
			if p.Access == access2D && width == ".shape[1]" && first == ins[0].Name+"_ref" {
				first, width = p.Name+"_ref", ".shape[1] // 2" // a row in two halves: the lanes of one
			}
		}
		fmt.Fprintf(&b, "    _lane = lax.broadcasted_iota(jnp.int32, (1, %s%s), 1)\n", first, width)
		b.WriteString("    _valid = _lane < _bound\n    _inblk = _lane < _block\n")
	} else {
		fmt.Fprintf(&b, "    _shape = (_bm, %d)\n", lanes)
		fmt.Fprintf(&b, "    _lane = (pl.program_id(0) * _bm + lax.broadcasted_iota(jnp.int32, _shape, 0)) * %d + lax.broadcasted_iota(jnp.int32, _shape, 1)\n", lanes)
		b.WriteString("    _valid = _lane < _bound\n")
	}
	for _, l := range a.Body {
		b.WriteString(l + "\n")
	}
	if a.Mode == ModeRow {
		renderRowRun(&b, a, ins, outs)
	} else {
		renderFlatRun(&b, a, ins, outs)
	}
	return []byte(b.String()), nil
}

func kwargs(a *Analysis, sizes map[string]string) string {
	var parts []string
	for _, n := range a.DataParams {
		if v, ok := a.Sizes[n]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s", n, sizes[v]))
		} else {
			parts = append(parts, fmt.Sprintf("%s=args[%q]", n, n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

func renderRowRun(b *strings.Builder, a *Analysis, ins, outs []PtrParam) {
	var x string
	xSegs := 0
	n2d := 0
	for _, p := range a.Ptrs {
		if p.Access == access2D {
			if p.Loaded && (x == "" || xSegs > 0 && p.Segs == 0) {
				x, xSegs = p.Name, p.Segs
			}
			if p.Loaded {
				n2d += max(p.Segs, 1)
			}
			if p.Stored {
				n2d += max(p.Segs, 1)
			}
		}
	}
	b.WriteString("\n\ndef run(args, *, interpret):\n")
	if xSegs > 0 {
		fmt.Fprintf(b, "    rows, cols = args[%q].shape[0], args[%q].shape[1] // 2\n", x, x)
	} else {
		fmt.Fprintf(b, "    rows, cols = args[%q].shape\n", x)
	}
	b.WriteString("    block = _next_pow2(cols)\n")
	fmt.Fprintf(b, "    cp = _round_up(block, %d)\n", lanes)
	fmt.Fprintf(b, "    bm = max(8, min(_round_up(rows, 8), 256, %d // (cp * 4 * 2 * %d) // 8 * 8))\n", vmemBudget, max(n2d, 1))
	b.WriteString("    rows_p = _round_up(rows, bm)\n")
	var inExprs, inSpecs, outShapes, outSpecs, rets []string
	spec := map[string]string{
		access2D:  "pl.BlockSpec((bm, cp), lambda i: (i, 0))",
		accessCol: "pl.BlockSpec((1, cp), lambda i: (0, 0))",
		accessRow: "pl.BlockSpec((bm, 1), lambda i: (i, 0))",
		accessOne: "pl.BlockSpec((1, 1), lambda i: (0, 0))",
	}
	for _, p := range ins {
		a := fmt.Sprintf("args[%q].astype(jnp.float32)", p.Name)
		switch {
		case p.Access == access2D && p.Segs > 0:
			// each half padded to the lanes on its own: the kernel slices the block in two
			inExprs = append(inExprs, fmt.Sprintf("jnp.pad(%s.reshape(rows, 2, cols), ((0, rows_p - rows), (0, 0), (0, cp - cols))).reshape(rows_p, 2 * cp)", a))
			inSpecs = append(inSpecs, "pl.BlockSpec((bm, 2 * cp), lambda i: (i, 0))")
			continue
		}
		switch p.Access {
		case access2D:
			inExprs = append(inExprs, fmt.Sprintf("jnp.pad(%s, ((0, rows_p - rows), (0, cp - cols)))", a))
		case accessCol:
			inExprs = append(inExprs, fmt.Sprintf("jnp.pad(%s, (0, cp - cols)).reshape(1, cp)", a))
		case accessRow:
			inExprs = append(inExprs, fmt.Sprintf("jnp.pad(%s, (0, rows_p - rows)).reshape(rows_p, 1)", a))
		case accessOne:
			inExprs = append(inExprs, fmt.Sprintf("%s.reshape(1, 1)", a))
		}
		inSpecs = append(inSpecs, spec[p.Access])
	}
	for i, p := range outs {
		if p.Access == access2D && p.Segs > 0 {
			outShapes = append(outShapes, "jax.ShapeDtypeStruct((rows_p, 2 * cp), jnp.float32)")
			rets = append(rets, fmt.Sprintf("%q: res[%d].reshape(rows_p, 2, cp)[:rows, :, :cols].reshape(rows, 2 * cols)", p.Name, i))
			outSpecs = append(outSpecs, "pl.BlockSpec((bm, 2 * cp), lambda i: (i, 0))")
			continue
		}
		switch p.Access {
		case access2D:
			outShapes = append(outShapes, "jax.ShapeDtypeStruct((rows_p, cp), jnp.float32)")
			rets = append(rets, fmt.Sprintf("%q: res[%d][:rows, :cols]", p.Name, i))
		case accessRow:
			outShapes = append(outShapes, "jax.ShapeDtypeStruct((rows_p, 1), jnp.float32)")
			rets = append(rets, fmt.Sprintf("%q: res[%d][:rows, 0]", p.Name, i))
		}
		outSpecs = append(outSpecs, spec[p.Access])
	}
	sizes := map[string]string{"cols": "cols", "1": "1"}
	writeCall(b, inExprs, inSpecs, outShapes, outSpecs, rets, "(rows_p // bm,)", "_bound=cols, _block=block, _bm=bm"+kwargs(a, sizes))
}

func renderFlatRun(b *strings.Builder, a *Analysis, ins, outs []PtrParam) {
	b.WriteString("\n\ndef run(args, *, interpret):\n")
	first := ins[0].Name
	for _, p := range ins {
		if p.Access == accessFlat {
			first = p.Name
			break
		}
	}
	fmt.Fprintf(b, "    n = args[%q].shape[0]\n", first)
	fmt.Fprintf(b, "    rows = max(1, -(-n // %d))\n", lanes)
	b.WriteString("    bm = min(512, _round_up(rows, 8))\n    rows_p = _round_up(rows, bm)\n")
	var inExprs, inSpecs, outShapes, outSpecs, rets []string
	spec := fmt.Sprintf("pl.BlockSpec((bm, %d), lambda i: (i, 0))", lanes)
	for _, p := range ins {
		if p.Access == accessOne {
			inExprs = append(inExprs, fmt.Sprintf("args[%q].astype(jnp.float32).reshape(1, 1)", p.Name))
			inSpecs = append(inSpecs, "pl.BlockSpec((1, 1), lambda i: (0, 0))")
			continue
		}
		inExprs = append(inExprs, fmt.Sprintf("jnp.pad(args[%q].astype(jnp.float32), (0, rows_p * %d - n)).reshape(rows_p, %d)", p.Name, lanes, lanes))
		inSpecs = append(inSpecs, spec)
	}
	for i, p := range outs {
		outShapes = append(outShapes, fmt.Sprintf("jax.ShapeDtypeStruct((rows_p, %d), jnp.float32)", lanes))
		outSpecs = append(outSpecs, spec)
		rets = append(rets, fmt.Sprintf("%q: res[%d].reshape(-1)[:n]", p.Name, i))
	}
	block := "0"
	if v, ok := a.Constexprs[a.Block]; ok {
		block = v
	}
	sizes := map[string]string{"n": "n", "1": "1", "cols": "n"}
	writeCall(b, inExprs, inSpecs, outShapes, outSpecs, rets, "(rows_p // bm,)", "_bound=n, _block="+block+", _bm=bm"+kwargs(a, sizes))
}

func writeCall(b *strings.Builder, inExprs, inSpecs, outShapes, outSpecs, rets []string, grid, kw string) {
	b.WriteString("    res = pl.pallas_call(\n")
	fmt.Fprintf(b, "        functools.partial(_kernel, %s),\n", kw)
	fmt.Fprintf(b, "        grid=%s,\n", grid)
	fmt.Fprintf(b, "        in_specs=[%s],\n", strings.Join(inSpecs, ", "))
	fmt.Fprintf(b, "        out_specs=[%s],\n", strings.Join(outSpecs, ", "))
	fmt.Fprintf(b, "        out_shape=[%s],\n", strings.Join(outShapes, ", "))
	b.WriteString("        compiler_params=pltpu.CompilerParams(dimension_semantics=(\"parallel\",)),\n")
	b.WriteString("        interpret=interpret,\n")
	fmt.Fprintf(b, "    )(%s)\n", strings.Join(inExprs, ", "))
	fmt.Fprintf(b, "    return {%s}\n", strings.Join(rets, ", "))
}
