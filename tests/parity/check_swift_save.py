"""Loads model folders that swift saved with transformers and compares logits with the ones swift computed.

Usage: check_swift_save.py FOLDER [FOLDER ...]; each FOLDER holds a model and swift_logits.safetensors
({input_ids, logits}). Exit 0 when every max abs diff <= 1e-4 (fp32), else 1 with the worst case printed.
"""
import sys

import torch
import transformers
from safetensors.torch import load_file

ok = True
for folder in sys.argv[1:]:
    ref = load_file(f"{folder}/swift_logits.safetensors")
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                              attn_implementation="eager").eval()
    with torch.no_grad():
        logits = model(input_ids=ref["input_ids"]).logits
    diff = (logits - ref["logits"]).abs().max().item()
    print(f"{folder}: {model.config.model_type} max abs diff {diff:.2e}")
    ok = ok and diff <= 1e-4
sys.exit(0 if ok else 1)
