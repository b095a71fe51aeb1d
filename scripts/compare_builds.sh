#!/usr/bin/env bash
# Speed of two or more builds of `tvir` on the same CPU-bound work, run in turns so
# that the machine's load falls on each alike: the host's glibc release build
# against the wheels' static musl binary, say (issue 33: one musl build serves both
# wheels only if it stays within 5 % of the glibc build).
#
# Work, each timed RUNS times per binary (min and median printed, and the median's
# ratio to the first binary's):
#   parse     `tvir parse --json --no-browser` of every corpus report, one after another
#   iq        `tvir iq --json` of every corpus image in one process (rayon, decoding)
#   eval      `tvir eval --no-judge --offline --no-browser` of the corpus reports into a
#             fresh folder (parse, figures, pixel metrics, outputs; no judge, no network)
#   summarize `tvir summarize OUT --format json` of that output
# The judge-bound runs are measured by the scale bench with SCALE_TVIR=BIN
# (scripts/scale_bench.sh), which also times the fully cached re-run.
#
# Usage: scripts/compare_builds.sh BIN [BIN...]   (RUNS, default 7; TVIR_CORPUS_DIR
# defaults to the nearest shared/corpus above the checkout, see scripts/corpus_dir.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/corpus_dir.sh
[ $# -ge 1 ] || { echo "usage: $0 BIN [BIN...]" >&2; exit 2; }
runs=${RUNS:-7}
bins=("$@")
for b in "${bins[@]}"; do
    [ -x "$b" ] || { echo "compare_builds: $b is not an executable" >&2; exit 2; }
done
corpus=$TVIR_CORPUS_DIR
mapfile -t reports < <(find "$corpus/reports" -name report.md | sort)
mapfile -t images < <(find "$corpus/reports" -type f \( -iname '*.png' -o -iname '*.jpg' -o -iname '*.jpeg' -o -iname '*.webp' \) | sort)
echo "corpus: ${#reports[@]} reports, ${#images[@]} images; $runs runs per binary, in turns; load $(cut -d' ' -f1-3 /proc/loadavg)"
work=$(mktemp -d "${TMPDIR:-/tmp}/tvir-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT

seconds() { # command...: wall seconds of one run (its output discarded; it must succeed)
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || { echo "compare_builds: failed: $*" >&2; exit 1; }
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}
parse_all() { for r in "${reports[@]}"; do "$1" parse "$r" --json --no-browser; done; }
eval_all() {
    rm -rf "$work/out-$2"
    HOME="$work/home" XDG_CACHE_HOME="$work/cache-$2-$RANDOM" "$1" eval --reports "$corpus/reports" \
        --tasks "$corpus/tvir-query.json" --out "$work/out-$2" --no-judge --offline --no-browser --quiet
}

declare -A times
for ((r = 1; r <= runs; r++)); do
    for i in "${!bins[@]}"; do
        b=${bins[$i]}
        times[parse,$i]+="$(seconds parse_all "$b") "
        times[iq,$i]+="$(seconds "$b" iq --json "${images[@]}") "
        # eval exits 1 when some unit failed (offline, no judge); the output is what counts.
        t0=$(date +%s.%N); eval_all "$b" "$i" >/dev/null 2>&1 || true; t1=$(date +%s.%N)
        [ -f "$work/out-$i/summary.json" ] || { echo "compare_builds: $b eval wrote no summary.json" >&2; exit 1; }
        times[eval,$i]+="$(echo "$t1 - $t0" | bc -l) "
        times[summarize,$i]+="$(seconds "$b" summarize "$work/out-$i" --format json) "
    done
done

printf '\n%-10s' work
for b in "${bins[@]}"; do printf '  %-34s' "$(basename "$(dirname "$b")")/$(basename "$b")"; done
printf '\n'
for w in parse iq eval summarize; do
    printf '%-10s' "$w"
    first=""
    for i in "${!bins[@]}"; do
        read -r min med < <(tr ' ' '\n' <<<"${times[$w,$i]}" | grep . | sort -n |
            awk '{a[NR]=$1} END {printf "%.3f %.3f\n", a[1], a[int((NR+1)/2)]}')
        [ -n "$first" ] || first=$med
        printf '  min %7.3f s med %7.3f s (%5.3fx)' "$min" "$med" "$(echo "$med / $first" | bc -l)"
    done
    printf '\n'
done
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
