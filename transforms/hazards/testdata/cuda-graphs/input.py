import torch


def capture(model, static_in):
    g = torch.cuda.CUDAGraph()  # want "PDX009: CUDA graphs \\(`CUDAGraph`\\) do not exist on TPU"
    with torch.cuda.graph(g):  # want "PDX009: CUDA graphs \\(`graph`\\)"
        static_out = model(static_in)
    g.replay()
    return static_out


step = torch.cuda.make_graphed_callables(model, (x,))  # want "PDX009: .*make_graphed_callables"
