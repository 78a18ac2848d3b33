"""Unit tests: expression grammar, sweep, comparison, degeneracy, AST ban, input checks."""
import ml_dtypes
import numpy as np
import pytest

from pallasify_harness import astban, compare, expr, gen, spec as specmod
from pallasify_harness.protocol import Stop, _check_inputs


@pytest.mark.parametrize("text,env,want", [
    ("(n + 255) / 256", {"n": 257}, 2), ("-7 / 2", {}, -3), ("-7 % 2", {}, -1), ("min(a, 3) * max(2, b)", {"a": 9, "b": 1}, 6),
    ("n % 256 == 0 && n <= 4096", {"n": 512}, 1), ("n % 256 == 0 && n <= 4096", {"n": 500}, 0), ("!(n > 2) || n == 3", {"n": 3}, 1),
])
def test_expr(text, env, want):
    assert expr.evaluate(text, env) == want


@pytest.mark.parametrize("text", ["__import__('os')", "n +", "a.b", "1; 2", "x[0]", "", "lambda: 1", "open('f')"])
def test_expr_rejects(text):
    with pytest.raises(expr.ExprError):
        expr.evaluate(text, {"n": 1, "x": 1, "a": 1, "open": 1})


def test_sweep_respects_constraints():
    raw = {"schema": "pallasify.kernelspec/v1", "symbols": ["n"], "params": [
        {"name": "o", "kind": "pointer", "dtype": "float32", "role": "output", "shape": ["n"]}],
        "launch": {"grid": ["n / 256", "1", "1"], "block": ["256", "1", "1"]},
        "domain": {"constraints": ["n % 256 == 0"]}}
    sizes = specmod.shape_sweep(specmod.parse_spec(raw), 4)
    assert sizes and all(s["n"] % 256 == 0 for s in sizes)
    raw["domain"] = {}
    sizes = specmod.shape_sweep(specmod.parse_spec(raw), 4)
    assert sizes[0]["n"] == 1 and any(s["n"] % 128 for s in sizes[1:])


def test_compare_ulps_and_masks():
    tol = compare.tolerance("float32")
    e = np.array([1.0, 2.0, np.nan, np.inf], np.float32)
    r = compare.compare(e, e.copy(), "float32", tol)
    assert r["mismatches"] == 0 and r["nan_mask_ok"] and r["ulp_max"] == 0
    a = e.copy()
    a[1] = np.nextafter(np.float32(2.0), np.float32(3.0))
    assert compare.compare(e, a, "float32", tol)["ulp_max"] == 1
    a[3] = -np.inf
    r = compare.compare(e, a, "float32", tol)
    assert not r["nan_mask_ok"]
    a = e.copy()
    a[0] = 1.001
    r = compare.compare(e, a, "float32", tol)
    assert r["mismatches"] == 1 and r["first_mismatches"] == [[0]]
    # Finite reference, NaN candidate: a mismatch, not a mask error.
    a = e.copy()
    a[0] = np.nan
    r = compare.compare(e, a, "float32", tol)
    assert r["mismatches"] == 1 and r["nan_mask_ok"]


def test_compare_tol_ratio():
    """tol_ratio is the largest error over its element's tolerance: 0 when
    exact, at most 1 when every element passes, above 1 on a mismatch."""
    rtol, atol, floor = tol = compare.tolerance("float32")
    e = np.array([1.0, 2.0, 4.0], np.float32)
    assert compare.compare(e, e.copy(), "float32", tol)["tol_ratio"] == 0
    a = e.copy()
    a[2] = np.float32(4.0 + 0.5 * (atol + rtol * 4.0))
    r = compare.compare(e, a, "float32", tol)
    assert r["mismatches"] == 0 and 0.3 < r["tol_ratio"] <= 1
    a[0] = 1.001
    r = compare.compare(e, a, "float32", tol)
    assert r["mismatches"] == 1 and r["tol_ratio"] > 1
    # exact dtypes: any difference is infinitely far from a zero tolerance
    i = np.array([1, 2], np.int32)
    assert compare.compare(i, i.copy(), "int32", compare.tolerance("int32"))["tol_ratio"] == 0
    assert compare.compare(i, i + 1, "int32", compare.tolerance("int32"))["tol_ratio"] == np.inf
    # a NaN where the reference is finite: a mismatch, beyond any tolerance
    a = e.copy()
    a[1] = np.nan
    assert compare.compare(e, a, "float32", tol)["tol_ratio"] == np.inf


def test_subnormals_flushed():
    e = np.array([1e-40, 1.0], np.float32)
    a = np.array([0.0, 1.0], np.float32)
    r = compare.compare(e, a, "float32", compare.tolerance("float32"))
    assert r["flushed"] == 1 and r["ulp_max"] == 0


def test_bfloat16_subnormals_flushed():
    """bfloat16 data (numpy's finfo has no bfloat16): generated inputs and compared
    outputs drop subnormals as float32 ones do."""
    bf16 = ml_dtypes.bfloat16
    e = np.array([1e-39, 1.0], bf16)
    a = np.array([0.0, 1.0], bf16)
    r = compare.compare(e, a, "bfloat16", compare.tolerance("bfloat16"))
    assert r["flushed"] == 1 and r["ulp_max"] == 0
    p = specmod.Param(name="x", kind="pointer", ctype="__nv_bfloat16*", dtype="bfloat16", role="input")
    arr, _ = gen.make_array(p, (64,), "normal", np.random.default_rng(0))
    assert arr.dtype == bf16 and arr.shape == (64,)


def test_reduction_tolerance_scales():
    assert compare.tolerance("float32", red_len=100)[0] == pytest.approx(1.3e-5)
    assert compare.tolerance("int32") == (0.0, 0.0, False)


def test_degenerate():
    tol = compare.tolerance("float32")
    assert compare.degenerate(np.zeros(100, np.float32), "float32", tol)
    assert compare.degenerate(np.full(100, 5.0, np.float32), "float32", tol)
    assert compare.degenerate(np.random.default_rng(0).standard_normal(100).astype(np.float32), "float32", tol) is None
    loose = (0.0, 10.0, False)  # a tolerance larger than the outputs
    assert "would pass" in compare.degenerate(np.random.default_rng(0).standard_normal(100).astype(np.float32), "float32", loose)


@pytest.mark.parametrize("src", [
    "import os\ndef run(args, *, interpret): pass",
    "import subprocess\n", "import socket\n", "import ctypes\n", "import importlib\n", "import sys\n",
    "import builtins\n", "from os import path\n", "x = open('f')\n", "exec('1')\n", "eval('1')\n",
    "__import__('os')\n", "import jax.numpy as jnp\nf = getattr(jnp, 'ad' + 'd')\n",
    "try:\n    pass\nexcept Exception:\n    pass\n", "CACHE = {}\n", "CACHE = dict()\n",
    "def run(args, *, interpret, _c={}):\n    pass\n", "import functools\n@functools.lru_cache\ndef f(x):\n    return x\n",
    "def f():\n    global X\n", "import jax\njax.pure_callback(print, None)\n", "import jax\njax.config.update('x', 1)\n",
    "from jax.experimental import pallas as pl\npl.pallas_call = None\n", "x = ().__class__.__bases__\n",
])
def test_ast_bans(src):
    assert astban.check_source(src), src


def test_ast_reference_op_outside_kernel_only():
    src = '''
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

def _k(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...])

def run(args, *, interpret):
    return {"c": pl.pallas_call(_k, out_shape=None, interpret=interpret)(args["a"], args["b"])}
'''
    assert astban.check_source(src, "matmul-tile", "matmul") == []
    bad = src.replace('return {"c":', 'return {"c": jnp.matmul(args["a"], args["b"]) +')
    assert any("jax.numpy.matmul" in str(b) for b in astban.check_source(bad, "matmul-tile", "matmul"))
    assert astban.check_source(bad, "elementwise", "add") == []


def test_inputs_checked():
    import jax

    pristine = {"x": np.arange(4, dtype=np.float32)}
    gates = {"inputs_unchanged": True}
    ok = {"x": jax.device_put(pristine["x"].copy())}
    _check_inputs(ok, pristine, gates)
    changed = {"x": jax.device_put(pristine["x"] + 1)}
    with pytest.raises(Stop) as e:
        _check_inputs(changed, pristine, gates)
    assert e.value.code == "V-INPUT-MUTATED" and gates["inputs_unchanged"] is False
    deleted = {"x": jax.device_put(pristine["x"].copy())}
    deleted["x"].delete()
    with pytest.raises(Stop):
        _check_inputs(deleted, pristine, gates)


def test_tpu_bytes_accessed():
    from pallasify_harness import tpu
    # The per-operand entries' sum, not libtpu's total (which leaves out a Mosaic kernel among XLA ops).
    assert tpu.bytes_accessed({"bytes accessed": 10.0, "bytes accessed0{}": 4.0, "bytes accessedout{}": 8.0}) == 12.0
    # 'out{0}' is part of 'out{}'.
    assert tpu.bytes_accessed({"bytes accessed0{}": 4.0, "bytes accessed1{}": 8.0, "bytes accessedout{}": 12.0,
                               "bytes accessedout{0}": 6.0, "flops": 3.0}) == 24.0
    assert tpu.bytes_accessed([{"bytes accessed": 7.0}]) == 7.0
    assert tpu.bytes_accessed({"flops": 1.0}) is None and tpu.bytes_accessed(None) is None


def test_tpu_chip_table():
    from pallasify_harness import tpu
    assert list(tpu.DEFAULT_CHIPS) == ["v5e", "v6e", "tpu7x"] and set(tpu.DEFAULT_CHIPS) <= set(tpu.CHIPS)
    assert tpu.CHIPS["tpu7x"].device_bandwidth == tpu.CHIPS["tpu7x"].hbm_bytes_per_s / 2
    assert tpu.parse_chips("none") == [] and tpu.parse_chips("v6e, v5e,v6e") == ["v6e", "v5e"]
    with pytest.raises(tpu.Unavailable):
        tpu.parse_chips("v5e,h100")
    msg = tpu.first_lines(ValueError("first\n\n  second  \nthird\nfourth"))
    assert msg == "ValueError: first | second | third"


def test_interpreter_bitcast_refs():
    """A float16 block stored and read back through its int16 view (what Mosaic
    compiles as tpu.memref_bitcast) runs in the TPU interpreter with its bits
    exact (NaN payloads, -0, subnormals, inf); a bitcast that changes the width
    is still jax's to refuse."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    from pallasify_harness import interp

    if interp.interpret_class() is None:
        pytest.skip("this jax has no TPU interpret mode")
    ip, _ = interp.make_interpret("nan", seed=1)
    assert interp.install_bitcast_refs()

    def k(x_ref, o_ref):
        o_ref.bitcast(jnp.int16)[...] = x_ref[...] ^ jnp.int16(-0x8000)
        top = o_ref.bitcast(jnp.int16)[0:8, :]  # read back through the view, rewrite half the block
        o_ref.bitcast(jnp.int16)[0:8, :] = top ^ jnp.int16(-0x8000)

    spec = pl.BlockSpec((16, 128), lambda i: (i, 0))
    call = pl.pallas_call(k, grid=(4,), in_specs=[spec], out_specs=spec,
                          out_shape=jax.ShapeDtypeStruct((64, 128), jnp.float16), interpret=ip)
    bits = np.random.RandomState(0).randint(-0x8000, 0x8000, size=(64, 128)).astype(np.int16)
    bits[0, :6] = [0x7E01, 0x7C00, -0x8000, 0x0001, 0x03FF, -0x0401]  # NaN payload, inf, -0, subnormals
    out = np.asarray(jax.jit(call)(bits))
    got = out.view(np.int16)
    want = bits ^ np.int16(-0x8000)
    for b in range(4):
        want[16 * b:16 * b + 8] = bits[16 * b:16 * b + 8]
    assert out.dtype == np.float16
    assert np.array_equal(got, want)
    assert not interp.races_found()

    def widen(x_ref, o_ref):
        o_ref.bitcast(jnp.int32)[...] = jnp.zeros((8, 128), jnp.int32)

    with pytest.raises(Exception, match="BitcastTransform"):
        jax.block_until_ready(pl.pallas_call(widen, grid=(1,), in_specs=[spec], out_specs=spec,
                              out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float16), interpret=ip)(bits[:16]))


def test_forms_force_each_other_form():
    """forms.py: the hook records the natural choices, forces one decision at a time (the fallback
    always, the first form only where it applies) and forces a decision seen only under a forced form
    within it."""
    import types

    from pallasify_harness.forms import Forms, describe

    mod = types.ModuleType("cand")
    mod._FORCE = None

    def run(big):
        hook = mod._FORCE or (lambda name, natural, applies: natural)
        fits = hook("vfits", not big, True)
        inner = None
        if not fits:  # the fallback consults a decision of its own
            inner = hook("column_major", False, True)
        return fits, inner, hook("plane", False, False), hook("own_rows", False, True)

    forms = Forms(mod)
    assert forms.active
    with forms.hooked(0):
        assert run(big=False) == (True, None, False, False)
    assert mod._FORCE is None
    # plane's first form does not apply: nothing to force; own_rows only toward its first form
    assert forms.children(0) == [(("vfits", False),), (("own_rows", True),)]
    ctx = (("vfits", False),)
    with forms.hooked(0, ctx):
        assert run(big=False) == (False, False, False, False)
    assert forms.children(0, ctx) == [(("vfits", False), ("column_major", True))]
    with forms.hooked(0, (("own_rows", True),)):
        assert run(big=False) == (True, None, False, True)
    assert forms.children(0, (("own_rows", True),)) == []
    assert "the windowed or XLA form (_run_win, _run_xla)" in describe(ctx)
    # a budgeted first form (the in-kernel gather) is not forced past its budget
    with forms.hooked(1):
        assert run(big=True) == (False, False, False, False)
    assert forms.children(1) == [(("column_major", True),), (("own_rows", True),)]  # no vfits=True
    forms.record(ctx, 0, 0.5)
    forms.record((("own_rows", True),), 0, 0.5)
    assert forms.tpu_contexts() == [(ctx, 0)]
    assert forms.summary()["natural"] == {"vfits": {"0": [True], "1": [False]}, "plane": {"0": [False], "1": [False]},
                                          "own_rows": {"0": [False], "1": [False]}, "column_major": {"1": [False]}}
    # a module without the hook is left alone
    assert not Forms(types.ModuleType("llm")).active
