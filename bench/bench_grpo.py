"""GRPO speed: swift's `rlhf --rlhf_type grpo` against TRL's GRPOTrainer (PyPI, transformers' generate, on CPU),
on the same Qwen3-architecture model with random weights, the same prompts and the same settings.

    .venv/bin/python bench/bench_grpo.py [--threads 2] [--rounds 2] [--steps 5] [--size 25m] [--train_type lora]
                                         [--completion 64] [--generations 8] [--batch 16]

Both tools: --num_generations G, a generation batch of --batch completions (batch / G prompts) per optimizer step,
--max_completion_length, temperature 1.0, beta 0.04 (a reference pass), one update per generation batch, the
prompts under Qwen3's template with thinking off, and a reward that checks the sum (swift's built-in accuracy; a
Python function for TRL). The random model rarely ends a completion early, so both generate about
--completion tokens per row (the mean lengths are printed).

Measured alike over steps 2..N (step 1 warms up):
  rollout tokens/s = completion tokens generated / seconds generating
                     (swift: logging.jsonl's time/generation; TRL: its _generate, timed)
  update tokens/s  = (prompt + completion tokens) / (step seconds - generating - scoring)
                     (the log-probabilities, the reference pass, backward and the optimizer; swift: the step time
                     from train_speed, TRL: its logged step_time)
  step seconds     = the whole optimizer step
Rounds alternate the tools; the best round of each counts. Printed: each tool's figures and swift / TRL.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_train import ROOT, SIZES, TOKENIZER_DIR, make_model  # noqa: E402

SWIFT = os.path.join(ROOT, "build", "bin", "swift")


def make_prompts(path, rows):
    """Sum questions as GRPO prompt rows ({"messages": [user], "solution"}); returns the mean prompt tokens under
    the qwen3 template with thinking off, as both tools encode them."""
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(TOKENIZER_DIR, "tokenizer.json"))
    rng = random.Random(0)
    lengths = []
    with open(path, "w") as f:
        for _ in range(rows):
            a, b = rng.randint(10, 9999), rng.randint(10, 9999)
            q = f"What is {a} + {b}? Answer with the number."
            f.write(json.dumps({"messages": [{"role": "user", "content": q}], "solution": str(a + b)}) + "\n")
            text = f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
            lengths.append(len(tok.encode(text, add_special_tokens=False).ids))
    return sum(lengths) / rows


def env_for(threads):
    return dict(os.environ, OMP_NUM_THREADS=str(threads), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
                TOKENIZERS_PARALLELISM="false", CUDA_VISIBLE_DEVICES="", TRANSFORMERS_VERBOSITY="error")


def run_swift(args, model, data, out, prompt_tokens):
    command = [SWIFT, "rlhf", "--rlhf_type", "grpo", "--model", model, "--train_type", args.train_type,
               "--dataset", data, "--reward_funcs", "accuracy", "--num_generations", str(args.generations),
               "--per_device_train_batch_size", str(args.batch), "--max_completion_length", str(args.completion),
               "--temperature", "1.0", "--beta", "0.04", "--learning_rate", "1e-6", "--max_steps", str(args.steps),
               "--logging_steps", "1", "--save_steps", "100000", "--output_dir", out, "--add_version", "false",
               "--torch_dtype", "float32", "--dataloader_num_workers", "0"]
    subprocess.run(command, env=env_for(args.threads), check=True, stdout=subprocess.DEVNULL,
                   stderr=open(os.path.join(out + ".log"), "w"))
    rows = [json.loads(line) for line in open(os.path.join(out, "logging.jsonl")) if '"loss"' in line]
    assert len(rows) == args.steps, len(rows)
    # train_speed(iter/s) is steps so far / seconds so far: the seconds of steps 2..N from its first and last values.
    elapsed = [int(r["global_step/max_steps"].split("/")[0]) / r["train_speed(iter/s)"] for r in rows]
    later = rows[1:]
    step_seconds = (elapsed[-1] - elapsed[0]) / len(later)
    return figures(later, step_seconds * len(later), prompt_tokens, args.batch)


TRL_SCRIPT = textwrap.dedent("""
    import json, sys, time, warnings
    warnings.filterwarnings("ignore")
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer
    cfg = json.loads(sys.argv[1])
    rows = [json.loads(l) for l in open(cfg["data"])]
    dataset = Dataset.from_list([{"prompt": r["messages"], "solution": r["solution"]} for r in rows])
    def accuracy(completions, solution, **kwargs):  # the sum in the reply (the bench times, not learns)
        return [1.0 if s in c[0]["content"] else 0.0 for c, s in zip(completions, solution)]
    tokenizer = AutoTokenizer.from_pretrained(cfg["model"])
    model = AutoModelForCausalLM.from_pretrained(cfg["model"], dtype=torch.float32)
    peft_config = None
    if cfg["train_type"] == "lora":
        from peft import LoraConfig
        peft_config = LoraConfig(r=8, lora_alpha=32, lora_dropout=0.05, target_modules="all-linear", task_type="CAUSAL_LM")
    args = GRPOConfig(output_dir=cfg["out"], per_device_train_batch_size=cfg["batch"], num_generations=cfg["generations"],
                      max_completion_length=cfg["completion"], temperature=1.0, beta=0.04, learning_rate=1e-6,
                      max_steps=cfg["steps"], logging_steps=1, save_strategy="no", report_to=[], use_cpu=True,
                      bf16=False, disable_dropout=True, chat_template_kwargs={"enable_thinking": False},
                      dataloader_num_workers=0, seed=42)
    trainer = GRPOTrainer(model=model, reward_funcs=accuracy, args=args, train_dataset=dataset,
                          processing_class=tokenizer, peft_config=peft_config)
    timed = {"generation": [], "scoring": []}
    def timer(name, method):
        def wrapped(*a, **k):
            start = time.perf_counter()
            out = method(*a, **k)
            timed[name].append(time.perf_counter() - start)
            return out
        return wrapped
    trainer._generate = timer("generation", trainer._generate)
    trainer._calculate_rewards = timer("scoring", trainer._calculate_rewards)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "step_time" in h]
    json.dump({"logs": logs, "timed": timed}, open(cfg["out"] + "/bench.json", "w"))
""")


def run_trl(args, model, data, out, prompt_tokens):
    os.makedirs(out, exist_ok=True)
    cfg = dict(model=model, data=data, out=out, train_type=args.train_type, batch=args.batch,
               generations=args.generations, completion=args.completion, steps=args.steps)
    subprocess.run([sys.executable, "-c", TRL_SCRIPT, json.dumps(cfg)], env=env_for(args.threads), check=True,
                   stdout=subprocess.DEVNULL, stderr=open(out + ".log", "w"))
    result = json.load(open(os.path.join(out, "bench.json")))
    logs = result["logs"]
    assert len(logs) == args.steps, len(logs)
    rows = []
    for log, generation, scoring in zip(logs, result["timed"]["generation"], result["timed"]["scoring"]):
        rows.append({"completions/mean_length": log["completions/mean_length"], "time/generation": generation,
                     "time/scoring": scoring, "step_time": log["step_time"]})
    later = rows[1:]
    return figures(later, sum(r["step_time"] for r in later), prompt_tokens, args.batch)


def figures(rows, step_seconds_total, prompt_tokens, batch):
    completion_tokens = sum(r["completions/mean_length"] * batch for r in rows)
    generating = sum(r["time/generation"] for r in rows)
    scoring = sum(r["time/scoring"] for r in rows)
    update = step_seconds_total - generating - scoring
    return {"rollout_tps": completion_tokens / generating,
            "update_tps": (completion_tokens + prompt_tokens * batch * len(rows)) / update,
            "step_s": step_seconds_total / len(rows),
            "mean_length": completion_tokens / batch / len(rows)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--size", default="25m", choices=sorted(SIZES))
    p.add_argument("--train_type", default="lora", choices=["lora", "full"])
    p.add_argument("--completion", type=int, default=64)
    p.add_argument("--generations", type=int, default=8)
    p.add_argument("--batch", type=int, default=16)
    args = p.parse_args()
    assert os.path.exists(SWIFT), f"build swift first ({SWIFT})"
    work = tempfile.mkdtemp(prefix="bench_grpo_")
    model = os.path.join(work, "model")
    params, _ = make_model(model, *SIZES[args.size])
    data = os.path.join(work, "prompts.jsonl")
    prompt_tokens = make_prompts(data, 400)
    print(f"model {args.size} ({params / 1e6:.0f}M parameters), {args.train_type}, {args.threads} threads; "
          f"{args.batch} completions a step ({args.batch // args.generations} prompts x {args.generations}), "
          f"{args.completion} new tokens at most, prompts {prompt_tokens:.1f} tokens; steps 2..{args.steps}")
    best = {}
    for r in range(args.rounds):
        tools = [("swift", run_swift), ("trl", run_trl)]
        if r % 2:
            tools.reverse()
        for name, fn in tools:
            got = fn(args, model, data, os.path.join(work, f"{name}_{r}"), prompt_tokens)
            print(f"  round {r + 1} {name:5s}: rollout {got['rollout_tps']:8.1f} tok/s, update {got['update_tps']:8.1f} "
                  f"tok/s, step {got['step_s']:.2f} s, completions {got['mean_length']:.1f} tokens", flush=True)
            if name not in best or got["step_s"] < best[name]["step_s"]:
                best[name] = got
    s, t = best["swift"], best["trl"]
    print(f"swift / TRL: rollout tokens/s {s['rollout_tps'] / t['rollout_tps']:.2f}x, update tokens/s "
          f"{s['update_tps'] / t['update_tps']:.2f}x, step time {t['step_s'] / s['step_s']:.2f}x as fast")


if __name__ == "__main__":
    main()
