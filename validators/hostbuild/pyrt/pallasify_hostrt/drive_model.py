"""KernelBench-style check: python -m pallasify_hostrt.drive_model NEW.py REF.py

Imports REF (Model, get_inputs, get_init_inputs) and NEW (ModelNew, whose
load_inline builds come from hostbuild), runs both on the same inputs (put on
"cuda", i.e. the CPU here) with the same weights, and compares the outputs
with KernelBench's tolerance (atol = rtol = 1e-2). Prints PASS and exits 0 when
they agree.
"""
import importlib.util
import sys

import torch


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cuda(x):
    return x.cuda() if isinstance(x, torch.Tensor) else x


def main(argv):
    new_path, ref_path = argv[1], argv[2]
    ref = _load(ref_path, "pallasify_ref_model")
    new = _load(new_path, "pallasify_new_model")
    torch.manual_seed(0)
    init = ref.get_init_inputs() if hasattr(ref, "get_init_inputs") else []
    model = ref.Model(*init).cuda()
    torch.manual_seed(0)
    model_new = new.ModelNew(*init).cuda()
    model_new.load_state_dict(model.state_dict(), strict=False)
    torch.manual_seed(1)
    inputs = [_cuda(x) for x in ref.get_inputs()]
    with torch.no_grad():
        want = model(*inputs)
        got = model_new(*inputs)
    if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor) or got.shape != want.shape:
        print("FAIL shape: got %s want %s" % (getattr(got, "shape", type(got)), getattr(want, "shape", type(want))))
        return 1
    if not torch.allclose(got.float(), want.float(), atol=1e-2, rtol=1e-2):
        print("FAIL values: max abs diff %g" % (got.float() - want.float()).abs().max().item())
        return 1
    print("PASS %s" % new_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
