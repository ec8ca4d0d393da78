#!/usr/bin/env python3
"""Writes a tiny model folder without weights (config.json + a tokenizer) of a family whose tokenizer the tests make
themselves (tests/assets/tokenizers/<family>_style), for the e2e tests, which give it random weights with
`swift export --init_strategy normal`.

usage: make_family_config.py phi3|phi4|glm4|internlm2|internlm3 OUT_DIR

phi3: Phi-4-mini's shape (the phi3_style tokenizer, a tied head, longrope over 0.75 of each head with the pretraining
length 16, so that training rows run with the long factors). phi4: Phi-4's (the phi4_style tokenizer, plain RoPE).
Both: fused qkv_proj and gate_up_proj. glm4: GLM-4-0414's (the glm4_style tokenizer; q/k/v biases, a fused
gate_up_proj, GLM's sandwich norms, RoPE over half of each head in adjacent pairs; EOS <|endoftext|>, <|user|> and
<|observation|>). internlm2 and internlm3 (remote code: config.json written as their repositories have it, on the
internlm2_style tokenizer): InternLM2's names and grouped wqkv with dynamic NTK; InternLM3's explicit head_dim (24) and
bias flags. All: 4 heads (of 16), 2 key/value heads.
"""
import json
import os
import shutil
import sys

import transformers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(family, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    tokenizer = os.path.join(ROOT, "tests", "assets", "tokenizers", ("internlm2" if "internlm" in family else family) + "_style")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tokenizer, name), out_dir)
    with open(os.path.join(tokenizer, "tokenizer.json")) as f:
        added = {t["content"]: t["id"] for t in json.load(f)["added_tokens"]}
    size = dict(vocab_size=640, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=512, initializer_range=0.1)
    if family == "phi3":
        config = transformers.Phi3Config(**size, tie_word_embeddings=True, original_max_position_embeddings=16,
                                         rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,
                                                              partial_rotary_factor=0.75,
                                                              short_factor=[1.0, 1.05, 1.1, 1.3, 1.6, 2.0],
                                                              long_factor=[1.0, 1.5, 2.5, 4.0, 6.0, 8.0]),
                                         bos_token_id=added["<s>"], eos_token_id=added["<|endoftext|>"],
                                         pad_token_id=added["<|endoftext|>"])
    elif family == "phi4":
        config = transformers.Phi3Config(**size, bos_token_id=added["<|endoftext|>"], eos_token_id=added["<|im_end|>"],
                                         pad_token_id=added["<|dummy_85|>"])
    elif family == "glm4":
        config = transformers.Glm4Config(**size, head_dim=16, pad_token_id=added["<|endoftext|>"],
                                         eos_token_id=[added[t] for t in ("<|endoftext|>", "<|user|>", "<|observation|>")])
    elif family in ("internlm2", "internlm3"):  # no config class in transformers: the fields the remote code reads
        config = None
        d = dict(size, model_type=family, architectures=["InternLM2ForCausalLM" if family == "internlm2" else "InternLM3ForCausalLM"],
                 hidden_act="silu", rms_norm_eps=1e-5, bias=False, bos_token_id=added["<s>"], eos_token_id=added["</s>"],
                 pad_token_id=added["</s>"], tie_word_embeddings=False, torch_dtype="float32")
        if family == "internlm2":
            d.update(rope_theta=1000000.0, rope_scaling={"type": "dynamic", "factor": 2.0})
        else:
            d.update(head_dim=24, qkv_bias=False, rope_theta=50000000.0, rope_scaling={"rope_type": "dynamic", "factor": 6.0})
    else:
        sys.exit(f"unknown family {family}")
    if config is not None:
        d = config.to_dict()
        d.update(architectures=[type(config).__name__.replace("Config", "ForCausalLM")], torch_dtype="float32")
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(d, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
