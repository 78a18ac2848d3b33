import torch

from row_bias import row_bias


def test_row_bias():
    x = torch.arange(16, dtype=torch.float32, device="cuda").reshape(4, 4)
    bias = torch.tensor([1.0, -1.0, 0.5, 2.0], device="cuda")
    torch.testing.assert_close(row_bias(x, bias), 2 * x + bias)
