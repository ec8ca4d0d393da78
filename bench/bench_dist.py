"""Data-parallel scaling of `swift sft` on the CPU (c10d + Gloo): the same global batch on 1, 2 and 4 ranks of
one machine, and the process group's all-reduce bandwidth (build/bin/swift_bench_allreduce).

    .venv/bin/python bench/bench_dist.py [--ranks 1,2,4] [--global_batch 8] [--steps 8] [--size 25m]
        [--types full,lora] [--deepspeed zero0,zero2] [--swift path/to/swift]

Each run gets the machine's cores split among its ranks (swift's launcher default), so on one machine the
ideal is the 1-rank speed at every world size: "efficiency" = tokens/s at n ranks / tokens/s at 1 rank, and
what falls short of 1 is the cost of splitting the batch and summing gradients (on a GPU node each rank brings
its own device and the ideal becomes n x). Step time: steps 2..N from logging.jsonl, as bench_train.py.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import ROOT, SIZES, make_data, make_model, read_log  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--global_batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--size", default="25m", choices=list(SIZES))
    ap.add_argument("--types", default="full,lora")
    ap.add_argument("--deepspeed", default="zero0,zero2")
    ap.add_argument("--allreduce_mb", type=float, default=64)
    ap.add_argument("--swift", default=os.path.join(ROOT, "build", "bin", "swift"),
                    help="the binary to measure (another build, to compare two versions side by side)")
    args = ap.parse_args()
    swift = args.swift
    cores = os.cpu_count()
    print(f"machine: {cores} cores, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.jsonl")
        mean_len = make_data(data, 400)
        model = os.path.join(tmp, "model")
        n_params, _ = make_model(model, *SIZES[args.size])
        rows = []
        for train_type in args.types.split(","):
            base = None  # the 1-rank speed of this type (measured in the first, zero0, pass)
            for stage in sorted(args.deepspeed.split(","), key=lambda z: z != "zero0"):
                for n in [int(x) for x in args.ranks.split(",")]:
                    if args.global_batch % n:
                        continue
                    if n == 1 and stage != "zero0":
                        continue  # one process has nothing to shard: the zero0 row is the baseline
                    out = os.path.join(tmp, f"out-{train_type}-{stage}-{n}")
                    env = dict(os.environ, NPROC_PER_NODE=str(n))
                    env.pop("OMP_NUM_THREADS", None)
                    cmd = [swift, "sft", "--model", model, "--template", "qwen3", "--train_type", train_type,
                           "--dataset", data, "--max_steps", str(args.steps), "--per_device_train_batch_size",
                           str(args.global_batch // n), "--gradient_accumulation_steps", "1", "--max_length", "128",
                           "--logging_steps", "1", "--save_steps", "100000", "--save_only_model", "true",
                           "--output_dir", out, "--deepspeed", stage]
                    if n == 1:
                        cmd += ["--num_threads", str(cores)]
                    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
                    if p.returncode:
                        sys.exit(p.stderr[-3000:])
                    _, step_s, _, _ = read_log(out)
                    tps = args.global_batch * mean_len / step_s
                    if n == 1:
                        base = tps
                    rows.append((train_type, stage if n > 1 else "-", n, step_s, tps, tps / base if base else None))
                    print(f"{train_type} {stage} {n} ranks: {step_s:.3f} s/step, {tps:.0f} tokens/s", flush=True)
                    shutil.rmtree(out, ignore_errors=True)
    print(f"\n{args.size} ({n_params / 1e6:.1f}M parameters), global batch {args.global_batch} x "
          f"{mean_len:.1f} tokens, fp32, {args.steps} steps")
    print(f"{'type':<6}{'zero':<7}{'ranks':>6}{'s/step':>9}{'tokens/s':>10}{'vs 1 rank':>11}")
    for t, stage, n, step_s, tps, eff in rows:
        print(f"{t:<6}{stage:<7}{n:>6}{step_s:>9.3f}{tps:>10.0f}{(f'{eff:.2f}x' if eff else '-'):>11}")
    bench = os.path.join(ROOT, "build", "bin", "swift_bench_allreduce")
    for n in [int(x) for x in args.ranks.split(",") if int(x) > 1]:
        p = subprocess.run([bench, "--max_mb", str(args.allreduce_mb)], env=dict(os.environ, NPROC_PER_NODE=str(n)),
                           capture_output=True, text=True)
        print(p.stdout)


if __name__ == "__main__":
    main()
