"""Stand-ins for InternLM2's and InternLM3's model code, for the PEFT parity tests.

InternLM2's modeling_internlm2.py ships with its checkpoints as remote code: transformers does not have it and its
file is not ours to vendor. This module computes what it computes, as its layout is documented (docs/models.md):
transformers' Llama pieces (RMSNorm, RoPE, GQA) under InternLM2's module names (model.tok_embeddings,
model.layers.N.attention.wqkv/wo, feed_forward.w1/w3/w2, attention_norm, ffn_norm, model.norm, output), with wqkv's
rows grouped by key/value head (each group's query heads, then its key, then its value). PEFT wraps modules by those
names, so adapters made here carry InternLM2's keys. make() checks it against transformers' Llama on the same weights.
InternLM3 is Llama's computation under Llama's names: its folder loads into transformers' Llama (load_internlm3).
"""
import json
import os

import torch
import transformers
from safetensors.torch import load_file
from torch import nn
from transformers.modeling_outputs import CausalLMOutputWithPast
from transformers.models.llama import modeling_llama as llama


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.kv, self.d = c.num_attention_heads, c.num_key_value_heads, c.hidden_size // c.num_attention_heads
        self.wqkv = nn.Linear(c.hidden_size, (self.heads + 2 * self.kv) * self.d, bias=c.attention_bias)
        self.wo = nn.Linear(self.heads * self.d, c.hidden_size, bias=c.attention_bias)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        per_group = self.heads // self.kv
        groups = self.wqkv(x).view(b, t, self.kv, per_group + 2, self.d)
        q = groups[..., :per_group, :].reshape(b, t, self.heads, self.d).transpose(1, 2)
        k, v = groups[..., per_group, :].transpose(1, 2), groups[..., per_group + 1, :].transpose(1, 2)
        q, k = llama.apply_rotary_pos_emb(q, k, cos, sin)
        out = nn.functional.scaled_dot_product_attention(q, llama.repeat_kv(k, per_group), llama.repeat_kv(v, per_group),
                                                         is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(b, t, -1))


class FeedForward(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.w1 = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.w3 = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.w2 = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention_norm = llama.LlamaRMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.attention = Attention(c)
        self.ffn_norm = llama.LlamaRMSNorm(c.hidden_size, eps=c.rms_norm_eps)
        self.feed_forward = FeedForward(c)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Body(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.tok_embeddings = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(Layer(c) for _ in range(c.num_hidden_layers))
        self.norm = llama.LlamaRMSNorm(c.hidden_size, eps=c.rms_norm_eps)


class InternLM2StandIn(transformers.PreTrainedModel, transformers.GenerationMixin):
    config_class = transformers.LlamaConfig

    def __init__(self, config):
        super().__init__(config)
        self.model = Body(config)
        self.output = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.rotary = llama.LlamaRotaryEmbedding(config)

    def get_output_embeddings(self):
        return self.output

    def forward(self, input_ids=None, **_):
        x = self.model.tok_embeddings(input_ids)
        cos, sin = self.rotary(x, torch.arange(input_ids.shape[1]).unsqueeze(0))
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        return CausalLMOutputWithPast(logits=self.output(self.model.norm(x)))


def load(folder):
    """The InternLM2 folder's weights (as make_reference.as_internlm2 writes them) in the stand-in."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    scaling = cfg.get("rope_scaling")
    config = transformers.LlamaConfig(
        **{k: cfg[k] for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                               "num_attention_heads", "num_key_value_heads", "max_position_embeddings", "rms_norm_eps")},
        attention_bias=cfg["bias"], rope_theta=cfg["rope_theta"],
        rope_scaling={"rope_type": scaling["type"], "factor": scaling["factor"]} if scaling else None)
    model = InternLM2StandIn(config).eval()
    model.load_state_dict(load_file(os.path.join(folder, "model.safetensors")))  # strict: every name InternLM2's
    return model


def load_internlm3(folder):
    """The InternLM3 folder (as make_reference.as_internlm3 writes it) in transformers' Llama: q/k/v biases by qkv_bias,
    o_proj and the MLP's by bias (equal here: Llama has one flag for the attention's four)."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    assert cfg["bias"] == cfg["qkv_bias"], "Llama cannot hold InternLM3 with different bias and qkv_bias"
    keys = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "max_position_embeddings", "rms_norm_eps", "head_dim", "tie_word_embeddings")
    config = transformers.LlamaConfig(**{k: cfg[k] for k in keys if k in cfg}, attention_bias=cfg["bias"],
                                      mlp_bias=cfg["bias"], rope_parameters=cfg.get("rope_parameters"))
    config._attn_implementation = "eager"
    model = transformers.LlamaForCausalLM(config).eval()
    model.load_state_dict(load_file(os.path.join(folder, "model.safetensors")))
    return model
