#!/usr/bin/env bash
# Issue 13, requirement 7: input tokens, prefix-cacheable tokens and billable cost of
# TVIR's sample report for live / batch / batch + prefix caching, and the CPU cost of
# the batch machinery for 10,000 requests. "Today's" prompts are the templates at
# BASELINE_REV (default: the commit before the prefix-cache layout).
# Usage: scripts/batch_cost.sh   (TVIR_CORPUS_DIR defaults to the nearest
# shared/corpus above the checkout, see scripts/corpus_dir.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/corpus_dir.sh
rev="${BASELINE_REV:-4020d51}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for f in $(git ls-tree --name-only "$rev" prompts/); do
  git show "$rev:$f" > "$tmp/$(basename "$f")"
done
TVIR_BASELINE_PROMPTS="$tmp" cargo bench --bench batch_cost
