#!/usr/bin/env python3
"""The structure of src/ as a graph: who includes or calls whom.

A unit is a source file and its header of the same name (buffer-ring.c and
buffer-ring.h); an edge A -> B means that A includes B's header, or that A's .c file
calls or uses a function or variable that B's .c file defines (from Universal Ctags'
definitions, matched as identifiers in A's code).  It prints:

  units, levels, edges, edges back up and cycles, over the whole tree and
  inside every folder of src/, and between the folders themselves;
  the longest functions (--longest N).

A level is a unit's height: 0 for a unit that uses nobody, else one more
than the highest of those it uses.  An edge back up runs from a unit to one
on its own level or above, which only a cycle can make.  The layout's rules
(HACKING.md, Layout) are: no cycle and no edge back up, anywhere.

  scripts/structure.py [--edges] [--longest N] [--check] [SRC_DIR]

--check exits 1 when a cycle or an edge back up is found."""

import argparse
import collections
import json
import os
import re
import subprocess
import sys

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT_OR_STRING = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def sources(top):
    for root, _, names in os.walk(top):
        for name in sorted(names):
            if name.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(root, name), top)


def unit_of(path):
    return os.path.splitext(path)[0]


def ctags(top, files):
    """Every definition: (name, kind, file, line, end, file-scope)."""
    out = subprocess.run(
        ["ctags", "--output-format=json", "--sort=no", "--fields=+nKfe{end}",
         "--kinds-C=fvd", "--extras=-F"] + files,
        cwd=top, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") == "tag":
            yield (tag["name"], tag.get("kind", ""), tag["path"], tag.get("line", 0),
                   tag.get("end", 0), bool(tag.get("file")))


def graph(top):
    files = list(sources(top))
    by_base = collections.defaultdict(list)
    for f in files:
        by_base[os.path.basename(f)].append(f)
    definer = {}                      # a global name -> the unit that defines it
    for name, kind, path, _, _, static in ctags(top, files):
        if kind in ("function", "variable") and not static and path.endswith(".c"):
            definer.setdefault(name, unit_of(path))
    edges = collections.defaultdict(set)
    units = {unit_of(f) for f in files}
    for f in files:
        with open(os.path.join(top, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        u = unit_of(f)
        for inc in INCLUDE.findall(text):
            for target in by_base.get(os.path.basename(inc), []):
                if unit_of(target) != u:
                    edges[u].add(unit_of(target))
        if not f.endswith(".c"):
            continue              # a header's prototypes declare, they do not use
        code = COMMENT_OR_STRING.sub(" ", text)
        for ident in set(IDENT.findall(code)):
            d = definer.get(ident)
            if d is not None and d != u:
                edges[u].add(d)
    return units, edges


def sccs(nodes, edges):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in nodes:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def measure(nodes, edges):
    """(levels, edges, edges back up, cycles) of the graph restricted to @nodes."""
    comps = sccs(nodes, edges)
    comp_of = {v: i for i, c in enumerate(comps) for v in c}
    level = {}

    def height(c):               # Tarjan lists components dependencies-first
        return level[c]

    for i, c in enumerate(comps):
        deps = {comp_of[w] for v in c for w in edges.get(v, ()) if w in nodes} - {i}
        level[i] = 1 + max((height(d) for d in deps), default=-1)
    es = [(v, w) for v in nodes for w in edges.get(v, ()) if w in nodes]
    back = [(v, w) for v, w in es if level[comp_of[v]] <= level[comp_of[w]]]
    cycles = [c for c in comps if len(c) > 1]
    n_levels = 1 + max(level.values(), default=-1)
    return n_levels, es, back, cycles


def report(title, nodes, edges, show_edges):
    n_levels, es, back, cycles = measure(nodes, edges)
    print("%s: %d units, %d levels, %d edges, %d back up, %d cycles"
          % (title, len(nodes), n_levels, len(es), len(back), len(cycles)))
    for c in cycles:
        print("  cycle: " + " <-> ".join(c))
    for v, w in sorted(back):
        print("  back up: %s -> %s" % (v, w))
    if show_edges:
        for v, w in sorted(es):
            print("  %s -> %s" % (v, w))
    return len(back) + len(cycles)


def folder(unit):
    return os.path.dirname(unit) or "."


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", nargs="?", default=os.path.join(os.path.dirname(__file__), "..", "src"))
    ap.add_argument("--edges", action="store_true", help="list every edge")
    ap.add_argument("--longest", type=int, default=0, metavar="N", help="the N longest functions")
    ap.add_argument("--check", action="store_true", help="exit 1 on a cycle or an edge back up")
    args = ap.parse_args()
    top = os.path.abspath(args.src)
    units, edges = graph(top)
    bad = report("src/", units, edges, args.edges)
    folders = sorted({folder(u) for u in units})
    for f in folders if len(folders) > 1 else []:
        inside = {u for u in units if folder(u) == f}
        bad += report("  src/%s" % ("" if f == "." else f + "/"), inside, edges, False)
    fedges = collections.defaultdict(set)
    for v, ws in edges.items():
        for w in ws:
            if folder(v) != folder(w):
                fedges[folder(v)].add(folder(w))
    bad += report("folders", set(folders), fedges, args.edges)
    if args.longest:
        funcs = [(end - line + 1, "%s:%d %s" % (path, line, name))
                 for name, kind, path, line, end, _ in ctags(top, list(sources(top)))
                 if kind == "function" and end]
        print("longest functions:")
        for n, where in sorted(funcs, reverse=True)[:args.longest]:
            print("  %4d  %s" % (n, where))
    return 1 if args.check and bad else 0


if __name__ == "__main__":
    sys.exit(main())
