"""pallasify's simulated TPU host: TorchTPU's op coverage and a CPU runtime that acts as a TPU VM.

coverage: `python -m pallasify_tpuhost.coverage OUT.json` reads TorchTPU's registrations (run it in a
process of its own: it imports torch_tpu). runtime: started by sitecustomize.py when
PALLASIFY_TPUHOST=1; see README.md.
"""

__all__ = ["COVERAGE_SCHEMA"]

# Bumped when coverage.py's JSON changes shape or meaning (the cache key includes it).
COVERAGE_SCHEMA = 1
