"""Reference for the quantization tests: bitsandbytes (PyPI, on CPU) quantizing fixed weights, and transformers
saving and running a tiny Llama quantized with BitsAndBytesConfig.

Usage: make_bnb_reference.py OUT_DIR. Writes
  OUT_DIR/tensors.safetensors: for each case (see CASES) the input weight and what bitsandbytes made of it
      (<case>.weight, .packed, .absmax, .nested_absmax, .nested_codes, .offset, .dequantized), the exact-nearest
      8-bit codes of the block maxima (<case>.nested_codes_exact: bitsandbytes' reference algorithm, see
      quant/bnb_4bit.h), the dynamic 8-bit map, and LLM.int8 rows (int8.weight, int8.CB, int8.SCB,
      int8.dequantized).
  OUT_DIR/llama_nf4/: a tiny random Llama saved by transformers after load_in_4bit (NF4, double quantization),
      with reference.safetensors (input_ids, logits of the quantized model).
  OUT_DIR/llama_dense/: the same Llama unquantized (what swift quantizes itself, to compare with llama_nf4).
  OUT_DIR/manifest.json.
"""
import json
import os
import sys

import torch
import bitsandbytes
import bitsandbytes.functional as F
import transformers
from safetensors.torch import load_file, save_file

# name -> (shape, dtype, quant_type, blocksize, double quantization)
CASES = {
    "nf4_fp32": ((96, 128), torch.float32, "nf4", 64, False),
    "nf4_fp32_dq": ((96, 128), torch.float32, "nf4", 64, True),
    "nf4_bf16_dq": ((256, 640), torch.bfloat16, "nf4", 64, True),
    "nf4_fp16_b128": ((64, 256), torch.float16, "nf4", 128, True),  # rows a multiple of 128: bitsandbytes 0.50's CPU dequantization assumes so
    "fp4_fp32": ((96, 128), torch.float32, "fp4", 64, False),
    "fp4_bf16_dq": ((128, 256), torch.bfloat16, "fp4", 64, True),
    "nf4_odd_shape_dq": ((300, 64), torch.float32, "nf4", 64, True),  # 300 blocks: a short last 8-bit block
    "nf4_tail": ((5, 27), torch.float32, "nf4", 64, False),  # 135 values: a short last block, an odd count
    "fp4_tail_dq": ((3, 45), torch.bfloat16, "fp4", 64, True),
}


def exact_nested_codes(absmax, offset, code, blocksize=256):
    """The 8-bit codes of (absmax - offset) by exact nearest search (ties to the lower code), per 256-block."""
    x = absmax - offset
    n = x.numel()
    blocks = (n + blocksize - 1) // blocksize
    padded = torch.nn.functional.pad(x, (0, blocks * blocksize - n)).view(blocks, blocksize)
    m = padded.abs().amax(1)
    scaled = (padded * (1.0 / m.clamp(min=1e-38)).unsqueeze(1)).clamp(-1, 1).reshape(-1)[:n]
    bounds = (code[:-1] + code[1:]) / 2
    return torch.bucketize(scaled, bounds, out_int32=True).to(torch.uint8), m


def quant_cases(tensors):
    g = torch.Generator().manual_seed(7)
    for name, (shape, dtype, qtype, blocksize, dq) in CASES.items():
        w = (torch.randn(shape, generator=g) * 0.05).to(dtype)
        if name.startswith("nf4_fp32"):
            w[0, :5] = 0  # zeros and a tiny block maximum take the tie-breaking paths
        packed, state = F.quantize_4bit(w, blocksize=blocksize, compress_statistics=dq, quant_type=qtype)
        tensors[f"{name}.weight"] = w.contiguous()
        tensors[f"{name}.packed"] = packed.contiguous()
        tensors[f"{name}.absmax"] = state.absmax.contiguous()
        tensors[f"{name}.code"] = state.code.contiguous()
        tensors[f"{name}.dequantized"] = F.dequantize_4bit(packed, state).contiguous()
        if dq:
            tensors[f"{name}.offset"] = state.offset.reshape(1).float()
            tensors[f"{name}.nested_absmax"] = state.state2.absmax.contiguous()
            tensors[f"{name}.nested_code"] = state.state2.code.contiguous()
            plain = F.quantize_4bit(w, blocksize=blocksize, compress_statistics=False, quant_type=qtype)[1].absmax
            codes, m = exact_nested_codes(plain, state.offset, state.state2.code)
            assert torch.equal(m, state.state2.absmax)
            tensors[f"{name}.nested_codes_exact"] = codes.contiguous()
    tensors["dynamic_map"] = F.create_dynamic_map(signed=True).contiguous()
    w = torch.randn(48, 80, generator=g) * 0.1
    w[3] = 0  # an all-zero row
    CB, SCB, _ = F.int8_vectorwise_quant(w.half())
    tensors["int8.weight"] = w.contiguous()
    tensors["int8.CB"] = CB.contiguous()
    tensors["int8.SCB"] = SCB.contiguous()
    tensors["int8.dequantized"] = F.int8_vectorwise_dequant(CB, SCB).contiguous()


def llama(out_dir):
    """A tiny Llama, dense and quantized by transformers (NF4, double quantization), with reference logits."""
    cfg = transformers.LlamaConfig(vocab_size=160, hidden_size=128, intermediate_size=192, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   tie_word_embeddings=False)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(11)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g) if "norm" in name else 0.15 * torch.randn(p.shape, generator=g))
    dense = os.path.join(out_dir, "llama_dense")
    model.save_pretrained(dense, safe_serialization=True)
    ids = torch.randint(0, 160, (2, 10), generator=g)
    bnb = transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                          bnb_4bit_compute_dtype=torch.float32)
    quantized = transformers.AutoModelForCausalLM.from_pretrained(dense, quantization_config=bnb, device_map="cpu",
                                                                  dtype=torch.float32,
                                                                  attn_implementation="eager").eval()
    folder = os.path.join(out_dir, "llama_nf4")
    quantized.save_pretrained(folder, safe_serialization=True)
    with torch.no_grad():
        bnb_cpu = quantized(input_ids=ids).logits
        # The exact reference: the dense model with every saved 4-bit weight dequantized by bitsandbytes, in fp32.
        # (bitsandbytes' CPU matmul may run in bfloat16, e.g. on CPUs with AVX512-BF16, ~0.1 off on these logits.)
        saved = load_file(os.path.join(folder, "model.safetensors"))
        for key, value in saved.items():
            if key.endswith(".weight") and value.dtype == torch.uint8:
                stats = {k[len(key) + 1:]: v for k, v in saved.items() if k.startswith(key + ".")}
                state = F.QuantState.from_dict(stats, device=torch.device("cpu"))
                model.get_submodule(key[:-len(".weight")]).weight.copy_(F.dequantize_4bit(value, state))
        logits = model(input_ids=ids).logits
    save_file({"input_ids": ids, "logits": logits.contiguous(), "bnb_cpu_logits": bnb_cpu.contiguous()},
              os.path.join(folder, "reference.safetensors"))


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    tensors = {}
    quant_cases(tensors)
    save_file(tensors, os.path.join(out_dir, "tensors.safetensors"))
    llama(out_dir)
    manifest = {"bitsandbytes": bitsandbytes.__version__, "transformers": transformers.__version__,
                "torch": torch.__version__, "cases": list(CASES)}
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    print(f"wrote the bitsandbytes reference to {out_dir} (bitsandbytes {bitsandbytes.__version__})")


if __name__ == "__main__":
    main(sys.argv[1])
