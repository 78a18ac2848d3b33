import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
parser.add_argument("--eval-device", default="cpu", choices=("cuda", "cpu", "cuda:1"))
parser.add_argument("--backend", default="nccl", choices=["cuda", "gloo"])
parser.add_argument("--mode", choices=["cuda", "cpu"], help="not a device option")
