from transformers import TrainingArguments

a = TrainingArguments(output_dir="out", bf16=True)
b = TrainingArguments(output_dir="out", fp16=True, bf16=False)  # both chosen explicitly
c = TrainingArguments(output_dir="out", fp16=args.fp16)  # computed: left alone
d = TrainingArguments(output_dir="out", fp16=False)
