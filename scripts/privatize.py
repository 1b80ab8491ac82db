"""Make the host's internal modules private, as httpx does (``httpx/_client.py``), by rule.

    python scripts/privatize.py [--dry-run] [ROOT]

ROOT is the repository (default: the one holding this script). Idempotent: a second run changes
nothing. It works from the tree it finds, not from a list of edits, so it can be re-run on a
``main`` that has moved on:

1. **Moves** (``git mv``). The public modules are exactly :data:`PUBLIC_TOP` under
   ``core/seamkit`` (docs/plugins/public-api.md). Every other top-level module or package gets a
   leading underscore (``agent/`` -> ``_agent/``, ``ports.py`` -> ``_ports.py``); inside a public
   package every submodule but ``__init__`` does (``composition/build.py`` ->
   ``composition/_build.py``). Inside a private package, names stay (``seamkit._agent.loop``).
2. **The map** of old to new module paths is written to ``core/seamkit/_moved.py`` (merged with
   what is there, so later runs still fix stale references); the checkpoint codec reads classes
   stored under an old module path through it.
3. **References** in core/, plugins/, testkit/, tests/, examples/, benchmarks/, docs/, scripts/,
   .ci/, README.md and every pyproject.toml are rewritten:

   - dotted paths anywhere in text (imports, ``import_module("...")``, monkeypatch targets, lazy
     maps, ``python -m ...``, console scripts and entry points, import-linter layers, prose);
   - ``from seamkit.pkg import submodule`` and ``from . import submodule`` (the name is imported
     ``as`` its old name, so the code below is untouched);
   - relative imports (``from ..agent.loop import x`` -> ``from .._agent.loop import x``);
   - file paths (``core/seamkit/agent/loop.py``, ``seamkit/cli/``), when the new path exists;
   - in docs/layers.md, the paths relative to ``core/seamkit/`` (its table's "where" column).

4. **Public imports only** outside the host: testkit/, plugins/ and examples/ imports of
   internal modules become imports of the same objects from the public modules
   (scripts/public_imports.py; a name with no public home is reported, not changed).

   A dotted string is a module path only if it resolves: the longest module prefix is a module
   and what follows names something its source binds at top level (``module:attr``, the object
   reference form, counts as a path even when ``attr`` is a deliberate typo in a test). Names that
   merely look like module paths are left alone: the state key ``seamkit.compaction.notes`` does
   not resolve; ``seamkit.grounding:r1:1`` (a further ``:``) is a store key; logger names (an
   argument of ``getLogger(``, a ``logger=`` keyword, "the `x` logger" in prose) and values of
   UPPER_CASE constants (store keys, scope tenants, service names) are names by rule; and a
   public package's name that is also its submodule's (``seamkit.workflows.validate``) is the
   function when called, ``seamkit.workflows.validate(...)``, else the module.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

PUBLIC_TOP = frozenset({"__init__", "__main__", "plugin", "testing", "values", "errors", "composition",
                        "workflows", "capabilities"})
"""The public modules under ``seamkit`` (the last component of each dotted path)."""
PUBLIC_PACKAGES = frozenset({"testing", "composition", "workflows", "capabilities"})
ROOTS = ("core", "plugins", "testkit", "tests", "examples", "benchmarks", "docs", "scripts", ".ci")
TOP_FILES = ("README.md", "pyproject.toml", "tox.ini", "requirements-dev.txt")
SUFFIXES = frozenset({".py", ".md", ".toml", ".tmpl", ".yaml", ".yml", ".sh", ".cfg", ".ini", ".txt", ".json",
                      ".rst", ""})
SKIP_DIRS = frozenset({".venv", ".git", "__pycache__", "node_modules", ".seamkit", ".mypy_cache", ".ruff_cache"})
SELF = "scripts/privatize.py"
MOVED_FILE = "core/seamkit/_moved.py"

DOTTED = re.compile(r"(?<![\w.])seamkit(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*)?")
PATH = re.compile(r"(?<![\w.-])(?:core/)?seamkit/[\w/.]*[\w/]")
LOGGER_BEFORE = re.compile(r"""(?:getLogger\(\s*|logger\s*=\s*)["']$""")
CONSTANT_BEFORE = re.compile(r"""^\s*[A-Z][A-Z0-9_]*\s*(?::[^=]*)?=\s*["']$""")
LOGGER_AFTER = re.compile(r"`?\s+logger\b")


# --- 1. the moves ---------------------------------------------------------------------------

def planned_moves(pkg: Path) -> list[tuple[Path, Path]]:
    """``(old, new)`` paths to ``git mv``, by the rule in the module docstring."""
    moves = []

    def candidates(folder: Path) -> list[tuple[Path, str]]:
        out = []
        for p in sorted(folder.iterdir()):
            if p.name.startswith("_") or p.name in SKIP_DIRS:
                continue
            if p.is_file() and p.suffix == ".py":
                out.append((p, p.stem))
            elif p.is_dir() and ((p / "__init__.py").exists() or p.with_name("_" + p.name).is_dir()):
                # (a package, or what a branch added under one already moved: it joins the moved one)
                out.append((p, p.name))
        return out

    for p, name in candidates(pkg):
        if name not in PUBLIC_TOP:
            moves.append((p, p.with_name("_" + p.name)))
        elif name in PUBLIC_PACKAGES and p.is_dir():
            moves += [(q, q.with_name("_" + q.name)) for q, _ in candidates(p)]
    return moves


def module_of(path: Path, core: Path) -> str:
    rel = path.relative_to(core).with_suffix("") if path.suffix == ".py" else path.relative_to(core)
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def read_moved(root: Path) -> dict[str, str]:
    f = root / MOVED_FILE
    if not f.exists():
        return {}
    for node in ast.parse(f.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and node.value is not None:
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name) and target.id == "MOVED":
                value = ast.literal_eval(node.value)
                assert isinstance(value, dict)
                return {str(k): str(v) for k, v in value.items()}
    return {}


def write_moved(root: Path, moved: dict[str, str]) -> bool:
    f = root / MOVED_FILE
    text = f.read_text(encoding="utf-8")
    body = "".join(f'    "{k}": "{v}",\n' for k, v in sorted(moved.items()))
    new = re.sub(r"MOVED: dict\[str, str\] = \{\n.*?^\}", lambda _: "MOVED: dict[str, str] = {\n" + body + "}",
                 text, count=1, flags=re.S | re.M)
    if new != text:
        f.write_text(new, encoding="utf-8")
    return new != text


# --- the module index: what exists now, and what each module binds ----------------------------

class Index:
    """The modules under ``core/seamkit`` after the moves, with their top-level names."""

    def __init__(self, core: Path, moved: dict[str, str]) -> None:
        self.core = core
        self.moved = moved
        self.files: dict[str, Path] = {}
        for p in (core / "seamkit").rglob("*.py"):
            if not SKIP_DIRS & set(p.parts):
                self.files[module_of(p, core)] = p
        self._names: dict[str, frozenset[str]] = {}

    def rename(self, dotted: str) -> str:
        """``dotted`` with its longest moved prefix replaced (repeated until nothing moves)."""
        for _ in range(8):
            parts = dotted.split(".")
            for i in range(len(parts), 0, -1):
                new = self.moved.get(".".join(parts[:i]))
                if new is not None:
                    dotted = ".".join([new, *parts[i:]])
                    break
            else:
                return dotted
        return dotted

    def names(self, module: str) -> frozenset[str]:
        """What ``module``'s source binds at top level (also under top-level if/try), and the
        strings of its ``__all__``."""
        if module not in self._names:
            found: set[str] = set()
            try:
                tree = ast.parse(self.files[module].read_text(encoding="utf-8"))
            except SyntaxError:
                tree = ast.Module(body=[], type_ignores=[])

            def visit(body: list[ast.stmt]) -> None:
                for n in body:
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                        found.add(n.name)
                    elif isinstance(n, ast.Import | ast.ImportFrom):
                        found.update((a.asname or a.name).split(".")[0] for a in n.names)
                    elif isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign):
                        targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                        for t in targets:
                            for x in ast.walk(t):
                                if isinstance(x, ast.Name):
                                    found.add(x.id)
                            if isinstance(t, ast.Name) and t.id == "__all__":
                                found.update(c.value for c in ast.walk(n.value) if isinstance(c, ast.Constant)
                                             and isinstance(c.value, str))  # type: ignore[arg-type]
                    elif isinstance(n, ast.If | ast.Try):
                        visit(n.body)
                        visit(n.orelse)
                        if isinstance(n, ast.Try):
                            for h in n.handlers:
                                visit(h.body)
                            visit(n.finalbody)
            visit(tree.body)
            self._names[module] = frozenset(found)
        return self._names[module]

    def resolve(self, dotted: str) -> str | None:
        """The current form of the module path ``dotted`` (``a.b.c`` or ``a.b:c``), or ``None``
        when it is not one (a name that only looks like a path) or nothing moved."""
        head, colon, attr = dotted.partition(":")
        new = self.rename(head)
        if new == head:
            return None
        parts = new.split(".")
        for i in range(len(parts), 0, -1):
            mod = ".".join(parts[:i])
            if mod in self.files:
                rest = parts[i:] + ([attr] if colon else [])
                if rest and rest[0] not in self.names(mod) and not colon:
                    return None  # a name such as the state key seamkit.compaction.notes
                return new + colon + attr
        return None

    def old_was_name(self, old: str) -> bool:
        """Whether ``old``'s last component is also a name its public package binds."""
        parent, _, last = old.rpartition(".")
        return parent.split(".")[-1] in PUBLIC_PACKAGES and parent in self.files and last in self.names(parent)


# --- 3. the rewrites --------------------------------------------------------------------------

def rewrite_dotted(text: str, index: Index) -> str:
    def sub(m: re.Match[str]) -> str:
        found = m.group(0)
        if ":" in found and text.startswith(":", m.end()):
            return found  # a store key (seamkit.grounding:RUN:N), not module:attr
        new = index.resolve(found)
        if new is None:
            return found
        if text.startswith("(", m.end()) and index.old_was_name(found):
            return found  # seamkit.workflows.validate(...): the function the package publishes
        line_start = text.rfind("\n", 0, m.start()) + 1
        before = text[line_start:m.start()]
        if LOGGER_BEFORE.search(before) or CONSTANT_BEFORE.search(before) or LOGGER_AFTER.match(text, m.end()):
            return found  # a logger name or a constant's value: a name, not a path
        return new

    return DOTTED.sub(sub, text)


def rewrite_paths(text: str, index: Index) -> str:
    """File paths under the host (``core/seamkit/agent/loop.py``, ``seamkit/cli/templates/``):
    the leading module components renamed, when the renamed module exists."""
    def sub(m: re.Match[str]) -> str:
        found = m.group(0)
        prefix = "core/" if found.startswith("core/") else ""
        parts = found[len(prefix):].split("/")
        ids: list[str] = []
        for p in parts:
            stem = p[:-3] if p.endswith(".py") else p
            if not stem.isidentifier():
                break
            ids.append(stem)
            if stem != p:
                break
        if not ids:
            return found
        new_ids = index.rename(".".join(ids)).split(".")
        where = index.core.joinpath(*new_ids)
        if new_ids == ids or not (where.exists() or where.with_suffix(".py").exists()):
            return found
        last = parts[len(ids) - 1][len(ids[-1]):]  # ".py" or ""
        return prefix + "/".join([*new_ids[:-1], new_ids[-1] + last, *parts[len(ids):]])

    return PATH.sub(sub, text)


def _offsets(src: str) -> list[int]:
    out, pos = [0], 0
    for line in src.splitlines(keepends=True):
        pos += len(line)
        out.append(pos)
    return out


def rewrite_imports(src: str, index: Index, package: str | None) -> str:
    """``src`` (Python) with relative imports' module paths renamed, and submodules imported by
    ``from pkg import sub`` renamed ``as`` their old names. ``package`` is the file's package
    (for relative imports), ``None`` outside the host."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return src
    off = _offsets(src)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            if package is None:
                continue
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            if len(base) < 1 or base[0] != "seamkit":
                continue
            target = ".".join(base + ([node.module] if node.module else []))
            new_target = index.rename(target)
            if node.module and new_target != target:
                new_module = ".".join(new_target.split(".")[len(base):])
                start = off[node.lineno - 1] + node.col_offset
                m = re.compile(r"from\s+\.+" + re.escape(node.module)).match(src, start)
                if m:
                    dots = "." * node.level
                    edits.append((m.start(), m.end(), f"from {dots}{new_module}"))
            module = new_target
        elif node.module and (node.module == "seamkit" or node.module.startswith("seamkit.")):
            module = index.rename(node.module)
        else:
            continue
        for a in node.names:
            old_sub = f"{module}.{a.name}"
            new_sub = index.rename(old_sub)
            if new_sub == old_sub or new_sub not in index.files or a.name in index.names(module):
                continue  # not a moved submodule, or a name the package binds (workflows.validate)
            start = off[a.lineno - 1] + a.col_offset
            new_name = new_sub.rsplit(".", 1)[1]
            edits.append((start, start + len(a.name), new_name if a.asname else f"{new_name} as {a.name}"))
    for start, end, text in sorted(edits, reverse=True):
        src = src[:start] + text + src[end:]
    return src


def rewrite_markdown_blocks(text: str, index: Index) -> str:
    """The ```python blocks of a page with their ``from seamkit.pkg import sub`` renamed."""
    def sub(m: re.Match[str]) -> str:
        return m.group(1) + rewrite_imports(m.group(2), index, None) + m.group(3)

    return re.sub(r"(^```python[^\n]*\n)(.*?)(^```)", sub, text, flags=re.S | re.M)


LAYER_CELL = re.compile(r"`((?:\w+/)+(?:\w+(?:\.py)?)?|\w+\.py)`")


def rewrite_layers_table(text: str, index: Index) -> str:
    """docs/layers.md: its backticked paths relative to ``core/seamkit/`` (the table's "where"
    column and the prose about it); a table cell keeps its width where its padding allows."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith("|") and "`" in line:
            cells = line.split("|")
            for i, cell in enumerate(cells):
                new = LAYER_CELL.sub(lambda m: "`" + _layer_path(m.group(1), index) + "`", cell)
                grown = len(new) - len(cell)
                if grown > 0 and new.endswith(" " * (grown + 1)):
                    new = new[:-grown]
                cells[i] = new
            line = "|".join(cells)
        else:
            line = LAYER_CELL.sub(lambda m: "`" + _layer_path(m.group(1), index) + "`", line)
        out.append(line)
    return "".join(out)


def _layer_path(rel: str, index: Index) -> str:
    new = rewrite_paths("core/seamkit/" + rel, index)
    return new[len("core/seamkit/"):] if new.startswith("core/seamkit/") else rel


LINE_LENGTH = 120  # ruff's line-length in pyproject.toml
ONE_LINE_IMPORT = re.compile(r"^(\s*)from (\S+) import ([^()#\n]+)$", re.M)


def wrap_long_imports(src: str) -> str:
    """A one-line ``from x import a, b`` that an underscore made too long, parenthesised one
    name a line (as ruff's isort writes it)."""
    def sub(m: re.Match[str]) -> str:
        if len(m.group(0)) <= LINE_LENGTH:
            return m.group(0)
        indent, names = m.group(1), [n.strip() for n in m.group(3).split(",") if n.strip()]
        return f"{indent}from {m.group(2)} import (\n" + "".join(f"{indent}    {n},\n" for n in names) + f"{indent})"

    return ONE_LINE_IMPORT.sub(sub, src)


def sort_imports(root: Path, files: list[str]) -> None:
    """ruff's import sorting on the rewritten files: ``seamkit._x`` sorts before ``seamkit.x``."""
    py = [f for f in files if f.endswith(".py")]
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if py and Path(ruff).exists():
        subprocess.run([ruff, "check", "--no-cache", "--fix", "--select", "I", "-q", *py], cwd=root, check=False)
    elif py:
        print("ruff not found: sort the imports with `ruff check --fix --select I`", file=sys.stderr)


PUBLIC_ONLY = ("testkit", "plugins", "examples")
"""Code outside the host that may import only the public modules (tests/core/test_public_api.py)."""


def public_imports(root: Path) -> None:
    """Imports of internal modules outside the host (the testkit's, mostly) rewritten to the public
    names of the same objects, by scripts/public_imports.py (it imports the host to compare)."""
    tool = root / "scripts" / "public_imports.py"
    if not tool.exists():
        return
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "core"), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, str(tool), *PUBLIC_ONLY], cwd=root, env=env, check=False)


def files_to_rewrite(root: Path) -> list[Path]:
    out = [root / f for f in TOP_FILES if (root / f).is_file()]
    for r in ROOTS:
        base = root / r
        if not base.exists():
            continue
        for p in sorted(base.rglob("*")):
            rel = p.relative_to(root).as_posix()
            if SKIP_DIRS & set(p.relative_to(root).parts) or not p.is_file() or rel in (SELF, MOVED_FILE):
                continue
            if p.suffix in SUFFIXES or p.name.endswith(".tmpl"):
                out.append(p)
    return out


def rewrite_file(path: Path, root: Path, index: Index) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return False
    in_host = root / "core" / "seamkit" in path.parents
    if "seamkit" not in text and not (in_host and path.suffix == ".py"):
        return False  # (a host module's relative imports name no "seamkit")
    new = text
    core = root / "core"
    steps: list[Callable[[str], str]] = []
    if path.suffix == ".py":
        package = None
        if in_host:
            mod = module_of(path, core)
            package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        steps.append(lambda s: rewrite_imports(s, index, package))
    elif path.suffix == ".md":
        steps.append(lambda s: rewrite_markdown_blocks(s, index))
    if path.relative_to(root).as_posix() == "docs/layers.md":
        steps.append(lambda s: rewrite_layers_table(s, index))
    steps += [lambda s: rewrite_dotted(s, index), lambda s: rewrite_paths(s, index)]
    if path.suffix == ".py":
        steps.append(wrap_long_imports)
    for step in steps:
        new = step(new)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def git_mv(old: Path, new: Path, root: Path) -> None:
    """``git mv old new``; where ``new`` is already there (a branch added a file under the old
    package after the move), the new files join it one by one. Two versions of one file stop
    the script: that is a merge for a person."""
    if not new.exists():
        subprocess.run(["git", "mv", str(old), str(new)], cwd=root, check=True)
        return
    if old.is_file() or new.is_file():
        sys.exit(f"privatize: both {old.relative_to(root)} and {new.relative_to(root)} exist; merge them by hand")
    for child in sorted(old.iterdir()):
        if child.name == "__pycache__":
            continue
        git_mv(child, new / child.name, root)
    leftover = [p for p in old.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    if not leftover:
        shutil.rmtree(old, ignore_errors=True)


def main(argv: list[str]) -> int:
    dry = "--dry-run" in argv
    args = [a for a in argv if a != "--dry-run"]
    root = Path(args[0]).resolve() if args else Path(__file__).resolve().parents[1]
    pkg = root / "core" / "seamkit"
    moves = planned_moves(pkg)
    moved = read_moved(root)
    for old, new in moves:
        moved[module_of(old, root / "core")] = module_of(new, root / "core")
        print(f"git mv {old.relative_to(root)} {new.relative_to(root)}")
    if dry:
        return 0
    for old, new in moves:
        git_mv(old, new, root)
    changed = ["core/seamkit/_moved.py"] if write_moved(root, moved) else []
    index = Index(root / "core", moved)
    for f in files_to_rewrite(root):
        if rewrite_file(f, root, index):
            changed.append(f.relative_to(root).as_posix())
    sort_imports(root, changed)
    public_imports(root)
    for c in changed:
        print("rewrote", c)
    print(f"{len(moves)} moved, {len(changed)} files rewritten", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
