"""Launcher.

Set CUDA_VISIBLE_DEVICES before running (docstrings are not reported).
"""
import os
import subprocess

os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"  # want "PDX008: CUDA_VISIBLE_DEVICES: TorchTPU ignores it"
os.environ.setdefault("CUDA_LAUNCH_BLOCKING", "1")  # want "PDX008: CUDA_LAUNCH_BLOCKING: use TPU_LAUNCH_BLOCKING=1"
debug = os.getenv("NCCL_DEBUG")  # want "PDX008: NCCL_DEBUG: NCCL is not used on TPU"
subprocess.run("CUDA_VISIBLE_DEVICES=0 CUDA_LAUNCH_BLOCKING=1 python train.py", shell=True)  # want "PDX008: CUDA_LAUNCH_BLOCKING: .*; CUDA_VISIBLE_DEVICES: "
# os.environ["CUDA_VISIBLE_DEVICES"] in a comment is ignored
label = "CUDA_VISIBLE_DEVICES is a variable"  # prose, not a NAME=value: not reported
