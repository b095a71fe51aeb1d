"""Print, per report and metric and per system, the reference evaluator's score beside
tvir's, every cell, and check from the mock's log that both sides asked the same units.
A cell is equal when both are absent or tvir's score rounded to 4 decimals is the
reference's rounded to 4 decimals (the reference rounds every score to 4 decimals
except image quality, which it writes unrounded); otherwise it is beyond.
Usage: compare.py REF_RESULTS OURS_OUT OURS_SUMMARY_JSON MOCK_LOG [REF_SUMMARY_XLSX [LABEL]]
LABEL (online, offline) picks tvir's calls in the mock's log (side ours:LABEL).
Exit status 1 when a cell is beyond the reference's rounding."""
import collections
import json
import math
import os
import sys

METRICS = [("citation_support", "CS"), ("instruction_alignment", "IA"), ("writing_quality", "WQ"),
           ("analytical_depth_breadth", "ADB"), ("factual_logical_consistency", "FLC"),
           ("multimodal_composition", "MC"), ("image_quality", "IQ"), ("chart_quality", "CQ"),
           ("figure_quality", "FQ"), ("figure_caption_quality", "FCQ"),
           ("figure_context_integration", "FCI"), ("chart_source_consistency", "CSC")]
SYSTEM_COLS = [("citation_support", "CS"), ("instruction_alignment", "IA"), ("writing_quality", "WQ"),
               ("analytical_depth_breadth", "ADB"), ("factual_logical_consistency", "FLC"),
               ("text", "TA"), ("multimodal_composition", "MC"), ("figure_quality", "FQ"),
               ("figure_caption_quality", "FCQ"), ("figure_context_integration", "FCI"),
               ("chart_source_consistency", "CSC"), ("visual", "VA"), ("overall", "Overall")]


def score(path):
    """None: no score (file absent or null)."""
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        v = json.load(f).get("normalized_score")
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def fmt(v):
    return "-" if v is None else f"{v:.4f}" if abs(v - round(v, 4)) < 1e-12 else f"{v:.6f}"


def same(r, o):
    if r is None or o is None:
        return r is None and o is None
    return abs(round(o, 4) - round(r, 4)) < 1e-9


def main():
    ref_dir, ours_dir, ours_summary, log = sys.argv[1:5]
    xlsx = sys.argv[5] if len(sys.argv) > 5 else None
    label = sys.argv[6] if len(sys.argv) > 6 else None
    model = os.environ.get("EVAL_MODEL_NAME", "gpt-4.1")
    reports = sorted({(s, t) for d in (ref_dir, ours_dir) if os.path.isdir(d)
                      for s in os.listdir(d) if os.path.isdir(os.path.join(d, s))
                      for t in os.listdir(os.path.join(d, s)) if os.path.isdir(os.path.join(d, s, t))
                      and os.path.isdir(os.path.join(ref_dir, s, t))})
    equal = total = 0
    print("Per report and metric (reference | tvir | tvir - reference; = equal at 4 decimals, X beyond):")
    for s, t in reports:
        for m, ab in METRICS:
            r = score(os.path.join(ref_dir, s, t, model, f"{m}.json"))
            o = score(os.path.join(ours_dir, s, t, model, f"{m}.json"))
            total += 1
            ok = same(r, o)
            equal += ok
            d = "" if ok else "n/a" if r is None or o is None else f"{o - r:+.6f}"
            print("  %s %-42s %-4s %10s %10s %10s" % ("=" if ok else "X", f"{s}/{t}", ab, fmt(r), fmt(o), d))
    print(f"  report x metric: {equal} of {total} cells equal, {total - equal} beyond (both absent counts as equal)")

    n = sn = 0
    if xlsx and os.path.exists(xlsx):
        import pandas as pd
        df = pd.read_excel(xlsx)
        try:
            with open(ours_summary, encoding="utf-8") as f:
                systems = {x["system"]: x for x in json.load(f)["judges"][0]["systems"]}
        except (OSError, ValueError, KeyError, IndexError) as e:
            print(f"  (no tvir summary: {e})")
            systems = {}
        print("\nPer system (reference summarize_results.py | tvir summarize | tvir - reference):")
        for _, row in df.iterrows():
            o = systems.get(row["model"], {})
            for col, ab in SYSTEM_COLS:
                r = None if col not in row or pd.isna(row[col]) else float(row[col])
                key = {"text": "ta", "visual": "va", "overall": "overall"}.get(col)
                v = o.get(key) if key else o.get("metrics", {}).get(col)
                v = None if v is None else v.get("mean")
                n += 1
                ok = same(r, v)
                sn += ok
                d = "" if ok else "n/a" if r is None or v is None else f"{v - r:+.6f}"
                print("  %s %-22s %-7s %10s %10s %10s" % ("=" if ok else "X", row["model"], ab, fmt(r), fmt(v), d))
        print(f"  system: {sn} of {n} cells equal, {n - sn} beyond")

    # Did both sides ask the same units? (metric, unit key) multisets from the mock's log.
    ours_side = f"ours:{label}" if label else "ours"
    asked = collections.defaultdict(collections.Counter)
    with open(log, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("metric") in (None, "serper", "figure") or rec["metric"].startswith("extract_"):
                continue
            side = {"ref": "ref", ours_side: "ours"}.get(rec["side"])
            if side:
                asked[(rec["metric"], side)][rec["key"]] += 1
    print("\nJudge calls per metric (reference | tvir | units asked by one side only):")
    for metric in sorted({m for m, _ in asked}):
        r, o = asked[(metric, "ref")], asked[(metric, "ours")]
        only = sum((r - o).values()) + sum((o - r).values())
        unknown = r.get("?", 0) + o.get("?", 0)
        print(f"  {metric:28s} {sum(r.values()):6d} {sum(o.values()):6d} {only:6d}"
              + (f"  ({unknown} calls the mock could not tie to a unit)" if unknown else ""))
    cells, eq = total + n, equal + sn
    print(f"\n{label or 'tvir'}: {eq} of {cells} cells equal at the reference's 4-decimal rounding, "
          f"{cells - eq} beyond (report x metric {equal}/{total}, system {sn}/{n})")
    sys.exit(1 if cells != eq else 0)


main()
