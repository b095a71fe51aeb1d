#!/usr/bin/env bash
# Cold CI timings: run `.ci/run` as CI gets it, RUNS times, and print each stage's time.
#
# Each run starts from nothing the machine built before:
#   - a fresh `git clone` of REV (default HEAD; uncommitted changes are not in it, as
#     they are not on CI) in a new temporary folder, with `shared` beside it (a link
#     to this checkout's ../shared), so `.ci/run` finds ../shared/corpus as on CI;
#   - no target folder (the clone has none; CARGO_TARGET_DIR and RUSTFLAGS unset);
#   - an empty cargo home: CARGO_HOME is a new empty folder, so the registry index,
#     every crate download and git checkout start empty: the same as moving
#     ~/.cargo/registry aside, without taking it from builds running beside this one
#     (the toolchain stays where rustup keeps it, RUSTUP_HOME);
#   - empty pip, npm and XDG caches (PIP_CACHE_DIR, npm_config_cache, XDG_CACHE_HOME);
#   - with --cold-system, also what `.ci/run` installs on a fresh CI machine removed
#     first: Chromium and its fonts (apt-get purge, then autoremove of what they
#     pulled in) and the musl Rust target (rustup target remove), so those installs
#     are timed too. Without it, the report says which of them were already present.
#
# The log of every run is kept in OUTDIR (default target/ci-times); the clone and its
# target folder are removed after each run unless --keep. The load average is sampled
# every 15 s, since on a shared 2-core machine it explains most of the spread.
#
# With --newcomer, each run is instead the README's two commands as a newcomer runs
# them in a fresh clone (the same empty cargo home and caches): the Quick start
# command, then the test command with the target folder it left, each timed. The
# commands are read out of README.md (the `cargo run` line under "Quick start" and
# the `cargo test` line after it), so what is timed is what the README says.
# Chromium must be installed and the chart libraries are fetched first (untimed), so
# the browser tests run rather than skip.
#
# Usage: scripts/ci_times.sh [-n RUNS] [-r REV] [-o OUTDIR] [--cold-system] [--keep] [--newcomer]
# Prints a Markdown table: one row per `.ci/run` stage (or README command), one
# column per run, then the total, the tests that ran (passed / failed / ignored, and
# how many test binaries) and the load.
set -euo pipefail

runs=1 rev=HEAD outdir="" cold_system=0 keep=0 newcomer=0
while [ $# -gt 0 ]; do
    case $1 in
    -n) runs=$2; shift 2 ;;
    -r) rev=$2; shift 2 ;;
    -o) outdir=$2; shift 2 ;;
    --cold-system) cold_system=1; shift ;;
    --keep) keep=1; shift ;;
    --newcomer) newcomer=1; shift ;;
    *) echo "usage: $0 [-n RUNS] [-r REV] [-o OUTDIR] [--cold-system] [--keep] [--newcomer]" >&2; exit 2 ;;
    esac
done

repo=$(cd "$(dirname "$0")/.." && pwd)
shared=$(cd "$repo/.." && pwd)/shared
[ -d "$shared" ] || echo "ci_times: warning: no $shared; the corpus tests will skip" >&2
commit=$(git -C "$repo" rev-parse "$rev")
outdir=${outdir:-$repo/target/ci-times}
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
musl=x86_64-unknown-linux-musl
sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"

# What `.ci/run` installs on a fresh machine, removed so that a run installs it again.
make_system_cold() {
    if dpkg -s chromium >/dev/null 2>&1 || dpkg -s fonts-wqy-microhei >/dev/null 2>&1; then
        $sudo_ apt-get purge -y -qq chromium chromium-common chromium-sandbox fonts-wqy-microhei >/dev/null 2>&1 || true
        $sudo_ apt-get autoremove --purge -y -qq >/dev/null 2>&1 || true
    fi
    if rustup target list --installed 2>/dev/null | grep -qx "$musl"; then
        rustup target remove "$musl" >/dev/null 2>&1 || true
    fi
}

system_state() {
    local s=""
    command -v chromium >/dev/null && s+="chromium present; " || s+="chromium absent; "
    rustup target list --installed 2>/dev/null | grep -qx "$musl" && s+="musl target present" || s+="musl target absent"
    echo "$s"
}

# The README's two commands, timed in the format of `.ci/run`'s stage lines.
readme_commands() {
    local quick tests t0 t1 started
    quick=$(grep -m1 '^cargo run .* -- eval ' README.md)
    tests=$(grep -m1 '^TVIR_CORPUS_DIR=.* cargo test' README.md)
    [ -n "$quick" ] && [ -n "$tests" ] || { echo "ci_times: README commands not found"; return 1; }
    command -v chromium >/dev/null || { echo "ci_times: --newcomer needs Chromium installed"; return 1; }
    scripts/fetch_chart_libs.sh target/chart-libs
    export TVIR_CHART_LIBS="$PWD/target/chart-libs"
    started=$(date +%s)
    echo "ci: == README Quick start: $quick"
    t0=$(date +%s); bash -c "$quick"; t1=$(date +%s)
    echo "ci: Quick start done in $((t1 - t0)) s (at $((t1 - started)) s)"
    echo "ci: == README test command: $tests"
    t0=$(date +%s); bash -c "$tests"; t1=$(date +%s)
    echo "ci: test command done in $((t1 - t0)) s (at $((t1 - started)) s)"
    echo "ci: all passed in $((t1 - started)) s"
}

declare -a logs states loads
for ((i = 1; i <= runs; i++)); do
    [ "$cold_system" = 1 ] && make_system_cold
    states[$i]=$(system_state)
    work=$(mktemp -d "${TMPDIR:-/tmp}/tvir-ci-times.XXXXXX")
    git clone --quiet --no-hardlinks "$repo" "$work/main"
    git -C "$work/main" checkout --quiet --detach "$commit"
    ln -s "$shared" "$work/shared"
    mkdir -p "$work/cargo-home" "$work/pip-cache" "$work/npm-cache" "$work/xdg-cache"
    for f in config config.toml; do
        [ -f "$HOME/.cargo/$f" ] && cp "$HOME/.cargo/$f" "$work/cargo-home/"
    done
    log="$outdir/run-$(date +%Y%m%d-%H%M%S)-${commit:0:7}-$i.log"
    logs[$i]=$log
    (while :; do cut -d' ' -f1 /proc/loadavg; sleep 15; done) >"$work/load" &
    sampler=$!
    echo "ci_times: run $i of $runs, ${commit:0:7}, ${states[$i]}; log $log" >&2
    rc=0
    (
        cd "$work/main"
        unset CARGO_TARGET_DIR RUSTFLAGS CARGO_BUILD_TARGET CARGO_INCREMENTAL TVIR_CHART_LIBS TVIR_BROWSER TVIR_CORPUS_DIR
        export CARGO_HOME="$work/cargo-home" RUSTUP_HOME="$rustup_home" \
            PIP_CACHE_DIR="$work/pip-cache" npm_config_cache="$work/npm-cache" \
            XDG_CACHE_HOME="$work/xdg-cache"
        if [ "$newcomer" = 1 ]; then
            readme_commands
        else
            .ci/run
        fi
    ) >"$log" 2>&1 || rc=$?
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    loads[$i]=$(sort -n "$work/load" | awk '{a[NR]=$1; s+=$1} END {if (NR) printf "%.1f-%.1f (mean %.1f)", a[1], a[NR], s/NR}')
    echo "ci_times: run $i exited $rc" >>"$log"
    [ "$rc" = 0 ] || echo "ci_times: run $i FAILED (exit $rc); see $log" >&2
    if [ "$keep" = 1 ]; then
        echo "ci_times: kept $work" >&2
    else
        rm -rf "$work"
    fi
done

# The table: stages in the order the first log names them.
python3 - "$commit" "$runs" "${logs[@]}" "${states[@]}" "${loads[@]}" <<'EOF'
import re, sys
commit, runs = sys.argv[1], int(sys.argv[2])
logs = sys.argv[3:3 + runs]
states = sys.argv[3 + runs:3 + 2 * runs]
loads = sys.argv[3 + 2 * runs:3 + 3 * runs]
stage_re = re.compile(r"^ci: (.*) done in (\d+) s \(at \d+ s\)$")
total_re = re.compile(r"^ci: all passed in (\d+) s$")
result_re = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
order, times, totals, tests = [], [], [], []
for path in logs:
    stages, total = {}, None
    passed = failed = ignored = binaries = 0
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if m := stage_re.match(line):
            stages[m[1]] = int(m[2])
            if m[1] not in order:
                order.append(m[1])
        elif m := total_re.match(line):
            total = int(m[1])
        elif m := result_re.match(line):
            passed += int(m[1]); failed += int(m[2]); ignored += int(m[3]); binaries += 1
    times.append(stages); totals.append(total); tests.append((passed, failed, ignored, binaries))
print(f"\nci_times: {commit[:7]}, {runs} cold run(s) of .ci/run\n")
print("| stage | " + " | ".join(f"run {i + 1}" for i in range(runs)) + " |")
print("| --- |" + " --- |" * runs)
for s in order:
    print(f"| {s} | " + " | ".join(f"{t[s]} s" if s in t else "-" for t in times) + " |")
print("| **total** | " + " | ".join(f"**{t} s**" if t is not None else "**failed**" for t in totals) + " |")
print("| tests passed / failed / ignored (result lines) | " + " | ".join(f"{p} / {f} / {i} ({b})" for p, f, i, b in tests) + " |")
print("| load average (1 min, min-max) | " + " | ".join(loads) + " |")
print("| system at start | " + " | ".join(states) + " |")
for path in logs:
    print(f"log: {path}")
sys.exit(0 if all(t is not None for t in totals) else 1)
EOF
