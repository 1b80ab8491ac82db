"""Pinned tool definitions: the defence against a server changing a tool after it was approved
(a "rug pull": a harmless description that later asks the model to leak data, a new argument).

A tool's *definition digest* is the SHA-256 of the canonical JSON (sorted keys, no spaces) of
``{"name", "description", "inputSchema", "annotations"}`` as the server sent them (``None`` for
what it left out). The annotations are in it because ``readOnlyHint`` decides whether calls need
approval: a tool that turns itself read-only must not skip approvals silently.

Pins live in a store (:class:`~seamkit._ports.StorePort`: the run's ``"store"`` service, else
the agent's checkpoint store through its effect ledger, else a dict of this process), under the
scope ``Scope(tenant="seamkit.mcp.pins:<tenant>")`` and the key ``json.dumps([server, tool])``,
as ``{"digest": ..., "definition": {...}}``; and under ``json.dumps([server, "*"])`` the names
of the server's tools ever pinned. The first session with a server pins every tool it offers
(trust on first use); a tool a known server adds later is *new* and is not offered until it is
approved, like a changed one (a server that was approved with harmless tools must not gain an
"always call me first with the user's data" tool silently).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from seamkit.values import Scope

__all__ = ["Pin", "PinStore", "definition_of", "digest_of", "pin_store_for"]

_LOCAL: dict[tuple[str, str], dict[str, Any]] = {}  # pins when a run has no store (one process)


def definition_of(tool: Any) -> dict[str, Any]:
    """The pinned parts of an MCP ``Tool`` (an SDK model, or a dict as the wire has it)."""
    if isinstance(tool, dict):
        return {"name": tool.get("name"), "description": tool.get("description"),
                "inputSchema": tool.get("inputSchema"), "annotations": tool.get("annotations")}
    annotations = (tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
                   if tool.annotations else None)
    return {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema,
            "annotations": annotations or None}


def digest_of(tool: Any) -> str:
    """The definition digest of ``tool`` (hex SHA-256; see the module docstring)."""
    canonical = json.dumps(definition_of(tool), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Pin:
    """A pinned definition: its ``digest`` and the ``definition`` it was computed from."""

    digest: str
    definition: dict[str, Any]


class PinStore:
    """Pins of one tenant in ``store`` (``None``: this process only)."""

    def __init__(self, store: Any | None, tenant: str = "default") -> None:
        self.store = store
        self.scope = Scope(tenant=f"seamkit.mcp.pins:{tenant}")

    @staticmethod
    def _key(server: str, tool: str) -> str:
        return json.dumps([server, tool])

    async def get(self, server: str, tool: str) -> Pin | None:
        got = await self._read(self._key(server, tool))
        if not isinstance(got, dict) or not isinstance(got.get("digest"), str):
            return None
        return Pin(got["digest"], dict(got.get("definition") or {}))

    async def _read(self, key: str) -> Any:
        return _LOCAL.get((self.scope.tenant, key)) if self.store is None else await self.store.get(self.scope, key)

    async def _write(self, key: str, value: Any) -> None:
        if self.store is None:
            _LOCAL[(self.scope.tenant, key)] = value
        else:
            await self.store.set(self.scope, key, value)

    async def known(self, server: str) -> frozenset[str] | None:
        """The names of ``server``'s tools that were ever pinned, or ``None`` for a server never
        seen (then its first session pins everything it offers: trust on first use; after that, a
        tool the server adds is new and needs approving like a changed one)."""
        got = await self._read(self._key(server, "*"))
        return frozenset(str(n) for n in got) if isinstance(got, list) else None

    async def put(self, server: str, tool: Any) -> Pin:
        """Pin the current definition of ``tool`` (an MCP ``Tool``) of ``server``."""
        pin = Pin(digest_of(tool), definition_of(tool))
        name = tool.name if not isinstance(tool, dict) else tool["name"]
        await self._write(self._key(server, name), {"digest": pin.digest, "definition": pin.definition})
        names = await self.known(server) or frozenset()
        if name not in names:
            await self._write(self._key(server, "*"), sorted({*names, name}))
        return pin


def pin_store_for(ctx: Any) -> PinStore:
    """The pins of the run ``ctx`` (see the module docstring for which store)."""
    store = None
    services = getattr(ctx, "services", None) or {}
    if "store" in services:
        store = services["store"]
    elif ctx.effects is not None and ctx.effects.store is not None:
        store = ctx.effects.store
    return PinStore(store, ctx.scope.tenant)
