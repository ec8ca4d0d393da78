#!/usr/bin/env python3
"""Writes internlm2_style/: a tokenizer with the pipeline and chat tokens of InternLM2 / InternLM2.5.

InternLM2 ships a SentencePiece BPE (tokenizer.model, 92544 pieces, byte fallback) that adds <s> in front of a text and
nothing after it, with six special tokens at its last ids: <|plugin|>, <|interpreter|>, <|action_end|>,
<|action_start|>, <|im_end|>, <|im_start|> (tokenizer_config.json's added_tokens_decoder). Here: Llama 2's pipeline as
mistral7b/'s tokenizer.json has it (<s> added; Apache-2.0) over make_phi_style.py's small trained vocabulary, the six
tokens after it in InternLM2's order, <s> as BOS and </s> as EOS and pad.

  .venv/bin/python tests/assets/tokenizers/make_internlm_style.py tests/assets/tokenizers
"""
import os
import sys

from tokenizers import AddedToken
from transformers import PreTrainedTokenizerFast

from make_phi_style import llama2_style, save_bos_eos_flags  # the same pipeline and training text as phi3_style

INTERNLM2_SPECIAL = ["<|plugin|>", "<|interpreter|>", "<|action_end|>", "<|action_start|>", "<|im_end|>", "<|im_start|>"]


def internlm2_style(assets, out_dir):
    tok = llama2_style(assets, add_bos=True)
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in INTERNLM2_SPECIAL])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="</s>",
                                   unk_token="<unk>", clean_up_tokenization_spaces=False)
    fast.save_pretrained(out_dir)
    save_bos_eos_flags(out_dir, add_bos=True)


def main(assets):
    internlm2_style(assets, os.path.join(assets, "internlm2_style"))


if __name__ == "__main__":
    main(sys.argv[1])
