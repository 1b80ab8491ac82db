"""Where a composition's runs are checkpointed, and where else a run id may be.

``seamkit validate`` says where the runs of a composition go (:func:`checkpoints_line`). The
commands that take a run id (``resume``, ``runs show``, ``runs settle``, ``runs delete``) read the
embedded default store unless given ``--agent FILE``; when the run is not there,
:func:`elsewhere_hint` looks through the compositions in the current directory that name their own
SQLite store (a file on this machine: nothing is connected to over a network) and gives the
command, with ``--agent FILE``, that finds it. Each command printed works as printed (see
:func:`seamkit._cli.render.resume_command`).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seamkit._plugins.registry import Registry
    from seamkit.composition import Composition

__all__ = ["DEFAULT_DB", "MAX_CANDIDATES", "checkpoints_line", "elsewhere_hint", "find_run_elsewhere"]

DEFAULT_DB = ".seamkit/seamkit.db"
#: How many composition files of the current directory :func:`find_run_elsewhere` reads at most.
MAX_CANDIDATES = 20
_MAX_BYTES = 1_000_000


def checkpoints_line(composition: Composition, file: str) -> str:
    """One line for ``seamkit validate``: where the composition's runs are checkpointed (its own
    store, named by component and, for ``sqlite``, its path; the embedded default
    ``.seamkit/seamkit.db``; or nowhere) and how to list them. No other store parameter is shown
    (a DSN may hold a password)."""
    a = composition.agent
    if "checkpoints" not in a.model_fields_set:
        return (f"checkpoints: the embedded default store {DEFAULT_DB} (SQLite, in the directory seamkit runs "
                "in); list them with: seamkit runs list")
    ref = a.checkpoints
    if ref is None:
        return "checkpoints: none ('checkpoints: null'): its runs cannot be listed or resumed"
    where = ref.use
    path = ref.params.get("path") if ref.use == "sqlite" else None
    if isinstance(path, str):
        where += f" at {path}"
    return (f"checkpoints: this composition's own store ({where}); commands that take a run id need "
            f"--agent {shlex.quote(file)}, e.g. seamkit runs list --agent {shlex.quote(file)}")


def _candidates(directory: Path) -> list[Path]:
    found: list[Path] = []
    for p in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
        try:
            if not p.is_file() or p.stat().st_size > _MAX_BYTES:
                continue
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "checkpoints:" in text and "use: sqlite" in text.replace('"', "").replace("'", ""):
            found.append(p)
        if len(found) >= MAX_CANDIDATES:
            break
    return found


async def _has_run(composition: Composition, registry: Registry, run_id: str) -> bool:
    from seamkit._durability.checkpointer import Checkpointer
    from seamkit.composition import build_store

    store = build_store(composition, registry=registry)
    if store is None:
        return False
    cp = Checkpointer(store)
    try:
        return await cp.latest(run_id) is not None
    finally:
        await cp.aclose()


def find_run_elsewhere(run_id: str, registry: Registry, directory: Path | None = None) -> list[str]:
    """The composition files of ``directory`` (default: the current one) whose own SQLite store
    has ``run_id``, as they would be written on a command line from there (relative names). A file
    that does not load, or whose store cannot be read, is passed over."""
    import asyncio

    from seamkit.composition import load_composition

    here = directory if directory is not None else Path.cwd()
    hits: list[str] = []
    for path in _candidates(here):
        try:
            composition = load_composition(path, registry=registry)
            ref = composition.agent.checkpoints
            if ref is None or ref.use != "sqlite":
                continue
            db = ref.params.get("path", DEFAULT_DB)  # relative to the current directory, as the store reads it
            if not isinstance(db, str) or db == ":memory:" or not Path(db).is_file():
                continue  # nothing stored there: looking must not create the file
            if asyncio.run(_has_run(composition, registry, run_id)):
                hits.append(path.name if directory is None else str(path))
        except Exception:  # a file that does not load or a store that fails is not where the run is
            continue
    return hits


def elsewhere_hint(run_id: str, registry: Any, command: list[str], positionals: list[str]) -> str | None:
    """``"it is in the store of FILE: <command> --agent FILE"`` when a composition here has the
    run in its own store (``command``: the command's words, ``seamkit runs show``;
    ``positionals``: its arguments, the run id first), else ``None``."""
    from seamkit._cli.render import _command_line

    hits = find_run_elsewhere(run_id, registry)
    if not hits:
        return None
    file = hits[0]
    also = f" (also in: {', '.join(hits[1:])})" if len(hits) > 1 else ""
    return f"it is in the store of {file}{also}: " + _command_line(command, positionals, [("--agent", file)])
