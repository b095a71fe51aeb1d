#!/usr/bin/env bash
# Build times of the checkout: a cold release build into a fresh target folder, then
# the rebuild after one line changes in each of three places (the command layer, the
# parser, the judge client), in the release and the dev profile. The line is a
# comment appended to the file and taken out again afterwards, so the tree is left
# as it was. Crates are downloaded first (`cargo fetch`), so the times are compiling
# only. Prints one line per measurement: `what seconds`.
#
# Usage: scripts/build_times.sh [CHECKOUT] [TARGET_DIR]
#   CHECKOUT    the tree to measure (default: this checkout); an older commit can be
#               measured by passing a worktree of it
#   TARGET_DIR  where to build (default: a new temporary folder, removed at the end)
# Environment:
#   TOUCH_CLI, TOUCH_PARSER, TOUCH_JUDGE  the files to change, relative to CHECKOUT
#               (defaults: the workspace's src/eval.rs, crates/report/src/lib.rs,
#               crates/judge/src/client/mod.rs; the single-crate layout before the split
#               had src/cli/eval.rs, src/report/citations.rs, src/judge/client.rs)
#   SKIP_COLD=1 skip the cold build (TARGET_DIR must then hold a release build)
set -euo pipefail

repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
own_target=0
if [ $# -ge 2 ]; then
    target=$2
else
    target=$(mktemp -d "${TMPDIR:-/tmp}/tvir-build-times.XXXXXX")
    own_target=1
fi
touch_cli=${TOUCH_CLI:-src/eval.rs}
touch_parser=${TOUCH_PARSER:-crates/report/src/lib.rs}
touch_judge=${TOUCH_JUDGE:-crates/judge/src/client/mod.rs}
for f in "$touch_cli" "$touch_parser" "$touch_judge"; do
    [ -f "$repo/$f" ] || { echo "build_times: no file $repo/$f" >&2; exit 2; }
done

cleanup() {
    for f in "$touch_cli" "$touch_parser" "$touch_judge"; do
        [ -f "$repo/$f.build-times" ] && mv "$repo/$f.build-times" "$repo/$f"
    done
    [ "$own_target" = 1 ] && rm -rf "$target"
    return 0
}
trap cleanup EXIT

export CARGO_TARGET_DIR=$target CARGO_TERM_COLOR=never
cd "$repo"
cargo fetch --locked >/dev/null 2>&1

# seconds of one cargo build with the given flags
timed() {
    local start end
    start=$(date +%s.%N)
    cargo build --locked --quiet "$@" >/dev/null 2>&1
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}

if [ "${SKIP_COLD:-0}" != 1 ]; then
    echo "cold_release $(timed --release)"
fi
# The dev build the rebuilds start from (not a measurement).
cargo build --locked --quiet >/dev/null 2>&1

for profile in release dev; do
    flag=()
    [ "$profile" = release ] && flag=(--release)
    for place in cli parser judge; do
        var="touch_$place"
        file=${!var}
        cp "$repo/$file" "$repo/$file.build-times"
        echo "// build_times.sh" >>"$repo/$file"
        echo "rebuild_${profile}_${place} $(timed "${flag[@]}")"
        mv "$repo/$file.build-times" "$repo/$file"
        # Back to the unchanged tree before the next measurement.
        cargo build --locked --quiet "${flag[@]}" >/dev/null 2>&1
    done
done
