#!/usr/bin/env python3
"""Reports import cycles between the files of Rust crates, and between their modules.

Usage: import_cycles.py SRC_DIR... [--modules SRC_DIR...]

Each SRC_DIR holds a crate root (`lib.rs` and/or `main.rs`); the files reached through
`mod x;` declarations are its modules. File A depends on file B when A names an item
that B defines, through a `use` line or a path in code (`crate::..`, `super::..`,
`self::..`). A `use` whose name the file does not mention again is a re-export, no
dependency. Unit-test modules (`#[cfg(test)] mod x { .. }`) are left out: no file imports
them. Names are resolved through re-exports to the file that defines them, so
`use super::Outcome` depends on the file defining `Outcome`, not on the `mod.rs` that
re-exports it. Exits 1 when some files import each other, directly or in a longer loop,
and prints each loop.

After `--modules`, a crate's files are also grouped by top-level module (`store/write.rs`
belongs to `store`, `typecheck.rs` to `typecheck`; the crate root is left out), and a loop
between modules fails as well, each edge shown with a file dependency that makes it.
"""

import os
import re
import sys

DEFINITION = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|unsafe|const|extern\s+\"C\")\s+)*"
    r"(?:struct|enum|fn|trait|type|const|static|union|mod)\s+(\w+)",
    re.M,
)
MACRO = re.compile(r"macro_rules!\s*(\w+)")
USE = re.compile(r"(?:^|[;{}\]]\s*)((?:pub(?:\([^)]*\))?\s+)?)use\s+([^;]+);", re.M)
PATH = re.compile(r"\b((?:crate|super|self)(?:\s*::\s*\w+)+)")
MOD_DECL = re.compile(r"^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
INLINE_MOD = re.compile(r"\bmod\s+\w+\s*\{")


def strip(text):
    """Source without comments, string and char literals (kept as empty quotes)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
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
        elif re.match(r'r#*"', text[i:i + 8]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + len(hashes) + 2)
            end = n if end < 0 else end + 1 + len(hashes)
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x..'", text[i:i + 12]):
            m = re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x..'", text[i:i + 12])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def without_tests(code):
    """`code` without its `#[cfg(test)] mod x { .. }` blocks (blanked, lines kept)."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod\s+\w+\s*\{", code)
        if not m:
            return code
        depth, i = 0, m.end() - 1
        while i < len(code):
            depth += code[i] == "{"
            depth -= code[i] == "}"
            i += 1
            if depth == 0:
                break
        code = code[: m.start()] + re.sub(r"[^\n]", " ", code[m.start() : i]) + code[i:]


def expand(tree, prefix=()):
    """`a::{b, c::{d, e as f}, self}` -> [(segments, bound name)]; a glob binds `*`."""
    tree = re.sub(r"\s*::\s*", "::", tree.strip())
    if "{" not in tree:
        m = re.fullmatch(r"([\w:*]+?)(?:\s+as\s+(\w+))?", tree)
        segs = list(prefix) + [s for s in m.group(1).split("::") if s]
        if segs and segs[-1] == "*":
            return [(segs[:-1], "*")]
        if segs and segs[-1] == "self":
            segs = segs[:-1]
        return [(segs, m.group(2) or (segs[-1] if segs else ""))]
    head, _, rest = tree.partition("{")
    inner = rest[: rest.rfind("}")]
    head_segs = list(prefix) + [s for s in head.split("::") if s]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for part in parts:
        if part.strip():
            out += expand(part, head_segs)
    return out


class Module:
    def __init__(self, path, file, crate):
        self.path, self.file, self.crate = path, file, crate
        self.code = without_tests(strip(open(file, encoding="utf-8").read()))
        self.children = {}
        self.defined = set(DEFINITION.findall(self.code)) | set(MACRO.findall(self.code))
        self.uses = []  # (public, segments, bound name, span)
        for m in USE.finditer(self.code):
            for segs, name in expand(m.group(2)):
                self.uses.append((bool(m.group(1).strip()), segs, name, m.span(2)))
        self.inline = [m.start() for m in INLINE_MOD.finditer(self.code)]


def load(src):
    """All modules under the crate roots of `src`, keyed by (root file, path)."""
    modules = {}
    for root in ("lib.rs", "main.rs"):
        file = os.path.join(src, root)
        if not os.path.exists(file):
            continue
        stack = [((), file)]
        while stack:
            path, file = stack.pop()
            module = Module(path, file, root)
            modules[(root, path)] = module
            base = os.path.dirname(file)
            if os.path.basename(file) not in ("lib.rs", "main.rs", "mod.rs"):
                base = file[:-3]
            for name in MOD_DECL.findall(module.code):
                for candidate in (os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")):
                    if os.path.exists(candidate):
                        module.children[name] = path + (name,)
                        stack.append((path + (name,), candidate))
                        break
            # `use child::X` in a module names its own child module.
            module.uses = [
                (public, ["self"] + segs if segs and segs[0] in module.children else segs, name, span)
                for public, segs, name, span in module.uses
            ]
    return modules


def resolve(modules, module, segs, seen=None):
    """The files that define what `segs` names, seen from `module`."""
    seen = seen or set()
    key = (module.crate, module.path, tuple(segs))
    if key in seen:
        return set()
    seen.add(key)
    crate = module.crate
    if not segs:
        return {module.file}
    head, rest = segs[0], segs[1:]
    if head == "crate":
        current = modules[(crate, ())]
    elif head == "super":
        current = modules.get((crate, module.path[:-1]))
        while rest and rest[0] == "super" and current:
            current = modules.get((crate, current.path[:-1]))
            rest = rest[1:]
    elif head == "self":
        current = module
    else:
        return set()
    if current is None:
        return set()
    for i, seg in enumerate(rest):
        if seg in current.children:
            current = modules[(crate, current.children[seg])]
            continue
        if seg in current.defined:
            return {current.file}
        found = set()
        for _, usegs, name, _ in current.uses:
            if name == seg and usegs and usegs[0] in ("crate", "super", "self"):
                found |= resolve(modules, current, usegs + list(rest[i + 1:]), seen)
        for _, usegs, name, _ in current.uses:
            if name == "*" and not found and usegs and usegs[0] in ("crate", "super", "self"):
                found |= resolve(modules, current, usegs + [seg], seen)
        return found or {current.file}
    return {current.file}


def exports(module):
    """Names a glob import of `module` brings in."""
    names = set(module.defined) | set(module.children)
    names |= {name for public, _, name, _ in module.uses if public and name != "*"}
    return names


def dependencies(modules, module):
    """Files `module` depends on."""
    deps = set()
    code = module.code
    for _, segs, name, span in module.uses:
        if not segs or segs[0] not in ("crate", "super", "self"):
            continue
        if segs[0] == "super" and in_inline_module(module, span[0]):
            segs = ["self"] + segs[1:]
        # Everything but the `use` itself (and `mod x;` lines, which name no item).
        rest = MOD_DECL.sub("", code[: span[0]] + code[span[1]:])
        if name == "*":
            glob_target = resolve(modules, module, segs)
            for candidate in modules.values():
                if candidate.file in glob_target:
                    for exported in exports(candidate):
                        if re.search(r"\b%s\b" % re.escape(exported), rest):
                            deps |= resolve(modules, module, segs + [exported])
            continue
        if re.search(r"\b%s\b" % re.escape(name), rest):
            deps |= resolve(modules, module, segs)
    for m in PATH.finditer(code):
        segs = re.sub(r"\s+", "", m.group(1)).split("::")
        if segs[0] == "super" and in_inline_module(module, m.start()):
            segs = ["self"] + segs[1:]
        deps |= resolve(modules, module, segs)
    deps.discard(module.file)
    return deps


def in_inline_module(module, pos):
    """Whether `pos` lies inside an inline `mod x { .. }` of `module`."""
    return any(depth_at(module.code, start, pos) for start in module.inline if start < pos)


def depth_at(code, start, pos):
    """Whether `pos` lies inside the braces of the inline module opening at `start`."""
    open_at = code.index("{", start)
    depth = 0
    for i in range(open_at, pos):
        depth += code[i] == "{"
        depth -= code[i] == "}"
        if depth == 0:
            return False
    return True


def cycles(graph):
    """Strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on, result, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return result


def module_of(src, file):
    """The top-level module a file belongs to, or None for the crate root."""
    parts = os.path.relpath(file, src).split(os.sep)
    if len(parts) > 1:
        return parts[0]
    name = parts[0][: -len(".rs")]
    return None if name in ("lib", "main") else name


def module_cycles(src, graph):
    """Loops between top-level modules, each edge with one file dependency behind it."""
    modules, because = {}, {}
    for file, deps in graph.items():
        a = module_of(src, file)
        for dep in deps:
            b = module_of(src, dep)
            if a and b and a != b:
                modules.setdefault(a, set()).add(b)
                because.setdefault((a, b), (file, dep))
    found = []
    for component in cycles(modules):
        edges = [
            (a, b, because[(a, b)])
            for a in component
            for b in sorted(modules[a])
            if b in component
        ]
        found.append(edges)
    return found


def main(args):
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    split = args.index("--modules") if "--modules" in args else len(args)
    files_only, with_modules = args[:split], args[split + 1 :]
    found = 0
    for src in files_only + with_modules:
        modules = load(src)
        graph = {m.file: dependencies(modules, m) for m in modules.values()}
        for component in cycles(graph):
            found += 1
            print("import cycle between:")
            for file in component:
                inside = sorted(d for d in graph[file] if d in component)
                print(f"  {file} -> {', '.join(inside)}")
        if src in with_modules:
            for edges in module_cycles(src, graph):
                found += 1
                print(f"module cycle in {src}:")
                for a, b, (file, dep) in edges:
                    print(f"  {a} -> {b} ({file} uses {dep})")
        print(f"{src}: {len(modules)} files, {sum(map(len, graph.values()))} file dependencies")
    print(f"{found} import cycle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
