"""Mixture-of-experts training steps: swift vs Hugging Face transformers, forward + backward tokens/s on the same
Qwen3-MoE model (8 experts, top 2 on every layer, random weights) and the same batch on CPU, same threads; and the
share of swift's step its sparse layers spend routing (router, top-k, sorting tokens by expert and adding their
outputs back) beside the experts' grouped matrix products.

    .venv/bin/python bench/bench_moe.py [--threads 2] [--batch 4] [--seq 256] [--rounds 3]

Both sides run one step the same way: the logits of every position, the cross entropy of the next token, backward,
in fp32. transformers runs its default experts implementation (printed: grouped_mm where torch dispatches it, else
its per-expert loop). Rounds alternate swift and transformers so machine noise hits both; the best step counts.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as bench_generate.py: the same wait policy on both sides

import torch  # noqa: E402
import transformers  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_model(folder, layers):
    cfg = transformers.Qwen3MoeConfig(vocab_size=8000, hidden_size=512, intermediate_size=1024, num_hidden_layers=layers,
                                      num_attention_heads=8, num_key_value_heads=4, head_dim=64, num_experts=8,
                                      num_experts_per_tok=2, moe_intermediate_size=512, norm_topk_prob=True,
                                      max_position_embeddings=4096, tie_word_embeddings=False)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    return sum(p.numel() for p in model.parameters())


def hf_step_seconds(model, ids, steps):
    def step():
        model.zero_grad(set_to_none=True)
        logits = model(input_ids=ids).logits
        torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1)).backward()
    step()
    best = float("inf")
    for _ in range(steps):
        start = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "bin", "swift_bench_moe"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "qwen3-moe")
        n_params = make_model(folder, args.layers)
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).train()
        experts_impl = getattr(model.config, "_experts_implementation_internal", None) or "eager"
        vocab = model.config.vocab_size
        ids = (torch.arange(args.batch * args.seq) * 104729 % vocab).view(args.batch, args.seq)
        swift_runs, hf_runs = [], []
        for _ in range(args.rounds):
            out = subprocess.run([args.binary, "--model", folder, "--batch", str(args.batch), "--seq", str(args.seq),
                                  "--threads", str(args.threads), "--steps", str(args.steps)],
                                 check=True, capture_output=True, text=True)
            swift_runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            hf_runs.append(hf_step_seconds(model, ids, args.steps))
    tokens = args.batch * args.seq
    swift_step = min(r["step_s"] for r in swift_runs)
    hf_step = min(hf_runs)
    share = min(swift_runs, key=lambda r: r["step_s"])["routing_share"]
    print(f"model: qwen3_moe {n_params / 1e6:.0f}M params ({args.layers} layers, 8 experts of 512, top 2), fp32, "
          f"batch {args.batch} x {args.seq}, threads {args.threads}, torch {torch.__version__}, "
          f"transformers {transformers.__version__} (experts: {experts_impl}), "
          f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}")
    print(f"{'engine':<14}{'step s':>10}{'tokens/s':>12}")
    print(f"{'swift':<14}{swift_step:>10.3f}{tokens / swift_step:>12.1f}")
    print(f"{'transformers':<14}{hf_step:>10.3f}{tokens / hf_step:>12.1f}")
    print(f"ratio swift/transformers: {hf_step / swift_step:.2f}x tokens/s; swift's routing share of a step: "
          f"{100 * share:.1f}%")


if __name__ == "__main__":
    sys.exit(main())
