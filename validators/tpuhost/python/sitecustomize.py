"""pallasify's simulated TPU host: started before the user's code when PALLASIFY_TPUHOST=1.

The wrapper (validators/tpuhost, Go) puts this directory first on PYTHONPATH. A sitecustomize of
the environment's own, if any, still runs (it is looked up after this one on sys.path).
"""

import os
import sys


def _chain():
    """Runs the next sitecustomize on sys.path (the one this file shadows)."""
    here = os.path.dirname(os.path.abspath(__file__))
    import importlib.util

    for d in sys.path:
        if not d or os.path.abspath(d) == here:
            continue
        p = os.path.join(d, "sitecustomize.py")
        if os.path.isfile(p):
            spec = importlib.util.spec_from_file_location("_pallasify_next_sitecustomize", p)
            if spec and spec.loader:
                spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


_chain()
if os.environ.get("PALLASIFY_TPUHOST") == "1":
    os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    from pallasify_tpuhost import runtime as _pallasify_tpuhost_runtime

    _pallasify_tpuhost_runtime.start()
