import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="tpu", choices=["tpu", "cpu"])
parser.add_argument("--eval-device", default="cpu", choices=("tpu", "cpu", "tpu:0"))
parser.add_argument("--backend", default="nccl", choices=["cuda", "gloo"])
parser.add_argument("--mode", choices=["cuda", "cpu"], help="not a device option")
