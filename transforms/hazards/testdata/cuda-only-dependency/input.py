import os
import bitsandbytes as bnb  # want "PDX007: CUDA-only dependency `bitsandbytes` imported: .*bf16"
from apex import amp  # want "PDX007: CUDA-only dependency `apex`"
from flash_attn.flash_attn_interface import flash_attn_func  # want "PDX007: .*`flash_attn`.*scaled_dot_product_attention"
import torch_xla.core.xla_model as xm  # want "PDX007: .*`torch_xla`.*must not be mixed"

try:
    import xformers.ops  # want "PDX007: .*`xformers`"
except ImportError:
    xformers = None

import numpy  # ordinary dependency
import apexlib  # a different package whose name starts with apex
import torch.cuda.nccl  # want "PDX007: CUDA-only dependency `torch.cuda.nccl` imported: .*tpu_dist"
from torch.cuda import nccl  # want "PDX007: CUDA-only dependency `torch.cuda.nccl`"
from torch.cuda import amp  # not nccl
