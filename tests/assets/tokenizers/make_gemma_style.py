#!/usr/bin/env python3
"""Writes gemma_style/: a small tokenizer with Gemma's pipeline (transformers v5's GemmaTokenizer: BPE with byte
fallback, spaces replaced by "\u2581", no prefix space, <bos> added in front) and Gemma's special tokens, trained on
the short English text below. Gemma's own tokenizer (256k tokens, 34 MB, Gemma Terms of Use) is not vendored; the
chat templates' tests need the pipeline and the turn tokens, not the real vocabulary.

  .venv/bin/python tests/assets/tokenizers/make_gemma_style.py tests/assets/tokenizers/gemma_style
"""
import sys

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import GemmaTokenizer

CORPUS = """Hi there! Hello! How can I help? What is 2+2? 2+2 equals 4. And 3+3? 6.
You are terse. You are a pirate. You are a helpful assistant. Tell me two things. First thing. Second thing.
What's the weather in Paris? It is 21 degrees and clear in Paris. Count to three. One, two, three.
Just some text to learn. The quick brown fox jumps over the lazy dog. A model writes a reply to the user.
The weather today is sunny with a light breeze, and the temperature will reach twenty degrees in the afternoon.
Training a language model means showing it many examples and adjusting its weights to predict the next token.
Please answer the question in one sentence. Thank you very much for your help with this problem.
"""
SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
TURNS = ["<start_of_turn>", "<end_of_turn>"]


def main(out_dir):
    # Merges learnt within words (as SentencePiece does), then put in GemmaTokenizer's own pipeline.
    trainer_tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    trainer_tok.normalizer = normalizers.Replace(" ", "\u2581")
    trainer_tok.pre_tokenizer = pre_tokenizers.Split("\u2581", behavior="merged_with_next")
    byte_tokens = ["<0x%02X>" % i for i in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=900, special_tokens=SPECIALS + byte_tokens, show_progress=False)
    trainer_tok.train_from_iterator(CORPUS.splitlines() * 4, trainer)
    vocab = trainer_tok.get_vocab()
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model_merges(trainer_tok)]
    tok = GemmaTokenizer(vocab=vocab, merges=merges, add_bos_token=True, add_eos_token=False)
    tok.add_special_tokens({"additional_special_tokens": TURNS})
    tok.save_pretrained(out_dir)


def model_merges(tok):
    import json
    return json.loads(tok.to_str())["model"]["merges"]


if __name__ == "__main__":
    main(sys.argv[1])
