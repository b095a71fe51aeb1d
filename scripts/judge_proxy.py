#!/usr/bin/env python3
"""A logging pass-through proxy for an OpenAI-compatible server, on 127.0.0.1.

Usage: judge_proxy.py LISTEN_PORT UPSTREAM_BASE LOG.jsonl [SCHEMAS.jsonl]

Every POST is forwarded unchanged to UPSTREAM_BASE (e.g. http://127.0.0.1:8765) and
one JSON line is appended to LOG.jsonl: the path, the token limit the request carried
(`max_tokens` / `max_completion_tokens`), its `response_format` type, whether it had
image parts, whether it is a re-ask (an assistant turn in the messages), the
reply's status, `finish_reason` (or the error message of a non-2xx
reply), the top-level keys of the answer schema it sent (`schema_keys`: which
rubric asked, whatever the response format) and elapsed seconds. With SCHEMAS.jsonl,
every distinct answer schema sent is appended there once (for a grammar compile
check). Used by
check_local_judge.sh to check what the client really sent, independently of the
client's own journal. Standard library only.
"""
import json
import sys
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LISTEN, UPSTREAM, LOG = int(sys.argv[1]), sys.argv[2].rstrip("/"), sys.argv[3]
SCHEMAS = sys.argv[4] if len(sys.argv) > 4 else None
seen_schemas = set()


def sent_schema(body):
    """The answer schema a request carried, whatever its response format."""
    rf = body.get("response_format") or {}
    if isinstance(rf.get("json_schema"), dict):
        return rf["json_schema"].get("schema")
    return rf.get("schema")


def remember_schema(schema):
    if SCHEMAS is None or not isinstance(schema, dict):
        return
    key = json.dumps(schema, sort_keys=True)
    if key in seen_schemas:
        return
    seen_schemas.add(key)
    with open(SCHEMAS, "a") as f:
        f.write(key + "\n")


def has_image(body):
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, list) and any(p.get("type") == "image_url" for p in content):
            return True
    return False


class Proxy(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        started = time.time()
        req = urllib.request.Request(
            UPSTREAM + self.path, data=raw, method="POST",
            headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=3600) as resp:
                status, reply = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, reply = e.code, e.read()
        except Exception as e:  # upstream gone: report it as a 502
            status, reply = 502, json.dumps({"error": {"message": str(e)}}).encode()
        finish = None
        error = None
        try:
            parsed = json.loads(reply)
            if status < 300:
                finish = parsed["choices"][0].get("finish_reason")
            else:
                err = parsed.get("error", parsed)
                error = (err.get("message") if isinstance(err, dict) else str(err))
                error = (error or "")[:300]
        except Exception:
            pass
        rf = body.get("response_format") or {}
        schema = sent_schema(body)
        remember_schema(schema)
        entry = {
            "path": self.path,
            "max_tokens": body.get("max_tokens", body.get("max_completion_tokens")),
            "response_format": rf.get("type"),
            "schema_keys": sorted((schema or {}).get("properties", {}).keys())
            if isinstance(schema, dict) else None,
            "image": has_image(body),
            # A re-ask carries the model's earlier reply as an assistant turn.
            "reask": any(m.get("role") == "assistant" for m in body.get("messages", [])),
            "status": status,
            "finish_reason": finish,
            "error": error,
            "seconds": round(time.time() - started, 2),
        }
        with open(LOG, "a") as f:
            f.write(json.dumps(entry) + "\n")
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout); the upstream call is logged anyway

    def do_GET(self):
        try:
            with urllib.request.urlopen(UPSTREAM + self.path, timeout=30) as resp:
                status, reply = resp.status, resp.read()
        except Exception as e:
            status, reply = 502, str(e).encode()
        self.send_response(status)
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


ThreadingHTTPServer(("127.0.0.1", LISTEN), Proxy).serve_forever()
