import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--backend", default="cuda")
parser.add_argument("--device", default="cpu")
parser.add_argument("--device", help="e.g. cuda")
mode = "cuda"
config = {"name": "cuda", "device_count": 2}
labels = {"cuda": "GPU"}


def run(kind="cuda"):
    """Pick the device ("cuda" by default)."""
    return kind


class Config:
    accelerator = "cuda"
