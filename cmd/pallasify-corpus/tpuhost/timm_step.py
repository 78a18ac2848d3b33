"""A tiny timm training and inference step, as a user's script would run it.

Written for pallasify's corpus benchmark (cmd/pallasify-corpus -tpuhost), not part of
timm: the benchmark copies it into a temporary copy of the repository, so migration
rewrites its device choice like any user code (timm's own tests take their device from
$TORCH_DEVICE instead). It picks the device the usual way (CUDA when available, else
the CPU) and runs what timm's train.py does per step, at toy size: a model from
create_model (pretrained=False), Mixup and SoftTargetCrossEntropy, an optimizer from
create_optimizer_v2, a scheduler and a model EMA, two steps; then inference through
timm's own eval transform. No weights, no network. Each step prints one line
"STEP <name> PASSED ..." or "STEP <name> FAILED <error>"; the exit code is 1 when any
failed.
"""

import random
import sys
import traceback

import numpy as np
import torch
from PIL import Image

import timm
from timm.data import Mixup, create_transform, resolve_data_config
from timm.loss import SoftTargetCrossEntropy
from timm.optim import create_optimizer_v2
from timm.scheduler import create_scheduler_v2
from timm.utils import ModelEmaV3, accuracy

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
failed = 0


def step(name, fn):
    global failed
    try:
        detail = fn()
        print(f"STEP {name} PASSED {detail or ''}".rstrip(), flush=True)
    except Exception as e:  # report and go on: every step is counted
        failed += 1
        where = traceback.extract_tb(e.__traceback__)[-1]
        print(f"STEP {name} FAILED {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
              f"(at {where.filename.rsplit('/', 1)[-1]}:{where.lineno})", flush=True)


def train(name, **kw):
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=10, **kw).to(device)
    model.train()
    ema = ModelEmaV3(model, decay=0.9, device=device)
    opt = create_optimizer_v2(model, "adamw", lr=1e-3, weight_decay=0.05)
    sched, _ = create_scheduler_v2(opt, "cosine", num_epochs=2, warmup_epochs=0)
    mixup = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=10)
    loss_fn = SoftTargetCrossEntropy()
    torch.manual_seed(1)
    random.seed(0)
    np.random.seed(0)  # Mixup draws lambda and mode from numpy
    x = torch.randn(4, 3, 64, 64, device=device)
    y = torch.tensor([0, 1, 2, 3], device=device)
    losses = []
    for epoch in range(2):
        xm, ym = mixup(x, y)
        loss = loss_fn(model(xm), ym)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema.update(model)
        sched.step(epoch + 1)
        losses.append(loss.item())
    assert xm.device.type == device.type, xm.device
    return "loss " + " ".join(f"{v:.4f}" for v in losses)


def infer(name):
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=10).to(device).eval()
    cfg = resolve_data_config({}, model=model)
    tf = create_transform(**cfg)
    img = Image.new("RGB", (80, 60), (120, 30, 200))
    x = tf(img).unsqueeze(0).to(device)
    with torch.no_grad():
        out = model(x)
    top1, = accuracy(out, torch.tensor([0], device=device), topk=(1,))
    return f"input {'x'.join(map(str, x.shape))} logits-std {float(out.std()):.4f} top1 {float(top1):.1f}"


# The device the step ran on (cpu before migration, tpu after): on stderr, so it is shown
# but not compared.
print(f"device {device.type}", file=sys.stderr, flush=True)
step("resnet18-train", lambda: train("resnet18"))
step("vit-tiny-train", lambda: train("vit_tiny_patch16_224", img_size=64))
step("convnext-atto-infer", lambda: infer("convnext_atto"))
sys.exit(1 if failed else 0)
