#!/bin/bash
# usage: train.sh NUM_PROC (CUDA_VISIBLE_DEVICES picks the GPUs)
NUM_PROC=$1
NGPUS=$(nvidia-smi -L | wc -l)
export CUDA_VISIBLE_DEVICES=0,1 NCCL_DEBUG=INFO
torchrun --nproc_per_node=$NUM_PROC train.py "$@"
torchrun --nproc_per_node=$NGPUS train.py --device cuda
python train.py --gpus 8
echo "done"  # nvidia-smi in a comment
