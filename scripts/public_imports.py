"""Rewrite imports of the host in plugins/, examples/ and the docs' Python blocks to the public
modules (docs/plugins/public-api.md), mechanically.

    PYTHONPATH=core:$(ls -d plugins/*/* | tr '\\n' :) python scripts/public_imports.py [--check] [PATH...]

Each ``from seamkit.<internal> import name`` becomes an import of the same object from a public
module: for plugin code ``seamkit.plugin`` first, for examples and docs ``seamkit`` first; a name
published under another name is imported ``as`` the old one, so the code below is untouched.
Imports already public are left alone. Rewritten Python files are re-sorted with
``ruff check --fix --select I``. ``--check`` only lists what it would change (exit 1 if anything).
Names with no public home are reported, not changed. Paths default to plugins examples docs.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

PUBLIC = ("seamkit.plugin", "seamkit.values", "seamkit.errors", "seamkit", "seamkit.testing",
          "seamkit.composition", "seamkit.workflows", "seamkit.capabilities")
FOR_PLUGINS = PUBLIC
FOR_USERS = ("seamkit", "seamkit.testing", "seamkit.composition", "seamkit.workflows", "seamkit.capabilities",
             "seamkit.values", "seamkit.errors", "seamkit.plugin")
_PRIMITIVE = (int, float, str, bytes, bool, type(None), tuple, frozenset)


def _public_names() -> dict[str, list[str]]:
    out = {}
    for m in PUBLIC:
        mod = importlib.import_module(m)
        out[m] = [*mod.__all__, *(["__version__"] if m == "seamkit" else [])]
    return out


NAMES = _public_names()


def _value(module: str, name: str) -> Any:
    mod = importlib.import_module(module)
    try:
        return getattr(mod, name)
    except AttributeError:
        return importlib.import_module(f"{module}.{name}")  # a submodule (``from pkg import mod``)


def resolve(module: str, name: str, prefer: tuple[str, ...]) -> tuple[str, str] | None:
    """``(public module, public name)`` for ``from module import name``, or ``None``."""
    if module in NAMES and name in NAMES[module]:
        return module, name
    obj = _value(module, name)
    for m in prefer:
        if name in NAMES[m] and _value(m, name) is obj:
            return m, name
    for m in prefer:  # published under another name ("module:name" in the lazy map)
        for p, target in getattr(importlib.import_module(m), "_EXPORTS", {}).items():
            if target == f"{module}:{name}":
                return m, p
    if not isinstance(obj, _PRIMITIVE):
        for m in prefer:
            for p in NAMES[m]:
                if _value(m, p) is obj:
                    return m, p
    return None


def _is_host(module: str | None) -> bool:
    return module is not None and (module == "seamkit" or module.startswith("seamkit."))


def rewrite_source(src: str, prefer: tuple[str, ...], where: str, problems: list[str]) -> str | None:
    """``src`` with its host imports made public, or ``None`` when nothing changes."""
    tree = ast.parse(src)
    lines = src.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _is_host(a.name) and a.name not in NAMES:
                    problems.append(f"{where}:{node.lineno}: import {a.name} (rewrite by hand)")
            continue
        if not isinstance(node, ast.ImportFrom) or node.level or not _is_host(node.module):
            continue
        assert node.module is not None
        groups: dict[str, list[str]] = {}
        changed = False
        for a in node.names:
            target = resolve(node.module, a.name, prefer)
            if target is None:
                problems.append(f"{where}:{node.lineno}: {node.module}.{a.name} has no public name")
                target = (node.module, a.name)
            m, p = target
            changed |= (m, p) != (node.module, a.name)
            asname = a.asname or (a.name if p != a.name else None)
            groups.setdefault(m, []).append(f"{p} as {asname}" if asname else p)
        if changed:
            edits.append((node, groups))
    if not edits:
        return None
    for node, groups in sorted(edits, key=lambda e: e[0].lineno, reverse=True):
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        indent = " " * node.col_offset
        head, tail = lines[first][: node.col_offset], lines[last][node.end_col_offset or 0:]
        new = []
        for m, names in groups.items():
            one = f"{indent}from {m} import {', '.join(names)}"
            if len(one) <= 120:
                new.append(one)
            else:
                new.append(f"{indent}from {m} import (\n" + "".join(f"{indent}    {n},\n" for n in names)
                           + f"{indent})")
        text = "\n".join(new)
        lines[first:last + 1] = [head[: len(head) - len(indent)] + text + tail]
    return "".join(lines)


def _md_blocks(text: str) -> list[tuple[int, int]]:
    """``(first body line, end line)`` (0-based, end exclusive) of each ```python block."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("```"):
            info, start = lines[i][3:].strip(), i + 1
            i += 1
            while i < len(lines) and lines[i].rstrip() != "```":
                i += 1
            if info.split()[:1] == ["python"]:
                out.append((start, i))
        i += 1
    return out


def _name_key(name: str) -> tuple[int, str]:
    base = name.split(" as ")[0]
    return (0 if base.isupper() else 1 if base[:1].isupper() else 2, base)


def _sorted_imports(src: str) -> str:
    """``src`` with each run of consecutive top-level ``from seamkit... import`` lines merged per
    module and sorted as ruff's isort rule orders them (the rest of the block is left as written:
    ruff cannot know a page's own first-party package)."""
    tree = ast.parse(src)
    lines = src.splitlines(keepends=True)
    runs: list[list[ast.ImportFrom]] = []
    prev: ast.stmt | None = None
    for node in tree.body:
        host = isinstance(node, ast.ImportFrom) and _is_host(node.module) and node.level == 0
        if host and runs and prev is runs[-1][-1] and node.lineno == (prev.end_lineno or 0) + 1:
            runs[-1].append(node)  # type: ignore[arg-type]
        elif host:
            runs.append([node])  # type: ignore[list-item]
        prev = node
    for run in reversed(runs):
        groups: dict[str, list[str]] = {}
        for node in run:
            names = [f"{a.name} as {a.asname}" if a.asname else a.name for a in node.names]
            have = groups.setdefault(node.module or "", [])
            have.extend(n for n in names if n not in have)
        new = []
        for m in sorted(groups):
            names = sorted(groups[m], key=_name_key)
            one = f"from {m} import {', '.join(names)}"
            new.append(one if len(one) <= 120 else f"from {m} import (\n" + "".join(f"    {n},\n" for n in names) + ")")
        lines[run[0].lineno - 1:run[-1].end_lineno or run[-1].lineno] = ["\n".join(new) + "\n"]
    return "".join(lines)


def rewrite_markdown(path: Path, problems: list[str]) -> str | None:
    """The page with its ```python blocks' host imports made public (an author's page, under
    docs/plugins, prefers seamkit.plugin; a user's page prefers seamkit)."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    prefer = FOR_PLUGINS if path.name == "plugins.md" or "plugins" in path.parts else FOR_USERS
    changed = False
    for start, end in reversed(_md_blocks(text)):
        body = "".join(lines[start:end])
        new = rewrite_source(body, prefer, f"{path}:{start + 1}", problems)
        if new is not None:
            lines[start:end] = [_sorted_imports(new)]
            changed = True
    return "".join(lines) if changed else None


def main(argv: list[str]) -> int:
    check = "--check" in argv
    roots = [Path(a) for a in argv if a != "--check"] or [Path("plugins"), Path("examples"), Path("docs")]
    problems: list[str] = []
    changed: list[Path] = []
    for root in roots:
        files = [root] if root.is_file() else sorted(root.rglob("*"))
        for f in files:
            if ".venv" in f.parts or not f.is_file():
                continue
            if f.suffix == ".py":
                prefer = FOR_USERS if "examples" in f.parts else FOR_PLUGINS
                new = rewrite_source(f.read_text(encoding="utf-8"), prefer, str(f), problems)
            elif f.suffix == ".md":
                new = rewrite_markdown(f, problems)
            else:
                continue
            if new is not None:
                changed.append(f)
                if not check:
                    f.write_text(new, encoding="utf-8")
    py = [str(f) for f in changed if f.suffix == ".py"]
    if py and not check:
        subprocess.run([sys.executable, "-m", "ruff", "check", "--fix", "--select", "I", "-q", *py], check=False)
    for f in changed:
        print(("would rewrite " if check else "rewrote ") + str(f))
    for p in problems:
        print("PROBLEM", p, file=sys.stderr)
    return 1 if (check and changed) or problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
