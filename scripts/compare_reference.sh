#!/usr/bin/env bash
# Runs the public reference evaluator (NJU-LINK/TVIR benchmark/, commit c48f1ed) and
# `tvir eval --protocol reference --extraction rules` on the same reports with the
# same judge answers, and prints every per-report, per-metric and per-system score
# that differs (issue 36, requirement 5). Not part of the test suite.
#
#   scripts/compare_reference.sh REF_CHECKOUT VENV [WORKDIR]
#
# REF_CHECKOUT: a checkout of the reference repository (holding benchmark/eval.py);
# VENV: a Python venv with what it imports (pip install openai python-dotenv
# json_repair tqdm opencv-python-headless numpy pillow imagehash requests pandas
# openpyxl). Reports: the example (examples/system-a, system-b) and, when
# TVIR_CORPUS_DIR (or ../shared/corpus) is found, the corpus reports, copied into
# WORKDIR (default: a new temporary folder). The corpus' tvir/claude-4-5-000001 is
# copied as tvir/000001 so both sides find its task. Nothing the reference writes
# lands in this checkout.
#
# The judge is scripts/compare_reference/mock_judge.py: answers depend only on the
# metric and the unit (fact text, nearest figure file, report, checklist item), so
# both sides get the same answers; the reference's extraction prompts are answered
# with `tvir parse --json`, and both sides read the same page text (the reference
# through its Serper client, tvir through `--fetcher serper`, both from the mock).
# Overrides beside --protocol reference: --extraction rules (the units must be the
# same), --no-browser (the reference cannot draw script charts), --assume-vision, and
# --answers schema: the mock tells tvir's requests and their metric apart by the
# schema's name; how an answer is asked for changes no score given the same answer.
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
rm -rf "$work/reports" "$work/ref-reports" "$work/bench" "$work/ours" "$work/parse"
mkdir -p "$work/reports" "$work/parse"
cp -r examples/system-a examples/system-b "$work/reports/"
tasks=(examples/tasks.json)
if [ -d "$TVIR_CORPUS_DIR/reports" ]; then
    cp -r "$TVIR_CORPUS_DIR"/reports/* "$work/reports/"
    [ -d "$work/reports/tvir/claude-4-5-000001" ] && mv "$work/reports/tvir/claude-4-5-000001" "$work/reports/tvir/000001"
    tasks+=("$TVIR_CORPUS_DIR/tvir-query.json")
else
    echo "compare_reference: no corpus at $TVIR_CORPUS_DIR: the example only"
fi
"$py" - "$work/tasks.json" "${tasks[@]}" <<'PY'
import json, sys
out = []
for p in sys.argv[2:]:
    out += json.load(open(p, encoding="utf-8"))
json.dump(out, open(sys.argv[1], "w", encoding="utf-8"), ensure_ascii=False, indent=1)
PY
for d in "$work"/reports/*/*/; do
    s="$(basename "$(dirname "$d")")"; t="$(basename "$d")"
    "$tvir" parse --json --no-browser "$d" > "$work/parse/${s}__${t}.json"
done
# The same page text for every cited address, on both sides.
"$py" - "$work" <<'PY'
import glob, json, sys
urls = sorted({r["url"] for f in glob.glob(sys.argv[1] + "/parse/*.json")
               for r in json.load(open(f, encoding="utf-8"))["references"] if r.get("url")})
with open(sys.argv[1] + "/sources.jsonl", "w", encoding="utf-8") as o:
    for u in urls:
        o.write(json.dumps({"url": u, "text": ("Page text of %s for the comparison. " % u) * 20}) + "\n")
PY
port="$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
rm -f "$work/mock-log.jsonl" "$work/ours-cache.sqlite"
"$py" "$here/compare_reference/mock_judge.py" "$port" "$work/reports" "$work/parse" "$work/tasks.json" \
    "$work/sources.jsonl" "$work/mock-log.jsonl" 2> "$work/mock.err" &
mock=$!
trap 'kill "$mock" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    curl -s "http://127.0.0.1:$port/v1/models" > /dev/null && break
    sleep 0.2
done
url="http://127.0.0.1:$port"

# The reference: its own code, unchanged, in a copy of benchmark/ inside WORKDIR.
cp -r "$ref/benchmark" "$work/bench"
rm -rf "$work/bench/reports" "$work/bench/eval_results"
cp "$work/tasks.json" "$work/bench/data/query.json"
cp -r "$work/reports" "$work/ref-reports"
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

# tvir, the same reports and answers.
SERPER_BASE_URL="$url/serper/ours" "$tvir" eval --reports "$work/reports" --tasks "$work/tasks.json" \
    --out "$work/ours" --base-url "$url/v1" --judge-model gpt-4.1 --protocol reference --extraction rules \
    --answers schema --no-browser --assume-vision --cache "$work/ours-cache.sqlite" --refresh-sources --quiet > "$work/ours-eval.log" 2>&1 \
    || echo "compare_reference: tvir eval exited $? (failed units: the corpus reports without a task; see $work/ours-eval.log)"
"$tvir" summarize "$work/ours" --format json > "$work/ours-summary.json" 2> "$work/ours-summarize.log" || true
"$py" "$here/compare_reference/compare.py" "$work/bench/eval_results" "$work/ours" "$work/ours-summary.json" \
    "$work/mock-log.jsonl" "$work/bench/eval_results/model_dimension_summary.xlsx"
