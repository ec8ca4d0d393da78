"""Writes the seed corpora of the fuzz harnesses (fuzz/corpus/HARNESS/): small valid inputs of every shape each
parser reads, and a few near misses, so the fuzzer starts deep in the parser instead of at its first check.
Run it with the project's .venv (tokenizers, safetensors, torch) after changing a harness's input format:
    .venv/bin/python fuzz/make_seeds.py
The seeds are committed; the script is here to show where they came from and to remake them.
"""
import json
import os
import shutil
import struct

import torch
from safetensors.torch import save
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

ROOT = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(ROOT, "corpus")
TEXT = ["Hello, world! How are you today?", "The quick brown fox jumps over the lazy dog 1234567890.",
        "你好，世界。 Grüße aus München! 😀", "def f(x):\n    return x * 2\n", "<|im_start|>user\nHi<|im_end|>"]


def write(harness, name, data):
    d = os.path.join(CORPUS, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def j(value):
    return json.dumps(value, ensure_ascii=False)


# --- safetensors: several dtypes and shapes, metadata, an empty file, and near misses
def safetensors_seeds():
    h = "fuzz_safetensors"
    write(h, "small", save({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3),
                            "b": torch.ones(3, dtype=torch.bfloat16)}, metadata={"format": "pt"}))
    write(h, "dtypes", save({"i8": torch.tensor([1, -2], dtype=torch.int8), "u8": torch.tensor([3], dtype=torch.uint8),
                             "f16": torch.tensor([0.5], dtype=torch.float16), "i64": torch.tensor([7]),
                             "bool": torch.tensor([True, False]), "f64": torch.zeros(1, 1, dtype=torch.float64)}))
    write(h, "scalar_and_empty", save({"s": torch.tensor(2.0), "e": torch.zeros(0, 4)}))
    write(h, "no_tensors", save({}))
    header = b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}'
    write(h, "duplicate_name", struct.pack("<Q", len(header)) + header + bytes(16))
    header = b'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}'
    write(h, "truncated", struct.pack("<Q", len(header)) + header + bytes(7))


def safetensors_index_seeds():
    h = "fuzz_safetensors_index"
    one, two = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    whole = {"a.weight": one, "b.weight": one, "c.weight": two, "d.bias": two}
    write(h, "valid", j({"metadata": {"total_size": 40}, "weight_map": whole}))
    write(h, "missing_tensor", j({"weight_map": {k: v for k, v in whole.items() if k != "d.bias"}}))
    write(h, "wrong_shard", j({"weight_map": dict(whole, **{"a.weight": two})}))
    write(h, "missing_shard", j({"weight_map": dict(whole, **{"e.weight": "model-00003-of-00003.safetensors"})}))
    write(h, "path_outside", j({"weight_map": dict(whole, **{"a.weight": "../" + one})}))


# --- tokenizer.json: tiny trained tokenizers of the shapes the loader reads (byte-level BPE as Qwen/Llama 3,
#     Metaspace BPE with byte fallback as Llama 2/Mistral, and one of every component type)
def tokenizer_seeds():
    h = "fuzz_tokenizer_json"
    byte_level = Tokenizer(models.BPE())
    byte_level.normalizer = normalizers.NFC()
    byte_level.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(pattern=tokenizers_regex(), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    byte_level.decoder = decoders.ByteLevel()
    byte_level.post_processor = processors.ByteLevel(trim_offsets=False)
    byte_level.train_from_iterator(TEXT * 3, trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                                                 initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    write(h, "byte_level_bpe.json", byte_level.to_str())

    metaspace = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    metaspace.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    metaspace.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                           decoders.Strip(" ", 1, 0)])
    metaspace.train_from_iterator(TEXT * 3, trainers.BpeTrainer(vocab_size=120, special_tokens=["<unk>", "<s>", "</s>"]
                                                                + [f"<0x{i:02X}>" for i in range(256)]))
    metaspace.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                             special_tokens=[("<s>", 1)])
    write(h, "metaspace_bpe.json", metaspace.to_str())

    varied = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##"))
    varied.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase(), normalizers.StripAccents(),
                                              normalizers.Strip(), normalizers.Replace("\t", " ")])
    varied.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits(True),
                                                    pre_tokenizers.Punctuation("isolated"),
                                                    pre_tokenizers.CharDelimiterSplit("|")])
    varied.decoder = decoders.WordPiece(prefix="##")
    varied.train_from_iterator(TEXT * 3, trainers.BpeTrainer(vocab_size=100, special_tokens=["[UNK]", "[CLS]", "[SEP]"],
                                                             continuing_subword_prefix="##"))
    varied.post_processor = processors.BertProcessing(("[SEP]", 2), ("[CLS]", 1))
    varied.add_tokens(["<added>", "hello world"])
    write(h, "varied_components.json", varied.to_str())
    write(h, "empty_model.json", j({"version": "1.0", "model": {"type": "BPE", "vocab": {}, "merges": []}}))


def tokenizers_regex():
    from tokenizers import Regex
    return Regex(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def tokenizer_config_seeds():
    h = "fuzz_tokenizer_config"
    assets = os.path.join(ROOT, "..", "tests", "assets", "tokenizers")
    os.makedirs(os.path.join(CORPUS, h), exist_ok=True)
    for name in ("qwen3", "llama3", "mistral7b"):
        shutil.copy(os.path.join(assets, name, "tokenizer_config.json"), os.path.join(CORPUS, h, name + ".json"))
    write(h, "objects", j({"bos_token": {"content": "<s>", "lstrip": False, "rstrip": False, "__type": "AddedToken"},
                           "eos_token": "</s>", "pad_token": None, "add_bos_token": True, "model_max_length": 1e30,
                           "chat_template": [{"name": "default", "template": "{{ messages }}"},
                                             {"name": "tool_use", "template": "x"}],
                           "added_tokens_decoder": {"0": {"content": "<unk>", "special": True}}}))


# --- chat templates: byte 0 picks the template, byte 1 the tokenizer; then the messages
def template_seeds():
    h = "fuzz_chat_template"
    conversations = [
        [{"role": "user", "content": "Hi"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
         {"role": "assistant", "content": "Hello!", "loss": True}, {"role": "user", "content": "Again"}],
        [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4", "reasoning_content": "add"},
         {"role": "user", "content": "weather?"}, {"role": "assistant", "content": "call", "loss": False},
         {"role": "tool", "content": "sunny"}, {"role": "tool_response", "content": "warm"},
         {"role": "assistant", "content": "Sunny and warm."}],
        [{"role": "assistant", "content": None}, {"role": "user", "content": [{"type": "text", "text": "parts"}]}],
    ]
    for t in range(0, 24, 5):
        for k, conv in enumerate(conversations):
            write(h, f"t{t}_k{k}", bytes([t, t + k]) + j(conv).encode())


# --- dataset files: byte 0 picks .jsonl/.json/.csv/.txt
def dataset_seeds():
    h = "fuzz_dataset_file"
    rows = [
        {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
        {"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}], "system": "s"},
        {"instruction": "Translate", "input": "hello", "output": "bonjour"},
        {"query": "q2", "response": "a2", "history": [["q1", "a1"]], "system": "s"},
        {"prompt": "p", "chosen": "good", "rejected": "bad"},
        {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
         "rejected_response": "worse", "label": True},
    ]
    write(h, "jsonl", b"\0" + "\n".join(j(r) for r in rows).encode() + b"\n\n")
    write(h, "json_array", b"\1" + j(rows).encode())
    write(h, "json_object", b"\1" + j(rows[2]).encode())
    write(h, "csv", b"\2" + b'query,response,system\n"hi, there","a ""quoted"" reply",s\nq2,"multi\nline",\n')
    write(h, "csv_alpaca", b"\2" + b"instruction,input,output\nsay,hi,hello\n")
    write(h, "txt", b"\3" + b"plain text line one\nline two\n")


# --- flags: byte 0 even: a YAML/JSON config file; odd: NUL-separated arguments
def flags_seeds():
    h = "fuzz_flags"
    write(h, "yaml", b"\0" + b"model: Qwen/Qwen2.5-7B\ntrain_type: lora\nlearning_rate: 1e-4\nmax_steps: 10\n"
                            b"dataset:\n  - a.jsonl\n  - b.jsonl#100\ngradient_checkpointing: false\nlora_alpha: 16\n")
    write(h, "json", b"\2" + j({"model": "m", "dataset": ["d.jsonl"], "seed": 3, "sft_type": "full"}).encode())
    write(h, "args", b"\1" + b"\0".join([b"--model", b"m", b"--learning_rate=2e-5", b"--dataset", b"a", b"b",
                                         b"--gradient-checkpointing", b"true", b"--max_steps", b"5"]))
    write(h, "args_with_config", b"\3" + b"\0".join([b"--seed", b"7", b"--target_modules", b"q_proj", b"v_proj"]))


# --- OpenAI requests
def openai_seeds():
    h = "fuzz_openai_request"
    write(h, "chat", j({"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
                        "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "top_k": 20, "seed": 1, "stop": ["\n"],
                        "logprobs": True, "top_logprobs": 2, "n": 2, "stream": True,
                        "stream_options": {"include_usage": True},
                        "chat_template_kwargs": {"enable_thinking": False}}))
    write(h, "chat_parts", j({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}],
                              "max_completion_tokens": 4, "repetition_penalty": 1.1}))
    write(h, "completion_text", j({"model": "m", "prompt": "Once", "max_tokens": 8, "echo": True, "logprobs": 3,
                                   "stop": "x", "min_tokens": 1}))
    write(h, "completion_ids", j({"model": "m", "prompt": [[1, 2, 3], [4, 5]], "prompt_logprobs": 1}))
    write(h, "completion_strings", j({"model": "m", "prompt": ["a", "b"], "temperature": 0, "max_tokens": 1e999}))


# --- Parquet files: the smallest of the reader's test files (tests/parquet/make_parquet_cases.py writes them)
def parquet_seeds():
    assets = os.path.join(ROOT, "..", "tests", "assets", "parquet")
    for name in ["query_response.parquet", "nested_v2.parquet", "delta_encodings_v1.parquet", "scalars_v2_zstd.parquet",
                 "chat_gzip_v2.parquet"]:
        with open(os.path.join(assets, name), "rb") as f:
            write("fuzz_parquet", name, f.read())


if __name__ == "__main__":
    shutil.rmtree(CORPUS, ignore_errors=True)
    for make in (safetensors_seeds, safetensors_index_seeds, tokenizer_seeds, tokenizer_config_seeds, template_seeds,
                 dataset_seeds, flags_seeds, openai_seeds, parquet_seeds):
        make()
    for h in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, h))
        print(f"{h}: {len(files)} seeds, {sum(os.path.getsize(os.path.join(CORPUS, h, f)) for f in files)} bytes")
