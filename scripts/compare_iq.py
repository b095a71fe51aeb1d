#!/usr/bin/env python3
"""Side-by-side parity check of `tvir iq` against the reference pipeline on any set of
images (run by hand, not in CI):

    python3 scripts/compare_iq.py TVIR_BINARY PATH...      # files or folders

Scores every image with both (in the same order, as one report), then prints per-image
|dQ|, hash differences and whether the duplicate groups agree. Exit status 1 when
fewer than 95 % of images have |dQ| <= 0.005 or the groups differ.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import golden_iq  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary, args = sys.argv[1], sys.argv[2:]
    paths = [p for p in golden_iq.expand(args) if not p.lower().endswith(".svg")]
    ref = golden_iq.score_all(paths)
    out = subprocess.run([binary, "iq", "--json", *paths], capture_output=True, text=True)
    ours = json.loads(out.stdout)
    ok = 0
    hash_diffs = 0
    print(f"{'|dQ|':>9}  {'Q ours':>7}  {'Q ref':>7}  hash")
    for p, r, o in zip(paths, ref["images"], ours["images"]):
        dq = abs(r["quality"] - o["quality"])
        ok += dq <= 0.005
        hr, ho = r.get("phash"), o.get("phash")
        note = "same" if hr == ho else f"{ho} vs {hr}"
        if hr != ho:
            hash_diffs += 1
        print(f"{dq:9.2e}  {o['quality']:7.4f}  {r['quality']:7.4f}  {note}  {os.path.relpath(p)}")
    groups_same = [r["duplicate_of"] for r in ref["images"]] == [o["duplicate_of"] for o in ours["images"]]
    n = len(paths)
    print(f"\nimages {n}; |dQ| <= 0.005: {ok}/{n} ({100 * ok / max(n, 1):.1f} %); "
          f"hash differences: {hash_diffs}; duplicate groups identical: {groups_same}; "
          f"IQ ours {ours['iq']:.6f} ref {ref['iq']:.6f}")
    sys.exit(0 if ok >= 0.95 * n and groups_same else 1)


if __name__ == "__main__":
    main()
