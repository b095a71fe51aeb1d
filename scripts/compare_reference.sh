#!/usr/bin/env bash
# Runs the public reference evaluator (NJU-LINK/TVIR benchmark/, commit c48f1ed) and
# `tvir eval --protocol reference --extraction rules` on the same reports with the
# same judge answers, in the conditions of a real run, and prints every per-report,
# per-metric and per-system score of both side by side (issue 36, requirement 5;
# issue 45, requirement 6). Not part of the test suite.
#
#   scripts/compare_reference.sh REF_CHECKOUT VENV [WORKDIR]
#
# REF_CHECKOUT: a checkout of the reference repository (holding benchmark/eval.py);
# VENV: a Python venv with what it imports (pip install openai python-dotenv
# json_repair tqdm opencv-python-headless numpy pillow imagehash requests pandas
# openpyxl). TVIR_BIN: the tvir binary (default target/release/tvir). Chromium
# (`chromium` on PATH) draws the pictures of the MDX fixture's chart files.
#
# Reports, copied into WORKDIR (default: a new temporary folder): the example
# (examples/system-a, system-b); when TVIR_CORPUS_DIR (or ../shared/corpus) is found,
# the corpus reports (tvir/claude-4-5-000001 copied as tvir/000001 so both sides find
# its task); and our fixtures (scripts/compare_reference/fixtures/, pictures drawn by
# make_fixtures.py):
#   own-textonly  a system with no figure in any report (the reference's summary gives
#                 it VA 0 and Overall TA/2);
#   own-remote    a report with a remote figure whose address answers 404 (the
#                 reference scores it 0 in IQ, FCQ and FCI and counts it);
#   own-mdx       an MDX report showing two local chart files through a JSX component
#                 (<ChartFrame src="charts/x.html" />), one of them with two panels.
#                 The reference reads report.md only and reads pictures, so its copy
#                 is report.md with each chart file replaced by one screenshot of it
#                 (charts/x.png, headless Chromium), as the paper's authors turned
#                 each chart file into one picture; tvir reads the .mdx and draws the
#                 files with its browser.
# About one cited page in ten comes back empty (an empty `text`), the same on both
# sides; own-remote also cites a page that is always empty and one whose fetch fails
# (Serper 500; recorded in sources.jsonl as a failed fetch with its error, the way a
# sources file made on a connected machine records one). Nothing the reference
# writes lands in this checkout.
#
# tvir runs twice, and each run is compared with the reference:
#   online   pages through the mock's Serper route (SERPER_BASE_URL), --allow-private
#            so the remote figure on 127.0.0.1 is really asked for (and gets 404);
#   offline  --offline --sources WORKDIR/sources.jsonl, no Serper key in the
#            environment.
# Both use --no-browser (the reference cannot draw script charts) except for
# own-mdx, evaluated by a second call with the browser into the same output folder.
#
# The judge is scripts/compare_reference/mock_judge.py: answers depend only on the
# metric and the unit (fact text and the cited pages shown, figure file by its path
# without extension, report, checklist item), so both sides get the same answers for
# the same input; the reference's extraction prompts are answered with `tvir parse
# --json` (one figure per chart file on the reference's side, see mock_judge.py).
# Overrides beside --protocol reference: --extraction rules (the units must be the
# same), --assume-vision, and --answers schema: the mock tells tvir's requests and
# their metric apart by the schema's name; how an answer is asked for changes no
# score given the same answer.
#
# Output: for each run, every report x metric cell and every system cell (reference,
# tvir, difference; "=" equal at the reference's 4-decimal rounding, "X" beyond), the
# judge calls per metric from the mock's log (units asked by one side only), and a
# last line "<run>: N of M cells equal at the reference's 4-decimal rounding, K
# beyond". Exit status 1 when a cell of either run is beyond.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
ref="${1:-}"; venv="${2:-}"; work="${3:-}"
if [ -z "$ref" ] || [ ! -f "$ref/benchmark/eval.py" ]; then
    echo "compare_reference: skipped: no reference checkout (benchmark/eval.py) at '${ref}'" >&2
    echo "usage: $0 REF_CHECKOUT VENV [WORKDIR]" >&2
    exit 0
fi
if [ -z "$venv" ] || [ ! -x "$venv/bin/python" ]; then
    echo "compare_reference: skipped: no Python venv at '${venv}'" >&2
    exit 0
fi
py="$venv/bin/python"
if ! "$py" -c "import openai, dotenv, json_repair, tqdm, cv2, numpy, PIL, imagehash, requests, pandas, openpyxl" 2>/dev/null; then
    echo "compare_reference: skipped: the venv lacks the reference's packages (see the header of $0)" >&2
    exit 0
fi
tvir="${TVIR_BIN:-$root/target/release/tvir}"
[ -x "$tvir" ] || { echo "compare_reference: build first: cargo build --release --locked --bin tvir" >&2; exit 2; }
cd "$root"
. scripts/corpus_dir.sh
work="${work:-$(mktemp -d /tmp/tvir-compare-ref.XXXXXX)}"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
echo "compare_reference: working in $work"
rm -rf "$work/reports" "$work/ref-reports" "$work/bench" "$work/parse" "$work"/ours-*
mkdir -p "$work/reports" "$work/parse"
port="$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port"
cp -r examples/system-a examples/system-b "$work/reports/"
tasks=(examples/tasks.json)
if [ -d "$TVIR_CORPUS_DIR/reports" ]; then
    cp -r "$TVIR_CORPUS_DIR"/reports/* "$work/reports/"
    [ -d "$work/reports/tvir/claude-4-5-000001" ] && mv "$work/reports/tvir/claude-4-5-000001" "$work/reports/tvir/000001"
    tasks+=("$TVIR_CORPUS_DIR/tvir-query.json")
else
    echo "compare_reference: no corpus at $TVIR_CORPUS_DIR: the example and the fixtures only"
fi
cp -r "$work/reports" "$work/ref-reports"
# Our fixtures (own-textonly, own-remote, own-mdx), into both trees.
"$py" "$here/compare_reference/make_fixtures.py" "$here/compare_reference/fixtures" "$work/reports" "$work/ref-reports" "$url"
"$py" - "$work/tasks.json" "${tasks[@]}" <<'PY'
import json, sys
out = []
for p in sys.argv[2:]:
    out += json.load(open(p, encoding="utf-8"))
json.dump(out, open(sys.argv[1], "w", encoding="utf-8"), ensure_ascii=False, indent=1)
PY
for d in "$work"/reports/*/*/; do
    s="$(basename "$(dirname "$d")")"; t="$(basename "$d")"
    browser=--no-browser; [ "$s" = own-mdx ] && browser=
    "$tvir" parse --json $browser "$d" > "$work/parse/${s}__${t}.json"
done
# The same page text for every cited address, on both sides; about one page in ten is
# empty (an empty `text`, as Serper returns for a page it could not read), on both
# sides too: in the mock's Serper answer and in sources.jsonl (and every address with
# /empty-page in it). An address with /failing-page in it fails: the mock's Serper
# route answers 500 and sources.jsonl records the failure (`{"url", "error"}`). A
# page is its address
# without the #fragment and utm_* parameters (one page, one text, as a real scraper
# gives: the reference asks Serper for the address as written, tvir without those).
"$py" - "$work" "$here/compare_reference" <<'PY'
import glob, hashlib, json, sys
sys.path.insert(0, sys.argv[2])
from mock_judge_pages import page_of
urls = sorted({r["url"] for f in glob.glob(sys.argv[1] + "/parse/*.json")
               for r in json.load(open(f, encoding="utf-8"))["references"] if r.get("url")})
pages = {page_of(u) for u in urls}
blank = {p for p in pages if int(hashlib.sha256(p.encode()).hexdigest(), 16) % 10 == 0 or "/empty-page" in p}
failing = {p for p in pages if "/failing-page" in p}
with open(sys.argv[1] + "/sources.jsonl", "w", encoding="utf-8") as o:
    for u in urls:
        p = page_of(u)
        if p in failing:
            o.write(json.dumps({"url": u, "error": "serper: HTTP 500: not available"}) + "\n")
            continue
        o.write(json.dumps({"url": u, "text": "" if p in blank else ("Page text of %s for the comparison. " % p) * 20}) + "\n")
print(f"compare_reference: {len(urls)} cited addresses, {len(pages)} pages, {len(blank)} of them empty, "
      f"{len(failing)} failing (Serper 500 online, a failed fetch in sources.jsonl offline)")
PY
rm -f "$work/mock-log.jsonl" "$work"/ours-*.sqlite
"$py" "$here/compare_reference/mock_judge.py" "$port" "$work/reports" "$work/parse" "$work/tasks.json" \
    "$work/sources.jsonl" "$work/mock-log.jsonl" 2> "$work/mock.err" &
mock=$!
trap 'kill "$mock" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    curl -s "$url/v1/models" > /dev/null && break
    sleep 0.2
done

# The reference: its own code, unchanged, in a copy of benchmark/ inside WORKDIR.
cp -r "$ref/benchmark" "$work/bench"
rm -rf "$work/bench/reports" "$work/bench/eval_results"
cp "$work/tasks.json" "$work/bench/data/query.json"
export COMPARE_MOCK_URL="$url" OPENAI_BASE_URL="$url/v1" OPENAI_API_KEY=mock STREAMING=false \
    EVAL_MODEL_NAME=gpt-4.1 TEMPERATURE=0 MAX_RETRIES=1 SERPER_BASE_URL="$url/serper" SERPER_API_KEY=mock
start=$(date +%s)
for sd in "$work"/ref-reports/*/; do
    s="$(basename "$sd")"
    q=$(ls "$sd")
    "$py" "$here/compare_reference/run_reference.py" "$work/bench" preprocess.py \
        --report_root_dir "$work/ref-reports" --eval_system_name "$s" --query_id $q > "$work/ref-preprocess-$s.log" 2>&1
    "$py" "$here/compare_reference/run_reference.py" "$work/bench" eval.py \
        --report_root_dir "$work/ref-reports" --result_root_dir eval_results --eval_system_name "$s" --query_id $q \
        > "$work/ref-eval-$s.log" 2>&1
done
"$py" "$here/compare_reference/run_reference.py" "$work/bench" summarize_results.py > "$work/ref-summarize.log" 2>&1
echo "compare_reference: reference evaluator done in $(( $(date +%s) - start )) s"

# tvir, the same reports and answers, twice: online (pages through the mock's Serper
# route) and offline (pages from sources.jsonl, no network, no Serper key). The MDX
# fixture needs the browser for its chart files, so it is evaluated in a second call
# into the same output folder; every other report is evaluated without it.
status=0
for mode in online offline; do
    out="$work/ours-$mode"
    if [ "$mode" = online ]; then
        net=(--cache "$work/ours-online.sqlite" --refresh-sources --allow-private)
        envs=(env SERPER_API_KEY=mock SERPER_BASE_URL="$url/serper/ours/online")
    else
        net=(--cache "$work/ours-offline.sqlite" --offline --sources "$work/sources.jsonl")
        envs=(env -u SERPER_API_KEY -u SERPER_BASE_URL)
    fi
    common=(--reports "$work/reports" --tasks "$work/tasks.json" --out "$out" --base-url "$url/run/$mode/v1"
            --judge-model gpt-4.1 --protocol reference --extraction rules --answers schema --assume-vision --quiet)
    others=()
    for sd in "$work"/reports/*/; do
        s="$(basename "$sd")"
        [ "$s" = own-mdx ] || others+=(--system "$s")
    done
    "${envs[@]}" "$tvir" eval "${common[@]}" "${net[@]}" --no-browser "${others[@]}" > "$work/ours-$mode-eval.log" 2>&1 \
        || echo "compare_reference: tvir eval ($mode) exited $? (failed units: IA and ADB of the corpus reports without a task; see $work/ours-$mode-eval.log)"
    "${envs[@]}" "$tvir" eval "${common[@]}" "${net[@]}" --system own-mdx > "$work/ours-$mode-eval-mdx.log" 2>&1 \
        || echo "compare_reference: tvir eval ($mode, own-mdx with the browser) exited $? (see $work/ours-$mode-eval-mdx.log)"
    "$tvir" summarize "$out" --format json > "$work/ours-$mode-summary.json" 2> "$work/ours-$mode-summarize.log" || true
    echo
    echo "=== tvir $mode ==="
    "$py" "$here/compare_reference/compare.py" "$work/bench/eval_results" "$out" "$work/ours-$mode-summary.json" \
        "$work/mock-log.jsonl" "$work/bench/eval_results/model_dimension_summary.xlsx" "$mode" || status=1
done
exit $status
