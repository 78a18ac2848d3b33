from transformers import Seq2SeqTrainingArguments, TrainingArguments
import torch

# pallasify: the accelerator this process uses (CUDA, TPU, ...), else the CPU.
DEVICE = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=8,
    fp16=DEVICE.type != "tpu",
    bf16=DEVICE.type == "tpu",  # want:tpu "PHF004: fp16 mixed precision"
)
s2s = Seq2SeqTrainingArguments(output_dir="out", fp16=DEVICE.type != "tpu", bf16=DEVICE.type == "tpu", predict_with_generate=True)  # want:tpu "PHF004: fp16"
