import torch


def prefetch(loader, device):
    side = torch.cuda.Stream()  # want "PDX003: a CUDA stream: CUDA streams are placeholders on TPU"
    batch = next(loader)
    with torch.cuda.stream(side):  # want "PDX003: a stream context"
        batch = batch.to(device, non_blocking=True)
    torch.cuda.current_stream().wait_stream(side)  # want "PDX003: `wait_stream`"
    batch.record_stream(torch.cuda.current_stream())  # want "PDX003: `record_stream`"
    s = torch.cuda.current_stream()  # want "PDX003: the current CUDA stream"
    return batch


def not_a_stream(queue):
    queue.wait_event()  # no argument: not reported
    return "torch.cuda.Stream()"  # a string: not reported
