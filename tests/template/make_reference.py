#!/usr/bin/env python3
"""Renders render_cases.json with each model's own Jinja chat template (or the file's jinja_overrides for a folder
without one) through Hugging Face transformers (AutoTokenizer.apply_chat_template(tokenize=False)), the reference
for jinja_parity_test.cpp.

  make_reference.py OUT_DIR ASSETS_DIR CASES_JSON   -> OUT_DIR/jinja_reference.json
"""
import json
import sys

import transformers
from transformers import AutoTokenizer

out_dir, assets, cases_file = sys.argv[1:4]
doc = json.load(open(cases_file))
cases, overrides = doc['cases'], doc.get('jinja_overrides', {})
tokenizers = {}
results = []
for case in cases:
    for model in case['models']:
        if model not in tokenizers:
            tokenizers[model] = AutoTokenizer.from_pretrained(f'{assets}/{model}')
        kwargs = {}
        if model in overrides:
            kwargs['chat_template'] = overrides[model]['chat_template']
        if 'enable_thinking' in case:
            kwargs['enable_thinking'] = case['enable_thinking']
        text = tokenizers[model].apply_chat_template(
            case['messages'], tokenize=False, add_generation_prompt=case['add_generation_prompt'], **kwargs)
        results.append({'name': case['name'], 'model': model, 'text': text})
with open(f'{out_dir}/jinja_reference.json', 'w') as f:
    json.dump({'transformers': transformers.__version__, 'results': results}, f, indent=1, ensure_ascii=False)
print(f'template reference: {len(results)} renderings by transformers {transformers.__version__}')
