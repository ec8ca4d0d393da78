#!/usr/bin/env python3
"""Reference encodings for the tokenizer conformance tests, from Hugging Face's own `tokenizers` (and the
`sentencepiece` package for tokenizer.model).

usage: make_reference.py OUT_DIR ASSETS_DIR HARD_STRINGS_JSONL

For each vocabulary folder in ASSETS_DIR (qwen3, llama3, mistral7b, gemma_style, deepseek_style,
phi3_style, phi4_style, glm4_style, internlm2_style) writes OUT_DIR/<name>.json:
  {"tokenizers": version, "cases": [{"ids": encode(s, add_special_tokens=False), "ids_special": ...=True,
    "decoded": decode(ids), "decoded_skip": decode(ids_special, skip_special_tokens=True)}, ...],
   "random_decodes": [{"ids": random ids, "decoded": ..., "decoded_skip": ...}, ...]}
with the cases in the order of HARD_STRINGS_JSONL. With `sentencepiece` installed it also trains two tiny SentencePiece models
(BPE with byte fallback like Llama 2, and unigram with NFKC) into OUT_DIR/sp_<kind>/tokenizer.model and writes
OUT_DIR/sp_<kind>.json with the ids and text transformers' slow tokenizers give: control-token text (<s>, </s>,
<unk>) split off first, every other span encoded (decoded) by SentencePiece.
"""
import json
import os
import random
import re
import sys


def read_strings(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f.read().split("\n") if line]


def hf_reference(out_dir, assets, strings):
    import tokenizers
    from tokenizers import Tokenizer

    done = []
    for name in ("qwen3", "llama3", "mistral7b", "gemma_style", "deepseek_style", "phi3_style", "phi4_style",
                 "glm4_style", "internlm2_style"):
        path = os.path.join(assets, name, "tokenizer.json")
        if not os.path.exists(path):
            print(f"tokenizer reference: {path} missing, skipped")
            continue
        tok = Tokenizer.from_file(path)
        cases = []
        for s in strings:
            ids = tok.encode(s, add_special_tokens=False).ids
            ids_special = tok.encode(s, add_special_tokens=True).ids
            cases.append({
                "ids": ids,
                "ids_special": ids_special,
                "decoded": tok.decode(ids, skip_special_tokens=False),
                "decoded_skip": tok.decode(ids_special, skip_special_tokens=True),
            })
        # Arbitrary id sequences, as a model may generate them: byte tokens cut mid-character, specials, ids
        # past the vocabulary (skipped).
        rng = random.Random(0)
        size = tok.get_vocab_size(with_added_tokens=True)
        random_decodes = []
        for _ in range(300):
            ids = [rng.choice((rng.randrange(size + 3), rng.randrange(300), size - 1 - rng.randrange(300)))
                   for _ in range(rng.randrange(25))]
            random_decodes.append({"ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False),
                                   "decoded_skip": tok.decode(ids, skip_special_tokens=True)})
        with open(os.path.join(out_dir, name + ".json"), "w", encoding="utf-8") as f:
            json.dump({"tokenizers": tokenizers.__version__, "cases": cases, "random_decodes": random_decodes}, f,
                      ensure_ascii=False)
        done.append(name)
    return done


def training_text(strings):
    # Repeated mixed text so the tiny models learn real merges; no downloads.
    base = [s for s in strings if s.strip() and len(s) < 400]
    words = ("the quick brown fox jumps over the lazy dog while tokenizers split text into pieces "
             "language models learn from data and fine tuning adapts them to new tasks").split()
    lines = []
    for i in range(3000):
        lines.append(" ".join(words[(i * 7 + k) % len(words)] for k in range(3 + i % 11)))
    return base * 3 + lines


def sentencepiece_reference(out_dir, strings):
    try:
        import sentencepiece as spm
    except ImportError:
        print("tokenizer reference: no sentencepiece package, tokenizer.model tests will skip")
        return []
    text = training_text(strings)
    kinds = {
        "sp_bpe": dict(model_type="bpe", vocab_size=800, byte_fallback=True, normalization_rule_name="identity",
                       add_dummy_prefix=True, remove_extra_whitespaces=False, split_digits=True),
        "sp_unigram": dict(model_type="unigram", vocab_size=600, normalization_rule_name="nmt_nfkc"),
    }
    done = []
    for kind, options in kinds.items():
        folder = os.path.join(out_dir, kind)
        os.makedirs(folder, exist_ok=True)
        prefix = os.path.join(folder, "tokenizer")
        spm.SentencePieceTrainer.train(sentence_iterator=iter(text), model_prefix=prefix, character_coverage=0.9995,
                                       bos_id=1, eos_id=2, unk_id=0, pad_id=-1, minloglevel=2,
                                       num_threads=1, **options)
        os.replace(prefix + ".model", os.path.join(folder, "tokenizer.model"))
        os.remove(prefix + ".vocab")
        sp = spm.SentencePieceProcessor(model_file=os.path.join(folder, "tokenizer.model"))
        controls = {sp.id_to_piece(i): i for i in range(sp.get_piece_size()) if sp.is_control(i) or sp.is_unknown(i)}
        splitter = re.compile("(" + "|".join(re.escape(c) for c in sorted(controls, key=len, reverse=True)) + ")")
        def decode(ids):
            # transformers' slow tokenizers: special pieces (<s>, </s>, <unk>) as their text, the rest by SentencePiece.
            out, run = "", []
            for i in ids:
                if i in controls.values():
                    out += sp.decode(run) + sp.id_to_piece(i)
                    run = []
                else:
                    run.append(i)
            return out + sp.decode(run)

        cases = []
        for s in strings:
            ids = []
            for part in splitter.split(s):
                if part in controls:
                    ids.append(controls[part])
                elif part:
                    ids.extend(sp.encode(part))
            cases.append({"ids": ids, "ids_special": [sp.bos_id()] + ids, "decoded": decode(ids)})
        with open(os.path.join(out_dir, kind + ".json"), "w", encoding="utf-8") as f:
            json.dump({"sentencepiece": spm.__version__, "cases": cases}, f, ensure_ascii=False)
        done.append(kind)
    return done


def main():
    out_dir, assets, strings_path = sys.argv[1:4]
    strings = read_strings(strings_path)
    os.makedirs(out_dir, exist_ok=True)
    done = hf_reference(out_dir, assets, strings) + sentencepiece_reference(out_dir, strings)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump({"strings": len(strings), "references": done}, f)
    print(f"tokenizer reference: {len(strings)} strings x {done}")


if __name__ == "__main__":
    main()
