#!/usr/bin/env bash
# Build the Python wheel (maturin, binary mode), install it into a fresh virtualenv
# in a temporary folder outside the checkout, and run the installed `tvir` there with
# no Rust toolchain on PATH: `tvir --version`, `tvir parse` on a fixture, and the
# embedded example evaluation (`tvir eval --example OUT`), checking the output layout
# of INTERFACE.md. Exits non-zero on any failure.
#
# Usage: scripts/check_wheel.sh [WHEEL_DIR]
#   WHEEL_DIR  keep the built wheel there (default: only inside the temporary folder)
# Environment:
#   PYTHON     interpreter for the virtualenvs (default python3)
#   MATURIN    maturin to build with (default: `maturin` on PATH, else installed from
#              PyPI into a throw-away virtualenv)
#   CHECK_WHEEL_PROFILE  cargo profile of the build (default release; `dev` reuses a
#              debug build for a quick check of this script)
#   CHECK_WHEEL_FILE  check this wheel instead of building one (scripts/build_release.sh
#              passes its manylinux wheel)
#
# The wheel is built with the release profile into the checkout's own target/, so
# after `cargo build --release` (or the Quick start's `cargo run --release`) only the
# `tvir` binary is relinked, no dependency is compiled again.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/tvir-wheel-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
step() { printf '\n== %s\n' "$*"; }
fail() { printf 'check_wheel: FAILED: %s\n' "$*" >&2; exit 1; }

case "$work" in
"$repo"/*) fail "temporary folder $work is inside the checkout $repo" ;;
esac

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/Cargo.toml" | head -n 1)
[ -n "$version" ] || fail "no version in $repo/Cargo.toml"

if [ -n "${CHECK_WHEEL_FILE:-}" ]; then
    [ -f "$CHECK_WHEEL_FILE" ] || fail "CHECK_WHEEL_FILE $CHECK_WHEEL_FILE is not a file"
    mkdir -p "$work/dist"
    cp "$CHECK_WHEEL_FILE" "$work/dist/"
else
step "maturin"
maturin=${MATURIN:-}
if [ -z "$maturin" ]; then
    if command -v maturin >/dev/null 2>&1; then
        maturin=maturin
    else
        "$python" -m venv "$work/tools"
        "$work/tools/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.9,<2"
        maturin="$work/tools/bin/maturin"
    fi
fi
"$maturin" --version

profile=${CHECK_WHEEL_PROFILE:-release}
step "build the wheel ($profile profile, target/ of the checkout)"
started=$(date +%s)
(cd "$repo" && "$maturin" build --profile "$profile" --locked --out "$work/dist")
echo "wheel built in $(($(date +%s) - started)) s"
fi
shopt -s nullglob
wheels=("$work"/dist/tvir_eval-"$version"-*.whl)
shopt -u nullglob
[ "${#wheels[@]}" -eq 1 ] || fail "expected one tvir_eval-$version wheel in $work/dist, found: $(ls "$work/dist")"
wheel=${wheels[0]}
ls -l "$wheel"
# The wheel carries the binary and metadata, and no Python code.
"$python" - "$wheel" <<'EOF' || fail "wheel contents"
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
print("\n".join(names))
scripts = [n for n in names if n.endswith(".data/scripts/tvir") or n.endswith(".data/scripts/tvir.exe")]
assert len(scripts) == 1, f"no tvir binary among the wheel's scripts: {names}"
python_files = [n for n in names if n.endswith(".py")]
assert not python_files, f"unexpected Python files: {python_files}"
EOF
if [ $# -ge 1 ]; then
    mkdir -p "$1"
    cp "$wheel" "$1"/
    echo "wheel kept in $1"
fi

step "install into a fresh virtualenv in $work"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$wheel"

# From here on: only the virtualenv and the system's own programs on PATH (no cargo,
# no rustc), a scratch HOME, the working directory outside the checkout.
mkdir -p "$work/run" "$work/home"
cp -r "$repo/tests/fixtures/reports/tvir_html_figures" "$work/run/fixture"
run() {
    (cd "$work/run" && env -i HOME="$work/home" PATH="$work/venv/bin:/usr/bin:/bin" LANG=C.UTF-8 "$@")
}
run sh -c '! command -v cargo && ! command -v rustc' >/dev/null \
    || fail "a Rust toolchain is still on PATH for the installed tvir"
[ "$(run sh -c 'command -v tvir')" = "$work/venv/bin/tvir" ] || fail "tvir is not the virtualenv's"

step "tvir --version"
got=$(run tvir --version) || fail "tvir --version exited non-zero"
echo "$got"
[ "$got" = "tvir $version" ] || fail "tvir --version printed '$got', expected 'tvir $version'"

step "tvir parse (fixture copied outside the checkout)"
run tvir parse fixture --json >"$work/parse.json" || fail "tvir parse exited non-zero"
"$python" - "$work/parse.json" <<'EOF' || fail "tvir parse output"
import json, sys
doc = json.load(open(sys.argv[1]))
for key in ("references", "facts", "figures", "structural_errors"):
    assert key in doc, f"no {key!r} in the parse output"
assert doc["references"], "no reference found"
assert doc["figures"], "no figure found"
print(f"{len(doc['references'])} references, {len(doc['facts'])} facts, {len(doc['figures'])} figures")
EOF

step "tvir eval --example OUT (embedded example, no judge)"
run tvir eval --example out --quiet || fail "tvir eval --example exited non-zero"
"$python" - "$work/run/out" <<'EOF' || fail "tvir eval --example output layout"
import json, os, sys
out = sys.argv[1]
metrics = ["citation_support", "instruction_alignment", "writing_quality",
           "analytical_depth_breadth", "factual_logical_consistency",
           "multimodal_composition", "chart_quality", "image_quality", "figure_quality",
           "figure_caption_quality", "figure_context_integration",
           "chart_source_consistency"]
assert os.path.isfile(os.path.join(out, "summary.json")), "no summary.json"
reports = 0
for system in ("system-a", "system-b"):
    for task in ("ex001", "ex002", "ex003"):
        folder = os.path.join(out, system, task, "no-judge")
        for metric in metrics:
            doc = json.load(open(os.path.join(folder, metric + ".json")))
            missing = {"normalized_score", "item_count", "scored_item_count",
                       "evaluation_results"} - set(doc)
            assert not missing, f"{folder}/{metric}.json lacks {missing}"
            score = doc["normalized_score"]
            assert score is None or 0.0 <= score <= 1.0, f"{folder}/{metric}.json: {score}"
        json.load(open(os.path.join(folder, "report.json")))
        reports += 1
print(f"{reports} reports x {len(metrics)} metric files in the reference layout")
EOF

step "check_wheel: all passed ($(basename "$wheel"))"
