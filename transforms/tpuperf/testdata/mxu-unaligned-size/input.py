import torch
from torch import nn
from torch.nn import Embedding as Emb

wte = nn.Embedding(50257, 768)  # want "PTP003: Embedding num_embeddings=50257 .pad to 50304; 0.1% of its tiles is padding.: not a multiple of 128.*pad the vocabulary"
head = nn.Linear(768, 1000)  # want "PTP003: Linear out_features=1000 .pad to 1024; 2.3% of its tiles is padding.: not a multiple"
both = nn.Linear(in_features=1000, out_features=300, bias=False)  # want "PTP003: Linear in_features=1000 .pad to 1024; 2.3% of its tiles is padding., out_features=300 .pad to 384; 21.9% of its tiles is padding."
aligned = nn.Linear(768, 3072)
tiny = nn.Linear(768, 10)  # below one tile: not reported
small = nn.Linear(96, 64)
computed = nn.Linear(dim, 4 * dim)
emb = Emb(1000, 64)  # want "PTP003: Embedding num_embeddings=1000 .pad to 1024."
attn = torch.nn.MultiheadAttention(1000, 8)  # want "PTP003: MultiheadAttention embed_dim=1000"
lazy = nn.LazyLinear(130)  # want "PTP003: LazyLinear out_features=130 .pad to 256; 49.2% of its tiles is padding."
other = mylib.Linear(1000, 1000)
