from typing import Literal

import lightning as L
import pytorch_lightning as pl
import torch
from lightning.fabric import Fabric


def distribute(accelerator: Literal["cpu", "cuda", "auto"] = "auto", devices=1):  # want "PDX014: \"cuda\" is checked as a value of `accelerator`, the accelerator of `L.Fabric\\(...\\)` \\(line 19\\)"
    allowed = {"cpu", "gpu", "cuda", "mps", "auto"}  # want "PDX014: \"gpu\" is checked"
    if accelerator not in allowed:
        raise ValueError(accelerator)
    if accelerator == "auto":
        accelerator = "cuda" if torch.cuda.device_count() else "cpu"  # want "PDX014: `accelerator` becomes \"cuda\""
    if accelerator not in ("cuda", "gpu"):  # want "PDX014: \"cuda\" is checked"
        print("single device")
    if accelerator == "mps":
        accelerator = "cpu"
    return L.Fabric(accelerator=accelerator, devices=devices)


def train(model):
    trainer = L.Trainer(accelerator="gpu", devices=8, strategy="ddp", precision="16-mixed")  # want "PDX014: Lightning's \"gpu\" accelerator \\(its strategy \"ddp\" uses NCCL on GPUs; its precision \"16-mixed\" is fp16"
    trainer.fit(model)
    old = pl.Trainer(gpus=8)  # want "PDX014: `gpus=` asks Lightning"
    xla = Fabric(accelerator="tpu", devices=8)  # want "PDX014: Lightning's \"tpu\" accelerator: Lightning's \"tpu\" accelerator is PyTorch/XLA"
    return old, xla


def keep(model, device):
    # Not Lightning's: a device string, an accelerator on CPU, an unrelated name.
    cpu = L.Fabric(accelerator="cpu", devices=1)
    auto = pl.Trainer(accelerator="auto", gpus=None)
    backend = "cuda"
    return model.to(device), cpu, auto, backend
