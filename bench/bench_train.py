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

On a GPU (where ms-swift is not installed) the baseline is transformers + PEFT written out (bench/hf_sft.py: the
HF Trainer job ms-swift runs, same hyper-parameters), and memory is each tool's peak reserved CUDA memory:

    python3 bench/bench_train.py --device cuda --tools swift,hf --torch_dtype bfloat16 --sizes 0.6b \
        --batch 8 --max_length 1024 --sums_per_reply 24 --gradient_checkpointing true --rounds 1

Before/after a change to swift itself: --baseline_swift OLD_BINARY adds the tool "swift-baseline" (the same flags
through another build) and makes it the baseline when neither ms-swift nor hf is among --tools:

    .venv/bin/python bench/bench_train.py --tools swift,swift-baseline --baseline_swift /path/to/old/swift

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
    "0.6b": (1024, 28, 3072, 16, 8),  # Qwen3-0.6B's shape (head_dim 128), 596M: for --device cuda
}


def save_random_model(cfg, folder):
    """A transformers model of `cfg` with seed-0 random fp32 weights, saved in `folder` with the Qwen tokenizer."""
    import torch
    import transformers
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(TOKENIZER_DIR, f), folder)
    return model


def make_model(folder, hidden, layers, inter, heads, kv):
    import transformers
    cfg = transformers.Qwen3Config(vocab_size=151936, hidden_size=hidden, intermediate_size=inter,
                                   num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
                                   head_dim=128 if hidden >= 1024 else 64, max_position_embeddings=2048,
                                   tie_word_embeddings=True,
                                   bos_token_id=151643, eos_token_id=151645)
    model = save_random_model(cfg, folder)
    n = sum(p.numel() for p in model.parameters())
    return n, n - model.get_input_embeddings().weight.numel()


def make_data(path, rows, sums_per_reply=1, max_length=10**9):
    """Arithmetic Q/A rows (a reply of sums_per_reply sums: longer samples for GPU runs); returns the mean tokens
    per sample under the qwen3 template (non-thinking reply), truncated at max_length as the tools truncate."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(TOKENIZER_DIR, "tokenizer.json"))
    rng = random.Random(0)
    lengths = []
    with open(path, "w") as f:
        for _ in range(rows):
            sums = [(rng.randint(10, 9999), rng.randint(10, 9999)) for _ in range(sums_per_reply)]
            q = " ".join(f"What is {a} + {b}?" for a, b in sums) + (
                " Answer with the number." if sums_per_reply == 1 else " Answer with the numbers.")
            r = " ".join(f"{a} + {b} = {a + b}. The answer is {a + b}." for a, b in sums)
            f.write(json.dumps({"messages": [{"role": "user", "content": q},
                                             {"role": "assistant", "content": r}]}) + "\n")
            text = (f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
                    f"{r}<|im_end|>\n")
            lengths.append(min(max_length, len(tok.encode(text, add_special_tokens=False).ids)))
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


GNU_TIME = ["/usr/bin/time", "-v"] if os.path.exists("/usr/bin/time") else []
JEMALLOC_DEFAULTS = "dirty_decay_ms:10000,muzzy_decay_ms:0,oversize_threshold:8388608"


def read_peak_gib(run_root):
    """The largest memory(GiB) swift logged (on CUDA: the caching allocator's peak reserved bytes)."""
    logs = [os.path.join(d, "logging.jsonl") for d, _, files in os.walk(run_root) if "logging.jsonl" in files]
    return max(json.loads(line).get("memory(GiB)", 0.0) for line in open(logs[0]))


# The swift binaries the tools run: "swift" (and "swift-jemalloc-defaults") this build's, "swift-baseline" another
# build's (--baseline_swift), for before/after comparisons.
SWIFT_BINARIES = {"swift": os.path.join(ROOT, "build", "bin", "swift"), "swift-baseline": None}


def swift_binary(tool):
    return SWIFT_BINARIES["swift-baseline" if tool == "swift-baseline" else "swift"]


def run_tool(tool, model, train_type, steps, data, out, threads, common, ms_extra=(), device="cpu", template="qwen3"):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), HF_HUB_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", MODELSCOPE_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    if tool == "swift-jemalloc-defaults":
        env["MALLOC_CONF"] = JEMALLOC_DEFAULTS
    args = ["sft", "--model", model, "--template", template, "--tuner_type", train_type, "--dataset", data,
            "--max_steps", str(steps), "--output_dir", out] + common
    result_json = os.path.join(out + "-hf.json")
    if tool.startswith("swift"):
        cmd = [swift_binary(tool)] + args + ["--device", device]
    elif tool == "hf":  # transformers + PEFT written out (bench/hf_sft.py), where ms-swift is not installed
        flag = dict(zip(common[::2], common[1::2]))
        cmd = [sys.executable, os.path.join(ROOT, "bench", "hf_sft.py"), "--model", model, "--data", data,
               "--train_type", train_type, "--steps", str(steps), "--batch", flag["--per_device_train_batch_size"],
               "--max_length", flag["--max_length"], "--learning_rate", flag["--learning_rate"],
               "--torch_dtype", flag["--torch_dtype"], "--gradient_checkpointing", flag["--gradient_checkpointing"],
               "--device", device, "--output_dir", out, "--result", result_json]
    else:  # ms-swift: the same flags, plus what it needs to pick the model type and stay on one process
        cmd = [os.path.join(os.path.dirname(sys.executable), "swift")] + args + [
            "--model_type", "qwen3", "--use_hf", "true", "--dataloader_num_workers", "0", "--dataset_num_proc", "1"] + list(ms_extra)
    for attempt in range(5):  # the swift binary may briefly be missing or busy while others rebuild it
        if not tool.startswith("swift") or os.access(cmd[0], os.X_OK):
            try:
                p = subprocess.run(GNU_TIME + cmd, env=env, capture_output=True, text=True)
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
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    rss_kb = int(rss.group(1)) if rss else 0  # no GNU time (GPU machine): GPU memory is what counts there
    if tool == "hf":
        res = json.load(open(result_json))
        times = res["step_times"]
        first, per_step, n, mean_len = times[0], sum(times[1:]) / (len(times) - 1), len(times), None
        gpu_gib = res["peak_gib"] if device == "cuda" else None
    else:
        first, per_step, n, mean_len = read_log(out)
        gpu_gib = read_peak_gib(out) if device == "cuda" else None
    # CPU: the process's peak resident set; CUDA: the peak reserved GPU memory each tool reports
    peak_mb = gpu_gib * 1024 if gpu_gib is not None else rss_kb / 1024
    return {"first_s": first, "step_s": per_step, "steps": n, "peak_mb": peak_mb, "mean_len": mean_len,
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
                    help="comma list of swift, ms-swift, hf (transformers + PEFT, bench/hf_sft.py), "
                    "swift-jemalloc-defaults; ratios are against ms-swift, else hf")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--torch_dtype", choices=["float32", "bfloat16"], default="float32")
    ap.add_argument("--max_length", type=int, default=128)
    ap.add_argument("--sums_per_reply", type=int, default=1, help="longer samples: this many sums per reply")
    ap.add_argument("--gradient_checkpointing", choices=["true", "false"], default="false")
    ap.add_argument("--ms_extra", default="", help="extra flags for ms-swift only, e.g. '--use_logits_to_keep false' "
                    "(ms-swift's default computes the LM head only from the first label position on; swift on all)")
    ap.add_argument("--swift", default=SWIFT_BINARIES["swift"], help="the swift binary measured")
    ap.add_argument("--baseline_swift", default=None, help="another swift build, run as the tool swift-baseline")
    args = ap.parse_args()
    SWIFT_BINARIES.update({"swift": args.swift, "swift-baseline": args.baseline_swift})
    common = ["--per_device_train_batch_size", str(args.batch), "--gradient_accumulation_steps", "1",
              "--max_length", str(args.max_length), "--learning_rate", "1e-4", "--logging_steps", "1",
              "--save_steps", "1000", "--torch_dtype", args.torch_dtype,
              "--gradient_checkpointing", args.gradient_checkpointing, "--save_only_model", "true"]
    tools = args.tools.split(",")
    baseline = ("ms-swift" if "ms-swift" in tools else "hf" if "hf" in tools
                else "swift-baseline" if "swift-baseline" in tools else None)
    assert baseline, "--tools needs ms-swift, hf or swift-baseline as the baseline"
    assert "swift-baseline" not in tools or args.baseline_swift, "--tools swift-baseline needs --baseline_swift"
    import torch
    import transformers
    ms_version = "not used"
    if baseline == "ms-swift":
        try:
            from importlib.metadata import version
            ms_version = version("ms-swift")
        except Exception:
            raise SystemExit("ms-swift is not installed in this Python (pip install ms-swift; see the docstring)")
    print(f"uptime before: {os.getloadavg()}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.jsonl")
        mean_len = make_data(data, args.rows, args.sums_per_reply, args.max_length)
        models = {}
        for size in args.sizes.split(","):
            folder = os.path.join(tmp, f"qwen3-{size}")
            models[size] = (folder,) + make_model(folder, *SIZES[size])
        for r in range(args.rounds):
            for size in args.sizes.split(","):
                steps = args.steps if size in ("25m", "small") else args.big_steps
                for train_type in args.types.split(","):
                    order = tools if r % 2 == 0 else tools[::-1]
                    for tool in order:
                        out = os.path.join(tmp, f"out-{tool}-{size}-{train_type}-{r}")
                        res = run_tool(tool, models[size][0], train_type, steps, data, out, args.threads, common,
                                       args.ms_extra.split(), args.device)
                        results.setdefault((size, train_type, tool), []).append(res)
                        print(f"round {r} {size} {train_type} {tool}: {res['step_s']:.3f} s/step "
                              f"(first {res['first_s']:.2f} s), peak {res['peak_mb']:.0f} MB, "
                              f"load {os.getloadavg()[0]:.2f}", flush=True)
                        shutil.rmtree(out, ignore_errors=True)
    ms_lens = {r["mean_len"] for v in results.values() for r in v if r["mean_len"] is not None}
    print(f"\ntorch {torch.__version__}, transformers {transformers.__version__}, ms-swift {ms_version}, "
          f"threads {args.threads}, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}, device {args.device}, "
          f"{args.torch_dtype}, batch {args.batch}, max_length {args.max_length}, "
          f"gradient checkpointing {args.gradient_checkpointing}, "
          f"{args.rounds} rounds (best counts), ms-swift extra flags: {args.ms_extra or 'none'}, uptime after: {os.getloadavg()}")
    print(f"tokens/sample {mean_len:.2f} (ms-swift's own count: {', '.join(f'{x:.2f}' for x in ms_lens)}); "
          f"tokens/step {args.batch * mean_len:.0f}")
    for size in args.sizes.split(","):
        _, n, n_body = models[size]
        print(f"{size}: hidden {SIZES[size][0]}, {SIZES[size][1]} layers: {n / 1e6:.1f}M params "
              f"({n_body / 1e6:.1f}M without the tied 151936-token embedding), "
              f"{args.steps if size in ('25m', 'small') else args.big_steps} steps")
    memory = "GPU MB" if args.device == "cuda" else "MB"
    w = max(16, len(baseline) + 8)  # the baseline's columns
    print(f"{'model':<7}{'type':<6}{'swift tok/s':>13}{baseline + ' tok/s':>{w}}{'ratio':>8}"
          f"{'swift ' + memory:>14}{baseline + ' ' + memory:>{w}}{'ratio':>8}")
    for size in args.sizes.split(","):
        for train_type in args.types.split(","):
            m = results.get((size, train_type, baseline))
            for tool in [t for t in tools if t not in ("ms-swift", "hf", baseline)]:
                s = results[(size, train_type, tool)]
                st = args.batch * mean_len / min(x["step_s"] for x in s)
                sm = min(x["peak_mb"] for x in s)
                label = train_type if tool == "swift" else f"{train_type} ({tool})"
                if m is None:
                    print(f"{size:<7}{label:<6}{st:>13.1f}{'-':>{w}}{'-':>8}{sm:>14.0f}{'-':>{w}}{'-':>8}")
                    continue
                mt = args.batch * mean_len / min(x["step_s"] for x in m)
                mm = min(x["peak_mb"] for x in m)
                print(f"{size:<7}{label:<6}{st:>13.1f}{mt:>{w}.1f}{st / mt:>7.2f}x{sm:>14.0f}{mm:>{w}.0f}"
                      f"{sm / mm:>7.2f}x")
    print(f"ratios: swift / {baseline} (tokens/s: higher is better for swift; memory: lower is better for swift)")
    print("commands (last round):")
    for key in sorted(results):
        print("  " + results[key][-1]["cmd"])


if __name__ == "__main__":
    sys.exit(main())
