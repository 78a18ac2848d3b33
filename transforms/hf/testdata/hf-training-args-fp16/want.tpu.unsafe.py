from transformers import Seq2SeqTrainingArguments, TrainingArguments

args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=8,
    bf16=True,  # want:tpu "PHF004: fp16 mixed precision"
)
s2s = Seq2SeqTrainingArguments(output_dir="out", bf16=True, predict_with_generate=True)  # want:tpu "PHF004: fp16"
