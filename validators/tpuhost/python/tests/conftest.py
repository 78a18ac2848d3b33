"""Shared fixtures: one coverage JSON for the session (coverage.py in its own process, as the Go
wrapper runs it), and a runner for scripts on the simulated TPU host."""

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
