"""Reference for the LoRA parity tests (tests/tuners/lora_peft_test.cpp), built with PEFT and transformers (PyPI).

make OUT_DIR      for each case: OUT_DIR/<case>/base (a tiny random transformers model), OUT_DIR/<case>/adapter
                  (get_peft_model with non-zero B, perturbed DoRA magnitudes and a perturbed modules_to_save copy,
                  saved by PEFT) and OUT_DIR/<case>/reference.safetensors (input_ids, PEFT's logits, and
                  "grad:<file key>" = the gradient of mean(logits^2) for each trainable adapter tensor, in eval
                  mode); OUT_DIR/manifest.json.
check BASE ADAPTER LOGITS [TOL]
                  loads ADAPTER (written by swift) on BASE with PeftModel.from_pretrained and compares PEFT's
                  logits with LOGITS (input_ids, logits) at TOL (default 1e-4); exit 1 on a mismatch.
Reference: PEFT's LoRA layers on transformers' eager attention, fp32 on CPU.
"""
import json
import os
import sys

import peft
import torch
import transformers
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_reference import as_internlm2, as_internlm3, randomise  # noqa: E402  (the parity reference's helpers)
import internlm2_standin  # noqa: E402

BASE = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=False)

# name -> (config class, config overrides, LoraConfig kwargs)
# DeepSeek's latent attention, tiny (as make_reference.py's).
MLA = dict(num_key_value_heads=4, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12,
           moe_intermediate_size=16)

CASES = {
    "llama_qv_lm_head": ("LlamaConfig", {}, dict(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"],
                                                modules_to_save=["lm_head"])),
    "qwen2_all_linear_rslora": ("Qwen2Config", {}, dict(r=8, lora_alpha=32, target_modules="all-linear", use_rslora=True)),
    "llama_regex_embed": ("LlamaConfig", dict(attention_bias=True), dict(r=2, lora_alpha=5, target_modules=r".*\.(k|o|up)_proj",
                                                                     modules_to_save=["embed_tokens"])),
    # DoRA: a bias on the rescaled layers (PEFT subtracts it before rescaling), rsLoRA scaling, modules_to_save.
    "llama_dora_bias": ("LlamaConfig", dict(attention_bias=True), dict(r=4, lora_alpha=8, use_dora=True,
                                                                     target_modules=["q_proj", "o_proj", "down_proj"])),
    "qwen2_dora_all_linear_rslora": ("Qwen2Config", {}, dict(r=8, lora_alpha=16, target_modules="all-linear",
                                                            use_rslora=True, use_dora=True, modules_to_save=["lm_head"])),
    # Mixtral: the base saved in Mixtral's names (block_sparse_moe, w1/w3/w2), LoRA on its attention (PEFT's
    # all-linear would also adapt the router and the stacked experts as target parameters, which swift does not yet).
    "mixtral_attention": ("MixtralConfig", dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32),
                          dict(r=4, lora_alpha=8, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])),
    # LoRA on the experts' stacked weights (PEFT's target_parameters, lora.ParamWrapper: no dropout): both of Qwen3-MoE's
    # (gate_up_proj's branch nested as base_layer), and Mixtral's down_proj alone with rsLoRA.
    "qwen3_moe_experts": ("Qwen3MoeConfig", dict(head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                                 norm_topk_prob=True, mlp_only_layers=[0]),
                          dict(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "v_proj"],
                               target_parameters=["mlp.experts.gate_up_proj", "mlp.experts.down_proj"])),
    "mixtral_experts_down": ("MixtralConfig", dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32),
                             dict(r=2, lora_alpha=8, lora_dropout=0.0, use_rslora=True, target_modules=["o_proj"],
                                  target_parameters=["experts.down_proj"])),
    # The experts alone: PEFT's target_modules null beside target_parameters.
    "qwen3_moe_experts_alone": ("Qwen3MoeConfig", dict(head_dim=16, num_experts=4, num_experts_per_tok=2,
                                                       moe_intermediate_size=32),
                                dict(r=2, lora_alpha=4, lora_dropout=0.0, target_modules=None,
                                     target_parameters=["gate_up_proj"])),
    # Gemma 2 (soft-capping, sandwich norms, tied head) and Gemma 3 (per-layer-type RoPE): every linear layer.
    "gemma2_all_linear": ("Gemma2Config", dict(head_dim=16, sliding_window=4, attn_logit_softcapping=2.0,
                                               final_logit_softcapping=3.0, tie_word_embeddings=True),
                          dict(r=4, lora_alpha=8, target_modules="all-linear")),
    "gemma3_text_all_linear": ("Gemma3TextConfig", dict(head_dim=16, sliding_window=4,
                                                        layer_types=["sliding_attention", "full_attention"]),
                               dict(r=4, lora_alpha=8, target_modules="all-linear", use_rslora=True)),
    # DeepSeek: LoRA on every projection of the latent attention (the query bottleneck's two, or V2-Lite's q_proj),
    # and (V3) the routed experts' stacked weights. (PEFT 0.20 turns any gate_proj/up_proj/down_proj target of a
    # transformers-v5 MoE model, shared_experts.down_proj included, into the experts' target_parameters.)
    "deepseek_v3_mla_experts": ("DeepseekV3Config", dict(MLA, q_lora_rank=24, n_routed_experts=8, num_experts_per_tok=2,
                                                         n_shared_experts=1, first_k_dense_replace=1, n_group=4,
                                                         topk_group=2, routed_scaling_factor=2.5),
                                dict(r=4, lora_alpha=8, lora_dropout=0.0,
                                     target_modules=["q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"],
                                     target_parameters=["mlp.experts.gate_up_proj", "mlp.experts.down_proj"])),
    "deepseek_v2_lite": ("DeepseekV2Config", dict(MLA, q_lora_rank=None, n_routed_experts=4, num_experts_per_tok=2,
                                                  n_shared_experts=2, first_k_dense_replace=1),
                         dict(r=4, lora_alpha=16, use_rslora=True,
                              target_modules=["q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"])),
    # ms-swift's all-linear on MoE models (its find_all_linears list): PEFT 0.20 turns gate_proj/up_proj/down_proj into
    # the experts' stacked weights (gate_up_proj at rank 2r and alpha 2 alpha: rank_pattern/alpha_pattern), leaving the
    # dense layer's and the shared experts' MLPs alone; rsLoRA on DeepSeek-V3 so that the doubled rank's scaling shows.
    "qwen3_moe_msswift_all_linear": ("Qwen3MoeConfig", dict(head_dim=16, num_experts=4, num_experts_per_tok=2,
                                                            moe_intermediate_size=32, norm_topk_prob=True,
                                                            mlp_only_layers=[0]),
                                     dict(r=4, lora_alpha=8, lora_dropout=0.0,
                                          target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                          "down_proj"])),
    "deepseek_v3_msswift_all_linear": ("DeepseekV3Config", dict(MLA, q_lora_rank=24, n_routed_experts=8,
                                                                num_experts_per_tok=2, n_shared_experts=1,
                                                                first_k_dense_replace=1, n_group=4, topk_group=2,
                                                                routed_scaling_factor=2.5),
                                       dict(r=2, lora_alpha=2, lora_dropout=0.0, use_rslora=True,
                                            target_modules=["q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj",
                                                            "o_proj", "gate_proj", "up_proj", "down_proj"])),
    # Phi-3: LoRA on the fused qkv_proj and gate_up_proj, under PEFT's names; all-linear with DoRA on Phi-4-mini's
    # shape (longrope over 0.75 of each head, tied).
    "phi3_fused": ("Phi3Config", dict(pad_token_id=0, bos_token_id=1, eos_token_id=2, sliding_window=6),
                   dict(r=4, lora_alpha=8, target_modules=["qkv_proj", "gate_up_proj", "o_proj"])),
    "phi3_all_linear_dora": ("Phi3Config", dict(pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=True,
                                                original_max_position_embeddings=8,
                                                rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,
                                                                     partial_rotary_factor=0.75,
                                                                     short_factor=[1.0, 1.1, 1.2, 1.5, 2.0, 3.0],
                                                                     long_factor=[1.0, 2.0, 3.0, 4.0, 6.0, 9.0])),
                             dict(r=4, lora_alpha=8, target_modules="all-linear", use_dora=True)),
    # PEFT's rank_pattern / alpha_pattern on Linear layers (the first key matching a name's end after a '.').
    "llama_rank_alpha_pattern": ("LlamaConfig", {}, dict(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"],
                                                       rank_pattern={"q_proj": 8, r"layers\.1\.mlp\.down_proj": 2},
                                                       alpha_pattern={"down_proj": 3})),
    # GLM-4: all-linear (q/k/v with biases, o_proj, the fused gate_up_proj, down_proj) under PEFT's names.
    "glm4_all_linear": ("Glm4Config", dict(head_dim=16, pad_token_id=0, eos_token_id=2),
                        dict(r=4, lora_alpha=8, target_modules="all-linear")),
    # InternLM2 (remote code; internlm2_standin.py computes it under its names): ms-swift's all-linear, i.e. LoRA on the
    # fused wqkv (grouped by key/value head), wo, w1, w3, w2; biases on wqkv and wo, dynamic NTK past 8 positions.
    "internlm2_all_linear": ("InternLM2", dict(attention_bias=True, max_position_embeddings=8,
                                                rope_scaling=dict(rope_type="dynamic", factor=2.0)),
                             dict(r=4, lora_alpha=8, target_modules=["wqkv", "wo", "w1", "w2", "w3"])),
    # InternLM3 (remote code, Llama's names): ms-swift's all-linear list, biases everywhere (bias and qkv_bias), head_dim 24.
    "internlm3_all_linear": ("InternLM3", dict(attention_bias=True, mlp_bias=True, head_dim=24),
                             dict(r=4, lora_alpha=8, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                                     "up_proj", "down_proj"])),
}


def file_key(name):
    """PEFT's in-memory parameter name -> its adapter_model.safetensors key (get_peft_model_state_dict's)."""
    name = name.replace(".modules_to_save.default", "").replace(".default", "")
    return name[: -len(".weight")] if name.endswith("lora_magnitude_vector.weight") else name


def make(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    ids = torch.arange(0, 24).remainder(128).view(2, 12) * 5 % 128
    for i, (name, (config_cls, overrides, lora_kwargs)) in enumerate(CASES.items()):
        remote = config_cls in ("InternLM2", "InternLM3")  # a Llama model saved in the family's layout, run by a stand-in
        cfg = getattr(transformers, "LlamaConfig" if remote else config_cls)(**{**BASE, **overrides})
        cfg._attn_implementation = "eager"
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
        randomise(model, 2000 + i)
        folder = os.path.join(out_dir, name)
        model.save_pretrained(os.path.join(folder, "base"), safe_serialization=True)
        if remote:
            (as_internlm2 if config_cls == "InternLM2" else as_internlm3)(os.path.join(folder, "base"))
            llama_model = model
            model = (internlm2_standin.load if config_cls == "InternLM2" else internlm2_standin.load_internlm3)(
                os.path.join(folder, "base"))
            with torch.no_grad():
                diff = (model(input_ids=ids).logits - llama_model(input_ids=ids).logits).abs().max().item()
            assert diff < 1e-5, f"{name}: the InternLM2 stand-in differs from Llama on the same weights by {diff}"
        config = peft.LoraConfig(task_type="CAUSAL_LM", init_lora_weights=False, **{"lora_dropout": 0.1, **lora_kwargs})
        torch.manual_seed(1000 + i)  # PEFT's own init draws from the global RNG; DoRA magnitudes start from it
        pm = peft.get_peft_model(model, config).eval()
        g = torch.Generator().manual_seed(3000 + i)
        with torch.no_grad():
            for pname, p in pm.named_parameters():
                if "lora_magnitude_vector" in pname:  # away from ||W + sBA||, so DoRA differs from plain LoRA
                    p.mul_(1 + 0.3 * torch.randn(p.shape, generator=g))
                elif "lora_" in pname:
                    # DoRA cases: B at a trained adapter's size (s B A ~ W), so the magnitudes' effect is not swamped
                    # and fp32 rounding stays well under the 1e-5 they are held to.
                    std = 0.03 if config.use_dora and "lora_B" in pname else 0.3
                    p.copy_(std * torch.randn(p.shape, generator=g))
                elif "modules_to_save" in pname:
                    p.add_(0.1 * torch.randn(p.shape, generator=g))
            logits = pm(input_ids=ids).logits
        pm(input_ids=ids).logits.pow(2).mean().backward()
        grads = {"grad:" + file_key(n): p.grad for n, p in pm.named_parameters() if p.requires_grad}
        pm.save_pretrained(os.path.join(folder, "adapter"))
        save_file({"input_ids": ids, "logits": logits.contiguous(), **grads}, os.path.join(folder, "reference.safetensors"))
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump({"peft": peft.__version__, "transformers": transformers.__version__, "cases": list(CASES)}, f)


def check(base, adapter, logits_path, tol="1e-4"):
    peft.LoraConfig.from_pretrained(adapter)  # PEFT parses swift's adapter_config.json
    ref = load_file(logits_path)
    with open(os.path.join(base, "config.json")) as f:
        model_type = json.load(f)["model_type"]
    model = (internlm2_standin.load(base) if model_type == "internlm2"
             else internlm2_standin.load_internlm3(base) if model_type == "internlm3"
             else transformers.AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32, attn_implementation="eager"))
    pm = peft.PeftModel.from_pretrained(model, adapter).eval()
    with torch.no_grad():
        logits = pm(input_ids=ref["input_ids"]).logits
    diff = (logits - ref["logits"]).abs().max().item()
    print(f"  PEFT loads swift's adapter {adapter}: max abs diff {diff:.2e}")
    if peft.LoraConfig.from_pretrained(adapter).use_dora:  # PEFT really built DoRA layers from swift's file
        assert any("lora_magnitude_vector" in n for n, _ in pm.named_parameters()), "PEFT ignored use_dora"
    return 0 if diff <= float(tol) else 1


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(check(*sys.argv[2:6]))
