#!/usr/bin/env bash
# The self-check's mutation harness (tests/selfcheck_mutation.rs) over the fixtures,
# the corpus (TVIR_CORPUS_DIR) and any folders of annotated public reports given as
# arguments; prints the table per style (parsed / flagged / silent misses) and the
# false alarms on the unmutated reports. TVIR_MUTATE_DUMP=DIR writes every mutant.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ "$#" -gt 0 ]; then
  TVIR_MUTATE_DIRS=$(IFS=:; echo "$*")
  export TVIR_MUTATE_DIRS
fi
cd "$ROOT"
exec cargo test -q -p tvir-eval --test suite selfcheck_mutation:: -- --nocapture
