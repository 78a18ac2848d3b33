import cupy
import onnxruntime as ort
import pynvml
import torch
from torch.utils.cpp_extension import load_inline


def _tpu_memory(name, *args, **kwargs):
    """pallasify: TorchTPU has no torch.cuda-style memory statistics.

    Uses torch.accelerator.memory where it works, else returns a neutral value.
    """
    memory = getattr(torch.accelerator, "memory", None)
    call = getattr(memory, {"mem_get_info": "get_memory_info"}.get(name, name), None)
    if call is not None and torch.accelerator.is_available():
        try:
            return call(*args, **kwargs)
        except (AttributeError, NotImplementedError, RuntimeError):
            pass
    return {"memory_stats": {}, "memory_summary": "", "mem_get_info": (0, 0)}.get(
        name, None if name == "empty_cache" or name.startswith("reset_") else 0
    )


ext = load_inline(name="ext", cpp_sources=[""], cuda_sources=[""], functions=["fused"])


# CUDA-only bodies: each guard stays CUDA-only (PCU012).
def sm_version():
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        print("sm", props.major)


def capability():
    if torch.cuda.is_available():
        return torch.cuda.get_device_capability()
    return None


def side_stream(x):
    if torch.cuda.is_available():
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            x = x * 2
        torch.cuda.synchronize()
    return x


def nvlink():
    if torch.cuda.is_available():
        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetCount()
    return 0


def session(path):
    providers = ["CUDAExecutionProvider"] if torch.cuda.is_available() else ["CPUExecutionProvider"]
    return ort.InferenceSession(path, providers=providers)


def as_cupy(x):
    if torch.cuda.is_available():
        return cupy.asarray(x)
    return x.numpy()


def cudnn_flags():
    if torch.cuda.is_available():
        torch.backends.cudnn.benchmark = True


def fused(x):
    if torch.cuda.is_available():
        return ext.fused(x)
    return x * 2


def default_device():
    if torch.cuda.is_available():
        return "cuda:0"
    return "cpu"


def _stats():
    free, total = _tpu_memory("mem_get_info")
    print(free, total, torch.cuda.get_device_capability(0))


def report():
    if torch.cuda.is_available():
        _stats()


def cpu_only():
    if not torch.cuda.is_available():
        print("cpu")
    else:
        print(torch.cuda.get_device_capability())


# Device-agnostic bodies: rewritten as before.
def half(model):
    if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu":
        model = model.half()
        torch.manual_seed(0)
    return model


def memory():
    if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu":
        _tpu_memory("empty_cache")
        print(_tpu_memory("memory_allocated"))


def _seed():
    torch.manual_seed(0)


def seed():
    if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu":
        _seed()


def name():
    if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu":
        return torch.tpu.get_device_properties().total_memory
    return 0


n = torch.accelerator.device_count() if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu" else 0


# A flag that holds a CUDA check: kept where a guard on it does CUDA-only work.
class Prefetcher:
    def __init__(self, device):
        self.is_cuda = device.type == "cuda" and torch.cuda.is_available()

    def __iter__(self):
        stream = torch.cuda.Stream() if self.is_cuda else None
        yield stream


use_nvml = torch.cuda.is_available()
if use_nvml:
    pynvml.nvmlInit()

use_gpu = torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu"
if use_gpu:
    print(torch.accelerator.device_count())

SUPPORTS_FLASH = torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)
USE_FUSED = torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu" and torch.accelerator.device_count() > 1


def _check_nvidia(log):
    result = __import__("subprocess").run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True)
    log(result.stdout)


def check_links(log=print):
    if torch.cuda.is_available():
        name = torch.cuda.get_device_properties(0).name.lower()
        if "nvidia" in name:
            _check_nvidia(log)
    else:
        log("No GPUs available")


def report(log=print):
    if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type == "tpu":
        log("Failed to run nvidia-smi")


def _ref_filter(x, f):
    return torch.nn.functional.conv2d(x, f)


def filter2d(x, f, impl="cuda"):
    if impl == "cuda" and x.device.type == "cuda":
        return _plugin_filter(x, f)
    return _ref_filter(x, f)


def pick(x, device_type="cuda"):
    if device_type == "cuda":
        return x.half()
    return x
