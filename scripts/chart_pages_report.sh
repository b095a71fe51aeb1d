#!/usr/bin/env bash
# Run a folder of chart pages through the browser stage and print a per-library table.
#
#   scripts/chart_pages_report.sh PAGES CACHE [TVIR]
#
# PAGES holds one folder per page (PAGES/<n>/report.html, report.mdx or index.html, with
# the page's own local files beside it) and optionally PAGES/counts.tsv: `<n> <TAB>
# <library> <TAB> <charts a reader sees> <TAB> <of them with a visible title>`, counted
# by hand from each page's source. Public pages stay outside the repository.
# CACHE is a cache already seeded with the scripts the pages load (`tvir cache put`; see
# scripts/fetch_chart_libs.sh); it is copied, never changed. TVIR defaults to
# target/release/tvir; pass another build (same CLI) to compare before and after.
#
# For each page: `tvir parse --offline` on a fresh copy of CACHE (cold: browser start,
# render) and again (warm: from the render cache), wall time of each; then one `tvir eval
# --offline` of all pages against scripts/mock_judge.py (every judge call answered, so
# "judged" counts the chart units that reached the judge). Per library it prints: pages,
# charts (hand count), drawn (charts rendered), judged (chart-quality units scored),
# failed (with their reasons), blank (failed as captured blank), cut (cut to the
# viewport), captioned (caption-quality units with a caption, by caption_source) and the
# cold / warm seconds per page and per chart. Wall times depend on load: `uptime` is
# printed with them. Needs python3 and Chromium (TVIR_BROWSER, default /usr/bin/chromium).
set -euo pipefail
pages=$(cd "${1:?usage: chart_pages_report.sh PAGES CACHE [TVIR]}" && pwd)
cache=${2:?usage: chart_pages_report.sh PAGES CACHE [TVIR]}
here=$(cd "$(dirname "$0")" && pwd)
tvir=${3:-$here/../target/release/tvir}
browser=${TVIR_BROWSER:-/usr/bin/chromium}
work=$(mktemp -d)
mock_pid=
cleanup() { [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

cp "$cache" "$work/cache.sqlite"
mkdir -p "$work/reports/pages" "$work/parse"
tasks="["
for d in "$pages"/*/; do
  n=$(basename "$d")
  file=
  for f in report.html report.mdx report.md index.html; do
    [ -f "$d/$f" ] && { file=$f; break; }
  done
  [ -n "$file" ] || continue
  ln -s "${d%/}" "$work/reports/pages/$n"
  tasks+="{\"id\":\"$n\",\"query\":\"Write a research report with charts.\"},"
  for pass in cold warm; do
    t0=$(date +%s.%N)
    "$tvir" parse "$d/$file" --offline --cache "$work/cache.sqlite" --browser "$browser" --json \
      > "$work/parse/$n.$pass.json" 2> "$work/parse/$n.$pass.err" || true
    t1=$(date +%s.%N)
    echo "$n $pass $(echo "$t1 - $t0" | bc)" >> "$work/times.txt"
  done
done
echo "${tasks%,}]" > "$work/tasks.json"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 "$here/mock_judge.py" "$port" & mock_pid=$!
for _ in $(seq 50); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && break
  sleep 0.1
done
"$tvir" eval --reports "$work/reports" --tasks "$work/tasks.json" --out "$work/out" \
  --base-url "http://127.0.0.1:$port/v1" --judge-model mock --cache "$work/cache.sqlite" \
  --offline --assume-vision --browser "$browser" > "$work/eval.log" 2>&1 || rc=$?
# 1: the run finished with failed units (counted below); more is a failed run.
[ "${rc:-0}" -le 1 ] || { cat "$work/eval.log" >&2; exit 1; }

echo "tvir: $tvir ($("$tvir" --version)); load: $(uptime | sed 's/.*load average: //')"
python3 - "$pages" "$work" <<'PY'
import collections, json, os, sys
pages, work = sys.argv[1], sys.argv[2]
# counts.tsv: n, library, charts a reader sees, of them titled (one row per page and library)
hand = collections.defaultdict(dict)
counts = os.path.join(pages, "counts.tsv")
if os.path.exists(counts):
    for line in open(counts, encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        if len(f) >= 3 and not line.startswith("#"):
            hand[f[0]][f[1]] = (int(f[2]), int(f[3]) if len(f) > 3 and f[3] else None)
times = collections.defaultdict(dict)
for line in open(os.path.join(work, "times.txt")):
    n, p, t = line.split()
    times[n][p] = float(t)
rows = collections.defaultdict(collections.Counter)
srcs = collections.defaultdict(collections.Counter)
reasons = collections.Counter()
per_page = []
for n in sorted(times):
    path = os.path.join(work, "out", "pages", n, "mock", "report.json")
    if not os.path.exists(path):
        continue
    r = json.load(open(path, encoding="utf-8"))
    render = r.get("render") or {}
    charts = render.get("charts") or []
    lib_of = {c.get("content"): c.get("library") or "?" for c in charts}
    page_libs = set(hand.get(n, {})) | set(lib_of.values())
    only = next(iter(page_libs)) if len(page_libs) == 1 else "?"
    def lib_for(detail):
        content = (detail or {}).get("content")
        if content in lib_of:
            return lib_of[content]
        text = json.dumps(detail or {}).lower()
        for lib in page_libs:
            if lib and lib.lower() in text:
                return lib
        return only
    for lib in page_libs:
        row = rows[lib]
        row["pages"] += 1
        row["hand"] += hand.get(n, {}).get(lib, (0, 0))[0]
        titled = hand.get(n, {}).get(lib, (0, None))[1]
        if titled is not None:
            row["hand_titled"] += titled
            row["titled_pages"] += 1
        row["cold"] += times[n].get("cold", 0)
        row["warm"] += times[n].get("warm", 0)
    for c in charts:
        row = rows[c.get("library") or "?"]
        row["drawn"] += 1
        if (c.get("chart_data") or {}).get("reveal"):
            row["forced"] += 1
    for note in render.get("notes") or []:
        if "cut to its visible part" in note:
            rows[next((l for l in page_libs if l and l.lower() in note.lower()), only)]["cut"] += 1
    failed = 0
    for u in r.get("units", []):
        m, st, detail = u.get("metric"), u.get("status"), u.get("detail") or {}
        if m == "chart_quality":
            lib = lib_for(detail)
            if st == "scored":
                rows[lib]["judged"] += 1
            elif st == "failed":
                failed += 1
                rows[lib]["failed"] += 1
                reason = u.get("reason") or ""
                reasons[(lib, reason[:90])] += 1
                if "blank" in reason:
                    rows[lib]["blank"] += 1
        if m == "figure_caption_quality" and st == "scored" and detail.get("kind") == "chart":
            lib = lib_for(detail)
            rows[lib]["fcq"] += 1
            if (detail.get("caption") or "").strip():
                rows[lib]["captioned"] += 1
                srcs[lib][detail.get("caption_source") or "?"] += 1
    hand_total = sum(v[0] for v in hand.get(n, {}).values())
    per_page.append((n, "+".join(sorted(l for l in page_libs if l)), hand_total, len(charts),
                     failed, round(times[n].get("cold", 0), 2), round(times[n].get("warm", 0), 2)))

hdr = ("library", "pages", "charts (hand)", "titled (hand)", "drawn", "judged", "failed",
       "blank", "cut", "reveal forced", "captioned (caption_source)", "cold s/page",
       "warm s/page", "cold s/chart")
print("| " + " | ".join(hdr) + " |")
print("|" + "---|" * len(hdr))
total = collections.Counter()
for lib in sorted(rows, key=str):
    row = rows[lib]
    total.update(row)
    src = ", ".join(f"{k} {v}" for k, v in srcs[lib].most_common())
    pg = row["pages"] or 1
    titled = f"{row['hand_titled']} of {row['titled_pages']} pages" if row["titled_pages"] else "-"
    print(f"| {lib} | {row['pages']} | {row['hand']} | {titled} | {row['drawn']} | "
          f"{row['judged']} | {row['failed']} | {row['blank']} | {row['cut']} | {row['forced']} | "
          f"{row['captioned']}/{row['fcq']} ({src}) | {row['cold']/pg:.2f} | "
          f"{row['warm']/pg:.2f} | {row['cold']/(row['drawn'] or 1):.2f} |")
np_ = len(per_page) or 1
cold = sum(p[5] for p in per_page)
warm = sum(p[6] for p in per_page)
drawn = sum(p[3] for p in per_page)
print(f"| all ({len(per_page)} pages) | | {sum(p[2] for p in per_page)} | "
      f"{total['hand_titled'] if total['titled_pages'] else '-'} | "
      f"{drawn} | {total['judged']} | {total['failed']} | {total['blank']} | {total['cut']} | "
      f"{total['forced']} | {total['captioned']}/{total['fcq']} | {cold/np_:.2f} | "
      f"{warm/np_:.2f} | {cold/(drawn or 1):.2f} |")
if reasons:
    print("\nfailed chart units, by reason:")
    for (lib, why), k in reasons.most_common():
        print(f"  {lib}: {k} x {why}")
print("\nper page: n libraries hand drawn failed cold_s warm_s")
for row in per_page:
    print("  " + " ".join(str(x) for x in row))
PY
if [ -n "${KEEP_OUT:-}" ]; then rm -rf "$KEEP_OUT"; cp -r "$work/out" "$KEEP_OUT"; cp -r "$work/parse" "$KEEP_OUT/parse"; echo "eval output kept in $KEEP_OUT"; fi
