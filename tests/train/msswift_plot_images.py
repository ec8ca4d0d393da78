"""Runs ms-swift's own plot_images (swift.utils.tb_utils; the sft pipeline calls it with ['train/loss'], 0.9) on a
TensorBoard folder and lists the pictures it wrote, as JSON: {"files": [names], "sizes": {name: [w, h]}}.

usage: msswift_plot_images.py TB_DIR IMAGES_DIR OUT.json   (exit 77 when ms-swift, matplotlib or tensorboard is missing)
"""
import json
import os
import struct
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import tensorboard  # noqa: F401  (read_tensorboard_file needs it)
    from swift.utils.tb_utils import plot_images
except ImportError as e:
    print(f"needs ms-swift, matplotlib and tensorboard: {e}")
    sys.exit(77)

tb_dir, images_dir, out = sys.argv[1:4]
plot_images(images_dir, tb_dir, ["train/loss"], 0.9)
files = sorted(os.listdir(images_dir))
sizes = {}
for name in files:
    with open(os.path.join(images_dir, name), "rb") as f:
        head = f.read(24)
    sizes[name] = list(struct.unpack(">II", head[16:24]))  # IHDR width, height
with open(out, "w") as f:
    json.dump({"files": files, "sizes": sizes}, f)
