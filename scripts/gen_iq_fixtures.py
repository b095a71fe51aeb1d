#!/usr/bin/env python3
"""Generate the synthetic test images under tests/fixtures/images/.

Run by hand (not in CI): python3 scripts/gen_iq_fixtures.py
Needs: pillow, numpy. Deterministic (fixed seeds). Every image is made here from
noise, gradients, shapes and PIL's built-in bitmap font; nothing is copied from
anywhere. Keep the set small (well under a few MB).

The order of MANIFEST is the "report order" used by the duplicate-group test.
"""
import json
import os
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "images")


def rng(seed):
    return np.random.default_rng(seed)


def photo_like(w, h, seed, mean=128.0, spread=60.0):
    """Blurred multi-scale colour noise: smooth regions plus texture, like a photo."""
    r = rng(seed)
    acc = np.zeros((h, w, 3))
    for scale, weight in ((32, 1.0), (8, 0.5), (2, 0.25)):
        small = r.normal(0, 1, (max(1, h // scale), max(1, w // scale), 3))
        small = ((small - small.min()) / (np.ptp(small) + 1e-9) * 255).astype(np.uint8)
        up = Image.fromarray(small, "RGB").resize((w, h), Image.Resampling.BICUBIC)
        acc += weight * (np.asarray(up, dtype=np.float64) - 127.5)
    acc = acc / np.std(acc) * spread + mean
    return Image.fromarray(np.clip(acc, 0, 255).astype(np.uint8), "RGB")


def gradient(w, h, horizontal=True):
    x = np.linspace(0, 255, w if horizontal else h)
    line = np.tile(x, (h, 1)) if horizontal else np.tile(x[:, None], (1, w))
    rgb = np.stack([line, 255 - line, np.full_like(line, 90)], axis=-1)
    return Image.fromarray(rgb.astype(np.uint8), "RGB")


def text_image(w, h, lines, seed):
    img = Image.new("RGB", (w, h), (250, 250, 245))
    d = ImageDraw.Draw(img)
    font = ImageFont.load_default()
    r = rng(seed)
    y = 6
    for line in lines:
        colour = tuple(int(c) for c in r.integers(0, 90, 3))
        d.text((8, y), line, fill=colour, font=font)
        y += 14
    return img


def bar_chart(w, h, values, seed):
    img = Image.new("RGB", (w, h), (255, 255, 255))
    d = ImageDraw.Draw(img)
    r = rng(seed)
    d.line([(40, h - 40), (w - 20, h - 40)], fill=(0, 0, 0), width=2)
    d.line([(40, 20), (40, h - 40)], fill=(0, 0, 0), width=2)
    bw = (w - 80) // (len(values) * 2)
    for i, v in enumerate(values):
        x0 = 60 + i * 2 * bw
        top = h - 40 - int(v * (h - 80))
        colour = tuple(int(c) for c in r.integers(30, 220, 3))
        d.rectangle([x0, top, x0 + bw, h - 41], fill=colour)
        d.text((x0, h - 32), f"Q{i + 1}", fill=(20, 20, 20), font=ImageFont.load_default())
    for gy in range(20, h - 40, 40):
        d.line([(41, gy), (w - 20, gy)], fill=(220, 220, 220), width=1)
    return img


def alpha_disc(w, h):
    yy, xx = np.mgrid[0:h, 0:w]
    cx, cy = w / 2, h / 2
    dist = np.sqrt((xx - cx) ** 2 + (yy - cy) ** 2) / (min(w, h) / 2)
    alpha = np.clip((1.0 - dist) * 400, 0, 255).astype(np.uint8)
    rgb = np.stack([(xx * 255 // w), (yy * 255 // h), np.full_like(xx, 40)], -1).astype(np.uint8)
    # Fully transparent pixels hold colour too: compositing must ignore it.
    return Image.fromarray(np.dstack([rgb, alpha]), "RGBA")


def checker(w, h, cell):
    yy, xx = np.mgrid[0:h, 0:w]
    v = (((xx // cell) + (yy // cell)) % 2 * 255).astype(np.uint8)
    return Image.fromarray(v, "L")


def build():
    os.makedirs(OUT, exist_ok=True)
    files = []

    def save(img, name, **kw):
        img.save(os.path.join(OUT, name), **kw)
        files.append(name)

    photo = photo_like(480, 360, 1)
    save(photo, "photo.png")
    save(photo, "photo_q85.jpg", quality=85)
    save(photo.resize((240, 180), Image.Resampling.LANCZOS), "photo_small.jpg", quality=90)
    save(photo_like(400, 300, 2, mean=140, spread=45), "photo2_lossless.webp", lossless=True)
    save(photo_like(420, 300, 3, mean=110, spread=50), "photo3_lossy.webp", quality=80)
    save(gradient(500, 300, True), "gradient_h.png")
    save(gradient(200, 330, False), "gradient_v.bmp")
    save(text_image(600, 200, [
        "Quarterly revenue grew 14% year over year.",
        "Operating margin: 21.3% (prev. 19.8%)",
        "Figure 3. Synthetic text rendered for tests.",
        "0123456789 abcdefghijklmnopqrstuvwxyz",
        "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG",
    ], 4), "text.png")
    chart = bar_chart(800, 500, [0.3, 0.55, 0.8, 0.45, 0.65], 5)
    save(chart, "chart_bars.png")
    save(chart.convert("P", palette=Image.Palette.ADAPTIVE, colors=64), "chart_bars_copy.gif")
    save(bar_chart(800, 500, [0.9, 0.2, 0.35, 0.7, 0.1], 6), "chart_other.png")
    save(photo_like(400, 300, 7, mean=45, spread=25), "dark.png")
    save(photo_like(400, 300, 8, mean=100, spread=30), "mid.tiff", compression="tiff_lzw")
    save(photo_like(400, 300, 9, mean=205, spread=20), "bright.png")
    save(Image.new("RGB", (300, 200), (120, 130, 140)), "flat.png")
    save(checker(256, 256, 8), "checker_gray.png")
    save(photo_like(1, 1, 10), "one_pixel.png")
    save(photo_like(3, 250, 11), "narrow_3x250.png")
    save(photo_like(100, 1000, 12), "portrait_100x1000.png")
    save(photo_like(999, 17, 13), "strip_999x17.png")
    save(photo_like(65, 65, 14), "small_65.png")
    save(photo_like(257, 129, 15), "odd_257x129.png")
    save(alpha_disc(320, 240), "alpha_disc.png")
    la = Image.merge("LA", (checker(200, 150, 10), alpha_disc(200, 150).getchannel("A")))
    save(la, "gray_alpha.png")
    pal = bar_chart(300, 200, [0.4, 0.9], 16).convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    pal.info["transparency"] = 0
    save(pal, "palette_trns.png", transparency=0)
    frames = [photo_like(160, 120, 17), photo_like(160, 120, 18)]
    frames[0].save(os.path.join(OUT, "animated.gif"), save_all=True, append_images=frames[1:], duration=100, loop=0)
    files.append("animated.gif")
    save(photo_like(240, 240, 19).convert("L"), "gray.png")
    # A near-copy of photo.png with a small overlay: should still group with it.
    marked = photo.copy()
    ImageDraw.Draw(marked).rectangle([440, 330, 472, 352], fill=(255, 255, 255))
    save(marked, "photo_marked.png")

    # Truncated bytes: both pipelines must fail on it.
    with open(os.path.join(OUT, "photo.png"), "rb") as f:
        data = f.read()
    with open(os.path.join(OUT, "truncated.png"), "wb") as f:
        f.write(data[: len(data) // 3])
    files.append("truncated.png")

    # An SVG chart: the reference cannot read SVG, so it has no golden row; our loader
    # rasterises it (tested analytically).
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="480" height="320" viewBox="0 0 480 320">',
           '<rect width="480" height="320" fill="white"/>']
    for i, v in enumerate([120, 200, 80, 260]):
        svg.append(f'<rect x="{40 + i * 100}" y="{300 - v}" width="60" height="{v}" fill="#{(i * 60 + 40):02x}6699"/>')
    svg.append('<line x1="30" y1="300" x2="460" y2="300" stroke="black" stroke-width="2"/></svg>')
    with open(os.path.join(OUT, "chart.svg"), "w") as f:
        f.write("\n".join(svg))
    files.append("chart.svg")

    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(files, f, indent=1)
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in files)
    print(f"{len(files)} files, {total / 1024:.0f} KiB", file=sys.stderr)


if __name__ == "__main__":
    build()
