import subprocess

import torch
import torch.multiprocessing as mp

world_size = torch.cuda.device_count()
ngpus = 4


def main():
    mp.spawn(train, args=(world_size,), nprocs=world_size)  # want "PTP006: starts one process per device from this process .nprocs= a device count.: a TPU chip serves one process"
    mp.spawn(train, nprocs=torch.cuda.device_count())  # want "PTP006: starts one process per device"
    torch.multiprocessing.spawn(train, (), ngpus)  # want "PTP006: starts one process per device"
    mp.spawn(train, nprocs=2)
    mp.spawn(train, nprocs=args.world_size)
    subprocess.run(["torchrun", "--nproc_per_node=gpu", "train.py"])  # want "PTP006: torchrun's --nproc_per_node sizes the launch by GPUs or devices"
    subprocess.run(f"torchrun --nproc-per-node={torch.cuda.device_count()} train.py", shell=True)  # want "PTP006: .*sizes the launch by GPUs or devices"
    subprocess.run("torchrun --nproc_per_node=4 train.py", shell=True)
