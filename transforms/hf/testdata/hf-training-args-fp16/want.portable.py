from transformers import Seq2SeqTrainingArguments, TrainingArguments
import torch

# pallasify: the CUDA or TPU device this process uses, else the CPU (other accelerators keep
# the CPU path).
DEVICE = torch.device(
    torch.accelerator.current_accelerator().type
    if torch.accelerator.is_available()
    and torch.accelerator.current_accelerator().type in ("cuda", "tpu")
    else "cpu"
)

args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=8,
    fp16=DEVICE.type != "tpu",
    bf16=DEVICE.type == "tpu",  # want:tpu "PHF004: fp16 mixed precision"
)
s2s = Seq2SeqTrainingArguments(output_dir="out", fp16=DEVICE.type != "tpu", bf16=DEVICE.type == "tpu", predict_with_generate=True)  # want:tpu "PHF004: fp16"
