#!/usr/bin/env python3
"""layering.py -- does any file of src/ depend, through others, on itself?

A file A depends on file B when A calls a function or uses a variable that B
defines (read from the objects' symbol tables with nm: B defines it, A has it
undefined) or when A #includes B's header (B.h beside B.c).  The files of one
cycle cannot be read, tested or changed one stage at a time, so the layout
forbids them: this prints every cycle (each strongly connected component of
more than one file) with the edges inside it, and exits 1 if there is one.

    python3 test/tools/layering.py [SRCDIR]        (objects must be built)
    python3 test/tools/layering.py --edges [SRCDIR] every edge, for reading
"""
import os
import re
import subprocess
import sys


def sources(srcdir):
    for root, _dirs, files in os.walk(srcdir):
        for f in sorted(files):
            if f.endswith(".c"):
                yield os.path.join(root, f)


def module(path, srcdir):
    return os.path.splitext(os.path.relpath(path, srcdir))[0]


def main(argv):
    show_edges = "--edges" in argv
    args = [a for a in argv if not a.startswith("--")]
    srcdir = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "..", "src")
    srcdir = os.path.normpath(srcdir)

    mods = {}
    for c in sources(srcdir):
        mods[module(c, srcdir)] = c
    headers = {}
    for m, c in mods.items():
        h = c[:-2] + ".h"
        if os.path.exists(h):
            # as src/ files include it ("ddl/utility.h"), so that a system
            # header of the same name ("tcop/utility.h") is not taken for it
            headers[os.path.relpath(h, srcdir)] = m

    defined, used = {}, {m: set() for m in mods}
    for m, c in mods.items():
        obj = c[:-2] + ".o"
        if not os.path.exists(obj):
            sys.exit("layering.py: %s is not built (run make first)" % obj)
        out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) < 2:
                continue
            sym, kind = parts[0], parts[1]
            if kind == "U":
                used[m].add(sym)
            elif kind in "TDBRC":
                defined[sym] = m

    edges = {m: {} for m in mods}
    for m, syms in used.items():
        for s in syms:
            d = defined.get(s)
            if d and d != m:
                edges[m].setdefault(d, set()).add(s + "()")
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for m, c in mods.items():
        with open(c, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                mm = inc.match(line)
                if mm:
                    d = headers.get(os.path.normpath(mm.group(1)))
                    if d and d != m:
                        edges[m].setdefault(d, set()).add("#include " + mm.group(1))

    if show_edges:
        for m in sorted(edges):
            for d in sorted(edges[m]):
                print("%s -> %s: %s" % (m, d, ", ".join(sorted(edges[m][d]))))

    # Tarjan's strongly connected components
    index, low, stack, onstack, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        onstack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in onstack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                onstack.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)

    cycles = [sorted(c) for c in comps if len(c) > 1]
    for c in sorted(cycles):
        print("cycle: " + " <-> ".join(c))
        for a in c:
            for b in sorted(edges[a]):
                if b in c:
                    print("    %s -> %s: %s" % (a, b, ", ".join(sorted(edges[a][b]))))
    print("%d files, %d cycle(s)" % (len(mods), len(cycles)))
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
