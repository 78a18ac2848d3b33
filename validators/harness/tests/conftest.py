import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
sys.path.insert(0, str(HERE.parent))
# As the harness does before importing jax (tests import jax in-process).
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_allow_excess_precision=false").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")


@pytest.fixture(scope="session")
def refs(tmp_path_factory):
    """Build the plain-loop C++ references (ABI wrappers) with g++."""
    out = tmp_path_factory.mktemp("refs")
    built = {}
    for k in ("axpy", "softmax", "hist"):
        so = out / f"{k}.so"
        subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-o", str(so), str(DATA / k / "ref.cc")], check=True)
        built[k] = str(so)
    return built


def run_harness(tmp_path, kernel, candidate, *extra, reference=None, reference_py=None, spec=None, subprocess_run=False):
    """Run the harness (in-process unless subprocess_run) and return the verdict."""
    out = tmp_path / f"verdict-{Path(candidate).stem}.json"
    argv = [sys.executable, "-m", "pallasify_harness", "--spec", str(spec or DATA / kernel / "spec.json"),
            "--candidate", str(candidate if os.path.isabs(str(candidate)) else DATA / kernel / candidate), "--out", str(out)]
    if reference_py:
        argv += ["--reference-py", str(reference_py)]
    else:
        argv += ["--reference", reference]
    argv += list(extra)
    if not subprocess_run:
        from pallasify_harness import protocol

        rc = protocol.main(argv[3:])
        v = json.loads(out.read_text())
        v["_rc"], v["_stderr"] = rc, ""
        return v
    env = dict(os.environ, PYTHONPATH=str(HERE.parent), JAX_PLATFORMS="cpu")
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    v = json.loads(out.read_text())
    v["_rc"] = p.returncode
    v["_stderr"] = p.stderr[-2000:]
    return v
