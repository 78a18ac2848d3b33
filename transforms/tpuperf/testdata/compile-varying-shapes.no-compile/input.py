from torch.utils.data import DataLoader

# No torch.compile in this module: the last batch is not reported.
train = DataLoader(ds, batch_size=32, shuffle=True)
