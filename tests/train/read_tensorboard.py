"""Reads a TensorBoard event file with TensorBoard's own EventAccumulator (the reader ms-swift's plots use)
and prints {tag: [[step, value, wall_time], ...]} as JSON, the check for tensorboard_writer_test.cpp.

usage: read_tensorboard.py EVENT_FILE OUT.json   (exit 77 when tensorboard is missing)
"""
import json
import sys

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
except ImportError as e:
    print(f"needs tensorboard: {e}")
    sys.exit(77)

ea = EventAccumulator(sys.argv[1])
ea.Reload()
out = {"file_version": ea.file_version, "scalars": {}}
for tag in ea.Tags()["scalars"]:
    out["scalars"][tag] = [[e.step, e.value, e.wall_time] for e in ea.Scalars(tag)]
with open(sys.argv[2], "w") as f:
    json.dump(out, f)
