"""pallasify numeric validation harness.

Runs a Pallas candidate (TPU interpret mode) against the original CUDA kernel
(a reference shared library built with the CUDA-on-CPU emulator, or a plain
Python reference) under the protocol in validators/CONTRACTS.md and writes a
JSON verdict. Entry point: python -m pallasify_harness --help.
"""

HARNESS_VERSION = "1"
VERDICT_SCHEMA = "pallasify.verdict/v1"
