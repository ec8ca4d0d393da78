#!/usr/bin/env python3
"""Writes a tiny Gemma 2 or Gemma 3 model folder without weights (config.json + the gemma_style tokenizer) for the
e2e tests, which give it random weights with `swift export --init_strategy normal`.

usage: make_gemma_config.py gemma2|gemma3_text OUT_DIR

initializer_range 0.3: weights large enough that Gemma 2's soft-capping (attention 5, logits 3) bites. Layer 0 slides
(window 8), layer 1 is global; Gemma 3's layers take their own RoPE (1e6 global, 1e4 local).
"""
import json
import os
import shutil
import sys

import transformers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(family, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    tokenizer = os.path.join(ROOT, "tests", "assets", "tokenizers", "gemma_style")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tokenizer, name), out_dir)
    size = dict(vocab_size=640, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, sliding_window=8, max_position_embeddings=512,
                query_pre_attn_scalar=16, initializer_range=0.3, pad_token_id=0, eos_token_id=1, bos_token_id=2)
    if family == "gemma2":
        config = transformers.Gemma2Config(**size, attn_logit_softcapping=5.0, final_logit_softcapping=3.0)
        arch = "Gemma2ForCausalLM"
    elif family == "gemma3_text":
        config = transformers.Gemma3TextConfig(**size, layer_types=["sliding_attention", "full_attention"])
        arch = "Gemma3ForCausalLM"
    else:
        sys.exit(f"unknown family {family}")
    d = config.to_dict()
    d.update(architectures=[arch], torch_dtype="float32")
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(d, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
