"""torch.compile(model) in a docstring is prose."""
import torch

# torch.compile(model) in a comment is ignored
model = torch.compile(model, backend="tpu", dynamic=False)
keras_model.compile(optimizer="adam")  # not torch.compile
compiled = list(map(torch.compile, fns))  # torch.compile as a value: not a call
other = torch.compile(*args, **kwargs)  # splats: cannot see the keywords
label = "torch.compile(model)"
