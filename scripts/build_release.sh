#!/usr/bin/env bash
# Build every release artifact of tvir-eval into OUTDIR:
#   tvir_eval-VERSION-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl  (glibc >= 2.17)
#   tvir_eval-VERSION-py3-none-musllinux_1_2_x86_64.whl                      (Alpine and other musl)
#   tvir_eval-VERSION.tar.gz                                                 (sdist; `pip install` builds it)
# and check them: `auditwheel show` must report the intended policy for each wheel
# (the script fails otherwise), the sdist must hold what the build embeds (rubrics,
# prompts, prices, the example benchmark), and the manylinux wheel goes through
# scripts/check_wheel.sh (fresh virtualenv outside the checkout, no Rust on PATH).
#
# Why maturin's zig linker and not `auditwheel repair`: a binary linked on this
# machine (Debian 12, glibc 2.36) references GLIBC_2.34 symbols, so `auditwheel show`
# calls it manylinux_2_34 and `auditwheel repair --plat manylinux2014_x86_64`
# refuses it ("too-recent versioned symbols"); repair only grafts libraries, it
# cannot lower the glibc a binary needs. The zig linker links against glibc 2.17
# symbol versions from any host, and links musl statically, without a container.
#
# Usage: scripts/build_release.sh OUTDIR
# Environment:
#   PYTHON        interpreter for the tool virtualenv (default python3)
#   RELEASE_TOOLS a virtualenv that already has maturin, ziglang and auditwheel
#                 (default: one is made in a temporary folder, from PyPI)
#   CARGO_TARGET_DIR  where cargo builds (default target/ of the checkout; the two
#                 targets build under target/<triple>/, apart from the host build).
#                 The pip build of the sdist is given the same folder: it builds for
#                 the host into target/release/, so after `cargo build --release` of
#                 the checkout (CI's Quick start step) only the tvir crates are
#                 compiled again, from the sdist's sources; no dependency is.
#   SKIP_SDIST_BUILD=1  do not build the sdist with `pip wheel` (a full host release
#                 build when target/release/ is cold; on by default)
#   SKIP_CHECK_WHEEL=1  do not run scripts/check_wheel.sh on the manylinux wheel
#
# `twine check --strict` (twine from PyPI, in the tool virtualenv) checks every
# artifact's metadata as PyPI will. Each step prints its time; a table of all steps
# ends the output.
#
# Upload (not done here): `twine upload OUTDIR/*` with a PyPI token, see README.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/tvir-release.XXXXXX")
trap 'rm -rf "$work"' EXIT
timings=""
last_name="" last_at=0
step() { # closes the previous step's timing, opens the next
    local now
    now=$(date +%s)
    [ -z "$last_name" ] || timings+=$(printf '%6d s  %s' "$((now - last_at))" "$last_name")$'\n'
    last_name=$* last_at=$now
    printf '\n== %s (at %s s)\n' "$*" "$((now - started))"
}
fail() { printf 'build_release: FAILED: %s\n' "$*" >&2; exit 1; }
started=$(date +%s)

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/Cargo.toml" | head -n 1)
[ -n "$version" ] || fail "no version in $repo/Cargo.toml"
gnu=x86_64-unknown-linux-gnu
musl=x86_64-unknown-linux-musl

step "tools"
tools=${RELEASE_TOOLS:-}
if [ -z "$tools" ]; then
    tools="$work/tools"
    "$python" -m venv "$tools"
    "$tools/bin/python" -m pip install --quiet --disable-pip-version-check \
        "maturin>=1.9,<2" "ziglang>=0.13" "auditwheel>=6" "twine>=6.1"
fi
# maturin finds zig through the `ziglang` package of the Python on PATH.
export PATH="$tools/bin:$PATH"
maturin --version
python -m ziglang version
auditwheel --version | head -n 1
twine --version | head -n 1
if command -v rustup >/dev/null 2>&1; then
    rustup target list --installed | grep -qx "$musl" || rustup target add "$musl"
fi

rm -f "$out"/tvir_eval-"$version"-*.whl "$out"/tvir_eval-"$version".tar.gz
cd "$repo"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}
mkdir -p "$CARGO_TARGET_DIR"
export CARGO_TARGET_DIR=$(cd "$CARGO_TARGET_DIR" && pwd)

step "manylinux2014 wheel (zig linker, glibc 2.17 symbols)"
maturin build --release --locked --zig --target "$gnu" \
    --compatibility manylinux2014 --out "$out"

step "musllinux_1_2 wheel (zig linker, static musl)"
maturin build --release --locked --zig --target "$musl" \
    --compatibility musllinux_1_2 --out "$out"

step "sdist"
maturin sdist --out "$out"

# One wheel per policy, and auditwheel agrees with each tag.
check_policy() { # glob, expected platform tag in `auditwheel show`
    shopt -s nullglob
    local found=($1)
    shopt -u nullglob
    [ "${#found[@]}" -eq 1 ] || fail "expected one wheel matching $1, found: $(ls "$out")"
    local shown
    shown=$(auditwheel show "${found[0]}" 2>&1) || fail "auditwheel show ${found[0]}: $shown"
    echo "$shown"
    grep -q "\"$2\"" <<<"$shown" || fail "$(basename "${found[0]}") is not $2 for auditwheel"
}
step "auditwheel show"
check_policy "$out/tvir_eval-$version-*manylinux2014_x86_64*.whl" manylinux_2_17_x86_64
check_policy "$out/tvir_eval-$version-*musllinux_1_2_x86_64.whl" musllinux_1_2_x86_64

step "sdist contents"
sdist="$out/tvir_eval-$version.tar.gz"
[ -f "$sdist" ] || fail "no $sdist"
tar -tzf "$sdist" >"$work/sdist.txt"
for needed in pyproject.toml Cargo.toml Cargo.lock prices.toml rubrics/ prompts/ examples/tasks.json \
    crates/judge/Cargo.toml crates/engine/Cargo.toml src/main.rs; do
    grep -q "^tvir_eval-$version/$needed" "$work/sdist.txt" || fail "the sdist lacks $needed"
done
echo "$(wc -l <"$work/sdist.txt") files in $(basename "$sdist")"

step "twine check --strict (metadata as PyPI reads it)"
twine check --strict "$out"/tvir_eval-"$version"-*.whl "$sdist" || fail "twine check"

if [ "${SKIP_SDIST_BUILD:-0}" != 1 ]; then
    step "pip builds the sdist (fresh virtualenv, maturin from PyPI, CARGO_TARGET_DIR shared)"
    # Unpacked with fresh modification times (the sdist's are fixed in 2006), so
    # cargo compiles every tvir crate from the sdist's own sources; only the
    # dependencies come from CARGO_TARGET_DIR. pip then builds that folder exactly as
    # `pip install tvir_eval-VERSION.tar.gz` does after unpacking.
    "$python" -m venv "$work/sdist-venv"
    mkdir -p "$work/sdist-src"
    tar -xzmf "$sdist" -C "$work/sdist-src"
    "$work/sdist-venv/bin/python" -m pip wheel --quiet --disable-pip-version-check \
        --no-deps --wheel-dir "$work/from-sdist" "$work/sdist-src/tvir_eval-$version"
    ls "$work/from-sdist"/tvir_eval-"$version"-*.whl >/dev/null || fail "pip built no wheel from the sdist"
    "$work/sdist-venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index \
        "$work"/from-sdist/tvir_eval-"$version"-*.whl
    [ "$("$work/sdist-venv/bin/tvir" --version)" = "tvir $version" ] || fail "tvir from the sdist"
fi

if [ "${SKIP_CHECK_WHEEL:-0}" != 1 ]; then
    step "scripts/check_wheel.sh on the manylinux wheel"
    CHECK_WHEEL_FILE=$(ls "$out"/tvir_eval-"$version"-*manylinux2014_x86_64*.whl) \
        PYTHON="$python" "$repo/scripts/check_wheel.sh"
fi

step "done"
ls -l "$out"
printf '\nbuild_release: all passed; step times:\n%s%6d s  total\n' "$timings" "$(($(date +%s) - started))"
