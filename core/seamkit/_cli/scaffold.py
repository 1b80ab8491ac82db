"""``seamkit new plugin KIND NAME``: write a plugin distribution from the templates in
``seamkit/_cli/templates/`` (imported only by that command).

A template directory holds files whose contents use ``string.Template`` placeholders (in paths,
``__pkg__`` stands for the package):
``$name`` (the component's registry name), ``$pkg`` (the Python package, ``seamkit_<name>``),
``$dist`` (the distribution, ``seamkit-<name>``), ``$cls`` (``CamelCase`` of the name), ``$ident``
(the name with ``_`` for ``-``, for strings only: it may be a keyword), ``$kind``,
``$first_steps`` (the kind's ``_first_steps.md``, the README's list of what to edit) and
``$dependencies`` (the pyproject's runtime requirements, ``DEPENDENCIES`` and the kind's own). ``_common/``
is written for every kind, then the kind's own directory (a file there replaces the common one of
the same path; a top-level file starting with ``_`` is not written). A ``.tmpl`` suffix is dropped
(so the repository's linters and pytest leave the templates alone).

The templates never use the bare name as a Python identifier (``seamkit new plugin tool class``
works); every generated module is parsed before anything is written, and a name that would make a
module invalid, or define a name the module imports, is refused.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import string
from pathlib import Path

from seamkit._cli.common import BUILTIN_COMMANDS

__all__ = ["ScaffoldError", "names_for", "render_plugin", "write_plugin"]

TEMPLATES = Path(__file__).parent / "templates"
_NAME = re.compile(r"[a-z][a-z0-9_-]*")  # the registry's rule for component names (whole string)
#: the usual file-name limit (NAME_MAX, bytes) of Linux, macOS and Windows file systems
NAME_MAX = 255
#: every kind's runtime dependencies (the generated pyproject's ``dependencies``): what its package imports
DEPENDENCIES = ("seamkit>=0.1.0", "pydantic>=2.7")
EXTRA_DEPENDENCIES: dict[str, tuple[str, ...]] = {"provider": ("httpx>=0.27",)}


class ScaffoldError(Exception):
    """A name, kind or target directory that cannot be used; the message says why."""


def names_for(kind: str, name: str) -> dict[str, str]:
    """The placeholder values for component ``name`` of ``kind`` (all but ``first_steps``). Raises
    :class:`ScaffoldError` for a name the registry would refuse, or one ending in ``-``/``_``."""
    if not _NAME.fullmatch(name):
        raise ScaffoldError(f"invalid plugin name {name!r}: use lower-case letters, digits, '_' and '-', "
                            "starting with a letter (the rule for component names)")
    if name[-1] in "-_" or "--" in name or "__" in name or "-_" in name or "_-" in name:
        raise ScaffoldError(f"invalid plugin name {name!r}: no trailing or doubled '-'/'_'")
    ident = name.replace("-", "_")
    return {
        "name": name,
        "ident": ident,
        "pkg": f"seamkit_{ident}",
        "dist": f"seamkit-{name.replace('_', '-')}",
        "cls": "".join(part.capitalize() for part in re.split(r"[-_]", name)),
        "kind": kind,
    }


def _check_installed(values: dict[str, str]) -> None:
    """Refuse a name whose distribution or package is installed already: installing the new one
    would replace it (``seamkit-http``, for example, is the bundled providers' transport)."""
    dist, pkg = values["dist"], values["pkg"]
    try:
        installed = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        installed = None
    if installed is not None:
        raise ScaffoldError(
            f"the distribution {installed.metadata['Name']} {installed.version} is installed already: a plugin "
            f"named {values['name']!r} would be {dist} (package {pkg}) and replace it; pick another name")
    spec = importlib.util.find_spec(pkg)
    if spec is not None:
        where = spec.origin or ", ".join(spec.submodule_search_locations or ())
        raise ScaffoldError(f"a module {pkg} is importable already ({where}): a plugin named {values['name']!r} "
                            f"would be the package {pkg} and shadow it or be shadowed; pick another name")


def _check_module(rel: str, text: str, name: str) -> None:
    """Refuse a generated module that is not valid Python, or that defines (at top level) a name it
    also imports: the class ``SchemaFlavour`` of ``new plugin schema schema``, for example."""
    try:
        tree = ast.parse(text, filename=rel)
    except SyntaxError as exc:
        raise ScaffoldError(f"the name {name!r} cannot be used: {rel} would not be valid Python ({exc.msg}, "
                            f"line {exc.lineno}); pick another name") from None
    imported = {(a.asname or a.name).partition(".")[0] for node in tree.body
                if isinstance(node, ast.Import | ast.ImportFrom) for a in node.names}
    defined = {node.name for node in tree.body
               if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)}
    clash = sorted(imported & defined)
    if clash:
        raise ScaffoldError(f"the name {name!r} cannot be used: {rel} would define {clash[0]}, a name it imports; "
                            "pick another name")


def render_plugin(kind: str, name: str) -> dict[str, str]:
    """The distribution's files, ``{relative path: text}``, for component ``name`` of ``kind``.
    Raises :class:`ScaffoldError` for an unknown kind, a bad name, a generated module that would
    not work with that name, or a command named like one of seamkit's own."""
    kind_dir = TEMPLATES / kind
    if not kind_dir.is_dir():
        kinds = sorted(p.name for p in TEMPLATES.iterdir() if p.is_dir() and not p.name.startswith("_"))
        raise ScaffoldError(f"no template for kind {kind!r} (kinds: {', '.join(kinds)})")
    values = names_for(kind, name)
    if kind == "command" and name in BUILTIN_COMMANDS:
        raise ScaffoldError(f"{name!r} is one of seamkit's own commands (seamkit {name}): a plugin command "
                            "cannot replace it; pick another name")
    values["dependencies"] = ", ".join(f'"{d}"' for d in (*DEPENDENCIES, *EXTRA_DEPENDENCIES.get(kind, ())))
    steps = kind_dir / "_first_steps.md"
    values["first_steps"] = string.Template(steps.read_text(encoding="utf-8")).substitute(values).rstrip("\n")
    files: dict[str, str] = {}
    for base in (TEMPLATES / "_common", kind_dir):
        for path in sorted(base.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or (path.parent == base and path.name[0] == "_"):
                continue
            rel = path.relative_to(base).as_posix().removesuffix(".tmpl")
            text = path.read_text(encoding="utf-8")
            files[rel.replace("__pkg__", values["pkg"])] = string.Template(text).substitute(values)
    longest = max([values["dist"], *(part for rel in files for part in rel.split("/"))], key=len)
    if len(longest.encode()) > NAME_MAX:
        over = len(longest.encode()) - NAME_MAX
        raise ScaffoldError(f"plugin name {name[:20]!r}... is too long ({len(name)} characters): the file "
                            f"name {longest[:40]}... would exceed the file-system limit of {NAME_MAX} bytes; "
                            f"use at most {len(name) - over} characters")
    for rel, text in files.items():
        if rel.endswith(".py"):
            _check_module(rel, text, name)
    return files


def _dangling(path: Path) -> Path | None:
    """The first of ``path`` and its parents that is a symbolic link to nothing, if any."""
    for p in (path, *path.parents):
        if p.is_symlink() and not p.exists():
            return p
    return None


def write_plugin(kind: str, name: str, parent: Path) -> Path:
    """Write the distribution ``<parent>/seamkit-<name>/`` and return its path. Raises
    :class:`ScaffoldError` for a bad kind or name, a name whose distribution or package is installed
    already, when that directory exists already (nothing is overwritten) or cannot be written."""
    files = render_plugin(kind, name)
    values = names_for(kind, name)
    _check_installed(values)
    root = parent / values["dist"]
    try:
        if root.exists() or root.is_symlink():
            same = "" if values["dist"] == f"seamkit-{name}" else (
                f" (names that differ only in '-' and '_' are one distribution: {name!r} is {values['dist']})")
            raise ScaffoldError(f"{root} already exists: not overwriting it{same} (pick another --dir or name)")
        dangling = _dangling(parent)
        if dangling is not None:
            raise ScaffoldError(f"--dir {parent}: {dangling} is a symbolic link to {dangling.readlink()}, "
                                "which does not exist")
        if parent.exists() and not parent.is_dir():
            raise ScaffoldError(f"--dir {parent} is not a directory")
        root.mkdir(parents=True)
        for rel, text in files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ScaffoldError(f"cannot write {root}: {exc.strerror or exc}") from None
    return root
