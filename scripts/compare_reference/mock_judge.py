"""Deterministic OpenAI-compatible mock judge (and Serper stand-in) for comparing two
evaluators on the same judgments. Every answer is a function of (metric, unit key)
only, where the unit key is read from what both evaluators send for that unit:
  report-level metrics -> the report (matched by distinctive lines of its text)
  citation support     -> the fact text and the evidence shown (see below)
  figure metrics       -> the figure file nearest to the attached picture, by its path
                          without the extension (a chart file charts/c1.html and its
                          picture charts/c1.png are one unit); chart-source
                          consistency adds the evidence shown
  instruction items    -> (report, item text)
  duplicate-fact pairs -> the two fact texts (about one pair in four is a duplicate)
The reference side is told apart by its request path (/ref/<module>/v1, set by
run_reference.py); our side sends a JSON schema named after the rubric.
Evidence shown: which cited pages' text appears in the prompt (every page text in the
sources file is distinctive) and whether the prompt says that a page could not be
read (either side's wording, see unread_notice). Two sides that show the same pages get the same answer; a side that shows a
notice where the other shows an empty page gets another answer, as a real judge would
answer another input.
Extraction prompts (sent by the reference evaluator only) are answered from our
parser's output for the matched report, so both sides judge the same units, except
that figures drawn from one local chart file (FILE.html, FILE.html#panel, ...) are
answered as one figure per file, as a reader sees it and as the paper's authors fed
them: its picture FILE.png (made beside it by compare_reference.sh), its caption the
file's <title> when our parser found none from the report.
Serper: POST /serper[/ours] answers {"text": the sources file's text} (an empty text
for the pages the script made empty), 500 for an address the file records as failed
or does not list. GET /figures/...
answers 404 (a remote figure that cannot be downloaded).
Usage: mock_judge.py PORT REPORTS_DIR PARSE_DIR TASKS_JSON SOURCES_JSONL LOG_JSONL"""
import base64, hashlib, io, json, os, re, sys, threading, http.server, socketserver
import numpy as np
from PIL import Image

PORT, REPORTS, PARSE, TASKS, SOURCES, LOG = sys.argv[1:7]
PORT = int(PORT)
lock = threading.Lock()
logf = open(LOG, "a")

reports = {}  # "sys/task" -> dict(text, lines, parse)
for s in sorted(os.listdir(REPORTS)):
    for t in sorted(os.listdir(os.path.join(REPORTS, s))):
        p = os.path.join(REPORTS, s, t, "report.md")
        if not os.path.exists(p):
            p = os.path.join(REPORTS, s, t, "report.mdx")
        if not os.path.exists(p):
            continue
        text = open(p, encoding="utf-8").read()
        parse = json.load(open(os.path.join(PARSE, f"{s}__{t}.json"), encoding="utf-8"))
        reports[f"{s}/{t}"] = {"text": text, "parse": parse, "task": t}
# distinctive lines: long, not figure/caption lines, unique to one report
count = {}
for k, r in reports.items():
    ls = set(l.strip() for l in r["text"].splitlines() if len(l.strip()) >= 25)
    r["cand"] = ls
    for l in ls:
        count[l] = count.get(l, 0) + 1
caption_bits = set()
for r in reports.values():
    for f in r["parse"]["figures"]:
        caption_bits.add(f.get("caption") or "")
for k, r in reports.items():
    c = [l for l in r["cand"] if count[l] == 1 and not any(x in l for x in ("![", "<img", "<fig", "http"))]
    c = [l for l in c if not any(cb and (cb in l or l in cb) for cb in caption_bits)]
    c.sort(key=lambda l: (-len(l), l))
    r["sig"] = c[:15]
    if not r["sig"]:
        print("no signature lines for", k, file=sys.stderr)

tasks = {t["id"]: t for t in json.load(open(TASKS, encoding="utf-8"))}
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mock_judge_pages import page_of  # noqa: E402
sources = {}  # page (see mock_judge_pages.py) -> text
for l in open(SOURCES, encoding="utf-8"):
    o = json.loads(l)
    if "text" in o:  # a line with "error" records a failed fetch: Serper answers 500
        sources[page_of(o["url"])] = o["text"]
facts = {}
for k, r in reports.items():
    for f in r["parse"]["facts"]:
        facts.setdefault(f["fact"], k)
fact_list = sorted(facts, key=len, reverse=True)

def thumb(img):
    img = img.convert("RGBA")
    bg = Image.new("RGBA", img.size, (255, 255, 255, 255))
    bg.alpha_composite(img)
    return np.asarray(bg.convert("L").resize((24, 24), Image.BILINEAR), dtype=np.float64)

figfiles = {}
for root, _, files in os.walk(REPORTS):
    for fn in files:
        if fn in ("report.md", "report.mdx", "meta.json"):
            continue
        p = os.path.join(root, fn)
        try:
            figfiles[os.path.relpath(p, REPORTS)] = thumb(Image.open(p))
        except Exception:
            pass
figkeys = sorted(figfiles)

def h(*parts):
    return int(hashlib.sha256("|".join(parts).encode()).hexdigest()[:15], 16)

def match_report(text):
    best, bk = 0, None
    for k in sorted(reports):
        n = sum(1 for l in reports[k]["sig"] if l in text)
        if n > best:
            best, bk = n, k
    return bk

def match_fact(text):
    for f in fact_list:
        if f in text:
            return f
    return None

def match_image(uri):
    try:
        data = base64.b64decode(uri.split(",", 1)[1])
        t = thumb(Image.open(io.BytesIO(data)))
    except Exception as e:
        return None, None
    best, bk = None, None
    for k in figkeys:
        d = float(np.abs(figfiles[k] - t).mean())
        if best is None or d < best - 1e-9:
            best, bk = d, k
    return (os.path.splitext(bk)[0] if bk else None), best

# a page's mark: the first sentence of its text, which names the whole address
page_marks = {u: t[:t.find(" for the comparison. ") + 21] if " for the comparison. " in t else t[:200]
              for u, t in sources.items() if t}

def unread_notice(text):
    """Whether the prompt says that a cited page could not be read, in either side's
    words (ours: "This page could not be read: ..."; the reference's page text for a
    failed fetch: "Error extracting web content: ..."): one input, as a judge reads it."""
    t = text.lower()
    return "could not be read" in t or "error extracting web content" in t

def evidence(text):
    """The cited pages whose text the prompt shows, and whether it says a page could not be read."""
    shown = sorted(u for u, m in page_marks.items() if m in text)
    notice = unread_notice(text)
    return hashlib.sha256(json.dumps([shown, notice]).encode()).hexdigest()[:12]

def chart_file(report_key, content):
    """(file, png) when the figure's content is a local chart file (or a part of one)."""
    path = content.split("#", 1)[0]
    if content.startswith("http") or not path.lower().endswith((".html", ".htm")):
        return None
    png = os.path.splitext(path)[0] + ".png"
    return path, png

def reader_figures(report_key, figures):
    """One figure per local chart file, as a reader (and the paper's authors) see it."""
    out, seen = [], {}
    for f in figures:
        cf = chart_file(report_key, f["content"])
        if not cf:
            out.append(dict(f))
            continue
        path, png = cf
        if path in seen:
            g = seen[path]
            g["ref_idxs"] = sorted(set(g["ref_idxs"]) | set(f.get("ref_idxs", [])), key=int)
            continue
        g = dict(f)
        g["content"] = png
        title = ""
        try:
            html = open(os.path.join(REPORTS, report_key, path), encoding="utf-8").read()
            m = re.search(r"<title>(.*?)</title>", html, re.S | re.I)
            title = re.sub(r"\s+", " ", m.group(1)).strip() if m else ""
        except OSError:
            pass
        if title and (f.get("caption_source") is not None or not f.get("caption")):
            # caption_source set: the caption was not taken from the report
            g["caption"] = title
        g["ref_idxs"] = list(f.get("ref_idxs", []))
        seen[path] = g
        out.append(g)
    return out

def texts(body):
    sys_t, user_t, imgs = "", "", []
    for m in body.get("messages", []):
        c = m.get("content")
        parts = [{"type": "text", "text": c}] if isinstance(c, str) else (c or [])
        for p in parts:
            if p.get("type") == "text":
                if m["role"] == "system":
                    sys_t += p["text"] + "\n"
                else:
                    user_t += p["text"] + "\n"
            elif p.get("type") == "image_url":
                imgs.append(p["image_url"]["url"])
    norm = lambda x: x.replace("\r", "").replace("\xa0", " ")
    return norm(sys_t), norm(user_t), imgs

# The reference evaluator's modules, named in the request path by run_reference.py.
REF_MODULES = {"extract_refs": "extract_refs", "extract_citations": "extract_citations",
               "extract_visuals": "extract_visuals", "dedup_citations": "fact_dedup"}
NDIMS = {"writing_quality": 4, "analytical_depth_breadth": 5, "multimodal_composition": 2,
         "figure_caption_quality": 3, "figure_context_integration": 3, "chart_quality": 10}
VERDICTS = ["supported", "partially_supported", "unsupported", "unknown"]

def dims(metric, key):
    n = NDIMS[metric]
    x = h(metric, key)
    if metric == "chart_quality":
        return [0 if (x >> (2 * i)) % 4 == 0 else 1 for i in range(n)]
    return [1 + (x >> (4 * i)) % 10 for i in range(n)]

def checklist_items(task_id):
    t = tasks.get(task_id)
    if not t:
        return []
    out = []
    for sec, items in t["checklist"].items():
        for it in items:
            out.append((sec, it))
    return out

def answer(side, metric, sys_t, user_t, imgs, schema):
    """-> (answer object, unit key)"""
    full = sys_t + user_t
    if metric in ("extract_refs", "extract_citations", "extract_visuals"):
        rk = match_report(user_t)
        p = reports[rk]["parse"]
        if metric == "extract_refs":
            return [{"ref_idx": str(r["idx"]), "ref_url": r.get("url") or ""} for r in p["references"]], rk
        if metric == "extract_citations":
            return [{"fact": f["fact"], "ref_idxs": [str(i) for i in f["ref_idxs"]]} for f in p["facts"]], rk
        return [{"caption": f.get("caption") or "", "contents": [f["content"]], "context": f.get("context") or "",
                 "ref_idxs": [str(i) for i in f.get("ref_idxs", [])]} for f in reader_figures(rk, p["figures"])], rk
    if metric == "fact_dedup":
        found = [f for f in fact_list if f in user_t]
        found = sorted(f for f in found if not any(f != g and f in g for g in found))
        key = json.dumps(found, ensure_ascii=False) if found else "?"
        dup = h(metric, key) % 4 == 0
        return ({"dedup": dup} if side == "ref" else {"justification": "", "duplicate": dup}), key
    if metric == "citation_support":
        key = (match_fact(user_t) or "?") + " | evidence " + evidence(full)
        v = VERDICTS[h(metric, key) % 4]
        return ({"result": v, "justification": ""} if side == "ref" else {"justification": "", "verdict": v}), key
    if metric in ("chart_quality", "figure_caption_quality", "figure_context_integration", "chart_source_consistency"):
        fk, dist = match_image(imgs[0]) if imgs else (None, None)
        key = fk or "?"
        if metric == "chart_source_consistency":
            key += " | evidence " + evidence(full)
            n = h(metric, key) % 11
            return ({"total_issues": n} if side == "ref" else {"justification": "", "issues": [], "total_issues": n}), key
        vals = dims(metric, key)
        if side == "ref":
            a = {"scores": {f"d{i}": v for i, v in enumerate(vals)}}
            if metric == "figure_caption_quality":
                a["suggestion"] = f"Revised caption {h('rev', key) % 100000}"
            return a, key
        ks = list(schema["properties"]["scores"]["properties"])
        a = {"justification": "", "scores": dict(zip(ks, vals))}
        if metric == "figure_caption_quality":
            a["revised_caption"] = f"Revised caption {h('rev', key) % 100000}"
        return a, key
    # report-level
    rk = match_report(user_t) or "?"
    if metric in ("factual_logical_consistency",):
        n = h(metric, rk) % 20
        return ({"total_issues": n} if side == "ref" else {"justification": "", "issues": [], "total_issues": n}), rk
    if metric == "instruction_alignment":
        items = checklist_items(reports[rk]["task"]) if rk in reports else []
        sc = lambda it: [0.0, 0.5, 1.0][h(metric, rk, it) % 3]
        if side == "ref":
            out = {}
            for sec, it in items:
                out.setdefault(sec, {})[it] = {"score": sc(it), "justification": ""}
            return out, rk
        props = schema["properties"]["items"]["properties"]
        out = {}
        for n in props:
            i = int(n) - 1
            it = items[i][1] if 0 <= i < len(items) else f"#{n}"
            out[n] = {"justification": "", "score": sc(it)}
        return {"items": out}, rk
    vals = dims(metric, rk)
    if side == "ref":
        return {"scores": {f"d{i}": v for i, v in enumerate(vals)}, "suggestion": ""}, rk
    ks = list(schema["properties"]["scores"]["properties"])
    a = {"justification": "", "scores": dict(zip(ks, vals))}
    if metric == "multimodal_composition":
        v = vals[1]
        cnt = (3, 3) if v >= 9 else (2, 2) if v >= 7 else (1, 1) if v >= 5 else (1, 0) if v >= 3 else (0, 0)
        a.update({"topic_category": "balanced", "image_subtypes": cnt[0], "chart_subtypes": cnt[1]})
    return a, rk

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def reply(self, obj, code=200):
        b = json.dumps(obj, ensure_ascii=False).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        if self.path.startswith("/figures/"):
            with lock:
                logf.write(json.dumps({"side": "?", "metric": "figure", "key": self.path}) + "\n")
                logf.flush()
            return self.reply({"message": "not found"}, 404)
        self.reply({"object": "list", "data": [{"id": "gpt-4.1", "object": "model"}]})
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(n))
        if self.path.startswith("/serper"):
            url = page_of(body.get("url", ""))
            m = re.match(r"/serper/ours/([A-Za-z0-9_-]+)", self.path)
            side = ("ours:" + m.group(1) if m else "ours") if self.path.startswith("/serper/ours") else "ref"
            with lock:
                logf.write(json.dumps({"side": side, "metric": "serper", "key": url, "found": url in sources}) + "\n")
                logf.flush()
            if url in sources:
                return self.reply({"text": sources[url], "markdown": ""})
            return self.reply({"message": "not available"}, 500)
        sys_t, user_t, imgs = texts(body)
        rf = body.get("response_format") or {}
        if rf.get("type") == "json_schema":
            # tvir: /run/<label>/v1 names the run (online, offline) in the log
            m = re.match(r"/run/([A-Za-z0-9_-]+)/", self.path)
            side = "ours:" + m.group(1) if m else "ours"
            metric = rf["json_schema"].get("name")
            schema = rf["json_schema"].get("schema")
        else:
            side, schema = "ref", None
            m = re.match(r"/ref/([a-z_]+)/", self.path)
            module = m.group(1) if m else ""
            metric = REF_MODULES.get(module) or (module[5:] if module.startswith("eval_") else None)
        if metric is None:
            with lock:
                logf.write(json.dumps({"side": side, "metric": None, "user": user_t[:300]}) + "\n")
                logf.flush()
        try:
            ans, key = answer(side, metric, sys_t, user_t, imgs, schema)
        except Exception as e:
            import traceback; traceback.print_exc()
            return self.reply({"error": {"message": f"mock: {e}"}}, 500)
        content = json.dumps(ans, ensure_ascii=False)
        with lock:
            rec = {"side": side, "metric": metric, "key": key}
            if metric not in ("extract_refs", "extract_citations", "extract_visuals"):
                rec["answer"] = content
            else:
                rec["units"] = len(ans)
            if metric in ("citation_support", "chart_source_consistency"):
                full = sys_t + user_t
                rec["pages_shown"] = sorted(u for u, m in page_marks.items() if m in full)
                rec["unread_notice"] = unread_notice(full)
            rec["prompt_chars"] = len(sys_t) + len(user_t)
            rec["images"] = len(imgs)
            logf.write(json.dumps(rec, ensure_ascii=False) + "\n")
            logf.flush()
        pt = (len(sys_t) + len(user_t)) // 4 + 765 * len(imgs)
        ct = len(content) // 4
        self.reply({"id": "mock", "object": "chat.completion", "created": 0, "model": body.get("model"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}})

class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
print(f"mock judge on {PORT}: {len(reports)} reports, {len(facts)} facts, {len(figkeys)} figure files", file=sys.stderr)
S(("127.0.0.1", PORT), H).serve_forever()
