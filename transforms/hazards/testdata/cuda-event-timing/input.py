import torch
from torch.cuda import Event


def time_forward(model, x, iters=10):
    start = torch.cuda.Event(enable_timing=True)  # want "PDX002: CUDA event timing: TpuEvent.elapsed_time raises NotImplementedError"
    end = Event(enable_timing=True)  # want "PDX002: CUDA event timing"
    start.record()
    for _ in range(iters):
        model(x)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters  # want "PDX002: elapsed_time .*perf_counter"


def fence():
    done = torch.cuda.Event()  # want "PDX002: CUDA event: events are placeholders"
    done.record()
    return done


def unrelated(clock):
    return clock.elapsed_time()  # no argument: not an event pair
