"""Which private host modules a plugin's code imports (``seamkit plugins --check``'s note).

Only the names in docs/plugins/public-api.md are API; a module path with a ``_`` component
(``seamkit._agent``) is internal and may change in any release, and an old path (``seamkit.agent``,
see :mod:`seamkit._moved`) is gone. :func:`private_imports` reads the plugin's source (``ast``, no
import, nothing of it runs) and names what it imports of either.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
from pathlib import Path

__all__ = ["MAX_FILES", "private_imports", "private_names"]

#: at most this many files of one distribution are read (a plugin is small; a huge one is not scanned whole)
MAX_FILES = 500
#: files larger than this (bytes) are skipped
MAX_FILE_BYTES = 1_000_000


def private_names(imported: set[str]) -> list[str]:
    """The host modules in ``imported`` (dotted names) that are private (a ``_`` component after
    ``seamkit``) or moved (an old path), sorted."""
    from seamkit._moved import current

    out = set()
    for name in imported:
        parts = name.split(".")
        if parts[0] != "seamkit" or len(parts) < 2:
            continue
        if any(p.startswith("_") for p in parts[1:]) or current(name) != name:
            out.add(name)
    return sorted(out)


def _imports(source: str) -> set[str]:
    """Dotted names of the modules ``source`` imports at any depth (``from seamkit import _agent``
    counts ``seamkit._agent``); relative imports are the plugin's own, left out."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names if alias.name.startswith("_"))
    return names


def _distribution_files(distribution: str) -> list[Path]:
    """The ``.py`` files an installed distribution lists (its RECORD); empty when it lists none."""
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except (importlib.metadata.PackageNotFoundError, ValueError, OSError):
        return []
    return [Path(str(f.locate())) for f in files if f.suffix == ".py"][:MAX_FILES]


def _module_files(modules: tuple[str, ...]) -> list[Path]:
    """The ``.py`` files of the top-level packages (or modules) of ``modules``, found without importing them."""
    out: list[Path] = []
    for top in dict.fromkeys(m.partition(".")[0] for m in modules if m):
        if top == "seamkit":
            continue
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        for folder in spec.submodule_search_locations or ():
            out += sorted(Path(folder).rglob("*.py"))[:MAX_FILES]
        if not spec.submodule_search_locations and spec.origin and spec.origin.endswith(".py"):
            out.append(Path(spec.origin))
    return out[:MAX_FILES]


@functools.lru_cache(maxsize=64)
def private_imports(distribution: str, modules: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The private or moved host modules that the code of ``distribution`` imports (its installed
    files; when it lists none, the packages of ``modules``: the component's factory and config
    modules). The host's own distribution (``seamkit``) is not scanned. Unreadable files are skipped."""
    if distribution.lower() == "seamkit":
        return ()
    files = _distribution_files(distribution) or _module_files(modules)
    imported: set[str] = set()
    for path in files:
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            imported |= _imports(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return tuple(private_names(imported))
