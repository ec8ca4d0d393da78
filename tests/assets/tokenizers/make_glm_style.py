#!/usr/bin/env python3
"""Writes glm4_style/: a tokenizer with the pipeline and special tokens of GLM-4-0414 (GLM-4-9B-0414, GLM-Z1).

GLM-4-0414 ships a byte-level BPE (its tiktoken vocabulary of 151329 tokens, pre-tokenized with cl100k's regex) and
fourteen special tokens from 151329 on: <|endoftext|> (EOS and pad), [MASK], [gMASK], [sMASK], <sop>, <eop>, the turn
tokens <|system|>, <|user|>, <|assistant|>, <|observation|>, and the image/video markers. Its tokenizer adds nothing
around a text (ms-swift's glm4 template writes [gMASK]<sop> itself). GLM's vocabulary is not vendored; this one is
trained on make_phi_style.py's short English text, the special tokens following it in GLM's order.

  .venv/bin/python tests/assets/tokenizers/make_glm_style.py tests/assets/tokenizers
"""
import os
import sys

from transformers import PreTrainedTokenizerFast

from make_phi_style import cl100k_style  # the same pipeline and training text as phi4_style

GLM4_SPECIAL = ["<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>", "<|user|>",
                "<|assistant|>", "<|observation|>", "<|begin_of_image|>", "<|end_of_image|>", "<|begin_of_video|>",
                "<|end_of_video|>"]


def glm4_style(out_dir):
    tok = cl100k_style(GLM4_SPECIAL)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                                   clean_up_tokenization_spaces=False)
    fast.save_pretrained(out_dir)


def main(assets):
    glm4_style(os.path.join(assets, "glm4_style"))


if __name__ == "__main__":
    main(sys.argv[1])
