"""Reference for the parity tests: tiny random Hugging Face models of every family and rope scaling type,
saved with transformers' own save_pretrained, with the logits transformers computes for them.

Usage: make_reference.py OUT_DIR. Writes OUT_DIR/<case>/ (a model folder + reference.safetensors) and
OUT_DIR/manifest.json. The C++ parity test (tests/model/parity_test.cpp) loads each folder with swift and
compares logits. Reference: transformers (PyPI), fp32 on CPU.
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file

VOCAB = 160
BASE = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=False)

# DeepSeek's latent attention, tiny: 4 heads of 8 + 8 query/key dimensions (without / with RoPE), values 12 wide.
MLA = dict(num_key_value_heads=4, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12, moe_intermediate_size=16)

# Phi-3's class defaults name token 32000 (beyond this vocabulary) as pad and EOS.
PHI3 = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
PHI3_SHORT, PHI3_LONG = [1.0, 1.05, 1.1, 1.3, 1.6, 2.0], [1.0, 1.5, 2.5, 4.0, 6.0, 8.0]

# name -> (config class, overrides, legacy): legacy rewrites config.json in the v4 style
# ("rope_scaling" with the old "type" key and a top-level rope_theta) to cover both spellings.
CASES = {
    "llama_default": ("LlamaConfig", dict(rope_theta=10000.0), False),
    "llama_tied_bias": ("LlamaConfig", dict(tie_word_embeddings=True, attention_bias=True, mlp_bias=True), False),
    "llama_linear": ("LlamaConfig", dict(rope_scaling=dict(rope_type="linear", factor=2.0)), False),
    "llama_linear_legacy": ("LlamaConfig", dict(rope_scaling=dict(rope_type="linear", factor=3.0)), True),
    "llama_dynamic": ("LlamaConfig", dict(max_position_embeddings=8, rope_scaling=dict(rope_type="dynamic", factor=2.0)), True),
    "llama_llama3": ("LlamaConfig", dict(rope_theta=500000.0, rope_scaling=dict(
        rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=16)), False),
    "llama_yarn": ("LlamaConfig", dict(rope_scaling=dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=16)), False),
    "llama_yarn_mscale": ("LlamaConfig", dict(rope_scaling=dict(
        rope_type="yarn", factor=4.0, original_max_position_embeddings=16, mscale=0.707, mscale_all_dim=0.707,
        beta_fast=16, beta_slow=2)), False),
    "llama_head_dim": ("LlamaConfig", dict(head_dim=24), False),
    "qwen2_default": ("Qwen2Config", dict(rope_theta=1000000.0), False),
    "qwen2_sliding": ("Qwen2Config", dict(use_sliding_window=True, sliding_window=4, max_window_layers=1), False),
    "qwen2_yarn_legacy": ("Qwen2Config", dict(rope_scaling=dict(rope_type="yarn", factor=2.0, original_max_position_embeddings=32)), True),
    "qwen3_default": ("Qwen3Config", dict(head_dim=32, rope_theta=1000000.0), False),
    "qwen3_tied_bias": ("Qwen3Config", dict(head_dim=8, tie_word_embeddings=True, attention_bias=True), False),
    "qwen3_sliding": ("Qwen3Config", dict(head_dim=16, use_sliding_window=True, sliding_window=3, max_window_layers=0), False),
    "mistral_default": ("MistralConfig", dict(sliding_window=None), False),
    "mistral_sliding": ("MistralConfig", dict(sliding_window=5, head_dim=32), False),
    # Mixture of experts: 4 experts, top 2 (their probabilities renormalised, or not); a dense layer beside a sparse
    # one (mlp_only_layers); Qwen2-MoE's sigmoid-gated shared expert.
    "qwen3_moe": ("Qwen3MoeConfig", dict(head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                         norm_topk_prob=True, mlp_only_layers=[0]), False),
    "qwen3_moe_every_layer": ("Qwen3MoeConfig", dict(head_dim=16, num_experts=6, num_experts_per_tok=3,
                                                     moe_intermediate_size=24, norm_topk_prob=False), False),
    "qwen2_moe": ("Qwen2MoeConfig", dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                         shared_expert_intermediate_size=48, decoder_sparse_step=2), False),
    # Mixtral: every layer sparse, its files in Mixtral's names (block_sparse_moe, experts' w1/w3/w2); a window.
    "mixtral": ("MixtralConfig", dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32), False),
    "mixtral_sliding": ("MixtralConfig", dict(num_local_experts=3, num_experts_per_tok=2, intermediate_size=24,
                                              sliding_window=5), False),
    # Gemma: (1 + w) norms, embeddings scaled by sqrt(hidden_size), GELU (tanh), tied head.
    "gemma": ("GemmaConfig", dict(head_dim=16, tie_word_embeddings=True), False),
    # Gemma 2: sandwich norms, query_pre_attn_scalar, attention and final-logit soft-capping small enough to bite,
    # a sliding layer (window 4) then a global one.
    "gemma2": ("Gemma2Config", dict(head_dim=16, sliding_window=4, query_pre_attn_scalar=24, attn_logit_softcapping=2.0,
                                    final_logit_softcapping=3.0), False),
    # Gemma 3: (1 + w) q/k norms, RoPE per layer type (the global layers' linear scaling, the local base).
    "gemma3_text": ("Gemma3TextConfig", dict(
        head_dim=16, sliding_window=4, query_pre_attn_scalar=16, layer_types=["sliding_attention", "full_attention"],
        rope_parameters=dict(full_attention=dict(rope_type="linear", factor=2.0, rope_theta=1e6),
                             sliding_attention=dict(rope_type="default", rope_theta=1e4))), False),
    # ... and as Gemma 3's released config.json files say it: rope_theta, rope_local_base_freq, rope_scaling and
    # sliding_window_pattern instead of layer_types.
    "gemma3_text_legacy": ("Gemma3TextConfig", dict(
        head_dim=16, sliding_window=3, layer_types=["sliding_attention", "full_attention"],
        rope_parameters=dict(full_attention=dict(rope_type="linear", factor=3.0, rope_theta=5e5),
                             sliding_attention=dict(rope_type="default", rope_theta=2e4))), True),
    # DeepSeek: multi-head latent attention (a query bottleneck or q_proj; the latent KV and the shared RoPE key,
    # rotated in pairs or in halves; YaRN's mscale in the scores' scale), a dense first layer then sparse ones with
    # shared experts. V2 routes by softmax (greedy, or within groups by their best expert); V3 by sigmoid plus the
    # correction bias (random here) within the best groups by their best two, renormalised and scaled.
    "deepseek_v2": ("DeepseekV2Config", dict(MLA, q_lora_rank=None, n_routed_experts=4, num_experts_per_tok=2,
                                             n_shared_experts=2, first_k_dense_replace=1, topk_method="greedy"), False),
    "deepseek_v2_grouped": ("DeepseekV2Config", dict(MLA, q_lora_rank=24, n_routed_experts=8, num_experts_per_tok=3,
                                                     n_shared_experts=1, first_k_dense_replace=0, n_group=4, topk_group=2,
                                                     topk_method="group_limited_greedy", routed_scaling_factor=4.0), False),
    "deepseek_v3": ("DeepseekV3Config", dict(MLA, q_lora_rank=24, n_routed_experts=8, num_experts_per_tok=2,
                                             n_shared_experts=1, first_k_dense_replace=1, n_group=4, topk_group=2,
                                             routed_scaling_factor=2.5, norm_topk_prob=True), False),
    "deepseek_v3_yarn": ("DeepseekV3Config", dict(MLA, q_lora_rank=None, n_routed_experts=6, num_experts_per_tok=2,
                                                  n_shared_experts=2, first_k_dense_replace=0, n_group=3, topk_group=2,
                                                  routed_scaling_factor=1.5, norm_topk_prob=False, rope_interleave=False,
                                                  rope_parameters=dict(rope_type="yarn", factor=4.0, rope_theta=10000.0,
                                                                       original_max_position_embeddings=16, mscale=0.9,
                                                                       mscale_all_dim=0.8)), True),
    # (New cases go last: each case draws its weights and inputs from its position.)
    # Phi-3: fused qkv_proj and gate_up_proj, a sliding window on every layer.
    "phi3": ("Phi3Config", dict(PHI3, sliding_window=6), False),
    # Phi-3 128k / Phi-4-mini: longrope over 0.75 of each head (6 frequencies), tied. The greedy continuation runs from
    # 12 to 20 tokens, past original_max_position_embeddings 16, where every key is rotated anew with the long factors
    # (the greedy reference below); the legacy file spells it "rope_scaling": {"type": "longrope"} with partial_rotary_factor inside.
    "phi3_longrope": ("Phi3Config", dict(PHI3, tie_word_embeddings=True, original_max_position_embeddings=16,
                                         rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,
                                                              partial_rotary_factor=0.75, short_factor=PHI3_SHORT,
                                                              long_factor=PHI3_LONG)), True),
    # Every forward past original_max_position_embeddings 8 (the long factors, attention factor sqrt(2) by default).
    "phi3_longrope_long": ("Phi3Config", dict(PHI3, original_max_position_embeddings=8,
                                              rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,
                                                                   short_factor=PHI3_SHORT + [1.0, 1.5],
                                                                   long_factor=PHI3_LONG + [9.0, 12.0])), False),
    # GLM-4-0414: q/k/v biases, a fused gate_up_proj, GLM's sandwich norms, RoPE over half of each head in adjacent
    # pairs; then tied, over 0.75 of each head with linear scaling, in the v4 spelling (top-level partial_rotary_factor).
    "glm4": ("Glm4Config", dict(head_dim=16, pad_token_id=0, eos_token_id=2), False),
    "glm4_partial_legacy": ("Glm4Config", dict(head_dim=16, pad_token_id=0, eos_token_id=[2, 3], tie_word_embeddings=True,
                                               partial_rotary_factor=0.75,
                                               rope_parameters=dict(rope_type="linear", factor=2.0, rope_theta=5000.0,
                                                                    partial_rotary_factor=0.75)), True),
    # InternLM2 and InternLM3 are remote code, not in transformers: the reference is transformers' Llama on the same
    # weights, and the saved folder is then rewritten in the family's own layout (REWRITE below). InternLM2: biases on
    # wqkv and wo, 2 query heads per key/value head, dynamic NTK (12 tokens past max_position_embeddings 8); then 4 per
    # key/value head with linear scaling. InternLM3: q/k/v, o and MLP biases, an explicit head_dim, dynamic NTK.
    "internlm2": ("LlamaConfig", dict(attention_bias=True, max_position_embeddings=8, rope_theta=1e6,
                                      rope_scaling=dict(rope_type="dynamic", factor=2.0)), False),
    "internlm2_gqa4": ("LlamaConfig", dict(num_attention_heads=8, rope_scaling=dict(rope_type="linear", factor=2.0)), False),
    "internlm3": ("LlamaConfig", dict(attention_bias=True, mlp_bias=True, head_dim=24, max_position_embeddings=8,
                                      rope_theta=5e7, rope_scaling=dict(rope_type="dynamic", factor=6.0)), False),
}


def as_internlm2(folder):
    """A Llama folder rewritten as InternLM2's remote code saves it: its names, q/k/v in one wqkv whose rows are
    grouped by key/value head (modeling_internlm2.py splits them as "b q (h gs d) -> b q h gs d", gs = 2 + query heads
    per key/value head: the group's queries, then its key, then its value), rope_scaling with "type", bias for wqkv/wo."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg["hidden_size"] // heads
    w = load_file(os.path.join(folder, "model.safetensors"))
    out = {"model.tok_embeddings.weight": w.pop("model.embed_tokens.weight"), "output.weight": w.pop("lm_head.weight"),
           "model.norm.weight": w.pop("model.norm.weight")}
    for i in range(cfg["num_hidden_layers"]):
        p, q = f"model.layers.{i}.", f"model.layers.{i}."
        for kind in ("weight", "bias"):
            if p + f"self_attn.q_proj.{kind}" not in w:
                continue
            qs = w.pop(p + f"self_attn.q_proj.{kind}").reshape(kv, heads // kv, d, -1)
            ks = w.pop(p + f"self_attn.k_proj.{kind}").reshape(kv, 1, d, -1)
            vs = w.pop(p + f"self_attn.v_proj.{kind}").reshape(kv, 1, d, -1)
            fused = torch.cat([qs, ks, vs], 1).reshape(kv * (heads // kv + 2) * d, -1)
            out[q + f"attention.wqkv.{kind}"] = fused.squeeze(-1) if kind == "bias" else fused
        for old, new in (("self_attn.o_proj", "attention.wo"), ("mlp.gate_proj", "feed_forward.w1"),
                         ("mlp.up_proj", "feed_forward.w3"), ("mlp.down_proj", "feed_forward.w2"),
                         ("input_layernorm", "attention_norm"), ("post_attention_layernorm", "ffn_norm")):
            for kind in ("weight", "bias"):
                if p + f"{old}.{kind}" in w:
                    out[q + f"{new}.{kind}"] = w.pop(p + f"{old}.{kind}")
    assert not w, sorted(w)
    os.remove(os.path.join(folder, "model.safetensors"))
    save_file({k: v.contiguous() for k, v in out.items()}, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    params = cfg.pop("rope_parameters")
    scaling = {"type": params["rope_type"], "factor": params["factor"]} if params["rope_type"] != "default" else None
    bias = cfg.pop("attention_bias")
    for key in ("mlp_bias", "head_dim", "pretraining_tp"):
        cfg.pop(key, None)
    cfg.update(model_type="internlm2", architectures=["InternLM2ForCausalLM"], bias=bias,
               rope_theta=params["rope_theta"], rope_scaling=scaling)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def as_internlm3(folder):
    """A Llama folder as InternLM3's remote code saves it: Llama's names, qkv_bias for q/k/v, bias for o_proj and the MLP."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    assert cfg["attention_bias"] == cfg["mlp_bias"]
    bias = cfg.pop("attention_bias")
    cfg.pop("mlp_bias")
    cfg.update(model_type="internlm3", architectures=["InternLM3ForCausalLM"], bias=bias, qkv_bias=bias)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


REWRITE = {"internlm2": as_internlm2, "internlm2_gqa4": as_internlm2, "internlm3": as_internlm3}


def randomise(model, seed):
    """Weights large enough that attention, norms and biases all matter (HF's init is near-uniform)."""
    g = torch.Generator().manual_seed(seed)
    unit = 0 if model.config.model_type.startswith("gemma") else 1  # Gemma's norms scale by 1 + weight
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(unit + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.15 * torch.randn(p.shape, generator=g))
        for name, b in model.named_buffers():  # DeepSeek-V3's router bias: a saved buffer that changes the choice
            if name.endswith("e_score_correction_bias"):
                b.copy_(0.1 * torch.randn(b.shape, generator=g))


def to_legacy(path):
    with open(path) as f:
        cfg = json.load(f)
    params = cfg.pop("rope_parameters", None) or {}
    if "full_attention" in params:  # Gemma 3: the global layers' RoPE, the local base and the layer pattern
        cfg["rope_local_base_freq"] = params["sliding_attention"]["rope_theta"]
        cfg["sliding_window_pattern"] = len(cfg.pop("layer_types"))
        cfg.pop("_sliding_window_pattern", None)
        cfg["rope_scaling"] = params = params["full_attention"]  # "rope_type", as Gemma 3's files spell it
        cfg["rope_theta"] = params.pop("rope_theta")
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
        return
    cfg["rope_theta"] = params.pop("rope_theta", 10000.0)
    if params.get("rope_type", "default") != "default":
        params["type"] = params.pop("rope_type")
        cfg["rope_scaling"] = params
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)


def main(out_dir):
    torch.manual_seed(0)
    os.makedirs(out_dir, exist_ok=True)
    manifest = {"transformers": transformers.__version__, "torch": torch.__version__, "cases": []}
    T = 12
    for i, (name, (config_cls, overrides, legacy)) in enumerate(CASES.items()):
        cfg = getattr(transformers, config_cls)(**{**BASE, **overrides})
        cfg._attn_implementation = "eager"  # the plainest reference path
        model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.float32).eval()
        randomise(model, 1000 + i)
        folder = os.path.join(out_dir, name)
        model.save_pretrained(folder, safe_serialization=True)
        if legacy:
            to_legacy(os.path.join(folder, "config.json"))
        # Reload from disk so the reference is what transformers makes of the saved folder.
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32,
                                                                  attn_implementation="eager").eval()
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, VOCAB, (2, T), generator=g)
        # Left-padded batch: row 0 has 4 pads, row 1 none.
        mask = torch.ones(2, T, dtype=torch.long)
        mask[0, :4] = 0
        padded_ids = ids.clone()
        padded_ids[0, :4] = 0
        position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.no_grad():
            logits = model(input_ids=ids).logits
            padded = model(input_ids=padded_ids, attention_mask=mask, position_ids=position_ids).logits
            bf16 = transformers.AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.bfloat16,
                                                                     attn_implementation="eager").eval()
            bf16_logits = bf16(input_ids=ids).logits.float()
            # Greedy continuation of row 0: 8 new tokens, none stopping it (swift's Generator without stop tokens).
            model.generation_config.eos_token_id = None
            greedy = model.generate(ids[:1], attention_mask=torch.ones_like(ids[:1]), max_new_tokens=8,
                                    do_sample=False, pad_token_id=0)[0, T:]
            if (model.config.rope_parameters or {}).get("rope_type") == "longrope":
                # Past original_max_position_embeddings Phi-3's generate drops its cache to recompute every key with
                # the long factors, but transformers 5.19 then feeds the model the last token alone (no cache, no
                # context). The intended result, which swift gives, is greedy decoding without a cache.
                seq = ids[:1]
                for _ in range(8):
                    seq = torch.cat([seq, model(input_ids=seq).logits[:, -1].argmax(-1, keepdim=True)], 1)
                greedy = seq[0, T:]
        save_file({"input_ids": ids, "logits": logits.contiguous(), "padded_input_ids": padded_ids,
                   "padded_attention_mask": mask, "padded_logits": padded.contiguous(),
                   "bf16_logits": bf16_logits.contiguous(), "greedy": greedy.contiguous()},
                  os.path.join(folder, "reference.safetensors"))
        if name in REWRITE:
            REWRITE[name](folder)
        manifest["cases"].append(name)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    print(f"wrote {len(manifest['cases'])} reference models to {out_dir} "
          f"(transformers {transformers.__version__}, torch {torch.__version__})")


if __name__ == "__main__":
    main(sys.argv[1])
