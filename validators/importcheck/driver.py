"""pallasify import check: import a tree's modules and collect its tests in this process.

Run as ``python driver.py INPUT.json RESULTS.jsonl`` (validators/importcheck writes both paths).
INPUT holds the mode ({"hide": ["torch_tpu"]} hides those modules from this process) and the jobs:
one per tree, each with its sys.path roots, its modules and whether to collect its tests. Each
result is one JSON line appended to RESULTS and flushed at once, with a "start" line before each
module, so a process that dies mid-import still tells which module killed it.
"""

import json
import os
import signal
import sys
import time
import traceback


class ImportTimeout(BaseException):
    """Raised by the alarm: a BaseException, so the repository's `except Exception` cannot swallow it."""


class _Hiding:
    """Wraps a meta_path finder so that the hidden modules are not found: `import torch_tpu` raises
    ModuleNotFoundError and importlib.util.find_spec returns None, as on a host without them."""

    def __init__(self, inner, hidden):
        self._inner = inner
        self._hidden = hidden

    def find_spec(self, name, path=None, target=None):
        if any(name == h or name.startswith(h + ".") for h in self._hidden):
            return None
        find = getattr(self._inner, "find_spec", None)
        return find(name, path, target) if find else None

    def __getattr__(self, attr):
        return getattr(self._inner, attr)


def hide(names):
    if names:
        sys.meta_path[:] = [_Hiding(f, tuple(names)) for f in sys.meta_path]


def _alarm(signum, frame):
    raise ImportTimeout("no result within the per-module time limit")


def first_line(exc):
    msg = str(exc).strip()
    return msg.splitlines()[0] if msg else ""


def site_in(tree, tb):
    """The last traceback frame inside tree, as "relative/path.py:line" ("" when none is)."""
    site = ""
    for fs in traceback.extract_tb(tb):
        fn = os.path.realpath(fs.filename)
        if fn.startswith(tree + os.sep):
            site = "%s:%d" % (os.path.relpath(fn, tree), fs.lineno or 0)
    return site


def classify(tree, tops, hidden, exc):
    """A result for an exception raised while importing (or collecting) from tree."""
    out = {"status": "failed", "type": type(exc).__name__, "message": first_line(exc),
           "site": site_in(tree, exc.__traceback__)}
    if isinstance(exc, ImportTimeout):
        out["status"] = "timeout"
    elif isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        if top not in tops and top not in hidden:
            out["status"] = "missing-dependency"
            out["dependency"] = top
    return out


class Writer:
    def __init__(self, path):
        self._f = open(path, "a", encoding="utf-8")

    def put(self, rec):
        self._f.write(json.dumps(rec) + "\n")
        self._f.flush()


def import_one(job, mod, hidden, timeout):
    import importlib

    tree = job["tree"]
    name = mod["name"]
    sdir = os.path.join(tree, mod["dir"]) if mod.get("dir") else ""
    if sdir:
        # A script's directory comes first, as `python script.py` puts it.
        sys.path.insert(0, sdir)
    prev = sys.modules.get(name)
    path = os.path.realpath(os.path.join(tree, mod["path"]))
    if prev is not None and os.path.realpath(getattr(prev, "__file__", "") or "") != path:
        del sys.modules[name]  # another file of the same name (a script in another directory)
    else:
        prev = None
    saved_argv = sys.argv
    sys.argv = [path]
    t0 = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        try:
            importlib.import_module(name)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        res = {"status": "ok"}
    except BaseException as exc:  # noqa: BLE001 - SystemExit and the alarm included
        if isinstance(exc, KeyboardInterrupt):
            raise
        res = classify(tree, job["tops"], hidden, exc)
    finally:
        sys.argv = saved_argv
        if sdir:
            try:
                sys.path.remove(sdir)
            except ValueError:
                pass
        if prev is not None:
            sys.modules[name] = prev
    res["seconds"] = round(time.monotonic() - t0, 3)
    return res


class Collector:
    """A pytest plugin recording collection errors (pytest's own reports)."""

    def __init__(self):
        self.errors = []
        self.tests = 0

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors.append(report)

    def pytest_collection_finish(self, session):
        self.tests = len(session.items)


def collect(job, hidden, timeout, out):
    tree = job["tree"]
    try:
        import pytest  # noqa: F401
    except ImportError:
        out.put({"job": job["id"], "kind": "collect", "status": "no-pytest"})
        return
    import pytest

    col = Collector()
    t0 = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, timeout)
    rc = None
    err = None
    try:
        try:
            rc = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "--rootdir", tree], plugins=[col])
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, KeyboardInterrupt):
            raise
        err = classify(tree, job["tops"], hidden, exc)
    errors = []
    for rep in col.errors:
        errors.append(collect_error(tree, job["tops"], hidden, rep))
    rec = {"job": job["id"], "kind": "collect", "status": "ok", "tests": col.tests, "errors": errors,
           "exit": int(rc) if rc is not None else None, "seconds": round(time.monotonic() - t0, 3)}
    if err is not None:
        rec["status"] = "failed"
        rec["error"] = err
    elif rc is not None and int(rc) not in (0, 1, 2, 5):
        # 3: internal error, 4: usage error (an option of the repository's config pytest does not know).
        rec["status"] = "pytest-error"
    out.put(rec)


def collect_error(tree, tops, hidden, rep):
    """One failed collect report: the file, the exception's type and first line, the site in tree."""
    path = rep.nodeid.split("::")[0]
    text = getattr(rep, "longreprtext", "") or str(rep.longrepr)
    etype, msg, site = "", "", ""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("E ") and not etype:
            body = s[1:].strip()
            head, sep, rest = body.partition(": ")
            if sep and head.replace(".", "").replace("_", "").isalnum():
                etype, msg = head.split(".")[-1], rest
            else:
                msg = body
        loc = s.split(":")
        if len(loc) >= 2 and loc[0].endswith(".py") and loc[1].isdigit():
            fn = os.path.realpath(os.path.join(tree, loc[0]))
            if fn.startswith(tree + os.sep):
                site = "%s:%s" % (os.path.relpath(fn, tree), loc[1])
    out = {"path": path, "type": etype, "message": msg, "site": site, "status": "failed"}
    if etype == "ModuleNotFoundError" and msg.startswith("No module named "):
        top = msg[len("No module named "):].strip("'\"").split(".")[0]
        if top not in tops and top not in hidden:
            out["status"] = "missing-dependency"
            out["dependency"] = top
    return out


def purge(tree):
    for name, m in list(sys.modules.items()):
        fn = getattr(m, "__file__", None) or ""
        if fn and os.path.realpath(fn).startswith(tree + os.sep):
            del sys.modules[name]


def main():
    spec_path, results = sys.argv[1], sys.argv[2]
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    hidden = spec.get("hide") or []
    hide(hidden)
    # What the repository prints goes to stderr; nothing of ours is on stdout.
    os.dup2(2, 1)
    signal.signal(signal.SIGALRM, _alarm)
    out = Writer(results)
    base_path = [p for p in sys.path if os.path.realpath(p or ".") != os.path.dirname(os.path.realpath(__file__))]
    home = os.getcwd()
    for job in spec["jobs"]:
        tree = os.path.realpath(job["tree"])
        job["tree"] = tree
        job["tops"] = set(job["tops"])
        sys.path[:] = [os.path.join(tree, r) if r else tree for r in job["roots"]] + base_path
        os.chdir(tree)
        for mod in job["modules"]:
            out.put({"job": job["id"], "kind": "start", "module": mod["name"]})
            res = import_one(job, mod, hidden, spec["module_timeout"])
            res.update({"job": job["id"], "kind": "module", "module": mod["name"]})
            out.put(res)
        if job.get("collect"):
            out.put({"job": job["id"], "kind": "start", "module": ""})
            collect(job, hidden, spec["collect_timeout"], out)
        os.chdir(home)
        purge(tree)
    out.put({"kind": "done"})


if __name__ == "__main__":
    main()
