"""Prefill and decode tokens/s: swift's generation engine vs Hugging Face transformers' generate, on the same
~125M-parameter Llama-architecture model (random weights) on CPU, same threads, greedy, no early stop.

    .venv/bin/python bench/bench_generate.py [--threads 2] [--prompt_len 128] [--new_tokens 64] [--rounds 3]

Both sides are measured the same way: prefill = a 1-token generate, decode = (N-token generate - 1-token
generate) / (N - 1). Rounds alternate swift and transformers so machine noise hits both; best times count.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# Both engines run under the same OpenMP wait policy (libgomp reads it when torch is first loaded, so it is set
# before the import; the swift subprocess inherits it). PASSIVE is swift's default (see docs/benchmarks.md);
# pass OMP_WAIT_POLICY=ACTIVE in the environment to compare under libgomp's default instead.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
import transformers  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_model(folder, dtype):
    cfg = transformers.LlamaConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                                   num_attention_heads=12, num_key_value_heads=4, max_position_embeddings=2048,
                                   tie_word_embeddings=False)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype).eval()
    model.save_pretrained(folder, safe_serialization=True)
    return sum(p.numel() for p in model.parameters())


def hf_times(model, prompt, new_tokens, repeat):
    def run(n):
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False, eos_token_id=None,
                                 pad_token_id=0, attention_mask=torch.ones_like(prompt))
        assert out.shape[1] == prompt.shape[1] + n
        return time.perf_counter() - start
    run(2)
    prefill = min(run(1) for _ in range(repeat))
    total = min(run(new_tokens) for _ in range(repeat))
    return prefill, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--prompt_len", type=int, default=128)
    ap.add_argument("--new_tokens", type=int, default=64)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "bin", "swift_bench_generate"))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "llama-125m")
        n_params = make_model(folder, dtype)
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, torch_dtype=dtype).eval()
        vocab = model.config.vocab_size
        prompt = torch.tensor([[(b * 7919 + t * 104729) % vocab for t in range(args.prompt_len)]
                               for b in range(args.batch)])
        swift_runs, hf_runs = [], []
        for r in range(args.rounds):
            out = subprocess.run([args.binary, "--model", folder, "--prompt_len", str(args.prompt_len),
                                  "--new_tokens", str(args.new_tokens), "--batch", str(args.batch),
                                  "--threads", str(args.threads), "--dtype", args.dtype, "--repeat", "2"],
                                 check=True, capture_output=True, text=True)
            swift_runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            hf_runs.append(hf_times(model, prompt, args.new_tokens, 2))
        s_prefill = min(r["prefill_s"] for r in swift_runs)
        s_total = min(r["generate_s"] for r in swift_runs)
        h_prefill = min(p for p, _ in hf_runs)
        h_total = min(t for _, t in hf_runs)
    tokens = args.batch * args.prompt_len
    decoded = args.batch * (args.new_tokens - 1)
    rows = [("swift", tokens / s_prefill, decoded / max(s_total - s_prefill, 1e-9)),
            ("transformers", tokens / h_prefill, decoded / max(h_total - h_prefill, 1e-9))]
    print(f"model: llama {n_params / 1e6:.0f}M params, {args.dtype}, batch {args.batch}, prompt {args.prompt_len}, "
          f"new {args.new_tokens}, threads {args.threads}, torch {torch.__version__}, "
          f"transformers {transformers.__version__}, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}")
    print(f"{'engine':<14}{'prefill tok/s':>15}{'decode tok/s':>15}")
    for name, p, d in rows:
        print(f"{name:<14}{p:>15.1f}{d:>15.2f}")
    print(f"ratio swift/transformers: prefill {rows[0][1] / rows[1][1]:.2f}x, decode {rows[0][2] / rows[1][2]:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
