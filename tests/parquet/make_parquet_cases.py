"""Writes the Parquet test files in tests/assets/parquet/ with pyarrow, and expected.json: each file's rows as
pyarrow reads them (Table.to_pylist), put in swift's JSON conventions (docs/datasets.md: dates, times and
timestamps as integers in the file's unit, decimals as numbers, maps as objects, binary that is not UTF-8 as
base64). The cases cover every codec, both data page versions, dictionary and plain pages, the DELTA_* and
BYTE_STREAM_SPLIT encodings, nulls at every nesting level, and the chat layouts datasets use.

  .venv/bin/python tests/parquet/make_parquet_cases.py tests/assets/parquet
"""
import base64
import datetime
import decimal
import json
import os
import random
import sys

import pyarrow as pa
import pyarrow.parquet as pq

out_dir = sys.argv[1]
os.makedirs(out_dir, exist_ok=True)
rng = random.Random(7)


def to_swift_json(value, t):
    """A to_pylist() value of arrow type t in swift's conventions."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        return {t.field(i).name: to_swift_json(value[t.field(i).name], t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_map(t):
        return {(k if isinstance(k, str) else json.dumps(k)): to_swift_json(v, t.item_type) for k, v in value}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [to_swift_json(v, t.value_type) for v in value]
    if pa.types.is_dictionary(t):
        return to_swift_json(value, t.value_type)
    if pa.types.is_date32(t):
        return (value - datetime.date(1970, 1, 1)).days
    if pa.types.is_timestamp(t):
        return pa.scalar(value, type=t).cast(pa.int64()).as_py()
    if pa.types.is_decimal(t):
        return float(value)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(value).decode()
    if pa.types.is_float16(t):
        return float(value)
    return value


def write(name, table, **options):
    """Writes `table` as `name`; expected.json maps the file to its rows (files of one table share them)."""
    pq.write_table(table, os.path.join(out_dir, name), **options)
    back = pq.read_table(os.path.join(out_dir, name))  # what a reader gets (pandas metadata aside)
    rows = [{f.name: to_swift_json(row[f.name], f.type) for f in back.schema} for row in back.to_pylist()]
    key = next((k for k, v in expected["tables"].items() if v == rows), f"table{len(expected['tables'])}")
    expected["tables"][key] = rows
    expected["files"][name] = key


def words(n):
    vocab = ["hello", "world", "你好", "世界", "données", "🙂", "the", "model", "answer", "question", "\"quoted\"", "a\nb"]
    return " ".join(rng.choice(vocab) for _ in range(n))


def chat_rows(n):
    rows = []
    for i in range(n):
        turns = []
        for t in range(rng.randint(1, 3)):
            turns.append({"role": "user", "content": words(rng.randint(1, 12))})
            turns.append({"role": "assistant", "content": words(rng.randint(1, 20))})
        rows.append({"id": i, "system": None if i % 3 else words(4), "messages": turns})
    return rows


expected = {"tables": {}, "files": {}}
chat_schema = pa.schema([("id", pa.int64()), ("system", pa.string()),
                         ("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())])))])
chat = pa.Table.from_pylist(chat_rows(90), schema=chat_schema)

# Chat data as datasets write it: pyarrow's defaults (snappy, dictionary, v1 pages), then each codec with v2 pages;
# small pages and row groups so that every file has several of both.
write("chat_default.parquet", chat, row_group_size=40, data_page_size=512)
for codec in ["none", "gzip", "zstd", "brotli", "lz4"]:
    write(f"chat_{codec}_v2.parquet", chat, compression=codec, data_page_version="2.0", row_group_size=50,
          data_page_size=700)
write("chat_plain_v1.parquet", chat, use_dictionary=False, compression="none", data_page_size=300)

# ms-swift's other layouts: query/response/history columns.
qr = pa.table({"query": [words(5) for _ in range(20)], "response": [words(8) for _ in range(20)],
               "history": [[[words(2), words(3)]] if i % 4 == 0 else [] for i in range(20)]})
write("query_response.parquet", qr)

# Every scalar type, each with nulls.
n = 60
scalars = pa.table({
    "b": pa.array([None if i % 7 == 0 else i % 2 == 0 for i in range(n)], pa.bool_()),
    "i8": pa.array([None if i % 5 == 0 else (i * 37) % 256 - 128 for i in range(n)], pa.int8()),
    "i16": pa.array([(i * 1009) % 65536 - 32768 for i in range(n)], pa.int16()),
    "i32": pa.array([None if i % 4 == 0 else i * 123457 - 2 ** 30 for i in range(n)], pa.int32()),
    "i64": pa.array([i * 1234567890123 - 2 ** 62 for i in range(n)], pa.int64()),
    "u8": pa.array([(i * 41) % 256 for i in range(n)], pa.uint8()),
    "u32": pa.array([2 ** 32 - 1 - i for i in range(n)], pa.uint32()),
    "u64": pa.array([2 ** 64 - 1 - i for i in range(n)], pa.uint64()),
    "f32": pa.array([None if i % 6 == 0 else i / 7 for i in range(n)], pa.float32()),
    "f64": pa.array([i * 1e300 / 3 if i % 2 else -i / 3 for i in range(n)], pa.float64()),
    "s": pa.array([None if i % 3 == 0 else words(3) for i in range(n)], pa.string()),
    "ls": pa.array([words(2) for i in range(n)], pa.large_string()),
    "bin": pa.array([bytes([i, 255 - i, 0x80]) if i % 2 else b"plain" for i in range(n)], pa.binary()),
    "fixed": pa.array([bytes([65 + i % 26] * 4) for i in range(n)], pa.binary(4)),
    "date": pa.array([datetime.date(1960 + i, 1 + i % 12, 1 + i % 28) for i in range(n)], pa.date32()),
    "ts": pa.array([datetime.datetime(2020, 1, 1) + datetime.timedelta(seconds=i * 3601.5) for i in range(n)],
                   pa.timestamp("us")),
    "dec": pa.array([decimal.Decimal(i * 1234 - 30000) / 100 for i in range(n)], pa.decimal128(10, 2)),
    "f16": pa.array([i / 4 for i in range(n)], pa.float16()),
    "category": pa.array(["red", "green", "blue"] * (n // 3)).dictionary_encode(),
})
write("scalars.parquet", scalars, row_group_size=25)
write("scalars_v2_zstd.parquet", scalars, data_page_version="2.0", compression="zstd")

# Encodings pyarrow writes only when asked.
m = 300
deltas = pa.table({
    "i32": pa.array([None if i % 11 == 0 else (i * i) % 1000 - 500 for i in range(m)], pa.int32()),
    "i64": pa.array([2 ** 40 + i * (-1) ** i * 99991 for i in range(m)], pa.int64()),
    "sorted": pa.array(list(range(m)), pa.int64()),
    "len_strings": pa.array([words(rng.randint(0, 4)) for _ in range(m)], pa.string()),
    "prefix_strings": pa.array([f"prefix/{i // 10:04d}/{words(1)}" for i in range(m)], pa.string()),
    "f32": pa.array([i * 0.25 for i in range(m)], pa.float32()),
    "f64": pa.array([None if i % 9 == 0 else i * -1.5 for i in range(m)], pa.float64()),
    "flag": pa.array([i % 3 == 0 for i in range(m)], pa.bool_()),
})
write("delta_encodings.parquet", deltas, use_dictionary=False, data_page_version="2.0", data_page_size=400,
      column_encoding={"i32": "DELTA_BINARY_PACKED", "i64": "DELTA_BINARY_PACKED", "sorted": "DELTA_BINARY_PACKED",
                       "len_strings": "DELTA_LENGTH_BYTE_ARRAY", "prefix_strings": "DELTA_BYTE_ARRAY",
                       "f32": "BYTE_STREAM_SPLIT", "f64": "BYTE_STREAM_SPLIT", "flag": "RLE"})
write("delta_encodings_v1.parquet", deltas, use_dictionary=False, compression="gzip",
      column_encoding={"i32": "DELTA_BINARY_PACKED", "len_strings": "DELTA_LENGTH_BYTE_ARRAY",
                       "prefix_strings": "DELTA_BYTE_ARRAY", "f64": "BYTE_STREAM_SPLIT"})

# Nesting: lists of lists, nullable structs holding lists, maps, null and empty lists, null list elements.
k = 40
nested = pa.Table.from_pylist([{
    "grid": None if i % 9 == 0 else [[j * i for j in range(i % 3)] for _ in range(i % 4)],
    "meta": None if i % 5 == 0 else {"score": None if i % 2 else i * 0.5, "tags": [words(1) for _ in range(i % 3)]},
    "counts": None if i % 6 == 0 else {words(1) + str(j): j for j in range(i % 3)},
    "sparse": None if i % 7 == 0 else [None if j % 2 else j for j in range(i % 5)],
    "turns": [{"spans": [j, j + 1] if j % 2 else [], "name": None if j == 1 else f"t{j}"} for j in range(i % 3)],
} for i in range(k)], schema=pa.schema([
    ("grid", pa.list_(pa.list_(pa.int32()))),
    ("meta", pa.struct([("score", pa.float64()), ("tags", pa.list_(pa.string()))])),
    ("counts", pa.map_(pa.string(), pa.int64())),
    ("sparse", pa.list_(pa.int64())),
    ("turns", pa.list_(pa.struct([("spans", pa.list_(pa.int32())), ("name", pa.string())]))),
]))
write("nested.parquet", nested, row_group_size=15, data_page_size=128)
write("nested_v2.parquet", nested, data_page_version="2.0", compression="zstd", use_compliant_nested_type=False)

# One value larger than a page, and a page of a single long string.
big = pa.table({"text": [words(4000), "short", words(10)]})
write("long_values.parquet", big, data_page_size=1024)

with open(os.path.join(out_dir, "expected.json"), "w") as f:
    json.dump(expected, f, ensure_ascii=False, sort_keys=True)
print(f"wrote {len(expected['files'])} files ({len(expected['tables'])} tables) to {out_dir}")
