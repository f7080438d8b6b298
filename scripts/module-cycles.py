#!/usr/bin/env python3
"""No module imports one that imports it back: the module graph of every crate, checked.

Usage: scripts/module-cycles.py [CRATE_DIR ...]   (default: every crates/*/src tree)
Exit 0 when no crate has a cycle, 1 with each cycle printed otherwise.

The graph's nodes are the crate's modules that are files (inline `mod x { ... }` blocks belong
to their file, so a file's `mod tests` using `super::*` is not an edge). An edge A -> B is a
path in A's code (a `use`, or a `crate::`/`super::`/`self::` path in an expression or a type)
that names an item defined in B. Paths are resolved through re-exports: `super::Actor`, where
the parent says `pub use actor::Actor`, is an edge to `actor`, not to the parent. Two things
are not edges, because they are a module's shape and not a dependency: `mod` declarations, and
re-exports themselves (`pub use`, `pub(crate) use`, ...), which make a facade of a parent.

Why a script and not `cargo modules`: that tool needs a build of rust-analyzer (minutes here,
and a network fetch in CI); this reads the text, needs python3 only, and runs in a second. It
reads what a human reads: comments and strings are removed first, and a path hidden behind a
glob import (`use super::*` outside a test module) counts as an edge to the module globbed.
"""

from __future__ import annotations

import pathlib
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments_and_strings(text: str) -> str:
    """Blank out comments, string and char literals, keeping line breaks."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if text[i] == "\n":
                        out.append("\n")
                    i += 1
            continue
        m = re.match(r'(b|c)?r(#*)"', text[i:i + 260]) if c in "rbc" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) else None
        if m:
            end = '"' + m.group(2)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append("\n" * text.count("\n", i, j) + '""')
            i = j
            continue
        if c == '"' or (c == "b" and text.startswith('b"', i) and (i == 0 or not text[i - 1].isalnum())):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append("\n" * text.count("\n", i, j) + '""')
            i = j + 1
            continue
        if c == "'":
            # A char literal ('a', '\n', '\u{..}') but not a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:i + 12])
            if m:
                out.append("' '")
                i += m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def remove_inline_test_modules(text: str) -> str:
    """Drop `#[cfg(test)] mod x { ... }` bodies: a file's tests are not its dependencies."""
    result = []
    pos = 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+" + IDENT + r"\s*\{", text):
        if m.start() < pos:
            continue
        depth, j = 1, m.end()
        while j < len(text) and depth:
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
            j += 1
        result.append(text[pos:m.start()])
        result.append("\n" * text.count("\n", m.start(), j))
        pos = j
    result.append(text[pos:])
    return "".join(result)


class Module:
    def __init__(self, path: tuple[str, ...], file: pathlib.Path, text: str):
        self.path = path
        self.file = file
        self.text = text
        self.children: dict[str, tuple[str, ...]] = {}
        # name -> (list of segments, relative to this module) for `pub ... use` re-exports
        self.reexports: dict[str, list[str]] = {}
        self.glob_reexports: list[list[str]] = []
        self.uses: list[list[str]] = []  # non-re-export use paths, absolute-ish segments
        self.globs: list[list[str]] = []


def split_use_tree(tree: str, prefix: list[str]) -> list[tuple[list[str], str]]:
    """`a::{b, c::d as e, f::*}` -> [(segments, bound_name)]; bound name '*' for globs."""
    tree = tree.strip()
    if not tree:
        return []
    # Find a top-level `{`.
    depth = 0
    for k, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                head = tree[:k].strip().rstrip(":").strip()
                inner = tree[k + 1:tree.rfind("}")]
                segs = prefix + [s for s in head.split("::") if s.strip()]
                parts, d, start = [], 0, 0
                for q, c2 in enumerate(inner):
                    if c2 == "{":
                        d += 1
                    elif c2 == "}":
                        d -= 1
                    elif c2 == "," and d == 0:
                        parts.append(inner[start:q])
                        start = q + 1
                parts.append(inner[start:])
                out = []
                for p in parts:
                    out.extend(split_use_tree(p, [s.strip() for s in segs]))
                return out
            depth += 1
    alias = None
    m = re.match(r"(.*)\s+as\s+(" + IDENT + r")$", tree, re.S)
    if m:
        tree, alias = m.group(1).strip(), m.group(2)
    segs = prefix + [s.strip() for s in tree.split("::") if s.strip()]
    if not segs:
        return []
    if segs[-1] == "self":
        segs = segs[:-1]
        return [(segs, alias or (segs[-1] if segs else "self"))]
    return [(segs, alias or segs[-1])]


def collect_crate(src: pathlib.Path) -> dict[tuple[str, ...], Module]:
    root = src / "lib.rs"
    if not root.exists():
        root = src / "main.rs"
    modules: dict[tuple[str, ...], Module] = {}

    def load(path: tuple[str, ...], file: pathlib.Path, dir_for_children: pathlib.Path):
        raw = file.read_text(encoding="utf-8")
        text = remove_inline_test_modules(strip_comments_and_strings(raw))
        mod = Module(path, file, text)
        modules[path] = mod
        for m in re.finditer(r"(?m)^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", text):
            name = m.group(1)
            child_path = path + (name,)
            cands = [dir_for_children / f"{name}.rs", dir_for_children / name / "mod.rs"]
            pm = re.search(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+' + name + r"\s*;", raw)
            if pm:
                cands = [file.parent / pm.group(1)]
            for cand in cands:
                if cand.exists():
                    mod.children[name] = child_path
                    sub_dir = cand.parent / name if cand.name != "mod.rs" else cand.parent
                    load(child_path, cand, sub_dir)
                    break
        for m in re.finditer(r"(?s)(?:^|[;{}\n])\s*(?:#\[[^\]]*\]\s*)*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", text):
            is_pub = bool(m.group(1))
            for segs, bound in split_use_tree(m.group(2), []):
                if not segs:
                    continue
                if bound == "*" or segs[-1] == "*":
                    base = segs[:-1] if segs[-1] == "*" else segs
                    (mod.glob_reexports if is_pub else mod.globs).append(base)
                    continue
                if is_pub:
                    mod.reexports[bound] = segs
                else:
                    mod.uses.append(segs)

    load((), root, src)
    return modules


def resolve(modules, here: tuple[str, ...], segs: list[str], crate_names: set[str], depth=0):
    """Resolve a path to the module defining its item; None when outside the crate."""
    if depth > 20 or not segs:
        return None
    first = segs[0]
    if first == "crate":
        cur, rest = (), segs[1:]
    elif first == "super":
        cur, rest = here, segs
        while rest and rest[0] == "super":
            cur, rest = cur[:-1], rest[1:]
    elif first == "self":
        cur, rest = here, segs[1:]
    elif first in modules[here].children:
        cur, rest = here, segs
    elif first in modules[here].reexports:
        target = modules[here].reexports[first]
        return resolve(modules, here, target + segs[1:], crate_names, depth + 1)
    else:
        return None  # std, an external crate, or a local item
    while rest:
        name = rest[0]
        mod = modules.get(cur)
        if mod is None:
            return None
        if name in mod.children:
            cur, rest = mod.children[name], rest[1:]
            continue
        if name in mod.reexports:
            target = mod.reexports[name]
            return resolve(modules, cur, target + rest[1:], crate_names, depth + 1)
        for g in mod.glob_reexports:
            r = resolve(modules, cur, g + rest, crate_names, depth + 1)
            if r is not None and r != cur:
                return r
        break
    return cur


PATH_RE = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:::" + IDENT + r")+)")


def edges_of(modules, crate_names):
    edges: dict[tuple, set] = {p: set() for p in modules}
    for path, mod in modules.items():
        targets = []
        for segs in mod.uses:
            targets.append(segs)
        for segs in mod.globs:
            targets.append(segs)
        # Paths written in code, outside `use` lines.
        body = re.sub(r"(?s)(?:^|(?<=[;{}\n]))\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?use\s+[^;]+;", "\n", mod.text)
        for m in PATH_RE.finditer(body):
            targets.append(m.group(1).split("::"))
        # Names bound by plain `use a::b::c;` of a module, used as `c::x` in code.
        for segs in targets:
            t = resolve(modules, path, segs, crate_names)
            if t is not None and t != path:
                edges[path].add(t)
    return edges


def sccs(nodes, edges):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
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
            out.append(comp)

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def name(path):
    return "::".join(path) if path else "crate"


def main(argv):
    roots = [pathlib.Path(a) for a in argv[1:]] or sorted(pathlib.Path("crates").glob("*"))
    failed = 0
    for crate in roots:
        src = crate / "src"
        if not src.is_dir():
            continue
        modules = collect_crate(src)
        edges = edges_of(modules, set())
        for comp in sccs(list(modules), edges):
            if len(comp) < 2:
                continue
            failed += 1
            comp_set = set(comp)
            print(f"{crate}: a cycle of {len(comp)} modules:")
            for v in sorted(comp):
                back = sorted(name(w) for w in edges[v] if w in comp_set)
                print(f"  {name(v)} ({modules[v].file}) -> {', '.join(back)}")
    if failed:
        print(f"module-cycles: {failed} cycle(s); break each by moving the shared piece into a module both sides import")
        return 1
    print(f"module-cycles: no module imports one that imports it back ({len(roots)} crates)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
