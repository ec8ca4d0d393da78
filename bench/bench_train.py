"""Training tokens/s and peak memory: swift's `sft` vs ms-swift's own `swift sft` (PyPI, on CPU), full and LoRA,
on a small (hidden 256, 8 layers) and a larger (hidden 768, 12 layers) Qwen3-architecture model with random
weights, on the same local model folders, the same local jsonl data and the same command line.

    .venv/bin/python bench/bench_train.py [--threads 2] [--rounds 2] [--steps 10] [--big_steps 6] [--sizes 25m,100m]

ms-swift must be importable from this Python (`pip install ms-swift`; its `sft` needs a few more packages than
a --no-deps install brings: aiohttp addict attrdict binpacking dacite einops simplejson sortedcontainers
zstandard matplotlib, and trl --no-deps). It runs with CUDA_VISIBLE_DEVICES= (CPU), offline.

Measured alike for both tools, from the logging.jsonl each writes in its run folder (--logging_steps 1):
  step time  = time of optimizer steps 2..N (the first step is warm-up), from the cumulative train_speed each
               logs at step 1 and step N: (N * t_N - t_1) / (N - 1)
  tokens/s   = batch * mean tokens per sample (the qwen3 template's encoding of the data, counted here and
               checked against ms-swift's own dataset statistics) / step time; padding is not counted
  peak MB    = maximum resident set size of the whole process (GNU time -v), start-up and data included
Rounds alternate the tools so machine noise hits both; the best round of each counts.

--tools adds "swift-jemalloc-defaults": the same swift binary with MALLOC_CONF restoring jemalloc's own decay and
oversize settings, which measures what the binary's built-in allocator settings (apps/swift/jemalloc_config.cpp) buy.

Not the same work by default: ms-swift's trainer (use_logits_to_keep) runs the LM head only from the first label
position of the batch on; swift computes every position. --ms_extra "--use_logits_to_keep false" equalises it.
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
import time

# Same OpenMP wait policy and threads for both tools (libgomp reads them when torch loads; both subprocesses
# inherit them). PASSIVE is swift's default (docs/benchmarks.md); OMP_WAIT_POLICY=ACTIVE in the environment
# compares under libgomp's default instead.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKENIZER_DIR = os.path.join(ROOT, "configs", "models", "qwen3-tiny")
SIZES = {  # name: (hidden, layers, intermediate, heads, kv heads); the tied 151936-token embedding dominates
    "25m": (128, 6, 512, 2, 1),      # 21M parameters
    "small": (256, 8, 1024, 4, 2),   # 47M
    "100m": (512, 8, 1536, 8, 2),    # 102M
    "big": (768, 12, 2048, 12, 4),   # 192M
}


def make_model(folder, hidden, layers, inter, heads, kv):
    import torch
    import transformers
    cfg = transformers.Qwen3Config(vocab_size=151936, hidden_size=hidden, intermediate_size=inter,
                                   num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
                                   head_dim=64, max_position_embeddings=2048, tie_word_embeddings=True,
                                   bos_token_id=151643, eos_token_id=151645)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER_DIR, f), folder)
    n = sum(p.numel() for p in model.parameters())
    return n, n - model.get_input_embeddings().weight.numel()


def make_data(path, rows):
    """Arithmetic Q/A rows; returns the mean tokens per sample under the qwen3 template (non-thinking reply)."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(TOKENIZER_DIR, "tokenizer.json"))
    rng = random.Random(0)
    lengths = []
    with open(path, "w") as f:
        for _ in range(rows):
            a, b = rng.randint(10, 9999), rng.randint(10, 9999)
            q, r = f"What is {a} + {b}? Answer with the number.", f"{a} + {b} = {a + b}. The answer is {a + b}."
            f.write(json.dumps({"messages": [{"role": "user", "content": q},
                                             {"role": "assistant", "content": r}]}) + "\n")
            text = (f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
                    f"{r}<|im_end|>\n")
            lengths.append(len(tok.encode(text, add_special_tokens=False).ids))
    return sum(lengths) / len(lengths)


def read_log(run_root):
    """(step-1 seconds, steps-2..N seconds per step, N, ms-swift's dataset mean length or None)."""
    logs = [os.path.join(d, "logging.jsonl") for d, _, files in os.walk(run_root) if "logging.jsonl" in files]
    assert len(logs) == 1, logs
    steps, mean_len = [], None
    for line in open(logs[0]):
        row = json.loads(line)
        if "train_dataset" in row:
            mean_len = float(row["train_dataset"].split("±")[0])
        if "loss" not in row or "global_step/max_steps" not in row:
            continue
        step = int(row["global_step/max_steps"].split("/")[0])
        if "train_speed(s/it)" in row:
            per = float(row["train_speed(s/it)"])
        else:
            per = 1.0 / float(row["train_speed(iter/s)"])
        steps.append((step, per))
    (s1, t1), (sn, tn) = steps[0], steps[-1]
    assert s1 == 1 and sn > 1, steps
    return t1, (sn * tn - s1 * t1) / (sn - s1), sn, mean_len


JEMALLOC_DEFAULTS = "dirty_decay_ms:10000,muzzy_decay_ms:0,oversize_threshold:8388608"


def run_tool(tool, model, train_type, steps, data, out, threads, common, ms_extra=()):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), CUDA_VISIBLE_DEVICES="", HF_HUB_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", MODELSCOPE_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    if tool == "swift-jemalloc-defaults":
        env["MALLOC_CONF"] = JEMALLOC_DEFAULTS
    args = ["sft", "--model", model, "--template", "qwen3", "--tuner_type", train_type, "--dataset", data,
            "--max_steps", str(steps), "--output_dir", out] + common
    if tool.startswith("swift"):
        cmd = [os.path.join(ROOT, "build", "bin", "swift")] + args
    else:  # ms-swift: the same flags, plus what it needs to pick the model type and stay on one process
        cmd = [os.path.join(os.path.dirname(sys.executable), "swift")] + args + [
            "--model_type", "qwen3", "--use_hf", "true", "--dataloader_num_workers", "0", "--dataset_num_proc", "1"] + list(ms_extra)
    for attempt in range(5):  # the swift binary may briefly be missing or busy while others rebuild it
        if not tool.startswith("swift") or os.access(cmd[0], os.X_OK):
            try:
                p = subprocess.run(["/usr/bin/time", "-v"] + cmd, env=env, capture_output=True, text=True)
            except OSError:
                p = None
            if p is not None and p.returncode == 0:
                break
            if p is not None and "Text file busy" not in p.stderr:
                sys.stderr.write(p.stdout[-3000:] + p.stderr[-6000:])
                raise SystemExit(f"{tool} failed: {' '.join(cmd)}")
        time.sleep(20)
    else:
        raise SystemExit(f"{tool}: {cmd[0]} not runnable")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    first, per_step, n, mean_len = read_log(out)
    return {"first_s": first, "step_s": per_step, "steps": n, "peak_mb": rss_kb / 1024, "mean_len": mean_len,
            "cmd": " ".join(cmd)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10, help="optimizer steps for the small model")
    ap.add_argument("--big_steps", type=int, default=6, help="optimizer steps for the 100m and big models")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--rows", type=int, default=400)
    ap.add_argument("--sizes", default="25m,100m", help=f"comma list of {', '.join(SIZES)}")
    ap.add_argument("--types", default="full,lora")
    ap.add_argument("--tools", default="swift,ms-swift",
                    help="comma list of swift, ms-swift, swift-jemalloc-defaults (ratios are against ms-swift)")
    ap.add_argument("--ms_extra", default="", help="extra flags for ms-swift only, e.g. '--use_logits_to_keep false' "
                    "(ms-swift's default computes the LM head only from the first label position on; swift on all)")
    args = ap.parse_args()
    common = ["--per_device_train_batch_size", str(args.batch), "--gradient_accumulation_steps", "1",
              "--max_length", "128", "--learning_rate", "1e-4", "--logging_steps", "1", "--save_steps", "1000",
              "--torch_dtype", "float32", "--gradient_checkpointing", "false", "--save_only_model", "true"]
    import torch
    import transformers
    try:
        from importlib.metadata import version
        ms_version = version("ms-swift")
    except Exception:
        raise SystemExit("ms-swift is not installed in this Python (pip install ms-swift; see the docstring)")
    print(f"uptime before: {os.getloadavg()}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.jsonl")
        mean_len = make_data(data, args.rows)
        models = {}
        for size in args.sizes.split(","):
            folder = os.path.join(tmp, f"qwen3-{size}")
            models[size] = (folder,) + make_model(folder, *SIZES[size])
        for r in range(args.rounds):
            for size in args.sizes.split(","):
                steps = args.steps if size in ("25m", "small") else args.big_steps
                for train_type in args.types.split(","):
                    tools = args.tools.split(",")
                    order = tools if r % 2 == 0 else tools[::-1]
                    for tool in order:
                        out = os.path.join(tmp, f"out-{tool}-{size}-{train_type}-{r}")
                        res = run_tool(tool, models[size][0], train_type, steps, data, out, args.threads, common,
                                       args.ms_extra.split())
                        results.setdefault((size, train_type, tool), []).append(res)
                        print(f"round {r} {size} {train_type} {tool}: {res['step_s']:.3f} s/step "
                              f"(first {res['first_s']:.2f} s), peak {res['peak_mb']:.0f} MB, "
                              f"load {os.getloadavg()[0]:.2f}", flush=True)
                        shutil.rmtree(out, ignore_errors=True)
    ms_lens = {r["mean_len"] for v in results.values() for r in v if r["mean_len"] is not None}
    print(f"\ntorch {torch.__version__}, transformers {transformers.__version__}, ms-swift {ms_version}, "
          f"threads {args.threads}, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}, fp32, batch {args.batch}, "
          f"{args.rounds} rounds (best counts), ms-swift extra flags: {args.ms_extra or 'none'}, uptime after: {os.getloadavg()}")
    print(f"tokens/sample {mean_len:.2f} (ms-swift's own count: {', '.join(f'{x:.2f}' for x in ms_lens)}); "
          f"tokens/step {args.batch * mean_len:.0f}")
    for size in args.sizes.split(","):
        _, n, n_body = models[size]
        print(f"{size}: hidden {SIZES[size][0]}, {SIZES[size][1]} layers: {n / 1e6:.1f}M params "
              f"({n_body / 1e6:.1f}M without the tied 151936-token embedding), "
              f"{args.steps if size in ('25m', 'small') else args.big_steps} steps")
    print(f"{'model':<7}{'type':<6}{'swift tok/s':>13}{'ms-swift tok/s':>16}{'ratio':>8}"
          f"{'swift MB':>10}{'ms-swift MB':>13}{'ratio':>8}")
    for size in args.sizes.split(","):
        for train_type in args.types.split(","):
            m = results.get((size, train_type, "ms-swift"))
            for tool in [t for t in args.tools.split(",") if t != "ms-swift"]:
                s = results[(size, train_type, tool)]
                st = args.batch * mean_len / min(x["step_s"] for x in s)
                sm = min(x["peak_mb"] for x in s)
                label = train_type if tool == "swift" else f"{train_type} ({tool})"
                if m is None:
                    print(f"{size:<7}{label:<6}{st:>13.1f}{'-':>16}{'-':>8}{sm:>10.0f}{'-':>13}{'-':>8}")
                    continue
                mt = args.batch * mean_len / min(x["step_s"] for x in m)
                mm = min(x["peak_mb"] for x in m)
                print(f"{size:<7}{label:<6}{st:>13.1f}{mt:>16.1f}{st / mt:>7.2f}x{sm:>10.0f}{mm:>13.0f}"
                      f"{sm / mm:>7.2f}x")
    print("ratios: swift / ms-swift (tokens/s: higher is better for swift; memory: lower is better for swift)")
    print("commands (last round):")
    for key in sorted(results):
        print("  " + results[key][-1]["cmd"])


if __name__ == "__main__":
    sys.exit(main())
