"""Pinned tool definitions: the defence against a server changing a tool after it was approved
(a "rug pull": a harmless description that later asks the model to leak data, a new argument).

A tool's *definition digest* is the SHA-256 of the canonical JSON (sorted keys, no spaces) of
``{"name", "description", "inputSchema", "annotations"}`` as the server sent them (``None`` for
what it left out). The annotations are in it because ``readOnlyHint`` decides whether calls need
approval: a tool that turns itself read-only must not skip approvals silently.

Pins live in a store (:class:`~seamkit.ports.StorePort`: the run's ``"store"`` service, else
the agent's checkpoint store through its effect ledger, else a dict of this process), under the
scope ``Scope(tenant="seamkit.mcp.pins:<tenant>")`` and the key ``json.dumps([server, tool])``,
as ``{"digest": ..., "definition": {...}}``.
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
        key = self._key(server, tool)
        got = _LOCAL.get((self.scope.tenant, key)) if self.store is None else await self.store.get(self.scope, key)
        if not isinstance(got, dict) or not isinstance(got.get("digest"), str):
            return None
        return Pin(got["digest"], dict(got.get("definition") or {}))

    async def put(self, server: str, tool: Any) -> Pin:
        """Pin the current definition of ``tool`` (an MCP ``Tool``) of ``server``."""
        pin = Pin(digest_of(tool), definition_of(tool))
        value = {"digest": pin.digest, "definition": pin.definition}
        key = self._key(server, tool.name if not isinstance(tool, dict) else tool["name"])
        if self.store is None:
            _LOCAL[(self.scope.tenant, key)] = value
        else:
            await self.store.set(self.scope, key, value)
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
