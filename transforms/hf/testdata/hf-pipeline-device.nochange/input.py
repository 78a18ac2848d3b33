from transformers import pipeline

cpu = pipeline("sentiment-analysis", device=-1)
named = pipeline("sentiment-analysis", device="cpu")
chosen = pipeline("sentiment-analysis", device=args.device)
default = pipeline("sentiment-analysis")
label = "pipeline(task, device=0)"
