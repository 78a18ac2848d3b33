import numba
import torch
from numba import cuda

if args.cuda:
    print("use .cuda()")  # x.cuda()
kernel = cuda.jit(f)
numba.cuda.synchronize()
x = t.to(DEVICE)
y = t.cuda(*args)
z = t.cuda(stream=s)
