import torch

a = torch.FloatTensor(4)
b = torch.cuda.FloatTensorish(3)
# torch.cuda.FloatTensor(4) in a comment
s = "torch.cuda.FloatTensor"
c = x.type(torch.FloatTensor)
