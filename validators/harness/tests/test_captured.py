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
    assert any(c["distribution"] == "captured" and c["sizes"] == {"n": 300} and c["dtype"] == "float32"
               and c["shape"] == [300] for c in v["cases"])


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


@pytest.fixture(scope="module")
def weighted_ref(tmp_path_factory):
    import subprocess

    from conftest import DATA

    so = tmp_path_factory.mktemp("weighted") / "weighted.so"
    subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-o", str(so), str(DATA / "weighted" / "ref.cc")], check=True)
    return str(so)


def test_null_pointer_reaches_the_reference_as_null(tmp_path, weighted_ref):
    # weight is NULL in every captured launch: the reference is launched with
    # NULL (its weight != NULL branch not taken) and the candidate gets an
    # empty array; a non-NULL empty buffer would send the reference into the
    # weighted branch, reading past the buffer.
    n = 300
    x = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    case = {"label": "launch 12 (weighted_kernel)", "sizes": {"n": n}, "launch": [3, 1, 1, 128, 1, 1, 0],
            "args": {"n": n, "x": buf(x), "weight": {"dtype": "float32", "shape": [0], "data": ""}},
            "expected": {"out": buf((2 * x).astype(np.float32))}}
    cap = tmp_path / "captured.json"
    cap.write_text(json.dumps({"schema": "pallasify.captured/v1", "kernel": "weighted", "cases": [case]}))
    v = run_harness(tmp_path, "weighted", "good.py", "--quick", "--seeds", "2", "--captured", str(cap), reference=weighted_ref)
    assert v["verdict"] == "proven", v["reason"]
    assert v["captured_cases"] == 1


def test_null_must_be_an_empty_input(tmp_path, weighted_ref):
    from conftest import DATA

    spec = json.loads((DATA / "weighted" / "spec.json").read_text())
    spec["params"][2]["shape"] = ["n"]
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    v = run_harness(tmp_path, "weighted", "good.py", "--quick", reference=weighted_ref, spec=path)
    assert v["verdict"] == "error" and code(v) == "V-SPEC" and "NULL pointer" in v["reason"], v["reason"]


def test_uint64_buffer_is_refused_not_truncated(tmp_path, weighted_ref):
    from conftest import DATA

    spec = json.loads((DATA / "weighted" / "spec.json").read_text())
    spec["params"][3]["dtype"] = "uint64"
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    v = run_harness(tmp_path, "weighted", "good.py", "--quick", reference=weighted_ref, spec=path)
    assert v["verdict"] == "error" and code(v) == "V-WIDE-INT" and "out (uint64)" in v["reason"], v["reason"]
