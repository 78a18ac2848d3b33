"""Every gate of the protocol has a candidate that only that gate rejects."""
import pytest

from conftest import DATA, run_harness


def code(v):
    return v["reason"].split(":")[0]


@pytest.mark.parametrize("cand,want", [
    ("good.py", ""),
    ("tail.py", "V-UNWRITTEN"),        # poison survives: grid skips the tail
    ("noscale.py", "V-MISMATCH"),      # scalar ignored
    ("bf16.py", "V-MISMATCH"),         # precision dropped (tight fp32 tolerance)
    ("offbyone.py", "V-MISMATCH"),     # shifted index
    ("nolaunch.py", "V-NOLAUNCH"),     # no pallas_call at all
    ("ghost.py", "V-NOLAUNCH"),        # dummy pallas_call, result from jnp (ghost replay)
    ("deadcode.py", "V-NOLAUNCH"),     # mentions pallas_call but never runs it (traced launch check)
    ("shape.py", "V-SHAPE"),
    ("nan.py", "V-NAN"),               # special values: NaN/Inf replaced
    ("nondet.py", "V-NONDET"),         # reads uninitialised scratch: runs differ by 1 ulp
    ("stale.py", "V-BANNED"),          # mutable default-argument cache
    ("banned_os.py", "V-BANNED"),
    ("banned_try.py", "V-BANNED"),
    ("banned_getattr.py", "V-BANNED"),
    ("compile_error.py", "V-COMPILE"),
    ("tpu_block.py", "V-TPU-COMPILE"),  # (100,) blocks: fine in interpret mode, refused by Mosaic
    ("tpu_switch.py", "V-TPU-COMPILE"),  # no pallas_call when interpret=False
])
def test_axpy_gates(tmp_path, refs, cand, want):
    v = run_harness(tmp_path, "axpy", cand, "--quick", "--seeds", "2", reference=refs["axpy"])
    assert code(v) == want, v["reason"] + v["_stderr"]
    assert v["verdict"] == ("proven" if not want else "rejected")
    assert v["_rc"] == (0 if not want else 1)


def test_full_protocol_verdict_fields(tmp_path, refs):
    v = run_harness(tmp_path, "axpy", "good.py", reference=refs["axpy"])
    assert v["verdict"] == "proven" and v["schema"] == "pallasify.verdict/v1"
    assert v["seeds"] >= 5 and len(v["shapes"]) >= 3
    assert set(v["distributions"]) >= {"normal", "uniform", "large", "negative", "ties"}
    assert all(v["gates"].values())
    assert v["interpret_checks"].get("uninitialized_memory") == "nan"
    assert v["stats"]["cases"] >= 20 and v["stats"]["mismatches"] == 0
    assert "flushed" in v["subnormals"]
    c = v["cases"][0]
    for k in ("max_abs", "max_rel", "ulp_p50", "ulp_p99", "ulp_max", "mismatches", "first_mismatches", "nan_mask_ok",
              "rtol", "atol", "tol_ratio"):
        assert k in c
    # each case names its output's dtype and array shape (the report's shapes covered)
    assert c["dtype"] == "float32" and c["shape"] == [c["sizes"]["n"]] and 0 <= c["tol_ratio"] <= 1
    # Where the time went, per kind of phase: the kinds together are the run's wall time.
    ph = v["phases_s"]
    assert {"candidate run 1", "reference", "candidate run 2", "tpu compile"} <= set(ph)
    assert not any("seed" in k or "," in k for k in ph)
    assert abs(sum(ph.values()) - v["duration_s"]) < 0.05 * v["duration_s"] + 0.05


def test_reference_py_equals_so(tmp_path, refs):
    v = run_harness(tmp_path, "axpy", "good.py", "--quick", reference_py=DATA / "axpy" / "reference.py")
    assert v["verdict"] == "proven" and v["reference"]["kind"] == "python"


def test_softmax(tmp_path, refs):
    assert run_harness(tmp_path, "softmax", "good.py", "--quick", reference=refs["softmax"])["verdict"] == "proven"
    assert code(run_harness(tmp_path, "softmax", "axis.py", "--quick", reference=refs["softmax"])) in ("V-UNWRITTEN", "V-MISMATCH")
    assert code(run_harness(tmp_path, "softmax", "fallback.py", "--quick", reference=refs["softmax"])) == "V-BANNED"


def test_histogram_int_outputs(tmp_path, refs):
    assert run_harness(tmp_path, "hist", "good.py", "--quick", reference=refs["hist"])["verdict"] == "proven"
    # Unmasked tail: right with int-max poison, wrong with zero poison.
    assert code(run_harness(tmp_path, "hist", "tail.py", "--quick", reference=refs["hist"])) == "V-MISMATCH"


def test_timeout(tmp_path, refs):
    v = run_harness(tmp_path, "axpy", "loop.py", "--timeout", "4", reference=refs["axpy"], subprocess_run=True)
    assert code(v) == "V-TIMEOUT" and v["_rc"] == 124
    # the candidate loops at import: that phase holds the time the limit cut
    assert "during candidate-import" in v["reason"] and v["phases_s"]["candidate-import"] > 2


def test_degenerate_kernel_is_an_error(tmp_path, refs):
    ref = tmp_path / "zero_ref.py"
    ref.write_text("import numpy as np\n\ndef reference(args):\n    return {'out': np.zeros_like(args['x'])}\n")
    cand = tmp_path / "zero.py"
    cand.write_text((DATA / "axpy" / "good.py").read_text().replace(
        "o_ref[...] = alpha * x_ref[...] + y_ref[...]", "o_ref[...] = 0.0 * x_ref[...]"))
    v = run_harness(tmp_path, "axpy", cand, "--quick", "--special", "off", reference_py=ref)
    assert v["verdict"] == "error" and code(v) == "V-DEGENERATE"


def test_reference_failures(tmp_path, refs):
    bad = tmp_path / "bad_ref.py"
    bad.write_text("def reference(args):\n    args['x'][0] = 1.0\n    return {'out': args['x']}\n")
    v = run_harness(tmp_path, "axpy", "good.py", "--quick", reference_py=bad)
    assert v["verdict"] == "error" and code(v) == "V-REFERENCE"
    # ref.so that returns an error (grid too small for n).
    spec = tmp_path / "spec.json"
    spec.write_text((DATA / "axpy" / "spec.json").read_text().replace('"(n + 255) / 256"', '"1"'))
    v = run_harness(tmp_path, "axpy", "good.py", "--quick", reference=refs["axpy"], spec=spec)
    assert v["verdict"] == "error" and code(v) == "V-REFERENCE" and "grid too small" in v["reason"]


def test_bad_spec(tmp_path, refs):
    spec = tmp_path / "spec.json"
    spec.write_text((DATA / "axpy" / "spec.json").read_text().replace('"(n + 255) / 256"', '"(n + ) / 256"'))
    v = run_harness(tmp_path, "axpy", "good.py", reference=refs["axpy"], spec=spec)
    assert v["verdict"] == "error" and code(v) == "V-SPEC"


def test_tpu_gate_records_each_chip(tmp_path, refs):
    v = run_harness(tmp_path, "axpy", "good.py", "--quick", "--seeds", "2", reference=refs["axpy"])
    assert v["gates"]["tpu_compile"] is True
    assert set(v["tpu"]) == {"v5e", "v6e", "tpu7x"}
    largest = max(v["shapes"], key=lambda s: s["n"])
    for chip, r in v["tpu"].items():
        assert r["compiled"] and "error" not in r, (chip, r)
        assert r["shape"] == largest and r["min_bytes"] == 3 * 4 * largest["n"]
        assert r["bytes_accessed"] >= r["min_bytes"] / 2 and r["compile_s"] > 0
        # the layout minimum: the same arrays in whole HBM tiles; no program moves less
        assert r["min_bytes"] <= r["layout_min_bytes"] <= r["bytes_accessed"], r
        if chip == "v6e":  # 1-D float32 arrays in at most 1024-element tiles
            assert r["layout_min_bytes"] <= 3 * 4 * (-(-largest["n"] // 1024) * 1024), r
        from pallasify_harness import tpu
        assert r["roofline_s"] == pytest.approx(r["bytes_accessed"] / tpu.CHIPS[chip].device_bandwidth)
        assert r["topology"] == tpu.CHIPS[chip].topology


def test_bytes_accessed_counts_the_kernel():
    """libtpu's 'bytes accessed' total leaves out a Pallas kernel that XLA ops
    surround; the per-operand entries count it (tpu.bytes_accessed)."""
    from pallasify_harness import tpu
    tpu.tpu_env()
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    def copy_kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    def copy(x):
        return pl.pallas_call(copy_kernel, grid=(4,), in_specs=[pl.BlockSpec((256, 1024), lambda i: (i, 0))],
                              out_specs=pl.BlockSpec((256, 1024), lambda i: (i, 0)),
                              out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    dev = tpu.devices(["v6e"])["v6e"]
    array = 1024 * 1024 * 4
    costs = {}
    for name, f in [("kernel", copy), ("kernel, negate", lambda x: -copy(x)), ("negate", lambda x: -x)]:
        with jax.default_device(dev):
            s = jax.ShapeDtypeStruct((1024, 1024), jnp.float32, sharding=jax.sharding.SingleDeviceSharding(dev))
            costs[name] = jax.jit(f).lower(s).compile().cost_analysis()
    assert tpu.bytes_accessed(costs["kernel"]) == 2 * array
    assert tpu.bytes_accessed(costs["negate"]) == 2 * array
    assert tpu.bytes_accessed(costs["kernel, negate"]) == 4 * array
    # what libtpu's own total says for the pair: the negation only
    assert costs["kernel, negate"]["bytes accessed"] == 2 * array


def test_tpu_gate_names_the_chip_and_the_compiler_message(tmp_path, refs):
    v = run_harness(tmp_path, "axpy", "tpu_block.py", "--quick", "--seeds", "2", "--tpu-chips", "v6e",
                    reference=refs["axpy"])
    assert v["reason"].startswith("V-TPU-COMPILE: does not compile for v6e (of v6e); v6e (v6e:2x2) on n=")
    assert "Pallas TPU lowering" in v["reason"] and set(v["tpu"]) == {"v6e"}
    assert v["tpu"]["v6e"]["compiled"] is False and v["gates"]["tpu_compile"] is False


def test_tpu_gate_off_and_unknown_chip(tmp_path, refs):
    v = run_harness(tmp_path, "axpy", "tpu_block.py", "--quick", "--seeds", "2", "--tpu-chips", "none",
                    reference=refs["axpy"])
    assert v["verdict"] == "proven" and "tpu" not in v and v["tpu_gate"].startswith("off")
    v = run_harness(tmp_path, "axpy", "good.py", "--quick", "--tpu-chips", "v5e,v4", reference=refs["axpy"])
    assert v["verdict"] == "error" and code(v) == "V-TPU-UNAVAILABLE" and "v4" in v["reason"]
