"""The simulated TPU host's behaviours, each through a small script of ours run under it.

Fixtures live here, not in a conftest.py: `make test` runs this directory in one pytest with
validators/harness, whose tests import their own conftest by name. One coverage JSON is shared by
the session (coverage.py in its own process, as the Go wrapper runs it)."""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
SCRIPTS = os.path.join(HERE, "scripts")


def _base_env():
    env = dict(os.environ)
    env["TPU_SKIP_MDS_QUERY"] = "1"
    env["TPU_WORKER_HOSTNAMES"] = "localhost"
    env["PYTHONPATH"] = PYDIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for k in list(env):
        if k.startswith("PALLASIFY_TPUHOST"):
            del env[k]
    return env


@pytest.fixture(scope="session")
def coverage_json(tmp_path_factory):
    out = tmp_path_factory.mktemp("cov") / "coverage.json"
    env = _base_env()
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    r = subprocess.run([sys.executable, "-m", "pallasify_tpuhost.coverage", str(out)], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return str(out)


class Run:
    def __init__(self, proc, report):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.report = report

    def lines(self):
        return self.stdout.splitlines()


@pytest.fixture
def tpuhost(coverage_json, tmp_path):
    def run(script, *args, precision=None, devices=None, extra_env=None):
        rep = tmp_path / "report.json"
        env = _base_env()
        env.update({
            "PALLASIFY_TPUHOST": "1",
            "PALLASIFY_TPUHOST_COVERAGE": coverage_json,
            "PALLASIFY_TPUHOST_REPORT": str(rep),
        })
        if precision:
            env["PALLASIFY_TPUHOST_PRECISION"] = precision
        if devices:
            env["PALLASIFY_TPUHOST_DEVICES"] = str(devices)
        env.update(extra_env or {})
        proc = subprocess.run([sys.executable, os.path.join(SCRIPTS, script), *args], cwd=SCRIPTS,
                              env=env, capture_output=True, text=True, timeout=600)
        report = json.loads(rep.read_text()) if rep.exists() else None
        return Run(proc, report)

    return run



def test_coverage_reads_torch_tpu(coverage_json):
    data = json.load(open(coverage_json))
    ops = data["ops"]
    assert data["torch_tpu"] == "0.2.0"
    # aten::mm has no PrivateUse1 kernel of its own: it runs through aten::mm.out.
    assert ops["aten::mm.out"] == "native"
    assert ops["aten::mm"] == "out"
    assert ops["aten::matmul"] == "composite"
    assert ops["aten::median"] == "fallback"
    assert data["facts"]["has_backend_fallback"] is True
    assert data["facts"]["fallback"]["cpu_fallback_enabled_by_default"] is False
    assert data["precision"]["global_default"] == "DEFAULT"
    assert data["tpu_api"]["device_count"]["stage"] == "internal"
    assert data["counts"]["native"] > 500


def test_not_fooled(tpuhost):
    r = tpuhost("not_fooled.py")
    assert r.rc == 0, r.stderr[-2000:]
    out = r.lines()
    assert "accelerator tpu True 1" in out
    assert "cuda_available False" in out
    assert "is_cuda False" in out
    assert "device_type tpu tpu:0" in out
    assert "branch tpu" in out
    assert "grad_device tpu" in out
    assert "data_on_cpu True" in out
    assert "is_tpu True" in out
    assert r.report["unsupported_ops"] == [] and r.report["cuda_only_calls"] == []


def test_cuda_only_branch_reached(tpuhost):
    r = tpuhost("cuda_branch.py")
    assert r.rc != 0  # the uncaught .cuda() ends the process, as on a host without CUDA
    assert "stream failed" in r.stdout and "cuda branch skipped" in r.stdout
    calls = {c["api"]: c for c in r.report["cuda_only_calls"]}
    assert calls["torch.cuda.Stream"]["site"] == "cuda_branch.py:7"
    assert calls["torch.cuda.get_device_properties"]["site"] == "cuda_branch.py:11"
    assert calls["Tensor.cuda"]["site"] == "cuda_branch.py:18"


def test_unsupported_op_recorded_report_written_on_exit(tpuhost):
    r = tpuhost("unsupported_op.py")
    assert r.rc == 3, r.stderr[-2000:]  # sys.exit(3): the report is written all the same
    ops = {o["op"]: o for o in r.report["unsupported_ops"]}
    assert ops["aten::median"] == {"op": "aten::median", "count": 3, "class": "fallback",
                                   "site": "unsupported_op.py:6"}
    assert "aten::mm" not in ops


def test_unsupported_op_raises_like_torch_tpu(tpuhost):
    r = tpuhost("unsupported_op.py", extra_env={"PALLASIFY_TPUHOST_FALLBACK": "raise"})
    assert r.rc == 1
    assert "'aten::median' is not implemented for TPU" in r.stderr


def test_custom_cuda_op(tpuhost):
    r = tpuhost("custom_cuda_op.py")
    assert r.rc == 0, r.stderr[-2000:]
    assert "failed 'fixture_cuda::scale' is not implemented for TPU" in r.stdout
    assert r.report["custom_cuda_ops"] == [{"op": "fixture_cuda::scale", "count": 1, "site": "custom_cuda_op.py:10"}]


def test_device_mixup(tpuhost):
    r = tpuhost("mixup.py")
    assert r.rc == 0, r.stderr[-2000:]
    assert ("refused Expected all tensors to be on the same device, but found at least two devices, "
            "tpu:0 and cpu!") in r.stdout
    assert "scalar ok tpu" in r.stdout and "copy ok tpu" in r.stdout
    (m,) = r.report["device_mixups"]
    assert m["op"] == "aten::add.Tensor" and m["site"] == "mixup.py:6"


def test_jax_op_runs_pallas_kernel(tpuhost):
    r = tpuhost("jaxop_kernel.py")
    assert r.rc == 0, r.stderr[-3000:]
    assert "device tpu" in r.stdout and "equal True" in r.stdout and "meta (8, 128)" in r.stdout
    assert r.report["jax_ops"] == [{"name": "fixture_pallas::scaled", "count": 2}]


def test_compile_and_dist(tpuhost):
    r = tpuhost("compile_dist.py")
    assert r.rc == 0, r.stderr[-3000:]
    assert "compiled tpu True" in r.stdout
    assert "allreduce tpu [1.0, 1.0, 1.0]" in r.stdout
    assert r.report["compiles"] == [{"backend": "tpu", "dynamic": False, "site": "compile_dist.py:7"}]


def test_precision_default_rounds_to_bfloat16(tpuhost):
    r = tpuhost("precision.py", precision="default")
    assert r.rc == 0, r.stderr[-2000:]
    vals = dict(line.split() for line in r.lines())
    assert float(vals["maxdiff"]) > 1e-3  # bfloat16 inputs: the drift a TPU shows
    assert float(vals["highest_diff"]) == 0.0
    assert vals["matmul_precision"] == "medium"
    r = tpuhost("precision.py")
    vals = dict(line.split() for line in r.lines())
    assert float(vals["maxdiff"]) == 0.0


def test_internal_api_raises_as_torch_tpu(tpuhost):
    r = tpuhost("internal_api.py")
    assert r.rc == 0, r.stderr[-2000:]
    assert ("device_count raised device_count is internal to TorchTPU and can only be called by the "
            "PyTorch framework (torch and torch_tpu). Use torch.accelerator.device_count instead.") in r.stdout
    assert "accelerator_sync None" in r.stdout


def test_devices_count(tpuhost):
    r = tpuhost("not_fooled.py", devices=4)
    assert "accelerator tpu True 4" in r.stdout
    assert r.report["devices"] == 4


def test_factories_and_module_moves(tpuhost):
    # torch.arange(0, 4, device=tpu) reported shape (0,): the composite factory filled an empty tpu
    # tensor through arange.out, whose resize the wrapper never saw; weight_norm(...).to("tpu")
    # failed ("Couldn't swap"): torch swapped the wrapper where a real device moves the parameter.
    r = tpuhost("factories_and_modules.py")
    assert r.rc == 0, r.stderr[-2000:]
    out = r.lines()
    assert "arange (4,) 10" in out
    assert "eye (3, 3)" in out
    assert "linspace (5,)" in out
    assert "weight_norm tpu:0 tpu:0" in out
    assert "step tpu:0 True" in out
    # torch.autocast("tpu") raised "Could not run 'aten::reshape' ... 'Autocasttpu' backend"
    assert "autocast torch.bfloat16 (3, 2) torch.float32" in out
    # .tolist() raised "not supported for tensor subclasses" (litgpt's generate steps); .numpy() says
    # what it says on any accelerator
    assert "host [0, 1, 2, 3] [0, 1, 2, 3] can't convert tpu:0 device type tensor to numpy" in out
