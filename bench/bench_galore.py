"""GaLore's optimizer memory and step time against plain AdamW: swift's `sft --train_type full` with and without
`--use_galore`, the same command line otherwise, on a Qwen3-architecture model with random weights.

    .venv/bin/python bench/bench_galore.py [--threads 2] [--rounds 2] [--steps 8] [--size 100m] [--rank 128]

Measured alike for both runs:
  optimizer state = the bytes of the checkpoint's optimizer.safetensors (every moment, step and GaLore basis), also
                    split into the decoder's linear layers (what GaLore projects) and the rest (embeddings, norms:
                    plain AdamW state in both)
  step time       = optimizer steps 2..N from the logged train_speed (bench_train.read_log); it includes the SVDs
                    of the steps where the projection is recomputed (--galore_update_proj_gap, default 50 as
                    ms-swift: set --gap below --steps to include them)
  peak MB         = the process's maximum resident set size (GNU time -v)
Rounds alternate AdamW and GaLore so machine noise hits both; the best round of each counts.
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import SIZES, make_data, make_model, read_log  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWIFT = os.path.join(ROOT, "build", "bin", "swift")
GNU_TIME = ["/usr/bin/time", "-v"] if os.path.exists("/usr/bin/time") else []


def state_bytes(path):
    """(total, decoder linear layers) bytes of a safetensors optimizer state, from its header."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    total = layers = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        size = entry["data_offsets"][1] - entry["data_offsets"][0]
        total += size
        if ".layers." in name and "_proj.weight" in name:
            layers += size
    return total, layers


def run(model, data, out, steps, threads, extra):
    cmd = GNU_TIME + [SWIFT, "sft", "--model", model, "--template", "qwen3", "--train_type", "full", "--dataset", data,
                      "--max_steps", str(steps), "--save_steps", str(steps), "--logging_steps", "1",
                      "--per_device_train_batch_size", "2", "--gradient_accumulation_steps", "1",
                      "--learning_rate", "1e-5", "--add_version", "false", "--num_threads", str(threads),
                      "--output_dir", out] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-4000:])
        raise SystemExit("swift failed: " + " ".join(cmd))
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    _, step_s, _, _ = read_log(out)
    total, layers = state_bytes(os.path.join(out, f"checkpoint-{steps}", "optimizer.safetensors"))
    return {"step_s": step_s, "peak_mb": int(rss.group(1)) / 1024 if rss else 0, "state": total, "layers": layers}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--size", default="100m", choices=sorted(SIZES))
    ap.add_argument("--rank", type=int, default=128)
    ap.add_argument("--gap", type=int, default=50, help="--galore_update_proj_gap")
    args = ap.parse_args()
    galore = ["--use_galore", "true", "--galore_rank", str(args.rank), "--galore_update_proj_gap", str(args.gap)]
    with tempfile.TemporaryDirectory() as tmp:
        model, data = os.path.join(tmp, "model"), os.path.join(tmp, "data.jsonl")
        params, non_embedding = make_model(model, *SIZES[args.size])
        make_data(data, 64)
        print(f"model {args.size}: {params / 1e6:.1f}M parameters ({non_embedding / 1e6:.1f}M outside the embedding), "
              f"{args.steps} steps, rank {args.rank}, projection every {args.gap} steps, {args.threads} threads")
        best = {}
        for r in range(args.rounds):
            for name, extra in (("adamw", []), ("galore", galore)):
                res = run(model, data, os.path.join(tmp, f"{name}{r}"), args.steps, args.threads, extra)
                print(f"  round {r} {name:6s}: {res['step_s'] * 1000:7.0f} ms/step, peak {res['peak_mb']:6.0f} MB, "
                      f"optimizer state {res['state'] / 2**20:7.1f} MiB (linear layers {res['layers'] / 2**20:6.1f} MiB)")
                if name not in best or res["step_s"] < best[name]["step_s"]:
                    best[name] = res
        a, g = best["adamw"], best["galore"]
        print(f"GaLore / AdamW: optimizer state {g['state'] / a['state']:.3f}x "
              f"(linear layers {g['layers'] / a['layers']:.3f}x), step time {g['step_s'] / a['step_s']:.2f}x, "
              f"peak RSS {g['peak_mb'] / a['peak_mb']:.3f}x")


if __name__ == "__main__":
    main()
