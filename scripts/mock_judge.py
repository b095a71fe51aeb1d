#!/usr/bin/env python3
"""A deterministic OpenAI-compatible judge on 127.0.0.1, for measuring runs without a model.

Usage: mock_judge.py PORT

Answers every POST to .../chat/completions with the first value each field of the
request's answer schema allows (the first enum value, the maximum of a bounded number,
one item of an array, `true`, "ok"), the same rule as the in-process mock of
crates/testing. Scores it gives mean nothing; it lets `tvir eval` go through every
judge call so that what reaches the judge (which units are judged, with which picture)
can be counted. Standard library only. Used by scripts/chart_pages_report.sh.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def schema_of(body):
    rf = body.get("response_format") or {}
    if isinstance(rf.get("json_schema"), dict) and "schema" in rf["json_schema"]:
        return rf["json_schema"]["schema"]
    if "schema" in rf:
        return rf["schema"]
    for m in body.get("messages", []):
        content = m.get("content")
        texts = [content] if isinstance(content, str) else [
            p.get("text", "") for p in content or [] if isinstance(p, dict)]
        for text in texts:
            dec = json.JSONDecoder()
            for i, ch in enumerate(text):
                if ch != "{":
                    continue
                try:
                    v, _ = dec.raw_decode(text[i:])
                except ValueError:
                    continue
                if isinstance(v, dict) and v.get("type") == "object" and "properties" in v:
                    return v
    return None


def answer(s):
    if not isinstance(s, dict):
        return {}
    if "const" in s:
        return s["const"]
    if s.get("enum"):
        return s["enum"][0]
    if s.get("anyOf"):
        return answer(s["anyOf"][0])
    t = s.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t == "object" or (t is None and "properties" in s):
        return {k: answer(v) for k, v in (s.get("properties") or {}).items()}
    if t == "array":
        n = max(1, s.get("minItems", 0))
        n = min(n, s.get("maxItems", n))
        return [answer(s.get("items", {})) for _ in range(n)]
    if t in ("integer", "number"):
        v = s.get("maximum", s.get("minimum", 0))
        return int(v) if t == "integer" else v
    if t == "boolean":
        return True
    if t == "null":
        return None
    return "ok"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        schema = schema_of(body)
        content = json.dumps(answer(schema) if schema else {"answer": "ok"})
        reply = {
            "id": "mock", "object": "chat.completion", "model": body.get("model", "mock"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
