import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

model = torch.compile(Net(), backend="tpu", dynamic=False)

train = DataLoader(ds, batch_size=32, shuffle=True)  # want "PTP002: DataLoader without drop_last=True: the last batch"
evl = DataLoader(ds, 32, drop_last=False)  # want "PTP002: DataLoader with drop_last=False"
full = torch.utils.data.DataLoader(ds, batch_size=8)  # want "PTP002: DataLoader without drop_last=True"
ok1 = DataLoader(ds, batch_size=32, drop_last=True)
ok2 = DataLoader(ds, batch_size=32, drop_last=training)
ok3 = DataLoader(ds)
ok4 = DataLoader(ds, batch_size=None)
ok5 = DataLoader(ds, batch_sampler=sampler)
ok6 = DataLoader(ds, batch_size=32, **loader_kwargs)
ok7 = DataLoader(ds, batch_size=1)


def collate(batch):
    return pad_sequence(batch, batch_first=True)  # want "PTP002: pad_sequence pads each batch to its longest"


enc = tokenizer(texts, padding=True, return_tensors="pt")  # want "PTP002: padding=True pads to the longest"
enc2 = tokenizer(texts, padding="longest")  # want "PTP002: padding=\"longest\" pads"
enc3 = tokenizer(texts, padding=True, pad_to_multiple_of=128)
enc4 = tokenizer(texts, padding="max_length", max_length=512)
conv = torch.nn.Conv2d(3, 8, 3, padding=1)
