"""Captured launches (captured.py): the original's real inputs and outputs."""
import base64
import json

import numpy as np
import pytest

from conftest import run_harness


def b64(a):
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()


def buf(a):
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": b64(a)}


def axpy_capture(path, n, alpha, corrupt=False):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = (np.float32(alpha) * x + y).astype(np.float32)
    if corrupt:
        out[n // 2] += 1.0
    case = {"label": f"launch 0 (axpy_kernel, n={n})", "sizes": {"n": n},
            "launch": [(n + 255) // 256, 1, 1, 256, 1, 1, 0],
            "args": {"x": buf(x), "y": buf(y), "alpha": alpha, "n": n}, "expected": {"out": buf(out)}}
    path.write_text(json.dumps({"schema": "pallasify.captured/v1", "kernel": "axpy", "cases": [case]}))
    return path


def code(v):
    return v["reason"].split(":")[0]


def test_captured_case_proves_good(tmp_path, refs):
    cap = axpy_capture(tmp_path / "captured.json", 300, 1.5)
    v = run_harness(tmp_path, "axpy", "good.py", "--quick", "--seeds", "2", "--captured", str(cap), reference=refs["axpy"])
    assert v["verdict"] == "proven", v["reason"]
    assert v["captured_cases"] == 1
    assert any(c["distribution"] == "captured" and c["sizes"] == {"n": 300} for c in v["cases"])


def test_captured_case_rejects_what_the_sweep_misses(tmp_path, refs):
    # Right on every generated shape (the domain stops at n=3000), wrong on
    # the size the repository really launched.
    assert run_harness(tmp_path, "axpy", "capped_grid.py", "--quick", "--seeds", "2", reference=refs["axpy"])["verdict"] == "proven"
    cap = axpy_capture(tmp_path / "captured.json", 4099, 0.75)
    v = run_harness(tmp_path, "axpy", "capped_grid.py", "--quick", "--seeds", "2", "--captured", str(cap), reference=refs["axpy"])
    assert v["verdict"] == "rejected" and code(v) == "V-MISMATCH", v["reason"]
    assert "original's output on launch 0 (axpy_kernel, n=4099)" in v["reason"]


def test_reference_must_reproduce_the_capture(tmp_path, refs):
    cap = axpy_capture(tmp_path / "captured.json", 300, 1.5, corrupt=True)
    v = run_harness(tmp_path, "axpy", "good.py", "--quick", "--seeds", "2", "--captured", str(cap), reference=refs["axpy"])
    assert v["verdict"] == "error" and code(v) == "V-REFERENCE", v["reason"]
    assert "does not reproduce launch 0" in v["reason"]


@pytest.mark.parametrize("edit,why", [
    (lambda c: c["cases"][0]["args"].pop("x"), "no captured buffer for input x"),
    (lambda c: c["cases"][0]["args"]["x"].update(shape=[7]), "bytes, shape [7]"),
    (lambda c: c.update(schema="other"), "schema"),
])
def test_malformed_capture_is_a_spec_error(tmp_path, refs, edit, why):
    cap = axpy_capture(tmp_path / "captured.json", 300, 1.5)
    doc = json.loads(cap.read_text())
    edit(doc)
    cap.write_text(json.dumps(doc))
    v = run_harness(tmp_path, "axpy", "good.py", "--quick", "--seeds", "2", "--captured", str(cap), reference=refs["axpy"])
    assert v["verdict"] == "error" and code(v) == "V-SPEC" and why in v["reason"], v["reason"]
