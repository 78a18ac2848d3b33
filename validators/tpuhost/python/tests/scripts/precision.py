import torch

torch.manual_seed(0)
a = torch.randn(64, 64)
b = torch.randn(64, 64)
ref = a @ b
got = (a.to("tpu") @ b.to("tpu")).cpu()
print("maxdiff", float((got - ref).abs().max()))
with torch.tpu.precision(torch.tpu.Precision.HIGHEST):
    hi = (a.to("tpu") @ b.to("tpu")).cpu()
print("highest_diff", float((hi - ref).abs().max()))
print("matmul_precision", torch.get_float32_matmul_precision())
