#!/usr/bin/env bash
# Build every release artifact of tvir-eval into OUTDIR:
#   tvir_eval-VERSION-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl  (glibc >= 2.17)
#   tvir_eval-VERSION-py3-none-musllinux_1_2_x86_64.whl                      (Alpine and other musl)
#   tvir_eval-VERSION.tar.gz                                                 (sdist; `pip install` builds it)
# and check them: `auditwheel show` must confirm each wheel's platform tag (the
# script fails otherwise), the sdist must hold what the build embeds (rubrics,
# prompts, prices, the example benchmark), `twine check --strict` must pass on all
# three, pip must build a working `tvir` from the sdist, and the manylinux wheel goes through
# scripts/check_wheel.sh (fresh virtualenv outside the checkout, no Rust on PATH; the
# musllinux wheel carries the same binary, checked by its sha256, and pip refuses a
# musllinux wheel on a glibc machine).
#
# One build serves both wheels: a static musl binary (maturin's zig linker, target
# x86_64-unknown-linux-musl) needs no shared library at all, not even libc, so it
# runs on every x86_64 Linux, glibc or musl. The musllinux wheel carries it as
# maturin builds it; the manylinux wheel is the same wheel retagged (`wheel tags`,
# which rewrites the WHEEL file and its RECORD line), so both carry byte-identical
# binaries (checked below). `auditwheel show` calls a wheel with no external library
# and no versioned symbol `manylinux_2_5`, the oldest policy it knows, which every
# newer policy includes: the check accepts a reported policy as old as the tag or
# older. This replaced a second release build for the gnu target (zig linked against
# glibc 2.17 symbols), which compiled the whole dependency tree once more (591 s
# of the last cold CI run before this change). The binary allocates with mimalloc
# (src/main.rs), since musl's own allocator made it 1.5x slower than the glibc
# build; scripts/compare_builds.sh compares the two.
#
# Usage: scripts/build_release.sh OUTDIR
# Environment:
#   PYTHON        interpreter for the tool virtualenv (default python3)
#   RELEASE_TOOLS a virtualenv that already has scripts/release-tools.txt installed
#                 (default: one is made in a temporary folder, from PyPI; .ci/run
#                 makes it in the background while clippy runs)
#   CARGO_TARGET_DIR  where cargo builds (default target/ of the checkout; the musl
#                 build goes to target/x86_64-unknown-linux-musl/, apart from the
#                 host build). The pip build of the sdist is given the same folder.
#   SKIP_SDIST_BUILD=1  do not build the sdist with `pip wheel`
#   SKIP_CHECK_WHEEL=1  do not run scripts/check_wheel.sh on the manylinux wheel
#
# Each step prints its time; a table of all steps ends the output.
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
musl=x86_64-unknown-linux-musl
manylinux_tag=manylinux_2_17_x86_64.manylinux2014_x86_64

step "tools"
tools=${RELEASE_TOOLS:-}
if [ -z "$tools" ]; then
    tools="$work/tools"
    "$python" -m venv "$tools"
    "$tools/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$repo/scripts/release-tools.txt"
fi
# maturin finds zig through the `ziglang` package of the Python on PATH.
export PATH="$tools/bin:$PATH"
maturin --version
python -m ziglang version
auditwheel --version | head -n 1
twine --version | head -n 1
python -m wheel version
if command -v rustup >/dev/null 2>&1; then
    rustup target list --installed | grep -qx "$musl" || rustup target add "$musl"
fi

rm -f "$out"/tvir_eval-"$version"-*.whl "$out"/tvir_eval-"$version".tar.gz
cd "$repo"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}
mkdir -p "$CARGO_TARGET_DIR"
export CARGO_TARGET_DIR=$(cd "$CARGO_TARGET_DIR" && pwd)

step "musllinux_1_2 wheel (zig linker, static musl)"
maturin build --release --locked --zig --target "$musl" \
    --compatibility musllinux_1_2 --out "$out"
musl_wheel=$(ls "$out"/tvir_eval-"$version"-*musllinux_1_2_x86_64.whl)

step "manylinux2014 wheel (the same static binary, retagged)"
# `wheel tags` names the file as maturin does (tags sorted: manylinux2014 first).
manylinux_wheel="$out/$(cd "$out" && python -m wheel tags --platform-tag "$manylinux_tag" "$(basename "$musl_wheel")")"
[ -f "$manylinux_wheel" ] || fail "wheel tags wrote no $manylinux_wheel"
binary_sha256() { # the sha256 of the `tvir` binary inside a wheel
    python - "$1" <<'PY'
import hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = [n for n in z.namelist() if n.endswith(".data/scripts/tvir")]
assert len(names) == 1, names
print(hashlib.sha256(z.read(names[0])).hexdigest())
PY
}
binary=$(binary_sha256 "$musl_wheel")
[ "$binary" = "$(binary_sha256 "$manylinux_wheel")" ] || fail "the two wheels carry different binaries"
echo "both wheels carry tvir ${binary:0:16}…"

step "sdist"
maturin sdist --out "$out"

# One wheel per policy, and auditwheel agrees with each tag: the policy it reports
# (the oldest the wheel satisfies) must be the tag's own or an older one of the same
# libc, which every system of the tag's policy also meets.
check_policy() { # glob, libc family (manylinux|musllinux), the tag's version (2_17, 1_2)
    shopt -s nullglob
    local found=($1)
    shopt -u nullglob
    [ "${#found[@]}" -eq 1 ] || fail "expected one wheel matching $1, found: $(ls "$out")"
    local shown policy
    shown=$(auditwheel show "${found[0]}" 2>&1) || fail "auditwheel show ${found[0]}: $shown"
    echo "$shown"
    policy=$(tr '\n' ' ' <<<"$shown" | grep -o "platform tag: *\"$2_[0-9]*_[0-9]*_x86_64\"" | grep -o "$2_[0-9_]*x86_64") \
        || fail "$(basename "${found[0]}"): auditwheel names no $2 policy"
    python - "$policy" "$2" "$3" <<'PY' || fail "$(basename "${found[0]}") is $policy for auditwheel, newer than $2_$3"
import sys
policy, family, want = sys.argv[1:]
got = tuple(int(x) for x in policy[len(family) + 1:-len("_x86_64")].split("_"))
need = tuple(int(x) for x in want.split("_"))
print(f"auditwheel: {policy}; the tag asks for {family}_{want}: {'ok' if got <= need else 'too new'}")
sys.exit(0 if got <= need else 1)
PY
}
step "auditwheel show"
check_policy "$manylinux_wheel" manylinux 2_17
check_policy "$musl_wheel" musllinux 1_2

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
    # pip refuses a musllinux wheel on this glibc machine; the musllinux wheel's
    # binary is the one checked here (same sha256, above).
    step "scripts/check_wheel.sh on the manylinux wheel"
    CHECK_WHEEL_FILE=$manylinux_wheel PYTHON="$python" "$repo/scripts/check_wheel.sh"
fi

step "done"
ls -l "$out"
printf '\nbuild_release: all passed; step times:\n%s%6d s  total\n' "$timings" "$(($(date +%s) - started))"
