#!/usr/bin/env bash
# Wall-clock comparison over a set of images (run by hand, not in CI):
#   1. the reference pipeline (scripts/golden_iq.py --time: Pillow + OpenCV + imagehash,
#      one image at a time, in one Python process, imports excluded),
#   2. `tvir iq --decode-only` (read + decode every image into memory, nothing else),
#   3. `tvir iq --decode-rows-only` (the same, but PNGs that scoring streams are
#      decoded row by row and the rows dropped: decode work without the big buffers),
#   4. `tvir iq --json` (the whole scoring run).
# Each is run RUNS times; the minimum and median are printed.
#
# usage: scripts/time_iq.sh [TVIR_BINARY] [IMAGE_DIR]
#   defaults: target/debug/tvir, $TVIR_CORPUS_DIR/reports
# Build the binary optimised first, e.g.
#   CARGO_PROFILE_DEV_OPT_LEVEL=3 cargo build --bin tvir
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/debug/tvir}
DIR=${2:-${TVIR_CORPUS_DIR:?set TVIR_CORPUS_DIR or pass IMAGE_DIR}/reports}
RUNS=${RUNS:-5}

mapfile -t FILES < <(find "$DIR" -type f \( -iname '*.png' -o -iname '*.jpg' -o -iname '*.jpeg' \
  -o -iname '*.webp' -o -iname '*.gif' -o -iname '*.bmp' -o -iname '*.tif' -o -iname '*.tiff' \) | sort)
echo "images: ${#FILES[@]} under $DIR"

stats() { sort -n | awk '{a[NR]=$1} END {printf "min %.3f s  median %.3f s\n", a[1], a[int((NR+1)/2)]}'; }

time_cmd() {
  for _ in $(seq "$RUNS"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || true
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
  done | stats
}

echo -n "python reference (in-process, per image): "
for _ in $(seq "$RUNS"); do
  python3 scripts/golden_iq.py --time "${FILES[@]}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])'
done | stats
echo -n "python reference (whole process):        "
time_cmd python3 scripts/golden_iq.py --time "${FILES[@]}"
echo -n "tvir iq --decode-only:                   "
time_cmd "$BIN" iq --decode-only "${FILES[@]}"
echo -n "tvir iq --decode-rows-only:              "
time_cmd "$BIN" iq --decode-rows-only "${FILES[@]}"
echo -n "tvir iq --json:                          "
time_cmd "$BIN" iq --json "${FILES[@]}"
