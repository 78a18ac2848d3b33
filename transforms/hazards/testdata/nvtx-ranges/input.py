import nvtx
import torch


def step(model, x):
    torch.cuda.nvtx.range_push("forward")  # want "PDX010: NVTX \\(`torch.cuda.nvtx.range_push`\\) has no effect on TPU"
    y = model(x)
    torch.cuda.nvtx.range_pop()  # want "PDX010: NVTX"
    with nvtx.annotate("loss"):  # want "PDX010: NVTX \\(`nvtx.annotate`\\)"
        loss = y.sum()
    with torch.autograd.profiler.emit_nvtx():  # want "PDX010: .*emit_nvtx"
        loss.backward()
    with torch.profiler.record_function("opt"):  # device-neutral: not reported
        pass
