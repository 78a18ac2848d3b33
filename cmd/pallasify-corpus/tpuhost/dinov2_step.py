"""A tiny DINOv2 training and inference step, as a user's script would run it.

Written for pallasify's corpus benchmark (cmd/pallasify-corpus -tpuhost), not part of
DINOv2 (its repository has no unit tests): the benchmark copies it into a temporary copy
of the repository, so migration rewrites its device choice like any user code. It picks
the device the usual way (CUDA when available, else the CPU), builds a 2-block ViT from
DINOv2's own classes (patch embedding, memory-efficient attention blocks without
xFormers, layer scale, register tokens), and runs: a forward pass with masked patch
tokens, the DINO head with the DINO, iBOT and KoLeo losses (centering and Sinkhorn-Knopp
teachers), backward and an SGD step; then inference with intermediate layers and
position-embedding interpolation at another resolution. No weights, no network. Each
step prints one line "STEP <name> PASSED ..." or "STEP <name> FAILED <error>"; the exit
code is 1 when any failed.
"""

import sys
import traceback
from functools import partial

import torch

from dinov2.layers import DINOHead, MemEffAttention, NestedTensorBlock
from dinov2.loss import DINOLoss, KoLeoLoss, iBOTPatchLoss
from dinov2.models.vision_transformer import DinoVisionTransformer

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


def vit():
    torch.manual_seed(0)
    return DinoVisionTransformer(img_size=56, patch_size=14, embed_dim=64, depth=2, num_heads=4, mlp_ratio=2,
                                 block_fn=partial(NestedTensorBlock, attn_class=MemEffAttention),
                                 init_values=1e-5, block_chunks=0, num_register_tokens=2).to(device)


def train():
    model = vit()
    head = DINOHead(64, 32, hidden_dim=64, bottleneck_dim=16, nlayers=2).to(device)
    dino, ibot, koleo = DINOLoss(32).to(device), iBOTPatchLoss(32).to(device), KoLeoLoss().to(device)
    opt = torch.optim.SGD(list(model.parameters()) + list(head.parameters()), lr=0.01, momentum=0.9)
    torch.manual_seed(1)
    images = torch.randn(4, 3, 56, 56, device=device)
    masks = torch.zeros(4, 16, dtype=torch.bool, device=device)
    masks[:, ::3] = True
    losses = []
    for it in range(2):
        with torch.no_grad():
            t = model.forward_features(images)
            t_cls = head(t["x_norm_clstoken"])
            t_centered = dino.softmax_center_teacher(t_cls, teacher_temp=0.07)
            t_sk = dino.sinkhorn_knopp_teacher(t_cls, teacher_temp=0.07)
            t_patch = head(t["x_norm_patchtokens"])
            t_patch_centered = ibot.softmax_center_teacher(t_patch, teacher_temp=0.07)
            dino.update_center(t_cls)
        s = model.forward_features(images, masks=masks)
        s_cls = head(s["x_norm_clstoken"])
        s_patch = head(s["x_norm_patchtokens"])
        loss = (dino([s_cls], [t_centered]) + dino([s_cls], [t_sk])
                + ibot(s_patch, t_patch_centered, masks.flatten(1)).mean()
                + 0.1 * koleo(s["x_norm_clstoken"]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        dino.apply_center_update()
        losses.append(loss.item())
    assert s_cls.device.type == device.type, s_cls.device
    return "loss " + " ".join(f"{v:.4f}" for v in losses)


def infer():
    model = vit().eval()
    torch.manual_seed(2)
    with torch.no_grad():
        x = torch.randn(2, 3, 70, 70, device=device)  # another resolution: pos-embed interpolation
        feats = model.get_intermediate_layers(x, n=2, reshape=True, return_class_token=True)
        cls = model(x)
    shapes = " ".join("x".join(map(str, f[0].shape)) for f in feats)
    return f"shapes {shapes} cls-std {float(cls.std()):.4f}"


def hub():
    # the torch.hub entry point users call (hubconf.py), without downloading weights
    from dinov2.hub.backbones import dinov2_vits14_reg

    torch.manual_seed(0)
    model = dinov2_vits14_reg(pretrained=False, img_size=56).to(device).eval()
    with torch.no_grad():
        out = model(torch.randn(1, 3, 56, 56, device=device))
    return f"out {'x'.join(map(str, out.shape))} std {float(out.std()):.4f}"


# The device the step ran on (cpu before migration, tpu after): on stderr, so it is shown
# but not compared.
print(f"device {device.type}", file=sys.stderr, flush=True)
step("vit-train", train)
step("vit-infer", infer)
step("hub-vits14-reg", hub)
sys.exit(1 if failed else 0)
