"""QLoRA vs LoRA vs full fine-tuning with swift on the same ~100M model on the CPU: peak resident memory and
training tokens/s, with the ratios against LoRA (measured in the same run, rounds alternating the order).

    .venv/bin/python bench/bench_quant.py [--threads 2] [--rounds 2] [--steps 6] [--torch_dtype float32]

The model: Mistral architecture with the Mistral tokenizer (32000 tokens, configs/models/mistral-tiny), hidden
768, 12 layers, intermediate 2048, 12 heads / 4 KV heads, tied embeddings: 100M parameters, 75M of them in the
decoder layers' linear weights (what QLoRA stores in 4 bits). Random weights, arithmetic Q/A data, batch 4,
max_length 128, gradient checkpointing on (ms-swift's default), LoRA rank 8 on all linear layers.

  peak MB   = maximum resident set size of the whole process (GNU time -v): loading, data and training; also
              less the idle process's (`swift sft --help`: LibTorch and its CUDA libraries mapped, ~0.5 GB), which
              is what the job itself holds
  tokens/s  = batch x mean tokens per sample / step time (steps 2..N from logging.jsonl, as bench_train.py)
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import GNU_TIME, ROOT, run_tool  # noqa: E402

TOKENIZER_DIR = os.path.join(ROOT, "configs", "models", "mistral-tiny")


def make_model(folder, dtype):
    import torch
    import transformers
    cfg = transformers.MistralConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                                     num_attention_heads=12, num_key_value_heads=4, head_dim=64,
                                     max_position_embeddings=2048, tie_word_embeddings=True, sliding_window=None)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=getattr(torch, dtype))
    model.save_pretrained(folder, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER_DIR, f), folder)
    total = sum(p.numel() for p in model.parameters())
    linear = sum(m.weight.numel() for n, m in model.named_modules()
                 if isinstance(m, torch.nn.Linear) and n.startswith("model.layers."))
    return total, linear


def make_data(path, rows):
    """Arithmetic Q/A rows; the mean tokens per sample under Mistral's [INST] template."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(TOKENIZER_DIR, "tokenizer.json"))
    rng = random.Random(0)
    lengths = []
    with open(path, "w") as f:
        for _ in range(rows):
            a, b = rng.randint(10, 9999), rng.randint(10, 9999)
            q, r = f"What is {a} + {b}? Answer with the number.", f"{a} + {b} = {a + b}. The answer is {a + b}."
            f.write(json.dumps({"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": r}]}) + "\n")
            lengths.append(len(tok.encode(f"[INST] {q} [/INST]{r}").ids) + 1)  # + </s>
    return sum(lengths) / len(lengths)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--torch_dtype", choices=["float32", "bfloat16"], default="float32")
    ap.add_argument("--types", default="qlora,lora,full")
    args = ap.parse_args()
    common = ["--per_device_train_batch_size", str(args.batch), "--gradient_accumulation_steps", "1",
              "--max_length", "128", "--learning_rate", "1e-4", "--logging_steps", "1", "--save_steps", "1000",
              "--torch_dtype", args.torch_dtype, "--gradient_checkpointing", "true", "--save_only_model", "true"]
    types = args.types.split(",")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.jsonl")
        mean_len = make_data(data, 200)
        model = os.path.join(tmp, "model")
        total, linear = make_model(model, args.torch_dtype)
        for r in range(args.rounds):
            for train_type in (types if r % 2 == 0 else types[::-1]):
                out = os.path.join(tmp, f"out-{train_type}-{r}")
                res = run_tool("swift", model, train_type, args.steps, data, out, args.threads, common, template="mistral")
                results.setdefault(train_type, []).append(res)
                print(f"round {r} {train_type}: {res['step_s']:.3f} s/step, peak {res['peak_mb']:.0f} MB", flush=True)
                shutil.rmtree(out, ignore_errors=True)
    idle = subprocess.run(GNU_TIME + [os.path.join(ROOT, "build", "bin", "swift"), "sft", "--help"],
                          capture_output=True, text=True)
    idle_mb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", idle.stderr).group(1)) / 1024
    print(f"\nmodel: {total / 1e6:.1f}M parameters, {linear / 1e6:.1f}M in the decoder layers' linear weights; "
          f"{args.torch_dtype}, batch {args.batch} x {mean_len:.1f} tokens, {args.steps} steps, threads {args.threads}, "
          f"{args.rounds} rounds (best counts)")
    base_tps = args.batch * mean_len / min(x["step_s"] for x in results["lora"]) if "lora" in results else None
    base_mb = min(x["peak_mb"] for x in results["lora"]) if "lora" in results else None
    print(f"idle process (swift sft --help): {idle_mb:.0f} MB")
    print(f"{'type':<7}{'tokens/s':>10}{'vs lora':>9}{'peak MB':>10}{'vs lora':>9}{'above idle':>12}{'vs lora':>9}")
    for train_type in types:
        tps = args.batch * mean_len / min(x["step_s"] for x in results[train_type])
        mb = min(x["peak_mb"] for x in results[train_type])
        ratio_t = f"{tps / base_tps:.2f}x" if base_tps else "-"
        ratio_m = f"{mb / base_mb:.2f}x" if base_mb else "-"
        ratio_j = f"{(mb - idle_mb) / (base_mb - idle_mb):.2f}x" if base_mb else "-"
        print(f"{train_type:<7}{tps:>10.1f}{ratio_t:>9}{mb:>10.0f}{ratio_m:>9}{mb - idle_mb:>12.0f}{ratio_j:>9}")


if __name__ == "__main__":
    main()
