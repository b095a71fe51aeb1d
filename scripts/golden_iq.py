#!/usr/bin/env python3
"""Reference Image Quality values, computed the way the reference evaluator does it
(OpenCV + Pillow + imagehash), one image at a time.

Run by hand, never in CI:
    pip install opencv-python-headless imagehash pillow numpy
    python3 scripts/golden_iq.py tests/fixtures/images > tests/fixtures/iq_golden.json
    python3 scripts/golden_iq.py --time FILE_OR_DIR...   # timing of the Python pipeline

The formula is METRICS.md section 4 written out in our own words:
- decode with Pillow (first frame), alpha composited on white (paste with the alpha
  channel as mask);
- gray for sharpness and contrast: cv2.cvtColor(RGB2GRAY);
- sharpness: variances of cv2.Laplacian(gray, CV_64F, k) for k = 1, 3, 5 combined
  0.5/0.3/0.2, divided by a brightness threshold, clipped;
- contrast: 0.7 x global std + 0.3 x median of whole-block stds, divided by a
  brightness normaliser, clipped;
- resolution and aspect scores; Q = 0.25 R + 0.15 A + 0.35 S + 0.25 C;
- imagehash.phash of the composited image; greedy duplicate groups at distance <= 10.
"""
import json
import os
import sys
import time

import cv2
import imagehash
import numpy as np
from PIL import Image

WEIGHTS = (0.25, 0.15, 0.35, 0.25)
DUP_THRESHOLD = 10


def load_on_white(path):
    img = Image.open(path)
    img.seek(0)
    img.load()
    rgba = img.convert("RGBA")
    canvas = Image.new("RGB", rgba.size, (255, 255, 255))
    canvas.paste(rgba, mask=rgba.getchannel("A"))
    return canvas


def resolution_score(w, h):
    return min(1.0, min(w, h) / 400.0)


def aspect_score(w, h):
    a = max(w, h) / min(w, h)
    if a <= 2:
        return 1.0
    if a <= 4:
        return 1.0 - (a - 2) / 4.0
    return max(0.0, 0.5 - (a - 4) / 8.0)


def sharpness(gray):
    v1 = cv2.Laplacian(gray, cv2.CV_64F, ksize=1).var()
    v3 = cv2.Laplacian(gray, cv2.CV_64F, ksize=3).var()
    v5 = cv2.Laplacian(gray, cv2.CV_64F, ksize=5).var()
    mean = gray.mean()
    t = 90.0 if mean > 120 else (80.0 if mean > 80 else 50.0)
    combined = 0.5 * v1 + 0.3 * v3 + 0.2 * v5
    return min(1.0, max(0.0, combined / t)), (float(v1), float(v3), float(v5))


def contrast(gray):
    h, w = gray.shape
    g = float(gray.std())
    b = max(min(w, h) // 4, 64)
    stds = []
    for y in range(0, h - b + 1, b):
        for x in range(0, w - b + 1, b):
            stds.append(float(gray[y:y + b, x:x + b].std()))
    raw = 0.7 * g + 0.3 * float(np.median(stds)) if stds else g
    mean = gray.mean()
    n = 45.0 if mean > 120 else (55.0 if mean > 80 else 50.0)
    return min(1.0, max(0.0, raw / n)), g, (float(np.median(stds)) if stds else None)


def score(path):
    rgb = load_on_white(path)
    w, h = rgb.size
    gray = cv2.cvtColor(np.asarray(rgb), cv2.COLOR_RGB2GRAY)
    s, lap = sharpness(gray)
    c, g, l = contrast(gray)
    r, a = resolution_score(w, h), aspect_score(w, h)
    q = WEIGHTS[0] * r + WEIGHTS[1] * a + WEIGHTS[2] * s + WEIGHTS[3] * c
    ph = imagehash.phash(rgb)
    return {
        "width": w, "height": h, "resolution": r, "aspect": a, "sharpness": s,
        "contrast": c, "quality": q, "phash": str(ph), "laplacian_var": lap,
        "mean_gray": float(gray.mean()), "global_std": g, "block_median_std": l,
    }, ph


def score_all(paths):
    rows, hashes = [], []
    for p in paths:
        try:
            row, ph = score(p)
        except Exception as e:  # the reference scores failures as Q = 0
            row, ph = {"quality": 0.0, "error": f"{type(e).__name__}: {e}"}, None
        row["file"] = os.path.basename(p)
        rows.append(row)
        hashes.append(ph)
    grouped = [False] * len(paths)
    dups = 0
    for i, hi in enumerate(hashes):
        row = rows[i]
        row.setdefault("duplicate_of", None)
        if hi is None or grouped[i]:
            continue
        grouped[i] = True
        for j in range(i + 1, len(hashes)):
            hj = hashes[j]
            if hj is not None and not grouped[j] and (hi - hj) <= DUP_THRESHOLD:
                grouped[j] = True
                rows[j]["duplicate_of"] = i
                dups += 1
    valid = sum(h is not None for h in hashes)
    penalty = min(0.5, 0.8 * dups / valid) if valid else 0.0
    iq = float(np.mean([r["quality"] for r in rows])) * (1 - penalty) if rows else 0.0
    return {"images": rows, "duplicate_penalty": penalty, "iq": iq}


def expand(args):
    out = []
    for a in args:
        if os.path.isdir(a):
            for root, _, names in sorted(os.walk(a)):
                for n in sorted(names):
                    if n.lower().endswith((".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff", ".svg")):
                        out.append(os.path.join(root, n))
        else:
            out.append(a)
    return out


def main():
    args = sys.argv[1:]
    if args and args[0] == "--time":
        paths = expand(args[1:])
        t0 = time.perf_counter()
        res = score_all(paths)
        dt = time.perf_counter() - t0
        print(json.dumps({"images": len(paths), "seconds": dt, "iq": res["iq"]}))
        return
    if len(args) != 1 or not os.path.isdir(args[0]):
        sys.exit("usage: golden_iq.py FIXTURE_DIR  |  golden_iq.py --time PATH...")
    folder = args[0]
    with open(os.path.join(folder, "manifest.json")) as f:
        names = json.load(f)
    # SVG: the reference cannot decode it; it has no golden row.
    names = [n for n in names if not n.endswith(".svg")]
    res = score_all([os.path.join(folder, n) for n in names])
    res["generator"] = {
        "opencv": cv2.__version__, "pillow": Image.__version__,
        "imagehash": imagehash.__version__, "numpy": np.__version__,
    }
    json.dump(res, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
