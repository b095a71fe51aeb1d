#!/usr/bin/env bash
# Render the HTML summary of `tvir summarize --format html` (the folder's index.html,
# then each report page) in headless Chromium and assert on the rendered pages (DOM
# after parsing and any script, which must be none).
#
# Usage: scripts/check_html.sh [PAGE.html]
#   Without an argument, builds a small fixture (eval tree, report folder with an
#   image, an agreement file), renders the page with the debug `tvir` binary and
#   checks it (TVIR=path/to/tvir to use another build). With an argument (an
#   index.html), checks the generic parts of an existing summary.
# Needs Debian's `chromium` (apt-get update && apt-get install -y chromium) and jq.
# Run by hand; not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

CHROMIUM="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
if [[ -z "$CHROMIUM" ]]; then
    echo "check_html: chromium not found (apt-get install -y chromium)" >&2
    exit 2
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
fail=0
check() { # description, command...
    local what="$1"; shift
    if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; fail=1; fi
}

write_record() { # system task judge_folder ta va ec justification
    local dir="$WORK/out/$1/$2/$3"
    mkdir -p "$dir"
    jq -n --arg s "$1" --arg t "$2" --arg j "$3" --argjson ta "$4" --argjson va "$5" \
        --argjson ec "$6" --arg just "$7" '
    {system:$s, task_id:$t, judge_model:$j, run:1, language:null, complexity:null, domain:null,
     metrics:{citation_support:{score:$ta, status:"evaluated", item_count:2, scored_item_count:1,
              failed_item_count:1, skipped_item_count:0, coverage:0.5, note:null},
              figure_caption_quality:{score:$va, status:"evaluated", item_count:1, scored_item_count:1,
              failed_item_count:0, skipped_item_count:0, coverage:1.0, note:null}},
     ta:$ta, va:$va, overall:(($ta+$va)/2), effective_citations:$ec,
     structural_error_counts:{traceability:1, consistency:0, completeness:0},
     structural_errors:{traceability:[{code:"uncited_quantitative", line:7, reason:"a number with no source"}],
                        consistency:[], completeness:[]},
     units:[{metric:"citation_support", unit:"fact:1", status:"scored", reason:null, score:1.0,
             answer:{verdict:"supported"}, justification:$just, detail:{fact:"x"}},
            {metric:"citation_support", unit:"fact:2", status:"failed", reason:"judge timed out",
             score:null, answer:null, justification:null, detail:{}},
            {metric:"chart_source_consistency", unit:"figure:1", status:"skipped",
             reason:"no cited source could be read", score:null, answer:null, justification:null,
             detail:{content:"images/fig1.png", kind:"image", line:9, caption:"Figure 1",
                     sources:[{idx:"3", url:"https://example.org/gone", chars:0}]}}],
     usage:{calls:3, cache_hits:0, failed_calls:1, prompt_tokens:100, completion_tokens:20,
            cached_tokens:0, cost_usd:0.001},
     n_images:1, n_charts:0}' > "$dir/report.json"
}

if [[ $# -ge 1 ]]; then
    PAGE="$(realpath "$1")"
    FIXTURE=0
else
    FIXTURE=1
    if [[ -z "${TVIR:-}" ]]; then
        cargo build --quiet --bin tvir
        TVIR="$PWD/target/debug/tvir"
    fi
    write_record alpha t1 judge-x 0.8 0.6 3 'fine <img src=x onerror="document.title=1">'
    write_record alpha t2 judge-x 0.7 0.5 2 'ok'
    write_record beta t1 judge-x 0.4 0.3 1 'weak'
    write_record beta t2 judge-x 0.5 0.2 1 'weak'
    # a report folder with one real PNG (a 64x48 gradient) for the thumbnail
    mkdir -p "$WORK/reports/alpha/t1/images"
    python3 - "$WORK/reports/alpha/t1/images/fig1.png" <<'PY'
import struct, sys, zlib
w, h = 64, 48
raw = b"".join(b"\x00" + b"".join(bytes((x * 4 % 256, y * 5 % 256, 128)) for x in range(w)) for y in range(h))
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) \
    + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
open(sys.argv[1], "wb").write(png)
PY
    printf 'system,task_id,overall\nalpha,t1,70\nbeta,t1,30\nalpha,t2,60\nbeta,t2,40\n' > "$WORK/other.csv"
    "$TVIR" agree "$WORK/out" "$WORK/other.csv" --json --bootstrap 200 > "$WORK/agree.json"
    PAGE="$WORK/site/index.html"
    "$TVIR" summarize "$WORK/out" --format html --reports "$WORK/reports" \
        --agree "$WORK/agree.json" --html-out "$WORK/site" > /dev/null
fi

PROFILE="$WORK/profile"
FLAGS=(--headless --no-sandbox --disable-gpu --disable-background-networking
       --disable-component-update --disable-sync --no-first-run
       --user-data-dir="$PROFILE")
"$CHROMIUM" "${FLAGS[@]}" --dump-dom "file://$PAGE" > "$WORK/dom.html" 2> "$WORK/chromium.log"
"$CHROMIUM" "${FLAGS[@]}" --window-size=1280,2000 --screenshot="$WORK/shot.png" \
    "file://$PAGE" 2>> "$WORK/chromium.log" || true
if [[ -n "${KEEP_SCREENSHOT:-}" ]]; then cp "$WORK/shot.png" "$KEEP_SCREENSHOT"; fi
# The report pages of the folder, rendered one by one after the first page.
if [[ -d "$(dirname "$PAGE")/reports" ]]; then
    while IFS= read -r p; do
        "$CHROMIUM" "${FLAGS[@]}" --dump-dom "file://$p" >> "$WORK/dom.html" 2>> "$WORK/chromium.log"
    done < <(find "$(dirname "$PAGE")/reports" -name '*.html' | sort)
fi

DOM="$WORK/dom.html"
count() { grep -o "$1" "$DOM" | wc -l; }

check "page rendered (non-empty DOM)" test -s "$DOM"
check "title intact (no script ran)" grep -q '<title>TVIR evaluation summary</title>' "$DOM"
check "leaderboard table" grep -q '<table class="leaderboard">' "$DOM"
check "inline SVG charts" test "$(count '<svg')" -ge 2
# Links to cited sources are fine (never loaded); nothing the page loads is remote.
check "no external resources" bash -c "! grep -Eq '(src=|<link[^>]*href=)\"(https?:)?//' '$DOM'"
check "no script elements" bash -c "! grep -qi '<script' '$DOM'"

if [[ $FIXTURE == 1 ]]; then
    check "both systems ranked, alpha first" bash -c \
        "tr -d '\n' < '$DOM' | grep -o '<table class=\"leaderboard\">.*' | head -c 4000 | grep -q '<td>1</td><td>alpha</td>.*<td>2</td><td>beta</td>'"
    check "a bar chart per level and metric + profile (>= 6 SVG)" test "$(count '<svg')" -ge 6
    check "profile chart legend names systems" grep -q 'Per-system profile' "$DOM"
    check "four report sections" test "$(count '<details class="report"')" -eq 4
    check "unit justification escaped, not an element" bash -c \
        "grep -q 'fine &lt;img src=x onerror=' '$DOM' && ! grep -q '<img src=\"x\"' '$DOM'"
    check "failed unit with its reason" grep -q 'judge timed out' "$DOM"
    check "fetch failure listed" grep -q 'Fetch failures (1)' "$DOM"
    check "structural error listed" grep -q 'uncited_quantitative' "$DOM"
    check "figure thumbnail slot" grep -q 'class="thumb' "$DOM"
    if grep -q 'src="[./]*pictures/' "$DOM"; then
        echo "info - thumbnail shown from the pictures folder"
    else
        echo "info - thumbnail not rendered: $(grep -o 'class="nothumb">[^<]*' "$DOM" | head -1)"
    fi
    check "agreement table" grep -q '<table class="agreement">' "$DOM"
fi

if [[ $fail != 0 ]]; then
    echo "check_html: FAILED (chromium log: $(tail -3 "$WORK/chromium.log" | tr '\n' ' '))"
    exit 1
fi
echo "check_html: all checks passed"
