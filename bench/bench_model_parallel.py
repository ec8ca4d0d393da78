"""Model parallelism against data parallelism for `swift sft` on the CPU (c10d + Gloo): the same model and global
batch, in the same number of micro-batches, as DP, TP, PP, CP (context parallelism: ring attention with --cp_size,
Ulysses with --sequence_parallel_size) and their products on 2 and 4 ranks, with each layout's
time per step, its share of wall time spent waiting for collectives (swift logs each rank's at the end of
training: what the overlap of the gradient exchange did not hide, and for pipelines the stages waiting on each
other), each rank's parameter + gradient + AdamW memory after the first step, and for pipelines the measured share
of the 1F1B schedule spent waiting for the neighbouring stages next to the theoretical bubble (p - 1) / (m + p - 1).

    .venv/bin/python bench/bench_model_parallel.py [--size small] [--global_batch 16] [--micro_batches 4]
                                                   [--steps 6] [--rounds 2] [--layouts DP2,PP2,...]
    .venv/bin/python bench/bench_model_parallel.py --experts 8 --layouts DP2,EP2,DP4,EP4,EP2xDP4

With --experts E the model is a Qwen3-MoE of the same shape (every layer sparse: E experts of half the MLP width,
top 2) and the expert-parallel layouts (EP2, EP4, EP2xDP4: --ep_size over the data-parallel ranks) can run; each
rank then holds 1/EP of the experts and sends its tokens to them by all-to-all.

Rounds alternate the layouts in the same minutes (these VMs drift by +-15%); the table gives each layout's median
and its ratio to DP at the same rank count. On a CPU machine every layout shares the same cores, so model
parallelism's value here is memory (1/(TP x PP) of the weights and optimizer state per rank), not speed; on GPUs
each rank brings its own. The models are bench_train's, whose tied 151936-token embedding is held by a pipeline's
first and last stage alike, so PP's memory share stays well above 1/PP on them.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import ROOT, SIZES, make_data, make_model, read_log, save_random_model  # noqa: E402

LAYOUTS = [  # (name, ranks, tp_size, pp_size, the flag and size of the sequence split[, other flags])
    ("DP2", 2, 1, 1, None), ("TP2", 2, 2, 1, None), ("TP2+SP", 2, 2, 1, None, ["--sequence_parallel", "true"]),
    ("PP2", 2, 1, 2, None),
    ("CP2", 2, 1, 1, ("--cp_size", 2)), ("Ulysses2", 2, 1, 1, ("--sequence_parallel_size", 2)),
    ("DP4", 4, 1, 1, None), ("TP2xDP2", 4, 2, 1, None), ("TP4", 4, 4, 1, None), ("PP4", 4, 1, 4, None),
    ("PP2xDP2", 4, 1, 2, None), ("TP2xPP2", 4, 2, 2, None), ("CP4", 4, 1, 1, ("--cp_size", 4)),
    ("TP2xCP2", 4, 2, 1, ("--cp_size", 2)),
    # Mixture-of-experts models only (--experts): the experts split over data-parallel ranks.
    ("EP2", 2, 1, 1, None, ["--ep_size", "2"]), ("EP4", 4, 1, 1, None, ["--ep_size", "4"]),
    ("EP2xDP4", 4, 1, 1, None, ["--ep_size", "2"]),
]
EXPERT_LAYOUTS = {"EP2", "EP4", "EP2xDP4"}


def make_moe_model(folder, hidden, layers, inter, heads, kv, experts):
    """bench_train's model shape as a Qwen3-MoE: every layer sparse, `experts` experts of half the MLP width, top 2."""
    import transformers
    cfg = transformers.Qwen3MoeConfig(vocab_size=151936, hidden_size=hidden, intermediate_size=inter,
                                      moe_intermediate_size=inter // 2, num_experts=experts, num_experts_per_tok=2,
                                      norm_topk_prob=True, num_hidden_layers=layers, num_attention_heads=heads,
                                      num_key_value_heads=kv, head_dim=128 if hidden >= 1024 else 64,
                                      max_position_embeddings=2048, tie_word_embeddings=True,
                                      bos_token_id=151643, eos_token_id=151645)
    return sum(p.numel() for p in save_random_model(cfg, folder).parameters())


def run(swift, model, data, out, ranks, tp, pp, sequence_split, extra, global_batch, micro_batches, steps):
    cp = sequence_split[1] if sequence_split else 1
    dp = ranks // (tp * pp * cp)
    env = dict(os.environ, NPROC_PER_NODE=str(ranks))
    env.pop("OMP_NUM_THREADS", None)
    cmd = [swift, "sft", "--model", model, "--template", "qwen3", "--train_type", "full", "--dataset", data,
           "--max_steps", str(steps), "--per_device_train_batch_size", str(global_batch // (dp * micro_batches)),
           "--gradient_accumulation_steps", str(micro_batches), "--max_length", "128", "--logging_steps", "1",
           "--save_steps", "100000", "--save_only_model", "true", "--output_dir", out, "--tp_size", str(tp),
           "--pp_size", str(pp)] + ([sequence_split[0], str(cp)] if sequence_split else []) + extra
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode:
        sys.exit(p.stderr[-3000:])
    _, step_s, n, _ = read_log(out)
    waits = re.search(r"time waiting for collectives per rank \(s\): ([\d., ]+)", p.stderr)
    held = re.search(r"holds after the first step .*? per rank: ([^;]+);", p.stderr)
    bubble = re.search(r"waiting for the neighbouring stages per rank: ([^;]+); .*?: (\d+)%", p.stderr)
    runtime = n * step_s  # steps 2..N at the steady rate, step 1 excluded as in the other benchmarks
    wait_s = max(float(x) for x in waits.group(1).split(",")) if waits else float("nan")
    stages = f"{bubble.group(1)} (1F1B: {bubble.group(2)}%)" if bubble else "-"
    return step_s, wait_s / max(runtime, 1e-9), held.group(1) if held else "-", stages


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="small", choices=list(SIZES))
    ap.add_argument("--global_batch", type=int, default=16)
    ap.add_argument("--micro_batches", type=int, default=4, help="per step, every layout (a pipeline's m)")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--swift", default=os.path.join(ROOT, "build", "bin", "swift"))
    ap.add_argument("--layouts", default=",".join(x[0] for x in LAYOUTS if x[0] not in EXPERT_LAYOUTS))
    ap.add_argument("--experts", type=int, default=0, help="a mixture-of-experts model with this many experts")
    args = ap.parse_args()
    wanted = set(args.layouts.split(","))
    if wanted & EXPERT_LAYOUTS and not args.experts:
        sys.exit(f"{', '.join(sorted(wanted & EXPERT_LAYOUTS))} split experts: add --experts 8")
    wanted |= {f"DP{x[1]}" for x in LAYOUTS if x[0] in wanted}  # each rank count's baseline
    layouts = [x for x in LAYOUTS if x[0] in wanted]
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.jsonl")
        mean_len = make_data(data, 400)
        model = os.path.join(tmp, "model")
        if args.experts:
            n_params = make_moe_model(model, *SIZES[args.size], args.experts)
        else:
            n_params, _ = make_model(model, *SIZES[args.size])
        results = {x[0]: [] for x in layouts}
        for r in range(args.rounds):
            for name, ranks, tp, pp, split, *extra in (layouts if r % 2 == 0 else layouts[::-1]):
                out = os.path.join(tmp, f"out-{name}-{r}")
                flags = extra[0] if extra else []
                results[name].append(run(args.swift, model, data, out, ranks, tp, pp, split, flags, args.global_batch,
                                         args.micro_batches, args.steps))
                step_s, share, _, _ = results[name][-1]
                print(f"round {r + 1} {name}: {step_s:.3f} s/step, {100 * share:.0f}% waiting for collectives", flush=True)
                shutil.rmtree(out, ignore_errors=True)
    kind = f"Qwen3-MoE, {args.experts} experts (top 2) per layer, " if args.experts else ""
    print(f"\n{args.size} ({kind}{n_params / 1e6:.1f}M parameters, heads {SIZES[args.size][3]}, KV heads "
          f"{SIZES[args.size][4]}, {SIZES[args.size][1]} layers), global batch {args.global_batch} x {mean_len:.1f} tokens "
          f"in {args.micro_batches} micro-batches, fp32, {args.steps} steps, median of {args.rounds} rounds")
    print(f"{'layout':<10}{'ranks':>6}{'s/step':>9}{'vs DP':>8}{'waiting':>9}  params+grads+AdamW per rank | "
          "pipeline: waiting for neighbours per rank")
    for name, ranks, *_ in layouts:
        step_s = statistics.median(x[0] for x in results[name])
        share = statistics.median(x[1] for x in results[name])
        dp_name = f"DP{ranks}"
        base = statistics.median(x[0] for x in results[dp_name])
        print(f"{name:<10}{ranks:>6}{step_s:>9.3f}{step_s / base:>7.2f}x{100 * share:>8.0f}%  {results[name][-1][2]}"
              f" | {results[name][-1][3]}")


if __name__ == "__main__":
    main()
