#!/usr/bin/env python3
"""Writes a tiny DeepSeek-V2 or DeepSeek-V3 model folder without weights (config.json + the deepseek_style tokenizer)
for the e2e tests, which give it random weights with `swift export --init_strategy normal`.

usage: make_deepseek_config.py deepseek_v2|deepseek_v3 OUT_DIR

Multi-head latent attention (4 heads; a 16-wide latent, 8 + 8 query/key dimensions, 12-wide values; V3 with a
24-wide query bottleneck, V2 with q_proj as V2-Lite), layer 0 dense, layers 1-2 sparse (V3: 8 experts in 4 groups,
top 2 of the 2 best groups, sigmoid scores, weights x 2.5; V2: 4 experts, greedy top 2 by softmax), shared experts.
"""
import json
import os
import shutil
import sys

import transformers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(family, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    tokenizer = os.path.join(ROOT, "tests", "assets", "tokenizers", "deepseek_style")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tokenizer, name), out_dir)
    size = dict(vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=4, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12,
                moe_intermediate_size=16, num_experts_per_tok=2, first_k_dense_replace=1, max_position_embeddings=512,
                initializer_range=0.1, pad_token_id=1, bos_token_id=0, eos_token_id=1)
    if family == "deepseek_v3":
        config = transformers.DeepseekV3Config(**size, q_lora_rank=24, n_routed_experts=8, n_shared_experts=1,
                                               n_group=4, topk_group=2, routed_scaling_factor=2.5, norm_topk_prob=True)
        arch = "DeepseekV3ForCausalLM"
    elif family == "deepseek_v2":
        config = transformers.DeepseekV2Config(**size, q_lora_rank=None, n_routed_experts=4, n_shared_experts=2,
                                               topk_method="greedy")
        arch = "DeepseekV2ForCausalLM"
    else:
        sys.exit(f"unknown family {family}")
    d = config.to_dict()
    d.update(architectures=[arch], torch_dtype="float32")
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(d, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
