"""A tiny LitGPT training and inference step, as a user's script would run it.

Written for pallasify's corpus benchmark (cmd/pallasify-corpus -tpuhost), not part of
LitGPT: the benchmark copies it into a temporary copy of the repository, so migration
rewrites its device choice like any user code. It picks the device the usual way
(CUDA when available, else the CPU), builds two tiny models from LitGPT's own configs
(a Pythia/GPT-NeoX one and a Llama one: RoPE, RMSNorm, SwiGLU, grouped queries), runs
forward, backward and an optimizer step, then greedy generation through the KV cache.
No weights, no tokenizer, no network. Each step prints one line
"STEP <name> PASSED ..." or "STEP <name> FAILED <error>"; the exit code is 1 when any
failed.
"""

import sys
import traceback

import torch
import torch.nn.functional as F

from litgpt.config import Config
from litgpt.generate.base import generate
from litgpt.model import GPT
from litgpt.utils import chunked_cross_entropy

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


def tiny(name, **kw):
    return Config.from_name(name, n_layer=2, n_embd=64, n_head=4, block_size=64, padded_vocab_size=256,
                            vocab_size=256, **kw)


def train(config):
    torch.manual_seed(0)
    model = GPT(config).to(device)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 256, (2, 17), device=device)
    losses = []
    for _ in range(2):
        logits = model(x[:, :-1])
        loss = chunked_cross_entropy(logits, x[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert logits.device.type == device.type, logits.device
    return "loss " + " ".join(f"{v:.4f}" for v in losses)


def infer(config):
    torch.manual_seed(0)
    model = GPT(config).to(device)
    model.eval()
    model.max_seq_length = 32
    model.set_kv_cache(batch_size=1, device=device)
    prompt = torch.tensor([1, 2, 3, 4], device=device)
    with torch.no_grad():
        out = generate(model, prompt, max_returned_tokens=12, temperature=0.0)
    return "tokens " + " ".join(str(int(t)) for t in out.tolist())


def attention_mask():
    # the SDPA path with an explicit causal mask against F.scaled_dot_product_attention directly
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 4, 8, 16, device=device) for _ in range(3))
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    mask = torch.ones(8, 8, dtype=torch.bool, device=device).tril()
    b = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return "causal and mask agree" if torch.allclose(a, b, atol=1e-5) else "causal and mask DIFFER"


# The device the step ran on (cpu before migration, tpu after): on stderr, so it is shown
# but not compared.
print(f"device {device.type}", file=sys.stderr, flush=True)
step("pythia-train", lambda: train(tiny("pythia-14m")))
step("llama-train", lambda: train(tiny("tiny-llama-1.1b", n_query_groups=2, intermediate_size=128)))
step("pythia-generate", lambda: infer(tiny("pythia-14m")))
step("llama-generate", lambda: infer(tiny("tiny-llama-1.1b", n_query_groups=2, intermediate_size=128)))
step("sdpa-mask", attention_mask)
sys.exit(1 if failed else 0)
