"""Continuous batching gain of `swift deploy`: generated tokens/s with 1, 8 and 32 concurrent clients against the
same requests sent one by one, on CPU, over real HTTP. The baseline runs in the same script on the same server.

    python3 bench/bench_deploy.py [--swift build/bin/swift] [--model DIR] [--requests 32] [--max_tokens 64]
                                  [--threads 2]

Without --model it initialises a random Qwen3-architecture model from configs/models/qwen3-tiny with the real
Qwen3 vocabulary and --hidden_size / --layers (default 512 / 4, ~100M parameters, most in the embeddings; pass a
real model folder for realistic numbers). Greedy, fixed-length token-id prompts; the token count is taken from
usage (a request may end early at EOS).
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def post(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    out = json.loads(r.read())
    conn.close()
    assert r.status == 200, out
    return out["usage"]["completion_tokens"]


def run(port, bodies, clients):
    start = time.perf_counter()
    if clients == 1:
        tokens = sum(post(port, b) for b in bodies)
    else:
        with concurrent.futures.ThreadPoolExecutor(clients) as pool:
            tokens = sum(pool.map(lambda b: post(port, b), bodies))
    return tokens / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--swift", default=os.path.join(ROOT, "build/bin/swift"))
    ap.add_argument("--model", default="")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--max_tokens", type=int, default=64)
    ap.add_argument("--prompt_len", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hidden_size", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = a.model
        if not model:
            model, config_dir = os.path.join(tmp, "m"), os.path.join(tmp, "config")
            shutil.copytree(os.path.join(ROOT, "configs/models/qwen3-tiny"), config_dir)
            with open(os.path.join(config_dir, "config.json")) as f:
                cfg = json.load(f)
            cfg.update(hidden_size=a.hidden_size, intermediate_size=3 * a.hidden_size, num_hidden_layers=a.layers,
                       num_attention_heads=max(1, a.hidden_size // 64), num_key_value_heads=max(1, a.hidden_size // 128),
                       head_dim=64 if a.hidden_size >= 64 else a.hidden_size)
            with open(os.path.join(config_dir, "config.json"), "w") as f:
                json.dump(cfg, f)
            subprocess.run([a.swift, "export", "--model", config_dir, "--init_strategy", "normal", "--output_dir", model],
                           check=True, capture_output=True)
        log = open(os.path.join(tmp, "server.log"), "w+")
        server = subprocess.Popen([a.swift, "deploy", "--model", model, "--host", "127.0.0.1", "--port", "0",
                                   "--max_batch_size", "32", "--num_threads", str(a.threads)],
                                  stdout=log, stderr=subprocess.STDOUT)
        try:
            port = None
            for _ in range(600):
                log.seek(0)
                m = re.search(r"serving .* on http://127\.0\.0\.1:(\d+)", log.read())
                if m:
                    port = int(m.group(1))
                    break
                if server.poll() is not None:
                    sys.exit("server exited:\n" + open(log.name).read())
                time.sleep(0.1)
            bodies = [{"prompt": [(97 * i + k) % 1000 + 10 for k in range(a.prompt_len)], "max_tokens": a.max_tokens,
                       "temperature": 0} for i in range(a.requests)]
            run(port, bodies[:2], 1)  # warm-up
            base = run(port, bodies, 1)
            print(f"one by one      : {base:8.1f} generated tokens/s")
            for clients in (1, 8, 32):
                tps = run(port, bodies, clients)
                print(f"{clients:2d} concurrent   : {tps:8.1f} generated tokens/s  ({tps / base:.2f}x one by one)")
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
