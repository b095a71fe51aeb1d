"""Put the comparison's own fixtures (scripts/compare_reference/fixtures/) into the
work folders of scripts/compare_reference.sh.
Usage: make_fixtures.py FIXTURES REPORTS REF_REPORTS MOCK_URL [CHROMIUM]

REPORTS (what tvir reads) gets every fixture system, with @MOCK@ in a report replaced by
MOCK_URL (the remote figure the mock answers 404 for) and the pictures the fixtures
need drawn here (no binary file is kept in the repository):
  own-remote    a local chart and a local photo-like image, drawn with Pillow;
  own-mdx       every charts/*.html also as charts/*.png: one screenshot per chart file
                (headless Chromium, white margins cropped), the one picture per chart
                file the reference's pipeline is given (the paper's authors turned each
                chart file into one picture). It is laid out 1264 px wide, the width
                tvir's frame gives the file in its 1280 px viewport, so both sides send
                the same picture (the mock tells figures apart by their pictures).
REF_REPORTS (what the reference evaluator reads; it reads report.md only) gets the same
fixtures, except that an MDX report becomes report.md: front matter and import lines
dropped, each component showing a local chart file (<Any src="charts/x.html" ... />)
replaced by the picture of that file, ![](charts/x.png)."""
import os
import re
import shutil
import subprocess
import sys

from PIL import Image, ImageDraw, ImageFilter

fixtures, reports, ref_reports, mock_url = sys.argv[1:5]
chromium = sys.argv[5] if len(sys.argv) > 5 else shutil.which("chromium") or shutil.which("chromium-browser")


def draw_bars(path):
    img = Image.new("RGB", (720, 440), "white")
    d = ImageDraw.Draw(img)
    d.line([(60, 400), (700, 400)], fill="black", width=2)
    d.line([(60, 30), (60, 400)], fill="black", width=2)
    a = [120, 150, 190, 240, 300]
    b = [80, 110, 150, 210, 290]
    for i, (x, y) in enumerate(zip(a, b)):
        x0 = 90 + i * 120
        d.rectangle([x0, 400 - x, x0 + 40, 400], fill=(40, 90, 170))
        d.rectangle([x0 + 45, 400 - y, x0 + 85, 400], fill=(220, 140, 40))
        d.text((x0 + 30, 410), f"S{i + 1}", fill="black")
    d.text((300, 8), "Green bean price index, two grades", fill="black")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    img.save(path)


def draw_photo(path):
    w, h = 800, 520
    img = Image.new("RGB", (w, h))
    px = img.load()
    for y in range(h):
        for x in range(w):
            if y < 200:
                px[x, y] = (200 - y // 4, 215 - y // 5, 235)
            else:
                row = (y - 200) // 24
                stripe = (x // 6 + row * 3) % 7
                px[x, y] = (120 + stripe * 9 - row * 2, 80 + stripe * 6, 50 + row * 3)
    img = img.filter(ImageFilter.GaussianBlur(0.8))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    img.save(path)


def screenshot(html, png):
    if not chromium:
        sys.exit("make_fixtures: no chromium for the chart files' pictures")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={png}", "--window-size=1264,700", "file://" + os.path.abspath(html)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    img = Image.open(png).convert("RGB")
    gray = img.convert("L").point(lambda v: 255 if v < 250 else 0)
    box = gray.getbbox()
    if box:
        pad = 12
        box = (max(0, box[0] - pad), max(0, box[1] - pad), min(img.width, box[2] + pad), min(img.height, box[3] + pad))
        img = img.crop(box)
    os.makedirs(os.path.dirname(png), exist_ok=True)
    img.save(png)


def mdx_to_md(text):
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"(?m)^(import|export) .*\n", "", text)
    pat = r"<[A-Z][A-Za-z0-9]*\b[^>]*?\bsrc=[\"']([^\"']+\.html?)[\"'][^>]*/>"
    return re.sub(pat, lambda m: "![](" + os.path.splitext(m.group(1))[0] + ".png)", text)


for system in sorted(os.listdir(fixtures)):
    src = os.path.join(fixtures, system)
    if not os.path.isdir(src):
        continue
    for dest_root in (reports, ref_reports):
        dest = os.path.join(dest_root, system)
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest)
        for root, _, files in os.walk(dest):
            for fn in files:
                p = os.path.join(root, fn)
                if fn in ("report.md", "report.mdx"):
                    t = open(p, encoding="utf-8").read().replace("@MOCK@", mock_url)
                    open(p, "w", encoding="utf-8").write(t)
        for task in sorted(os.listdir(dest)):
            d = os.path.join(dest, task)
            if system == "own-remote":
                draw_bars(os.path.join(d, "charts", "bean_prices.png"))
                draw_photo(os.path.join(d, "images", "drying_beds.png"))
            charts = os.path.join(d, "charts")
            if os.path.isdir(charts):
                for fn in sorted(os.listdir(charts)):
                    if fn.endswith((".html", ".htm")):
                        screenshot(os.path.join(charts, fn), os.path.join(charts, os.path.splitext(fn)[0] + ".png"))
            mdx = os.path.join(d, "report.mdx")
            if dest_root == ref_reports and os.path.exists(mdx):
                md = mdx_to_md(open(mdx, encoding="utf-8").read())
                open(os.path.join(d, "report.md"), "w", encoding="utf-8").write(md)
                os.remove(mdx)
print("make_fixtures: " + ", ".join(sorted(s for s in os.listdir(fixtures) if os.path.isdir(os.path.join(fixtures, s)))))
