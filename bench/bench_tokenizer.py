"""Tokenizer encode speed: swift's tokenizer vs Hugging Face tokenizers (Rust, from PyPI) on the same corpus.

    .venv/bin/python bench/bench_tokenizer.py [--vocab qwen3] [--mb 4] [--rounds 3] [--threads N]

The corpus (a few MB, multilingual, no downloads) is built from tests/tokenizer/hard_strings.jsonl plus
generated text: Zipf-distributed pseudo-words in several scripts, numbers, punctuation, code and whitespace
runs, cut into ~1 KB documents. Each measurement is one pass over the corpus with a freshly loaded tokenizer
(word caches start empty, as when a dataset is encoded once; load time excluded). Rounds alternate swift
(build/bin/swift_bench_tokenizer) and tokenizers so machine noise hits both; the best time of each counts. Both
sides encode without special tokens, and the script checks they produce the same ids on the whole corpus.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_corpus(target_bytes, seed=0):
    rng = random.Random(seed)
    with open(os.path.join(ROOT, "tests", "tokenizer", "hard_strings.jsonl"), encoding="utf-8") as f:
        hard = [json.loads(line) for line in f.read().split("\n") if line]
    alphabets = {
        "latin": "abcdefghijklmnopqrstuvwxyz",
        "accented": "aeiouéèàùçñöüßøå",
        "cyrillic": "абвгдежзийклмнопрстуфхцчшщыэюя",
        "greek": "αβγδεζηθικλμνξοπρστυφχψω",
        "arabic": "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
        "devanagari": "कखगघचछजझटठडढणतथदधनपफबभमयरलवशषसह",
    }
    weights = {"latin": 60, "accented": 8, "cyrillic": 10, "greek": 4, "arabic": 8, "devanagari": 6}
    vocab = []
    for name, letters in alphabets.items():
        for _ in range(weights[name] * 400):
            n = max(1, int(rng.expovariate(1 / 6)))
            vocab.append("".join(rng.choice(letters) for _ in range(n)))
    cjk = ["".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(rng.randint(1, 4))) for _ in range(4000)]
    zipf = [1.0 / (i + 1) for i in range(len(vocab))]
    code = ["def f(x):\n    return x + 1\n", "for (int i = 0; i < n; ++i) { a[i] = b[i] * 2; }\n",
            "{\"id\": 12, \"name\": \"x\", \"tags\": [\"a\", \"b\"]}\n", "    if err != nil {\n        return err\n    }\n"]
    docs, size = [], 0
    while size < target_bytes:
        parts = []
        while sum(len(p) for p in parts) < 1000:
            r = rng.random()
            if r < 0.70:
                words = rng.choices(vocab, zipf, k=rng.randint(5, 15))
                if rng.random() < 0.3:
                    words[0] = words[0].capitalize()
                parts.append(" ".join(words) + rng.choice([". ", ", ", "! ", "? ", ".\n", ": "]))
            elif r < 0.80:
                parts.append("".join(rng.choices(cjk, k=rng.randint(3, 12))) + "。")
            elif r < 0.86:
                parts.append(" " + str(rng.randint(0, 10 ** rng.randint(1, 9))) + rng.choice(["", "%", ".5", ",000"]) + " ")
            elif r < 0.91:
                parts.append(rng.choice(code))
            elif r < 0.96:
                parts.append(rng.choice(hard))
            else:
                parts.append(rng.choice(["\n\n", "  ", "\t", "\r\n", "    ", " - ", " 😀 ", "👍🏽"]))
        doc = "".join(parts)
        docs.append(doc)
        size += len(doc.encode("utf-8"))
    return docs


def run_swift(binary, vocab_dir, corpus, threads, batch):
    cmd = [binary, "--tokenizer", vocab_dir, "--corpus", corpus, "--repeat", "1", "--threads", str(threads)]
    if batch:
        cmd.append("--batch")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["seconds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="qwen3", help="qwen3 | llama3 | mistral7b (folder in the assets)")
    ap.add_argument("--assets", default=os.environ.get("SWIFT_TOKENIZER_ASSETS",
                                                       os.path.join(ROOT, "tests", "assets", "tokenizers")))
    ap.add_argument("--mb", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "bin", "swift_bench_tokenizer"))
    args = ap.parse_args()

    from tokenizers import Tokenizer
    import tokenizers

    vocab_dir = os.path.join(args.assets, args.vocab)
    docs = make_corpus(int(args.mb * 1e6))
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    tok = Tokenizer.from_file(os.path.join(vocab_dir, "tokenizer.json"))
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.jsonl")
        with open(corpus, "w", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps(d, ensure_ascii=False) + "\n")

        # Same ids on the whole corpus (the benchmark would be meaningless otherwise).
        ours = subprocess.run([args.binary, "--tokenizer", vocab_dir, "--dump_ids", corpus], check=True,
                              capture_output=True, text=True).stdout.split("\n")
        hf_ids = [e.ids for e in tok.encode_batch(docs, add_special_tokens=False)]
        same = sum(json.loads(ours[i]) == hf_ids[i] for i in range(len(docs)))
        ntokens = sum(len(i) for i in hf_ids)

        best = {}
        def keep(name, seconds):
            best[name] = min(best.get(name, 1e30), seconds)

        tokenizer_json = os.path.join(vocab_dir, "tokenizer.json")
        for _ in range(args.rounds):
            keep("swift 1 thread", run_swift(args.binary, vocab_dir, corpus, 1, False))
            fresh = Tokenizer.from_file(tokenizer_json)
            t = time.perf_counter()
            for d in docs:
                fresh.encode(d, add_special_tokens=False)
            keep("tokenizers encode, 1 thread", time.perf_counter() - t)
            keep(f"swift batch, {args.threads} threads", run_swift(args.binary, vocab_dir, corpus, args.threads, True))
            fresh = Tokenizer.from_file(tokenizer_json)
            t = time.perf_counter()
            fresh.encode_batch_fast(docs, add_special_tokens=False)
            keep(f"tokenizers encode_batch_fast, {args.threads} threads", time.perf_counter() - t)

    print(f"corpus: {len(docs)} docs, {nbytes / 1e6:.2f} MB, {ntokens} tokens ({args.vocab}); "
          f"identical ids on {same}/{len(docs)} docs; tokenizers {tokenizers.__version__}; "
          f"best of {args.rounds} rounds")
    for name, s in best.items():
        print(f"  {name:45s} {s:7.3f} s  {nbytes / s / 1e6:7.2f} MB/s")
    ratio1 = best["tokenizers encode, 1 thread"] / best["swift 1 thread"]
    ratio_n = best[f"tokenizers encode_batch_fast, {args.threads} threads"] / best[f"swift batch, {args.threads} threads"]
    print(f"  speedup swift / tokenizers: 1 thread {ratio1:.2f}x, batch on {args.threads} threads {ratio_n:.2f}x")
    if same != len(docs):
        sys.exit("ids differ from tokenizers on some documents")


if __name__ == "__main__":
    main()
