#!/usr/bin/env python3
"""Writes phi3_style/ and phi4_style/: tokenizers with the pipelines and turn tokens of Phi-3.5 and Phi-4.

phi3_style: Phi-3 and 3.5 use Llama 2's SentencePiece vocabulary (32000 tokens) with eleven added tokens at 32000-32010
(<|endoftext|>, <|assistant|>, <|system|>, <|end|>, <|user|>, placeholders), most with rstrip true so that they absorb
the whitespace after them, and no BOS added (Phi-3.5's add_bos_token false). Here: Llama 2's pipeline as mistral7b/'s
tokenizer.json has it (Prepend/Replace normaliser, byte fallback; Apache-2.0) over a small vocabulary trained on the
text below, its post-processor without <s>, and the added tokens with their flags as Phi-3.5-mini-instruct's
tokenizer_config.json lists them (at the ids after this vocabulary rather than at 32000).

phi4_style: Phi-4 (14B) uses a byte-level BPE with cl100k's pre-tokenizer regex, <|endoftext|> as BOS (never added),
<|im_end|> as EOS and <|im_start|>, <|im_sep|> as turn tokens. Phi-4's own vocabulary (100352 tokens) is not vendored;
this one is trained on the short English text below.

  .venv/bin/python tests/assets/tokenizers/make_phi_style.py tests/assets/tokenizers
"""
import json
import os
import sys

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

# id, content, rstrip, special (Phi-3.5-mini-instruct's added_tokens_decoder)
PHI3_ADDED = [(32000, "<|endoftext|>", False, True), (32001, "<|assistant|>", True, True),
              (32002, "<|placeholder1|>", True, True), (32003, "<|placeholder2|>", True, True),
              (32004, "<|placeholder3|>", True, True), (32005, "<|placeholder4|>", True, True),
              (32006, "<|system|>", True, True), (32007, "<|end|>", True, True),
              (32008, "<|placeholder5|>", True, True), (32009, "<|placeholder6|>", True, True),
              (32010, "<|user|>", True, True)]

CORPUS = """Hi there! Hello! How can I help? What is 2+2? 2+2 equals 4. And 3+3? 6.
You are terse. You are a pirate. You are a helpful assistant. Tell me two things. First thing. Second thing.
What's the weather in Paris? It is 21 degrees and clear in Paris. Count to three. One, two, three.
Just some text to learn. The quick brown fox jumps over the lazy dog. A model writes a reply to the user.
Let me think about it. The answer is simple: first add, then check the sum again before replying.
Training a language model means showing it many examples and adjusting its weights to predict the next token.
"""
CL100K = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
          r"\s+(?!\S)|\s+")
PHI4_SPECIAL = ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|im_start|>", "<|im_end|>",
                "<|im_sep|>", "<|dummy_85|>"]


def llama2_style(assets, add_bos):
    """Llama 2's pipeline (mistral7b's tokenizer.json) over merges learnt from CORPUS within words (as SentencePiece
    does), its post-processor adding <s> or nothing."""
    trainer_tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    trainer_tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    trainer_tok.pre_tokenizer = pre_tokenizers.Split("\u2581", behavior="merged_with_next")
    byte_tokens = ["<0x%02X>" % i for i in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens,
                                  show_progress=False)
    trainer_tok.train_from_iterator(CORPUS.splitlines() * 4, trainer)
    trained = json.loads(trainer_tok.to_str())["model"]
    with open(os.path.join(assets, "mistral7b", "tokenizer.json")) as f:
        llama = json.load(f)
    llama["model"]["vocab"], llama["model"]["merges"] = trained["vocab"], trained["merges"]
    llama["added_tokens"] = [t for t in llama["added_tokens"] if t["id"] < 3]
    tok = Tokenizer.from_str(json.dumps(llama))
    if not add_bos:
        tok.post_processor = processors.TemplateProcessing(single="$A", pair="$A $B")
    return tok


def phi3_style(assets, out_dir):
    tok = llama2_style(assets, add_bos=False)
    base = tok.get_vocab_size(with_added_tokens=True)
    PHI3_ADDED[:] = [(base + i, content, rstrip, special) for i, (_, content, rstrip, special) in enumerate(PHI3_ADDED)]
    for token_id, content, rstrip, special in PHI3_ADDED:
        assert tok.get_vocab_size(with_added_tokens=True) == token_id
        token = AddedToken(content, rstrip=rstrip, lstrip=False, single_word=False, normalized=False, special=special)
        (tok.add_special_tokens if special else tok.add_tokens)([token])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="<|endoftext|>",
                                   pad_token="<|endoftext|>", unk_token="<unk>", add_bos_token=False,
                                   clean_up_tokenization_spaces=False)
    fast.save_pretrained(out_dir)
    save_bos_eos_flags(out_dir, add_bos=False)


def save_bos_eos_flags(out_dir, add_bos):
    """Writes add_bos_token / add_eos_token (False) into the saved tokenizer_config.json, as SentencePiece-style
    tokenizers' configs state them (save_pretrained leaves them out)."""
    with open(os.path.join(out_dir, "tokenizer_config.json")) as f:
        config = json.load(f)
    config["add_bos_token"] = add_bos
    config["add_eos_token"] = False
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)


def cl100k_style(special_tokens):
    """A byte-level BPE after cl100k's regex, trained on CORPUS, with `special_tokens` after its vocabulary."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(CL100K), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=520, special_tokens=[], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS.splitlines() * 4, trainer)
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in special_tokens])
    return tok


def phi4_style(out_dir):
    tok = cl100k_style(PHI4_SPECIAL)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|im_end|>",
                                   pad_token="<|dummy_85|>", clean_up_tokenization_spaces=False)
    fast.save_pretrained(out_dir)


def main(assets):
    phi3_style(assets, os.path.join(assets, "phi3_style"))
    phi4_style(os.path.join(assets, "phi4_style"))


if __name__ == "__main__":
    main(sys.argv[1])
