#!/usr/bin/env python3
"""Writes deepseek_style/: a small tokenizer with DeepSeek-V3's pipeline (byte-level BPE; digits split off in runs of
at most three before the byte-level split; the begin-of-sentence token added in front) and DeepSeek's special and
turn tokens, trained on the short English text below. DeepSeek-V3's own tokenizer (128k tokens, 7.8 MB) is not
vendored; the chat templates' tests need the pipeline and the turn tokens, not the real vocabulary.

  .venv/bin/python tests/assets/tokenizers/make_deepseek_style.py tests/assets/tokenizers/deepseek_style
"""
import sys

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

CORPUS = """Hi there! Hello! How can I help? What is 2+2? 2+2 equals 4. And 3+3? 6.
You are terse. You are a pirate. You are a helpful assistant. Tell me two things. First thing. Second thing.
What's the weather in Paris? It is 21 degrees and clear in Paris. Count to three. One, two, three.
Just some text to learn. The quick brown fox jumps over the lazy dog. A model writes a reply to the user.
Let me think about it. The answer is simple: first add, then check the sum again before replying.
Training a language model means showing it many examples and adjusting its weights to predict the next token.
"""
BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
TURNS = ["<｜User｜>", "<｜Assistant｜>"]
THINK = ["<think>", "</think>"]  # added tokens, not special (as DeepSeek-R1's tokenizer has them)


def main(out_dir):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\p{N}{1,3}"), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=[BOS, EOS], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS.splitlines() * 4, trainer)
    tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B",
                                                       special_tokens=[(BOS, tok.token_to_id(BOS))])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS, pad_token=EOS)
    fast.add_special_tokens({"additional_special_tokens": TURNS})
    fast.add_tokens(THINK)
    fast.save_pretrained(out_dir)


if __name__ == "__main__":
    main(sys.argv[1])
