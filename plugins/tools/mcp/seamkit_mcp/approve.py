"""``seamkit mcp approve FILE [--tool NAME]... [--all]``: review and pin MCP tool definitions.

Loads FILE with seamkit's composition loader, opens its checkpoint store (where runs keep their
pins, see :mod:`seamkit_mcp.pins`), connects to the server of each ``use: mcp`` tool slot (of the
entry agent and of ``agents:``), and prints one line per tool: ``pinned`` (unchanged), ``changed``
(with what changed) or ``new`` (never pinned). ``--tool NAME`` (the server's name of the tool, or
the name the model sees) pins that tool's current definition; ``--all`` pins every changed or new
one; a changed definition is shown before and after. ``--tenant NAME``: whose pins (runs keep
them per tenant). ``--check``: exit 1 when a definition is left changed or new (for CI). Exit
codes as the rest of the CLI: 0 done, 2 for a bad file or an unknown ``--tool``, 1 when a server
cannot be reached (or, with ``--check``, a definition is not approved).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

__all__ = ["main"]


def _mcp_slots(composition: Any) -> list[Any]:
    """The validated :class:`~seamkit_mcp.config.McpConfig` of every ``use: mcp`` tool slot."""
    from seamkit_mcp.config import McpConfig

    agents = [composition.agent, *composition.agents.values()]
    out: list[McpConfig] = []
    for agent in agents:
        for ref in agent.tools:
            if getattr(ref, "use", None) != "mcp":
                continue
            cfg = ref.config if isinstance(ref.config, McpConfig) else McpConfig.model_validate(ref.params)
            out.append(cfg)
    return out


def _what_changed(old: dict[str, Any], new: dict[str, Any]) -> str:
    parts = [k for k in ("description", "inputSchema", "annotations") if old.get(k) != new.get(k)]
    return ", ".join({"inputSchema": "input schema"}.get(p, p) for p in parts) or "definition"


def _shown(value: Any, limit: int = 300) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def _changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Lines showing what changed, before and after (cut to 300 characters each)."""
    lines = []
    for key in ("description", "inputSchema", "annotations"):
        if old.get(key) != new.get(key):
            label = {"inputSchema": "input schema"}.get(key, key)
            lines += [f"      {label} was: {_shown(old.get(key))}", f"      {label} now: {_shown(new.get(key))}"]
    return lines


async def _approve(composition: Any, store: Any, wanted: set[str], every: bool, out: Any,
                   tenant: str = "default", pending: list[str] | None = None) -> set[str]:
    """Show and pin; returns the ``--tool`` names that matched no tool (then nothing is pinned).
    ``pending``: receives the tools left changed or new (not approved now)."""
    from seamkit_mcp.connection import ServerSpec
    from seamkit_mcp.pins import PinStore, definition_of, digest_of
    from seamkit_mcp.toolset import _selected, discover, toolset_from

    pins = PinStore(store, tenant)
    matched: set[str] = set()
    rows: list[tuple[str, Any, str, str, list[str]]] = []  # (server, tool, status, action, detail)
    slots = _mcp_slots(composition)
    for cfg in slots:
        spec = ServerSpec.of(cfg)
        listing = await discover(spec)
        seen_as = {t.server_name: t.schema.name for t in toolset_from(spec, listing).tools if hasattr(t, "server_name")}
        for tool in _selected(spec, listing):
            names = {tool.name, seen_as.get(tool.name, tool.name)}
            pin = await pins.get(spec.id, tool.name)
            now = digest_of(tool)
            detail: list[str] = []
            if pin is None:
                status = f"new (now {now[:12]})"
            elif pin.digest == now:
                status = f"pinned ({now[:12]})"
            else:
                status = (f"changed: {_what_changed(pin.definition, definition_of(tool))} "
                          f"(pinned {pin.digest[:12]}, now {now[:12]})")
                detail = _changes(pin.definition, definition_of(tool))
            chosen = bool(names & wanted)
            matched |= names & wanted
            differs = pin is None or pin.digest != now
            action = "approve" if differs and (chosen or every) else ("already pinned" if chosen else "")
            rows.append((spec.id, tool, status, action, detail))
    if wanted - matched:
        return wanted - matched
    if not slots:
        out.write("no 'use: mcp' tools in this file\n")
    server = None
    for sid, tool, status, action, detail in rows:
        if sid != server:
            server = sid
            out.write(f"MCP server {sid!r}:\n")
        if action == "approve":
            await pins.put(sid, tool)
        elif pending is not None and not status.startswith("pinned"):
            pending.append(tool.name)
        note = {"approve": "  -> approved", "already pinned": "  (already pinned)"}.get(action, "")
        out.write(f"  {tool.name}: {status}{note}\n")
        for line in detail:
            out.write(line + "\n")
    return set()


def main(args: argparse.Namespace) -> int:
    from seamkit.composition import build_store
    from seamkit.plugin import EXIT_FAILED, EXIT_OK, UsageError
    from seamkit.plugin import load_for_command as _load

    composition, registry = _load(args.file)  # ConfigError: exit 2; secrets masked from here on
    assert composition is not None
    store = build_store(composition, registry=registry)
    if store is None:
        raise UsageError(f"{args.file} has no checkpoint store ('checkpoints: null'), where pins are kept: "
                         "runs of this file cannot keep pins beyond one process")
    checkpoints = composition.agent.checkpoints
    if checkpoints is not None and checkpoints.use == "memory":
        raise UsageError(f"{args.file} keeps its checkpoints in memory ('checkpoints: {{use: memory}}'): pins "
                         "approved here would be gone when this command ends; give the agent a lasting store "
                         "(e.g. checkpoints: {use: sqlite, path: ...})")

    pending: list[str] = []

    async def go() -> set[str]:
        try:
            return await _approve(composition, store, set(args.tool), args.all, sys.stdout,
                                  getattr(args, "tenant", "default"), pending)
        finally:
            close = getattr(store, "aclose", None)
            if close is not None:
                await close()

    unknown = asyncio.run(go())
    if unknown:
        raise UsageError(f"--tool {', '.join(sorted(unknown))}: no such tool on the MCP servers of {args.file}")
    if getattr(args, "check", False) and pending:
        print(f"seamkit: {len(pending)} MCP tool definition(s) not approved: {', '.join(pending)}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
