#!/usr/bin/env bash
# Rating-study bench (issue 47): `tvir rate export` of 800 reports (8 systems x 100
# tasks, copies of the shipped example's six reports with their pictures), then a
# Label Studio JSON export of 2,400 annotations (3 raters x 800 tasks x ta, va,
# overall; written in Label Studio's export format by this script) read back by
# `tvir rate import` and by `tvir agree` against a judge score CSV. Prints wall time
# and peak RSS of each step (GNU time) and the study folder's size.
# Usage: scripts/rating_bench.sh [SYSTEMS] [TASKS]   (default 8 100; TVIR=path/to/tvir,
# default target/release/tvir, built if missing; RATING_BENCH_KEEP=1 keeps the folder)
set -euo pipefail
cd "$(dirname "$0")/.."
SYSTEMS="${1:-8}"
TASKS="${2:-100}"
TVIR="${TVIR:-target/release/tvir}"
[ -x "$TVIR" ] || cargo build --release --locked --bin tvir
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "needs GNU time at /usr/bin/time" >&2; exit 2; }
WORK="$(mktemp -d)"
[ "${RATING_BENCH_KEEP:-}" = 1 ] && echo "keeping $WORK" || trap 'rm -rf "$WORK"' EXIT

python3 - "$WORK" "$SYSTEMS" "$TASKS" <<'PY'
import json, os, random, shutil, sys
work, systems, tasks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
examples = json.load(open("examples/tasks.json"))
sources = [os.path.join("examples", s, t["id"]) for s in ("system-a", "system-b") for t in examples]
out_tasks = []
for i in range(tasks):
    t = dict(examples[i % len(examples)])
    t["id"] = f"t{i + 1:03d}"
    out_tasks.append(t)
json.dump(out_tasks, open(os.path.join(work, "tasks.json"), "w"))
n = 0
for s in range(systems):
    for i in range(tasks):
        shutil.copytree(sources[n % len(sources)], os.path.join(work, "reports", f"sys{s + 1}", f"t{i + 1:03d}"))
        n += 1
# The judge's scores and three raters' answers, as Label Studio exports them.
rng = random.Random(1)
judge = ["system,task_id,ta,va,overall"]
export = []
ann = 0
for s in range(systems):
    for i in range(tasks):
        sysname, tid = f"sys{s + 1}", f"t{i + 1:03d}"
        base = rng.uniform(30, 90)
        judge.append(f"{sysname},{tid},{base:.1f},{base - 5:.1f},{base - 2:.1f}")
        anns = []
        for rater in (1, 2, 3):
            ann += 1
            res = [{"from_name": d, "to_name": "report", "type": "number",
                    "value": {"number": max(0, min(100, round(base + off + rng.gauss(0, 8))))}}
                   for d, off in (("ta", 0), ("va", -5), ("overall", -2))]
            anns.append({"id": ann, "completed_by": rater, "result": res, "was_cancelled": False})
        ref = (sysname + "\x1f" + tid).encode().hex()
        export.append({"id": len(export) + 1, "data": {"tvir_ref": ref, "query": "q", "report": "<p>r</p>"},
                       "meta": {"system": sysname, "task_id": tid}, "annotations": anns})
open(os.path.join(work, "judge.csv"), "w").write("\n".join(judge) + "\n")
json.dump(export, open(os.path.join(work, "export.json"), "w"))
PY

step() { # NAME CMD...: wall seconds and peak RSS of CMD
    local name="$1"; shift
    "$TIME" -f "%e %M" -o "$WORK/time" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || { cat "$WORK/$name.err" >&2; exit 1; }
    read -r wall rss <"$WORK/time"
    printf '%-8s %6.2f s  peak %5d MB\n' "$name" "$wall" $((rss / 1024))
}
echo "$((SYSTEMS * TASKS)) reports, $((SYSTEMS * TASKS * 3)) annotations, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
step export "$TVIR" rate export --reports "$WORK/reports" --tasks "$WORK/tasks.json" --to label-studio "$WORK/study"
tail -n 1 "$WORK/export.err"
printf 'study    %s total, tasks.json %s, pictures/ %s (%s files)\n' \
    "$(du -sh "$WORK/study" | cut -f1)" "$(du -h "$WORK/study/tasks.json" | cut -f1)" \
    "$(du -sh "$WORK/study/pictures" | cut -f1)" "$(ls "$WORK/study/pictures" | wc -l)"
printf 'export.json %s\n' "$(du -h "$WORK/export.json" | cut -f1)"
step import "$TVIR" rate import "$WORK/export.json" -o "$WORK/ratings.csv"
tail -n 1 "$WORK/import.err"
step agree "$TVIR" agree "$WORK/judge.csv" "$WORK/export.json"
