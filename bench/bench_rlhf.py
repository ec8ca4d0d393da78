"""DPO training speed: swift's `rlhf --rlhf_type dpo` vs ms-swift's own `swift rlhf --rlhf_type dpo` (PyPI, on CPU),
next to swift's CPO step (the same pairs, no reference model) and swift's SFT step (the chosen replies alone), on
the same Qwen3-architecture model with random weights, the same local preference jsonl and the same flags.

    .venv/bin/python bench/bench_rlhf.py [--threads 2] [--rounds 2] [--steps 8] [--size 25m] [--train_type lora]

ms-swift must be importable from this Python (see bench/bench_train.py). Measured alike for every run, from the
logging.jsonl each writes (--logging_steps 1): the step time of optimizer steps 2..N, and
  pair tokens/s = batch * mean tokens per pair (chosen + rejected under the qwen3 template) / step time
(sft: batch * mean tokens of the chosen conversation / step time). Rounds alternate the tools; the best round of
each counts. --baseline_swift OLD_BINARY adds the same three runs through another swift build, for before/after
comparisons of swift itself (printed as the ratio of their step times). Printed ratios:
  ms-swift / swift     DPO step time, the speed-up
  swift dpo / cpo      what the reference forward costs (LoRA: the base model with the adapter off); it must stay
                       well under 2x
  swift dpo / sft      a DPO step against an SFT step on the chosen replies (DPO scores twice the sequences and
                       runs the reference)
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import GNU_TIME, ROOT, SIZES, SWIFT_BINARIES, TOKENIZER_DIR, make_model, read_log  # noqa: E402


def make_pairs(path, rows):
    """Arithmetic questions with a right (chosen) and a wrong (rejected) answer; returns the mean tokens of a
    chosen conversation and of a whole pair under the qwen3 template (non-thinking reply)."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(TOKENIZER_DIR, "tokenizer.json"))
    rng = random.Random(0)
    chosen_len, pair_len = [], []

    def length(q, r):
        text = f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n{r}<|im_end|>\n"
        return len(tok.encode(text, add_special_tokens=False).ids)

    with open(path, "w") as f:
        for _ in range(rows):
            a, b = rng.randint(10, 9999), rng.randint(10, 9999)
            q = f"What is {a} + {b}? Answer with the number."
            good = f"{a} + {b} = {a + b}. The answer is {a + b}."
            wrong = a + b + rng.randint(1, 99)
            bad = f"{a} + {b} = {wrong}. The answer is {wrong}."
            f.write(json.dumps({"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": good}],
                                "rejected_response": bad}) + "\n")
            chosen_len.append(length(q, good))
            pair_len.append(length(q, good) + length(q, bad))
    return sum(chosen_len) / rows, sum(pair_len) / rows


def run(tool, command, method, model, train_type, steps, data, out, threads, batch):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               MODELSCOPE_OFFLINE="1", TOKENIZERS_PARALLELISM="false", CUDA_VISIBLE_DEVICES="")
    args = [command] + (["--rlhf_type", method] if command == "rlhf" else []) + [
        "--model", model, "--template", "qwen3", "--tuner_type", train_type, "--dataset", data,
        "--max_steps", str(steps), "--output_dir", out, "--per_device_train_batch_size", str(batch),
        "--gradient_accumulation_steps", "1", "--logging_steps", "1", "--save_steps", "1000", "--max_length", "512",
        "--learning_rate", "1e-5", "--gradient_checkpointing", "true", "--torch_dtype", "float32", "--seed", "0",
        "--lora_dropout", "0", "--split_dataset_ratio", "0"]
    if tool in ("swift", "swift-baseline"):
        cmd = [SWIFT_BINARIES[tool]] + args + ["--device", "cpu", "--num_threads", str(threads)]
    else:
        cmd = [os.path.join(os.path.dirname(sys.executable), "swift")] + args + [
            "--model_type", "qwen3", "--use_hf", "true", "--dataloader_num_workers", "0", "--dataset_num_proc", "1",
            "--save_only_model", "true"]
    p = subprocess.run(GNU_TIME + cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-3000:] + p.stderr[-6000:])
        raise SystemExit(f"{tool} failed: {' '.join(cmd)}")
    _, per_step, n, _ = read_log(out)
    rss = [l for l in p.stderr.splitlines() if "Maximum resident set size" in l]
    peak_mb = int(rss[0].split()[-1]) / 1024 if rss else 0
    return {"step_s": per_step, "steps": n, "peak_mb": peak_mb, "cmd": " ".join(cmd)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--size", default="25m", choices=sorted(SIZES))
    ap.add_argument("--train_type", default="lora", choices=["lora", "full"])
    ap.add_argument("--tools", default="swift,ms-swift")
    ap.add_argument("--swift", default=SWIFT_BINARIES["swift"], help="the swift binary measured")
    ap.add_argument("--baseline_swift", default=None, help="another swift build: its dpo, cpo and sft runs beside")
    a = ap.parse_args()
    SWIFT_BINARIES.update({"swift": a.swift, "swift-baseline": a.baseline_swift})
    tools = a.tools.split(",")
    work = tempfile.mkdtemp(prefix="bench_rlhf_")
    model = os.path.join(work, "model")
    n_params, _ = make_model(model, *SIZES[a.size])
    data = os.path.join(work, "pairs.jsonl")
    chosen_tokens, pair_tokens = make_pairs(data, 400)
    print(f"model {a.size}: {n_params / 1e6:.1f}M parameters; {a.train_type}; batch {a.batch} pairs; "
          f"{pair_tokens:.1f} tokens per pair ({chosen_tokens:.1f} chosen); {a.threads} threads; {a.steps} steps")
    runs = [("swift", "rlhf", "dpo"), ("swift", "rlhf", "cpo"), ("swift", "sft", None)]
    if "ms-swift" in tools:
        runs.insert(1, ("ms-swift", "rlhf", "dpo"))
    if a.baseline_swift:
        runs += [("swift-baseline", "rlhf", "dpo"), ("swift-baseline", "rlhf", "cpo"), ("swift-baseline", "sft", None)]
    best = {}
    for r in range(a.rounds):
        for tool, command, method in (runs if r % 2 == 0 else runs[::-1]):
            key = f"{tool} {method or command}"
            out = os.path.join(work, f"{key.replace(' ', '_')}_{r}")
            res = run(tool, command, method, model, a.train_type, a.steps, data, out, a.threads, a.batch)
            tokens = a.batch * (pair_tokens if method else chosen_tokens)
            print(f"  round {r}: {key:14s} step {res['step_s']:.3f} s  {tokens / res['step_s']:8.1f} tokens/s  "
                  f"peak RSS {res['peak_mb']:.0f} MB", flush=True)
            if key not in best or res["step_s"] < best[key]["step_s"]:
                best[key] = res
    dpo = best["swift dpo"]["step_s"]
    print("best of the rounds:")
    if "ms-swift dpo" in best:
        ms = best["ms-swift dpo"]
        print(f"  DPO step: ms-swift {ms['step_s']:.3f} s, swift {dpo:.3f} s -> swift {ms['step_s'] / dpo:.2f}x as fast; "
              f"peak RSS {best['swift dpo']['peak_mb']:.0f} MB vs {ms['peak_mb']:.0f} MB "
              f"({best['swift dpo']['peak_mb'] / ms['peak_mb']:.2f}x)")
    if a.baseline_swift:
        for what in ("dpo", "cpo", "sft"):
            new, old = best[f"swift {what}"], best[f"swift-baseline {what}"]
            print(f"  {what} step: this build {new['step_s']:.3f} s, baseline {old['step_s']:.3f} s -> "
                  f"{old['step_s'] / new['step_s']:.2f}x as fast; peak RSS {new['peak_mb']:.0f} MB vs "
                  f"{old['peak_mb']:.0f} MB ({new['peak_mb'] / old['peak_mb']:.2f}x)")
    print(f"  swift DPO / CPO step (the reference forward): {dpo / best['swift cpo']['step_s']:.2f}x")
    print(f"  swift DPO / SFT step (chosen replies only): {dpo / best['swift sft']['step_s']:.2f}x")


if __name__ == "__main__":
    main()
