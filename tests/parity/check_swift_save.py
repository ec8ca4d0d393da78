"""Loads model folders that swift saved with transformers and compares logits with the ones swift computed.

Usage: check_swift_save.py FOLDER [FOLDER ...]; each FOLDER holds a model and swift_logits.safetensors
({input_ids, logits}). Exit 0 when every max abs diff <= 1e-4 (fp32), else 1 with the worst case printed.

A folder saved quantized (config.json quantization_config, bitsandbytes) is checked twice: transformers loads it
with bitsandbytes and runs it (bitsandbytes' CPU matmul may compute in bfloat16: within 0.25; 0.5 for LLM.int8,
which quantizes the activations too), and the exact check
dequantizes every saved weight with bitsandbytes' own functions into the unquantized architecture (within 1e-4).
"""
import json
import sys

import torch
import transformers
from safetensors.torch import load_file


def dequantized_model(folder):
    import bitsandbytes.functional as F
    config = transformers.AutoConfig.from_pretrained(folder)
    config.quantization_config = None
    del config.quantization_config
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32,
                                                          attn_implementation="eager").eval()
    saved = load_file(f"{folder}/model.safetensors")
    params = dict(model.named_parameters())
    with torch.no_grad():
        for key, value in saved.items():
            if key.endswith(".weight") and value.dtype == torch.uint8 and f"{key}.absmax" in saved:
                stats = {k[len(key) + 1:]: v for k, v in saved.items() if k.startswith(key + ".")}
                state = F.QuantState.from_dict(stats, device=torch.device("cpu"))
                params[key].copy_(F.dequantize_4bit(value, state))
            elif key.endswith(".weight") and value.dtype == torch.int8:
                params[key].copy_(F.int8_vectorwise_dequant(value, saved[key[:-len("weight")] + "SCB"]))
            elif key in params:
                params[key].copy_(value)
    return model


ok = True
for folder in sys.argv[1:]:
    ref = load_file(f"{folder}/swift_logits.safetensors")
    with open(f"{folder}/config.json") as f:
        quantization = json.load(f).get("quantization_config")
    quantized = quantization is not None
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, device_map="cpu",
                                                              attn_implementation="eager").eval()
    with torch.no_grad():
        logits = model(input_ids=ref["input_ids"]).logits
    diff = (logits - ref["logits"]).abs().max().item()
    if not quantized:
        print(f"{folder}: {model.config.model_type} max abs diff {diff:.2e}")
        ok = ok and diff <= 1e-4
        continue
    with torch.no_grad():
        exact = (dequantized_model(folder)(input_ids=ref["input_ids"]).logits - ref["logits"]).abs().max().item()
    print(f"{folder}: {model.config.model_type} quantized: bitsandbytes' kernels max abs diff {diff:.2e}, "
          f"dequantized by bitsandbytes {exact:.2e}")
    # LLM.int8 also quantizes the activations (with outlier decomposition): looser than 4-bit's bfloat16 kernel.
    ok = ok and diff <= (0.5 if quantization.get("load_in_8bit") else 0.25) and exact <= 1e-4
sys.exit(0 if ok else 1)
