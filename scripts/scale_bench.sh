#!/usr/bin/env bash
# Scale bench (issue #14): `tvir eval` on REPORTS copies of the corpus reports (10
# systems x 100 tasks for 1000) against the in-process mock judge at 200 ms and
# --concurrency 64: calls, wall vs judge bound, peak RSS, cached re-run, stages.
# Usage: scripts/scale_bench.sh [REPORTS]   (TVIR_CORPUS_DIR defaults to the nearest
# shared/corpus above the checkout, see scripts/corpus_dir.sh)
# `tvir summarize` at 10,000 reports (100 systems x 100 tasks) in every format, with
# wall, CPU, peak RSS and the load: SCALE_SUMMARY_COPIES=10 SCALE_WARM_RUNS=0
# SCALE_LATENCY_MS=50 scripts/scale_bench.sh 1000 (each of the 1,000 outputs' 10
# systems hard-linked 10 times), or SCALE_SUMMARY_ONLY=OUT SCALE_SUMMARY_COPIES=10
# on a kept 1,000-report output (SCALE_KEEP=1).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/corpus_dir.sh
export SCALE_REPORTS="${1:-${SCALE_REPORTS:-100}}"
export SCALE_LATENCY_MS="${SCALE_LATENCY_MS:-200}"
export SCALE_CONCURRENCY="${SCALE_CONCURRENCY:-64}"
cargo bench --bench scale
