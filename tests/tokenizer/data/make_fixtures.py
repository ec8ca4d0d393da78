#!/usr/bin/env python3
"""Writes the two hand-made tokenizer.json files of tokenizer_test.cpp: a byte-level BPE (Llama 3 regex, added tokens
with lstrip/rstrip/single_word/normalized, template post-processor) and a SentencePiece-style BPE (Metaspace
prepend_scheme first, byte fallback, unk). Run: python3 tests/tokenizer/data/make_fixtures.py
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

def bytes_char():
    bs = list(range(ord("!"), ord("~")+1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]; n = 0
    for b in range(256):
        if b not in bs: bs.append(b); cs.append(256+n); n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}
bc = bytes_char()
def bl(s): return "".join(bc[b] for b in s.encode())
vocab = {bc[b]: b for b in range(256)}
merge_words = ["hello", " world", " the", "ing", " token", "izer", "12", "123", " hello", "你好", "\n\n"]
merges = []
def add_merges(word):
    # left-to-right merges: ((a b) c) d ...
    syms = list(bl(word))
    cur = syms[0]
    for c in syms[1:]:
        pair = (cur, c)
        if f"{pair[0]} {pair[1]}" not in merges: merges.append(f"{pair[0]} {pair[1]}")
        cur = cur + c
        if cur not in vocab: vocab[cur] = len(vocab)
for w in merge_words: add_merges(w)
vocab[bl(" worldwide")] = len(vocab)   # whole-word token without merges: only ignore_merges finds it
llama_re = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
n = len(vocab)
added = [
  {"id": n, "content": "<|begin|>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True},
  {"id": n+1, "content": "<|end|>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True},
  {"id": n+2, "content": "<think>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": False},
  {"id": n+3, "content": "<mask>", "single_word": False, "lstrip": True, "rstrip": True, "normalized": False, "special": True},
  {"id": n+4, "content": "[w]", "single_word": True, "lstrip": False, "rstrip": False, "normalized": False, "special": False},
  {"id": n+5, "content": "Ünï", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True, "special": False},
]
tok = {
  "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
  "normalizer": {"type": "NFC"},
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": llama_re}, "behavior": "Isolated", "invert": False},
      {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
  "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<|begin|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<|end|>", "type_id": 0}}],
      "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
      "special_tokens": {"<|begin|>": {"id": "<|begin|>", "ids": [n], "tokens": ["<|begin|>"]}, "<|end|>": {"id": "<|end|>", "ids": [n+1], "tokens": ["<|end|>"]}}},
  "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
  "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None, "end_of_word_suffix": None,
            "fuse_unk": False, "byte_fallback": False, "ignore_merges": False, "vocab": vocab, "merges": merges},
}
open(os.path.join(HERE, "byte_level_bpe.json"), "w").write(json.dumps(tok, ensure_ascii=False, indent=1))

# SentencePiece-style BPE with byte fallback, Metaspace pre-tokenizer (prepend_scheme first), unk.
sp_vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
for b in range(256): sp_vocab[f"<0x{b:02X}>"] = len(sp_vocab)
sp_merges = []
def sp_add(word):
    cur = word[0]
    if cur not in sp_vocab: sp_vocab[cur] = len(sp_vocab)
    for c in word[1:]:
        if c not in sp_vocab: sp_vocab[c] = len(sp_vocab)
        if [cur, c] not in sp_merges: sp_merges.append([cur, c])
        cur += c
        if cur not in sp_vocab: sp_vocab[cur] = len(sp_vocab)
for w in ["▁hello", "▁world", "▁the", "ing", "▁▁", "é"]: sp_add(w)
for c in "abcdefghijklmnopqrstuvwxyz": sp_vocab.setdefault(c, len(sp_vocab))
sp = {
  "version": "1.0", "truncation": None, "padding": None,
  "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True} for c, i in [("<unk>",0),("<s>",1),("</s>",2)]],
  "normalizer": None,
  "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
  "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
  "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None, "end_of_word_suffix": None,
            "fuse_unk": True, "byte_fallback": True, "ignore_merges": False, "vocab": sp_vocab, "merges": sp_merges},
}
open(os.path.join(HERE, "metaspace_bpe.json"), "w").write(json.dumps(sp, ensure_ascii=False, indent=1))
