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
import re
from pathlib import Path

__all__ = ["MAX_FILES", "private_imports", "private_names"]

#: at most this many files of one distribution are read (a plugin is small; a huge one is not scanned whole)
MAX_FILES = 500
#: files larger than this (bytes) are skipped
MAX_FILE_BYTES = 1_000_000


def private_names(imported: set[str]) -> list[str]:
    """The host modules in ``imported`` (dotted names) that are private (a ``_`` component after
    ``seamkit``, dunders aside) or moved (an old path), sorted; one inside another listed is left
    out (``from seamkit._agent import loop``: ``seamkit._agent``)."""
    from seamkit._moved import current

    out = set()
    for name in imported:
        parts = name.split(".")
        if parts[0] != "seamkit" or len(parts) < 2:
            continue
        if any(p.startswith("_") and not p.startswith("__") for p in parts[1:]) or current(name) != name:
            out.add(name)
    return sorted(n for n in out if not any(n.startswith(f"{o}.") for o in out))


#: an import statement's text, roughly: ``from seamkit... import BODY`` (parenthesised over lines too)
_FROM = re.compile(r"^[ \t]*from[ \t]+(seamkit(?:\.\w+)*)[ \t]+import[ \t]*(\([^)]*\)|[^\n]*)", re.M)
#: ``import BODY``
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n]*)", re.M)
_DOTTED = re.compile(r"[A-Za-z_][\w.]*")
_AS = re.compile(r"\bas\s+\w+")  # `import x as _y`: `_y` is the plugin's own name


def _candidates(source: str) -> set[str]:
    """A quick, rough superset of the host modules ``source`` imports (regular expressions, so
    text in strings counts too): a file none of whose candidates is private is not parsed."""
    names: set[str] = set()
    for m in _FROM.finditer(source):
        names.add(m.group(1))
        names.update(f"{m.group(1)}.{word}" for word in _DOTTED.findall(_AS.sub("", m.group(2))))
    for m in _IMPORT.finditer(source):
        names.update(_DOTTED.findall(_AS.sub("", m.group(1))))
    return names


def _imports(source: str) -> set[str]:
    """Dotted names of the modules ``source`` imports at any depth (``from seamkit import _agent``
    counts ``seamkit._agent``, ``from seamkit import agent`` ``seamkit.agent``: it may be a
    module); relative imports are the plugin's own, left out."""
    if not private_names(_candidates(source)):
        return set()  # the common case: parsing is 10 to 100 times slower than the scan
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
            names.update(f"{node.module}.{alias.name}" for alias in node.names if not alias.name.startswith("__"))
    return names


@functools.lru_cache(maxsize=64)
def _distribution_files(distribution: str) -> tuple[Path, ...]:
    """The ``.py`` files an installed distribution lists (its RECORD); empty when it lists none."""
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except (importlib.metadata.PackageNotFoundError, ValueError, OSError):
        return ()
    return tuple(Path(str(f.locate())) for f in files if f.suffix == ".py")[:MAX_FILES]


@functools.lru_cache(maxsize=64)
def _package_files(top: str) -> tuple[Path, ...]:
    """The ``.py`` files of the top-level package (or module) ``top``, found without importing it."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return ()
    if spec is None:
        return ()
    out: list[Path] = []
    for folder in spec.submodule_search_locations or ():
        out += sorted(Path(folder).rglob("*.py"))[:MAX_FILES]
    if not spec.submodule_search_locations and spec.origin and spec.origin.endswith(".py"):
        out.append(Path(spec.origin))
    return tuple(out[:MAX_FILES])


@functools.lru_cache(maxsize=1024)
def _file_imports(path: Path) -> frozenset[str]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return frozenset()
        return frozenset(_imports(path.read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return frozenset()


def private_imports(distribution: str, modules: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The private or moved host modules that the code of a component imports: the files of the
    top-level packages of ``modules`` (its factory's and config's), or when none is found, those
    that ``distribution`` lists as installed. The host's own code (``seamkit``) is not scanned.
    Unreadable files are skipped; what was read once is not read again."""
    if distribution.lower() == "seamkit":
        return ()
    tops = [t for t in dict.fromkeys(m.partition(".")[0] for m in modules if m) if t != "seamkit"]
    files = [f for t in tops for f in _package_files(t)] or list(_distribution_files(distribution))
    imported: set[str] = set()
    for path in files[:MAX_FILES]:
        imported |= _file_imports(path)
    return tuple(private_names(imported))
