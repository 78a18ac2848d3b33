import torch as th

th.backends.cuda.matmul.allow_tf32 = False
