#!/usr/bin/env python3
"""Compile answer schemas the way llama-cpp-python's server does, without serving.

Usage: grammar_compile.py MODEL.gguf SCHEMAS.jsonl

Run with the Python of the llama-cpp-python virtualenv (check_local_judge.sh does).
Each line of SCHEMAS.jsonl is one JSON schema (judge_proxy.py writes every distinct
schema a run sent). Each is converted to GBNF by llama-cpp-python's own converter
(`llama_grammar.json_schema_to_gbnf`, what the server runs on `response_format`) and
handed to llama.cpp's grammar sampler (`llama_sampler_init_grammar`, the call whose
NULL result the server does not check, and dies of). Only the vocabulary is loaded.

Before the schemas, two controls show the check can fail: a string of maxLength 2000
must be refused and one of 800 accepted. The largest accepted maxLength is measured
too (bisection). Prints one line per schema; exits 1 when any schema is refused or a
control goes the wrong way. llama.cpp's parse errors (the whole grammar, on stderr)
go to the caller's stderr.
"""
import json
import sys

import llama_cpp
from llama_cpp.llama_grammar import json_schema_to_gbnf


def main():
    model_path, schemas_path = sys.argv[1], sys.argv[2]
    llm = llama_cpp.Llama(model_path=model_path, vocab_only=True, verbose=False)
    vocab = llm._model.vocab

    def compiles(schema):
        gbnf = json_schema_to_gbnf(json.dumps(schema))
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
        if not sampler:
            return False
        llama_cpp.llama_sampler_free(sampler)
        return True

    def string_of(n):
        return {"type": "object", "properties": {"s": {"type": "string", "maxLength": n}},
                "required": ["s"]}

    problems = []
    if compiles(string_of(2000)):
        problems.append("control: a maxLength of 2000 compiled (expected a refusal)")
    if not compiles(string_of(800)):
        problems.append("control: a maxLength of 800 was refused")
    lo, hi = 800, 2000  # lo compiles, hi does not (when the controls held)
    if not problems:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if compiles(string_of(mid)):
                lo = mid
            else:
                hi = mid
        print(f"grammar: largest maxLength llama-cpp-python compiles: {lo} (refused from {hi})")

    schemas = [json.loads(l) for l in open(schemas_path) if l.strip()]
    refused = 0
    for schema in schemas:
        keys = sorted((schema.get("properties") or {}).keys())
        ok = compiles(schema)
        refused += not ok
        print(f"grammar: {'ok     ' if ok else 'REFUSED'} schema with keys {keys}")
    print(f"grammar: {len(schemas)} distinct schemas sent, {refused} refused")
    if refused:
        problems.append(f"{refused} of {len(schemas)} schemas sent do not compile")
    if problems:
        print("grammar: FAIL: " + "; ".join(problems))
        sys.exit(1)


if __name__ == "__main__":
    main()
