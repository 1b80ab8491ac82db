"""``seamkit new plugin KIND NAME``: write a plugin distribution from the templates in
``seamkit/cli/templates/`` (imported only by that command).

A template directory holds files whose contents use ``string.Template`` placeholders (in paths,
``__pkg__`` stands for the package):
``$name`` (the component's registry name), ``$pkg`` (the Python package, ``seamkit_<name>``),
``$dist`` (the distribution, ``seamkit-<name>``), ``$cls`` (``CamelCase`` of the name), ``$ident``
(the name as a Python identifier) and ``$kind``. ``_common/`` is written for every kind, then the
kind's own directory (a file there replaces the common one of the same path). A ``.tmpl`` suffix is
dropped (so the repository's linters and pytest leave the templates alone).
"""

from __future__ import annotations

import re
import string
from pathlib import Path

__all__ = ["ScaffoldError", "names_for", "render_plugin", "write_plugin"]

TEMPLATES = Path(__file__).parent / "templates"
_NAME = re.compile(r"[a-z][a-z0-9_-]*")  # the registry's rule for component names


class ScaffoldError(Exception):
    """A name, kind or target directory that cannot be used; the message says why."""


def names_for(kind: str, name: str) -> dict[str, str]:
    """The placeholder values for component ``name`` of ``kind``. Raises :class:`ScaffoldError` for
    a name the registry would refuse, or one ending in ``-``/``_``."""
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


def render_plugin(kind: str, name: str) -> dict[str, str]:
    """The distribution's files, ``{relative path: text}``, for component ``name`` of ``kind``."""
    kind_dir = TEMPLATES / kind
    if not kind_dir.is_dir():
        kinds = sorted(p.name for p in TEMPLATES.iterdir() if p.is_dir() and not p.name.startswith("_"))
        raise ScaffoldError(f"no template for kind {kind!r} (kinds: {', '.join(kinds)})")
    values = names_for(kind, name)
    files: dict[str, str] = {}
    for base in (TEMPLATES / "_common", kind_dir):
        for path in sorted(base.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            rel = path.relative_to(base).as_posix().removesuffix(".tmpl")
            text = path.read_text(encoding="utf-8")
            files[rel.replace("__pkg__", values["pkg"])] = string.Template(text).substitute(values)
    return files


def write_plugin(kind: str, name: str, parent: Path) -> Path:
    """Write the distribution ``<parent>/seamkit-<name>/`` and return its path. Raises
    :class:`ScaffoldError` for a bad kind or name, when that directory exists already (nothing is
    overwritten) or cannot be written."""
    files = render_plugin(kind, name)
    root = parent / names_for(kind, name)["dist"]
    if root.exists() or root.is_symlink():
        raise ScaffoldError(f"{root} already exists: not overwriting it (pick another --dir or name)")
    if parent.exists() and not parent.is_dir():
        raise ScaffoldError(f"--dir {parent} is not a directory")
    try:
        root.mkdir(parents=True)
        for rel, text in files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ScaffoldError(f"cannot write {root}: {exc.strerror or exc}") from None
    return root
