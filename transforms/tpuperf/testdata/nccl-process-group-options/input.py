import torch.distributed as dist
from torch.distributed import ProcessGroupNCCL

opts = dist.ProcessGroupNCCL.Options()  # want "PTP005: `dist.ProcessGroupNCCL.Options` is NCCL's process group"
opts.is_high_priority_stream = True
dist.init_process_group("nccl", pg_options=opts)  # want "PTP005: pg_options= carries backend options"
dist.new_group(ranks, pg_options=None)
if isinstance(pg, ProcessGroupNCCL):  # want "PTP005: `ProcessGroupNCCL` is NCCL's"
    pass
g = dist.new_group(ranks, pg_options=ProcessGroupNCCL.Options())  # want "PTP005: `ProcessGroupNCCL.Options` is NCCL's"
gloo = dist.ProcessGroupGloo
