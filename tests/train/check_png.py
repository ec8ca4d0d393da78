"""Opens a PNG with PIL and prints its size, mode and how many pixels have each given colour, as JSON.

usage: check_png.py FILE.png OUT.json RRGGBB...   (exit 77 when PIL is missing)
"""
import json
import sys

try:
    from PIL import Image
except ImportError as e:
    print(f"needs pillow: {e}")
    sys.exit(77)

img = Image.open(sys.argv[1])
img.load()  # decodes every row: a broken IDAT fails here
rgb = img.convert("RGB")
counts = {}
for c in sys.argv[3:]:
    counts[c] = 0
wanted = {tuple(int(c[i:i + 2], 16) for i in (0, 2, 4)): c for c in sys.argv[3:]}
for count, colour in rgb.getcolors(maxcolors=1 << 24):
    if colour in wanted:
        counts[wanted[colour]] = count
with open(sys.argv[2], "w") as f:
    json.dump({"size": list(img.size), "mode": img.mode, "format": img.format, "counts": counts}, f)
