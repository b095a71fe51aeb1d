#!/usr/bin/env bash
# Wall time and judge-call count of `tvir eval` on TVIR's sample report against a
# judge answering every request after 100 ms (issue 5 target: <= 6 s, <= 144 calls).
# Usage: scripts/perf_sample.sh   (TVIR_CORPUS_DIR defaults to the nearest
# shared/corpus above the checkout, see scripts/corpus_dir.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/corpus_dir.sh
cargo bench --bench eval_sample -- --noplot 2>&1 | grep -E "sample report:|time:|skipped"
