#!/usr/bin/env python3
"""Writes msswift_golden.json: ms-swift's own Template.encode output (input_ids, labels) for the conversations,
templates and loss rules below, the reference for tests/template/template_test.cpp. Run by hand, not by CTest
(ms-swift is not a test dependency):

  .venv/bin/pip install --no-deps ms-swift && .venv/bin/pip install pillow datasets modelscope peft json_repair
  .venv/bin/python tests/template/make_msswift_golden.py tests/assets/tokenizers tests/template/msswift_golden.json

ms-swift's get_template wants a model's model_info/model_meta on the tokenizer; a stub stands in for them (a
text-only causal LM), which is all the template code reads.
"""
import json
import sys
from types import SimpleNamespace

import swift
from transformers import AutoTokenizer
from swift.template import get_template

ASSETS, OUT = sys.argv[1], sys.argv[2]

_tokenizers = {}


def load_tokenizer(name):
    if name not in _tokenizers:
        tok = AutoTokenizer.from_pretrained(f'{ASSETS}/{name}')
        object.__setattr__(tok, 'model_info', SimpleNamespace(
            config=None, task_type='causal_lm', max_model_len=None, is_multimodal=False, model_type=name,
            model_dir='/nonexistent'))
        object.__setattr__(tok, 'model_meta', SimpleNamespace(is_multimodal=False, template=None,
                                                              candidate_templates=[]))
        _tokenizers[name] = tok
    return _tokenizers[name]


def U(c, **kw):
    return dict(role='user', content=c, **kw)


def A(c, **kw):
    return dict(role='assistant', content=c, **kw)


def S(c):
    return dict(role='system', content=c)


def T(c):
    return dict(role='tool', content=c)


THINK1 = '<think>\nThe user greets me.\n</think>\n\nHello! How can I help?'
MULTI = [U('Hi there'), A('Hello! How can I help?'), U('What is 2+2?'), A('2+2 equals 4.')]
MULTI_SYS = [S('You are terse.')] + MULTI
THINK_HISTORY = [U('Hi there'), A(THINK1), U('What is 2+2?'), A('<think>\nSimple sum.\n</think>\n\n2+2 equals 4.')]
TOOL = [U("What's the weather in Paris?"), A('<tool_call>\n{"name": "weather", "arguments": {"city": "Paris"}}\n</tool_call>'),
        T('{"temp": 21}'), T('{"sky": "clear"}'), A('It is 21 degrees and clear in Paris.')]
LOSS_FLAGS = [U('Hi there'), A('Hello! How can I help?', loss=True), U('What is 2+2?'), A('2+2 equals 4.', loss=False),
              U('And 3+3?'), A('6.')]
SPLIT_ASSISTANT = [U('Tell me two things.'), A('First thing. ', loss=False), A('Second thing.', loss=True)]

# Tool calling (ms-swift's agent templates): a `tools` list in OpenAI's form, assistant tool calls as OpenAI's
# tool_calls (arguments as JSON text, as the API sends them) and as ms-swift's own "tool_call" messages.
WEATHER = {'type': 'function', 'function': {'name': 'get_weather', 'description': 'Current weather of a city.',
                                            'parameters': {'type': 'object', 'properties': {'city': {'type': 'string'}},
                                                           'required': ['city']}}}
TIME = {'name': 'get_time', 'description': 'Local time in a city.',
        'parameters': {'type': 'object', 'properties': {'city': {'type': 'string'}}}}
CALL = {'id': 'call_1', 'type': 'function', 'function': {'name': 'get_weather', 'arguments': '{"city": "Paris"}'}}
AGENT = [U("What's the weather in Paris?"), {'role': 'assistant', 'content': '', 'tool_calls': [CALL]},
         T('{"temp": 21}'), A('It is 21 degrees in Paris.')]
AGENT_TEXT_AND_CALLS = [U('Weather and time in Paris?'),
                        {'role': 'assistant', 'content': 'Let me look both up.', 'tool_calls': [
                            CALL, {'type': 'function', 'function': {'name': 'get_time', 'arguments': '{"city": "Paris"}'}}]},
                        T('{"temp": 21}'), T('{"time": "12:00"}'), A('21 degrees, noon.')]
AGENT_SWIFT_FORM = [U("What's the weather in Paris?"), {'role': 'tool_call', 'content': '{"name": "get_weather", "arguments": {"city": "Paris"}}'},
                    {'role': 'tool_response', 'content': '{"temp": 21}'}, A('It is 21 degrees.')]

# name, tokenizer, template, mode (train|infer), loss_scale, --system, enable_thinking, messages[, tools, agent_template]
CASES = [
    ('qwen3_single', 'qwen3', 'qwen3', 'train', 'default', None, None, [U('Hi there'), A('Hello!')]),
    ('qwen3_multi_default', 'qwen3', 'qwen3', 'train', 'default', None, None, MULTI_SYS),
    ('qwen3_multi_last_round', 'qwen3', 'qwen3', 'train', 'last_round', None, None, MULTI_SYS),
    ('qwen3_multi_all', 'qwen3', 'qwen3', 'train', 'all', None, None, MULTI_SYS),
    ('qwen3_think_history_default', 'qwen3', 'qwen3', 'train', 'default', None, None, THINK_HISTORY),
    ('qwen3_think_history_last_round', 'qwen3', 'qwen3', 'train', 'last_round', None, None, THINK_HISTORY),
    ('qwen3_loss_flags_default', 'qwen3', 'qwen3', 'train', 'default', None, None, LOSS_FLAGS),
    ('qwen3_loss_flags_last_round', 'qwen3', 'qwen3', 'train', 'last_round', None, None, LOSS_FLAGS),
    ('qwen3_loss_flags_all', 'qwen3', 'qwen3', 'train', 'all', None, None, LOSS_FLAGS),
    ('qwen3_final_loss_false', 'qwen3', 'qwen3', 'train', 'default', None, None,
     [U('Hi there'), A('Hello!', loss=False)]),
    ('qwen3_split_assistant', 'qwen3', 'qwen3', 'train', 'default', None, None, SPLIT_ASSISTANT),
    ('qwen3_tool', 'qwen3', 'qwen3', 'train', 'default', None, None, TOOL),
    ('qwen3_pretrain', 'qwen3', 'qwen3', 'train', 'default', None, None, [A('Just some text to learn.')]),
    ('qwen3_ends_with_stop_word', 'qwen3', 'qwen3', 'train', 'default', None, None,
     [U('Hi there'), A('Hello!<|im_end|>')]),
    ('qwen3_consecutive_users', 'qwen3', 'qwen3', 'train', 'default', None, None,
     [U('First part. '), U('Second part.'), A('Got both.')]),
    # "+ignore_empty_think", which ms-swift's TemplateArguments adds for qwen3 by itself: the empty think block
    # opening a scored reply carries no loss; a real one keeps it.
    ('qwen3_ignore_empty_think_default', 'qwen3', 'qwen3', 'train', 'default+ignore_empty_think', None, None, MULTI_SYS),
    ('qwen3_ignore_empty_think_last_round', 'qwen3', 'qwen3', 'train', 'last_round+ignore_empty_think', None, None,
     MULTI_SYS),
    ('qwen3_ignore_empty_think_all', 'qwen3', 'qwen3', 'train', 'all+ignore_empty_think', None, None, MULTI),
    ('qwen3_ignore_empty_think_history', 'qwen3', 'qwen3', 'train', 'default+ignore_empty_think', None, None,
     THINK_HISTORY),
    ('qwen3_ignore_empty_think_written', 'qwen3', 'qwen3', 'train', 'default+ignore_empty_think', None, None,
     [U('Hi there'), A('<think>\n\n</think>\n\nHello!'), U('And?'), A('</think>\n\nBye.')]),
    ('qwen3_ignore_empty_think_loss_flags', 'qwen3', 'qwen3', 'train', 'default+ignore_empty_think', None, None,
     LOSS_FLAGS),
    ('qwen3_ignore_empty_think_split', 'qwen3', 'qwen3', 'train', 'default+ignore_empty_think', None, None,
     SPLIT_ASSISTANT),
    ('qwen3_infer_thinking', 'qwen3', 'qwen3', 'infer', None, None, True, THINK_HISTORY[:3]),
    ('qwen3_infer_no_thinking', 'qwen3', 'qwen3', 'infer', None, None, False, THINK_HISTORY[:3]),
    ('qwen3_infer_default', 'qwen3', 'qwen3', 'infer', None, None, None, [U('Hi there')]),
    ('qwen3_infer_system', 'qwen3', 'qwen3', 'infer', None, None, True, [S('You are terse.'), U('Hi there')]),
    ('qwen3_infer_tool', 'qwen3', 'qwen3', 'infer', None, None, True, TOOL[:4]),
    ('qwen_default_system', 'qwen3', 'qwen', 'train', 'default', None, None, MULTI),
    ('qwen_cli_system', 'qwen3', 'qwen', 'train', 'default', 'You are a pirate.', None, MULTI),
    ('qwen_dataset_system_wins', 'qwen3', 'qwen', 'train', 'default', 'You are a pirate.', None, MULTI_SYS),
    ('qwen_empty_system', 'qwen3', 'qwen', 'train', 'default', None, None, [S('')] + MULTI),
    ('qwen2_5_default_system', 'qwen3', 'qwen2_5', 'train', 'default', None, None, MULTI),
    ('qwen2_5_infer', 'qwen3', 'qwen2_5', 'infer', None, None, None, MULTI[:3]),
    ('chatml_multi', 'qwen3', 'chatml', 'train', 'default', None, None, MULTI_SYS),
    ('llama3_multi_default', 'llama3', 'llama3', 'train', 'default', None, None, MULTI_SYS),
    ('llama3_multi_last_round', 'llama3', 'llama3', 'train', 'last_round', None, None, MULTI),
    ('llama3_loss_flags_all', 'llama3', 'llama3', 'train', 'all', None, None, LOSS_FLAGS),
    ('llama3_tool', 'llama3', 'llama3', 'train', 'default', None, None, TOOL),
    ('llama3_infer', 'llama3', 'llama3', 'infer', None, None, None, MULTI_SYS[:4]),
    ('llama2_default_system', 'mistral7b', 'llama', 'train', 'default', None, None, MULTI),
    ('llama2_system', 'mistral7b', 'llama', 'train', 'last_round', None, None, MULTI_SYS),
    ('llama2_infer', 'mistral7b', 'llama', 'infer', None, None, None, MULTI[:3]),
    ('default_mistral_tokenizer', 'mistral7b', 'default', 'train', 'default', None, None, MULTI),
    ('default_qwen3_tokenizer', 'qwen3', 'default', 'train', 'all', None, None, MULTI_SYS),
    ('default_infer', 'mistral7b', 'default', 'infer', None, None, None, MULTI[:3]),
    # A conversation that ends with an assistant message: ms-swift's engines continue that message (vLLM's
    # continue_final_message), with no end of turn after it.
    ('qwen3_infer_continue', 'qwen3', 'qwen3', 'infer', None, None, None, [U('Count to three.'), A('One, two,')]),
    ('qwen3_infer_continue_thinking', 'qwen3', 'qwen3', 'infer', None, None, True, [U('Count to three.'), A('One,')]),
    ('qwen3_infer_continue_no_thinking', 'qwen3', 'qwen3', 'infer', None, None, False, [U('Count to three.'), A('One,')]),
    ('qwen3_infer_continue_inside_think', 'qwen3', 'qwen3', 'infer', None, None, True,
     THINK_HISTORY[:3] + [A('<think>\nLet me add')]),
    ('qwen2_5_infer_continue', 'qwen3', 'qwen2_5', 'infer', None, None, None, MULTI[:4]),
    ('llama3_infer_continue', 'llama3', 'llama3', 'infer', None, None, None, MULTI_SYS[:5]),
    ('llama2_infer_continue', 'mistral7b', 'llama', 'infer', None, None, None, MULTI[:4]),
    ('qwen3_tools_hermes', 'qwen3', 'qwen3', 'train', 'default', None, None, AGENT, [WEATHER, TIME], None),
    ('qwen3_tools_text_and_calls', 'qwen3', 'qwen3', 'train', 'default', None, None, AGENT_TEXT_AND_CALLS, [WEATHER, TIME], None),
    ('qwen2_5_tools_system', 'qwen3', 'qwen2_5', 'train', 'default', None, None, [S('You are terse.')] + AGENT, [WEATHER], None),
    ('qwen2_5_tools_swift_form', 'qwen3', 'qwen2_5', 'train', 'last_round', None, None, AGENT_SWIFT_FORM, [WEATHER], None),
    ('qwen3_tools_infer', 'qwen3', 'qwen3', 'infer', None, None, False, AGENT[:3], [WEATHER, TIME], None),
    ('qwen3_tools_infer_first', 'qwen3', 'qwen3', 'infer', None, None, None, AGENT[:1], [WEATHER], None),
    ('llama3_tools', 'llama3', 'llama3', 'train', 'default', None, None, AGENT, [WEATHER], None),
    ('llama3_tools_infer', 'llama3', 'llama3', 'infer', None, None, None, AGENT[:3], [WEATHER], None),
    ('qwen2_5_react_en', 'qwen3', 'qwen2_5', 'train', 'default', None, None, AGENT_TEXT_AND_CALLS, [WEATHER, TIME], 'react_en'),
    ('qwen2_5_react_en_infer', 'qwen3', 'qwen2_5', 'infer', None, None, None, AGENT[:3], [WEATHER], 'react_en'),
    ('llama3_hermes', 'llama3', 'llama3', 'train', 'default', None, None, AGENT, [WEATHER], 'hermes'),
    # Gemma (gemma_style: Gemma's tokenizer pipeline and turn tokens, a small vocabulary; see tests/assets/tokenizers).
    ('gemma_multi_default', 'gemma_style', 'gemma', 'train', 'default', None, None, MULTI_SYS),
    ('gemma_multi_last_round', 'gemma_style', 'gemma', 'train', 'last_round', None, None, MULTI),
    ('gemma_loss_flags_all', 'gemma_style', 'gemma', 'train', 'all', None, None, LOSS_FLAGS),
    ('gemma_cli_system', 'gemma_style', 'gemma', 'train', 'default', 'You are a pirate.', None, MULTI),
    ('gemma_pretrain', 'gemma_style', 'gemma', 'train', 'default', None, None, [A('Just some text to learn.')]),
    ('gemma_infer', 'gemma_style', 'gemma', 'infer', None, None, None, MULTI_SYS[:4]),
    ('gemma_infer_continue', 'gemma_style', 'gemma', 'infer', None, None, None, MULTI[:4]),
    # Gemma 3: the system prompt opens the first user message; replies lose their leading and trailing newlines.
    ('gemma3_text_system', 'gemma_style', 'gemma3_text', 'train', 'default', None, None, MULTI_SYS),
    ('gemma3_text_no_system', 'gemma_style', 'gemma3_text', 'train', 'last_round', None, None, MULTI),
    ('gemma3_text_newlines', 'gemma_style', 'gemma3_text', 'train', 'default', None, None,
     [S('You are terse.'), U('Hi there'), A('\nHello!\n\n'), U('And?'), A('Bye.\n')]),
    ('gemma3_text_loss_flags', 'gemma_style', 'gemma3_text', 'train', 'default', None, None, LOSS_FLAGS),
    ('gemma3_text_infer', 'gemma_style', 'gemma3_text', 'infer', None, None, None, MULTI_SYS[:4]),
    ('gemma3_text_empty_system', 'gemma_style', 'gemma3_text', 'train', 'default', None, None, [S('')] + MULTI),
    ('gemma3_text_split_newlines', 'gemma_style', 'gemma3_text', 'train', 'default', None, None,
     [U('Tell me two things.'), A('\nFirst thing.\n', loss=False), A('\nSecond thing.\n\n', loss=True)]),
    ('gemma3_text_reply_first', 'gemma_style', 'gemma3_text', 'train', 'default', None, None,
     [S('You are terse.'), A('\nJust some text to learn.\n')]),
    # DeepSeek (deepseek_style: DeepSeek-V3's byte-level pipeline and turn tokens, a small vocabulary).
    ('deepseek_multi_default', 'deepseek_style', 'deepseek', 'train', 'default', None, None, MULTI_SYS),
    ('deepseek_multi_last_round', 'deepseek_style', 'deepseek', 'train', 'last_round', None, None, MULTI),
    ('deepseek_loss_flags_all', 'deepseek_style', 'deepseek', 'train', 'all', None, None, LOSS_FLAGS),
    ('deepseek_infer', 'deepseek_style', 'deepseek', 'infer', None, None, None, MULTI_SYS[:4]),
    ('deepseek_v2_5_multi_default', 'deepseek_style', 'deepseek_v2_5', 'train', 'default', None, None, MULTI_SYS),
    ('deepseek_v2_5_multi_last_round', 'deepseek_style', 'deepseek_v2_5', 'train', 'last_round', None, None, MULTI),
    ('deepseek_v2_5_cli_system', 'deepseek_style', 'deepseek_v2_5', 'train', 'default', 'You are a pirate.', None, MULTI),
    ('deepseek_v2_5_loss_flags', 'deepseek_style', 'deepseek_v2_5', 'train', 'default', None, None, LOSS_FLAGS),
    ('deepseek_v2_5_pretrain', 'deepseek_style', 'deepseek_v2_5', 'train', 'default', None, None,
     [A('Just some text to learn.')]),
    ('deepseek_v2_5_infer', 'deepseek_style', 'deepseek_v2_5', 'infer', None, None, None, MULTI_SYS[:4]),
    ('deepseek_v2_5_infer_continue', 'deepseek_style', 'deepseek_v2_5', 'infer', None, None, None, MULTI[:4]),
    ('deepseek_r1_think_history', 'deepseek_style', 'deepseek_r1', 'train', 'default', None, None, THINK_HISTORY),
    ('deepseek_r1_think_history_last_round', 'deepseek_style', 'deepseek_r1', 'train', 'last_round', None, None,
     THINK_HISTORY),
    ('deepseek_r1_multi_system', 'deepseek_style', 'deepseek_r1', 'train', 'default', None, None, MULTI_SYS),
    ('deepseek_r1_infer', 'deepseek_style', 'deepseek_r1', 'infer', None, None, None, THINK_HISTORY[:3]),
    # Phi-3 (phi3_style: Llama 2's pipeline and Phi-3.5's turn tokens, whose rstrip eats the newline after them) and
    # Phi-4 (phi4_style: a byte-level BPE with cl100k's regex and Phi-4's <|im_start|>/<|im_sep|>/<|im_end|>).
    ('phi3_multi_default', 'phi3_style', 'phi3', 'train', 'default', None, None, MULTI_SYS),
    ('phi3_multi_last_round', 'phi3_style', 'phi3', 'train', 'last_round', None, None, MULTI),
    ('phi3_loss_flags_all', 'phi3_style', 'phi3', 'train', 'all', None, None, LOSS_FLAGS),
    ('phi3_cli_system', 'phi3_style', 'phi3', 'train', 'default', 'You are a pirate.', None, MULTI),
    ('phi3_pretrain', 'phi3_style', 'phi3', 'train', 'default', None, None, [A('Just some text to learn.')]),
    ('phi3_newlines', 'phi3_style', 'phi3', 'train', 'default', None, None,
     [U('\nTwo lines\nhere\n'), A('\n\nFirst.\nSecond.\n')]),
    ('phi3_infer', 'phi3_style', 'phi3', 'infer', None, None, None, MULTI_SYS[:4]),
    ('phi3_infer_continue', 'phi3_style', 'phi3', 'infer', None, None, None, MULTI[:4]),
    ('phi4_multi_default', 'phi4_style', 'phi4', 'train', 'default', None, None, MULTI_SYS),
    ('phi4_multi_last_round', 'phi4_style', 'phi4', 'train', 'last_round', None, None, MULTI),
    ('phi4_loss_flags_all', 'phi4_style', 'phi4', 'train', 'all', None, None, LOSS_FLAGS),
    ('phi4_cli_system', 'phi4_style', 'phi4', 'train', 'default', 'You are a pirate.', None, MULTI),
    ('phi4_pretrain', 'phi4_style', 'phi4', 'train', 'default', None, None, [A('Just some text to learn.')]),
    ('phi4_infer', 'phi4_style', 'phi4', 'infer', None, None, None, MULTI_SYS[:4]),
    # GLM-4-0414 (glm4_style: a byte-level BPE with GLM-4's special tokens): [gMASK]<sop>, turns without separators, the
    # last reply closed by <|user|>; an open prompt ends at <|assistant|> without its newline (GLM4Template).
    ('glm4_multi_default', 'glm4_style', 'glm4', 'train', 'default', None, None, MULTI_SYS),
    ('glm4_multi_last_round', 'glm4_style', 'glm4', 'train', 'last_round', None, None, MULTI),
    ('glm4_loss_flags_all', 'glm4_style', 'glm4', 'train', 'all', None, None, LOSS_FLAGS),
    ('glm4_cli_system', 'glm4_style', 'glm4', 'train', 'default', 'You are a pirate.', None, MULTI),
    ('glm4_pretrain', 'glm4_style', 'glm4', 'train', 'default', None, None, [A('Just some text to learn.')]),
    ('glm4_newlines', 'glm4_style', 'glm4', 'train', 'default', None, None,
     [U('\nHi there\n'), A('\nHello!\n\n'), U('Count to three.'), A('One, two, three.\n')]),
    ('glm4_infer', 'glm4_style', 'glm4', 'infer', None, None, None, MULTI_SYS[:4]),
    ('glm4_infer_thinking', 'glm4_style', 'glm4', 'infer', None, None, True, MULTI[:3]),
    ('glm4_infer_continue', 'glm4_style', 'glm4', 'infer', None, None, None, MULTI[:4]),
    # InternLM2 / 2.5 / 3 (internlm2_style: Llama 2's pipeline adding <s>, InternLM2's ChatML tokens): ChatML after the
    # tokenizer's <s>, InternLM's long default system prompt.
    ('internlm2_multi_default', 'internlm2_style', 'internlm2', 'train', 'default', None, None, MULTI),
    ('internlm2_multi_sys', 'internlm2_style', 'internlm2', 'train', 'default', None, None, MULTI_SYS),
    ('internlm2_multi_last_round', 'internlm2_style', 'internlm2', 'train', 'last_round', None, None, MULTI_SYS),
    ('internlm2_loss_flags_all', 'internlm2_style', 'internlm2', 'train', 'all', None, None, LOSS_FLAGS),
    ('internlm2_cli_system', 'internlm2_style', 'internlm2', 'train', 'default', 'You are a pirate.', None, MULTI),
    ('internlm2_pretrain', 'internlm2_style', 'internlm2', 'train', 'default', None, None, [A('Just some text to learn.')]),
    ('internlm2_infer', 'internlm2_style', 'internlm2', 'infer', None, None, None, MULTI[:3]),
    # GLM-4's own agent template (glm4): the tools replace the system prompt, a call is "name\n{arguments}" closed by
    # <|observation|> right after <|assistant|>, the results follow "\n" and end with <|assistant|>\n.
    ('glm4_tools', 'glm4_style', 'glm4', 'train', 'default', None, None, AGENT, [WEATHER, TIME], None),
    ('glm4_tools_text_and_calls', 'glm4_style', 'glm4', 'train', 'default', None, None, AGENT_TEXT_AND_CALLS,
     [WEATHER, TIME], None),
    ('glm4_tools_system', 'glm4_style', 'glm4', 'train', 'default', None, None, [S('You are terse.')] + AGENT, [WEATHER], None),
    ('glm4_tools_swift_form', 'glm4_style', 'glm4', 'train', 'last_round', None, None, AGENT_SWIFT_FORM, [WEATHER], None),
    ('glm4_tools_infer', 'glm4_style', 'glm4', 'infer', None, None, None, AGENT[:3], [WEATHER], None),
    ('glm4_tools_infer_first', 'glm4_style', 'glm4', 'infer', None, None, None, AGENT[:1], [WEATHER], None),
    ('glm4_react_en', 'glm4_style', 'glm4', 'train', 'default', None, None, AGENT, [WEATHER], 'react_en'),
]


def main():
    out = []
    for name, tok_name, template_type, mode, loss_scale, system, enable_thinking, messages, *agent in CASES:
        tools, agent_template = agent if agent else (None, None)
        tok = load_tokenizer(tok_name)
        kwargs = {}
        if loss_scale is not None:
            kwargs['loss_scale'] = loss_scale
        if agent_template is not None:
            kwargs['agent_template'] = agent_template
        template = get_template(tok, template_type=template_type, default_system=system, **kwargs)
        template.set_mode('train' if mode == 'train' else 'transformers')
        inputs = {'messages': json.loads(json.dumps(messages))}
        if tools is not None:
            inputs['tools'] = json.loads(json.dumps(tools))
        if enable_thinking is not None:
            inputs['chat_template_kwargs'] = {'enable_thinking': enable_thinking}
        enc = template.encode(inputs)
        case = dict(name=name, tokenizer=tok_name, template=template_type, mode=mode, messages=messages,
                    input_ids=enc['input_ids'])
        if loss_scale is not None:
            case['loss_scale'] = loss_scale
        if system is not None:
            case['system'] = system
        if enable_thinking is not None:
            case['enable_thinking'] = enable_thinking
        if tools is not None:  # as JSON text: the test reads it keeping the key order (ms-swift's prompts keep it)
            case['tools_json'] = json.dumps(tools, ensure_ascii=False)
        if agent_template is not None:
            case['agent_template'] = agent_template
        if mode == 'train':
            case['labels'] = enc['labels']
            case['loss_text'] = tok.decode([t for t in enc['labels'] if t != -100])
        if tok_name not in ('mistral7b', 'phi3_style', 'internlm2_style'):  # byte-level BPE: decode(ids) is exactly the rendered text
            case['text'] = tok.decode(enc['input_ids'])
        out.append(case)
    doc = {
        'generator': 'tests/template/make_msswift_golden.py',
        'ms_swift_version': swift.__version__ if hasattr(swift, '__version__') else 'unknown',
        'cases': out,
    }
    with open(OUT, 'w') as f:  # one case per line, so that a regenerated file diffs case by case
        head = json.dumps({k: v for k, v in doc.items() if k != 'cases'}, ensure_ascii=False)[:-1]
        f.write(head + ', "cases": [\n')
        f.write(',\n'.join(json.dumps(c, ensure_ascii=False) for c in out))
        f.write('\n]}\n')
    print(f'wrote {len(out)} cases to {OUT}')


if __name__ == '__main__':
    main()
