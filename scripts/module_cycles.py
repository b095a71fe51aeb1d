#!/usr/bin/env python3
"""Module-level import cycles inside each crate of the workspace.

An edge a -> b means a source file of top-level module `a` names `crate::b` (or,
from a top-level file, `super::b`). Prints every strongly connected component of
more than one module and exits 1 if there is one; crate-level cycles cannot exist
(cargo refuses them), so this checks the layer below.
"""
import os, re, sys, glob

def modules(src):
    mods = {}
    for path in glob.glob(os.path.join(src, "**", "*.rs"), recursive=True):
        rel = os.path.relpath(path, src)
        parts = rel[:-3].split(os.sep)
        if parts == ["lib"] or parts == ["main"]:
            top = "<root>"
        else:
            top = parts[0]
        mods.setdefault(top, []).append((path, len(parts)))
    return mods

def edges(src, mods):
    names = set(mods) - {"<root>"}
    out = {m: set() for m in mods}
    for m, files in mods.items():
        for path, depth in files:
            text = re.sub(r"//[^\n]*", "", open(path, encoding="utf-8").read())
            for n in re.findall(r"\bcrate::([a-z_0-9]+)", text):
                if n in names and n != m:
                    out[m].add(n)
            if depth == 1:  # a top-level file: super:: is the crate root
                for n in re.findall(r"\bsuper::([a-z_0-9]+)", text):
                    if n in names and n != m:
                        out[m].add(n)
            elif m != "<root>" and files and depth == 2 and path.endswith("mod.rs"):
                for n in re.findall(r"\bsuper::([a-z_0-9]+)", text):
                    if n in names and n != m:
                        out[m].add(n)
    return out

def sccs(graph):
    index, low, stack, on, res, counter = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            res.append(comp)
    for v in graph:
        if v not in index:
            visit(v)
    return res

root = sys.argv[1] if len(sys.argv) > 1 else "."
bad = 0
srcs = sorted(glob.glob(os.path.join(root, "crates", "*", "src"))) + [os.path.join(root, "src")]
for src in srcs:
    mods = modules(src)
    g = edges(src, mods)
    for comp in sccs(g):
        if len(comp) > 1:
            bad += 1
            print(f"{src}: cycle among {', '.join(sorted(comp))}")
print(f"{bad} module cycle(s)")
sys.exit(1 if bad else 0)
