"""The ``audit`` middleware: an append-only record per model and tool call.

Each call through the chain (chat and tool) appends one record (a ``dict`` of JSON data) with
``StorePort.append`` to the list ``<namespace>:<run id>`` in the scope
``Scope(tenant=ctx.scope.tenant)``, in the order the calls finish:

- ``v`` (record version, 1), ``at`` (ISO 8601 UTC time the call started, from ``ctx.clock``),
  ``run_id``, ``parent_run_id``, ``tenant``, ``user``, ``step`` (the model turn, from
  ``Call.meta``, ``None`` when not given), ``agent`` (the calling agent's name, from
  ``Call.meta``; ``None`` for a call made outside an agent's turn, e.g. a resumed tool batch).
- ``kind``: ``chat`` or ``tool``. Chat: ``provider``, ``model`` (the requested one) and
  ``response_model`` (the one that answered, when reported), ``finish_reason``. Tool: ``tool``
  (its name) and ``call_id``.
- ``arguments_sha256``: the hex digest of the canonical JSON of the arguments (a tool call's
  decoded arguments; a chat call's request without its ``metadata``), never the arguments
  themselves; ``digest`` says which: ``hmac-sha256`` (keyed with the configured ``digest_key``)
  or ``sha256`` (no key configured). A plain SHA-256 of a short or guessable value (a PIN, a
  weak password, an account number) can be confirmed by anyone who reads the store and hashes
  guesses; a keyed digest cannot without the key, which is kept outside the store (from the
  environment), so configure one wherever tool arguments may hold secrets. The key is never
  recorded, logged or shown in a ``repr``.
- ``outcome``: ``ok`` or ``error`` (a raised exception, or a tool result marked ``is_error``),
  ``cancelled`` (the caller stopped the call); ``error``: the exception's class name (and
  ``failure_class`` for a :class:`~seamkit.errors.ProviderError`), ``tool_error`` for an error
  result. Error messages are never recorded (they may quote arguments or credentials).
- ``duration_s``: seconds (``ctx.clock.monotonic()``), ``input_tokens`` / ``output_tokens``
  (chat; ``None`` when no usage was reported), ``cost_usd`` (the ``Decimal`` cost as a string,
  ``None`` when unknown), ``cost_source``; ``cache_hit`` (chat): ``True`` when the answer was
  replayed from a cache (``memoize``: a usage with ``cost_source`` ``"cache"``, cost 0), not made
  by the provider.

**Order with** ``memoize``: list ``audit`` *before* ``memoize`` (outer) so that cached answers are
recorded too (``cache_hit: true``); listed after it, ``audit`` only sees the calls that reach the
provider, and building such an agent (and ``seamkit validate``) warns.

A failure to write a record (a store that is down, a backend error of any kind) never fails or
changes the call: it is logged (without the record) on the ``seamkit.audit`` logger.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import json
import logging
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

from seamkit.errors import ProviderError
from seamkit.plugin import Call, Next
from seamkit.values import ChatRequest, Delta, Scope, ToolRequest, ToolResult, Usage, thaw

__all__ = ["RECORD_VERSION", "Audit", "arguments_digest", "audit_key", "build", "read_records"]

log = logging.getLogger("seamkit.audit")

RECORD_VERSION = 1


def _default(v: Any) -> Any:
    if isinstance(v, bytes | bytearray | memoryview):
        return {"$sha256": hashlib.sha256(bytes(v)).hexdigest()}
    if isinstance(v, Decimal):
        return {"$decimal": str(v)}
    return {"$type": type(v).__name__}


def arguments_digest(value: Any, *, key: bytes | None = None) -> str:
    """The hex SHA-256 (64 characters) of the canonical JSON of ``value``: sorted keys, no spaces,
    bytes as their own SHA-256, ``Decimal`` as text, other objects as their type name; with
    ``key``, the HMAC-SHA-256 of that text under ``key``. A :class:`~seamkit.values.ChatRequest`
    is taken without its ``metadata``."""
    if isinstance(value, ChatRequest):
        # messages as a tuple: asdict turns a tuple's messages into dicts, but keeps the agent
        # loop's MessageSnapshot (a sequence that is no tuple) as one object
        value = dataclasses.asdict(value.replace(metadata={}, messages=tuple(value.messages)))
        value.pop("metadata", None)
    text = json.dumps(thaw(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)
    if key is not None:
        return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def audit_key(namespace: str, run_id: str) -> str:
    """The store key of ``run_id``'s records."""
    return f"{namespace}:{run_id}"


async def read_records(store: Any, run_id: str, *, tenant: str = "default", namespace: str = "audit") -> list[Any]:
    """The records of ``run_id`` (tenant ``tenant``) in ``store``, oldest first (``[]`` when none).
    Raises :class:`~seamkit.errors.StoreUnavailable` when the store fails."""
    return list(await store.list(Scope(tenant), audit_key(namespace, run_id)))


class _Key:
    """Holds the digest key out of every ``repr`` (and ``vars()``: it has slots)."""

    __slots__ = ("value",)

    def __init__(self, value: bytes) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "_Key(***)"


def _error(exc: BaseException) -> str:
    if isinstance(exc, ProviderError):
        fc = getattr(exc, "failure_class", None)
        return f"{type(exc).__name__}({getattr(fc, 'value', fc)})" if fc is not None else type(exc).__name__
    return type(exc).__name__


class Audit:
    """The ``audit`` middleware (see the module doc). ``store``: a
    :class:`~seamkit._ports.StorePort`, or ``None`` for the run's checkpoint store
    (``ctx.effects.store``); ``namespace``: key prefix; ``digest_key``: the secret key of the
    arguments' HMAC (``None``: a plain SHA-256). Calling it (``mw(call, next)``) yields what
    the rest of the chain yields and raises what it raises; recording never raises."""

    kinds = frozenset({"chat", "tool"})
    #: placed inside a cache (``memoize`` listed before it) it would miss the calls answered there;
    #: the composition warns about that order (:func:`seamkit._middleware.hidden_calls`)
    sees_every_call = True

    def __init__(self, store: Any = None, *, namespace: str = "audit", digest_key: bytes | None = None) -> None:
        self.store = store
        self.namespace = namespace
        self._key = _Key(digest_key) if digest_key else None
        self.write_failures = 0
        self._warned = False
        self._pending: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        where = type(self.store).__name__ if self.store is not None else "checkpoints"
        return f"Audit(store={where}, namespace={self.namespace!r}, digest={self.digest!r})"

    @property
    def digest(self) -> str:
        """What ``arguments_sha256`` holds: ``hmac-sha256`` or ``sha256``."""
        return "hmac-sha256" if self._key is not None else "sha256"

    async def aclose(self) -> None:
        """Wait for records still being written, then close the configured store (not the run's
        checkpoint store, which its agent owns)."""
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        if self.store is not None:
            await self.store.aclose()

    def _store_for(self, call: Call) -> Any:
        if self.store is not None:
            return self.store
        effects = call.ctx.effects
        store = getattr(effects, "store", None) if effects is not None else None
        if store is None and not self._warned:
            self._warned = True
            log.warning("audit: no store configured and the run has no checkpoint store; nothing is recorded")
        return store

    def _base(self, call: Call) -> dict[str, Any]:
        ctx = call.ctx
        rec: dict[str, Any] = {
            "v": RECORD_VERSION,
            "at": ctx.clock.now().isoformat(),
            "run_id": ctx.run_id,
            "parent_run_id": ctx.parent_run_id,
            "tenant": ctx.scope.tenant,
            "user": ctx.scope.user,
            "agent": call.meta.get("agent"),
            "step": call.meta.get("step"),
            "kind": call.kind,
        }
        return rec

    async def _write(self, store: Any, call: Call, record: dict[str, Any]) -> None:
        try:
            await store.append(Scope(call.ctx.scope.tenant), audit_key(self.namespace, call.ctx.run_id), record)
        except Exception as exc:  # never fail the call; never log the record (it names what ran)
            self.write_failures += 1
            log.warning("audit: a %s record of run %s could not be written (%s)", call.kind, call.ctx.run_id,
                        type(exc).__name__)

    def _write_later(self, store: Any, call: Call, record: dict[str, Any]) -> None:
        """Write without awaiting (the call is being cancelled: its caller must not wait)."""
        task = asyncio.ensure_future(self._write(store, call, record))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def __call__(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        store = self._store_for(call)
        if store is None:
            async for item in nxt(call):
                yield item
            return
        rec = self._base(call)
        key = self._key.value if self._key is not None else None
        rec["digest"] = self.digest
        try:
            if call.kind == "chat":
                req: ChatRequest = call.request  # type: ignore[assignment]
                rec["provider"] = getattr(call.model, "provider", None)
                rec["model"] = getattr(call.model, "model", None)
                rec["arguments_sha256"] = arguments_digest(req, key=key)
            else:
                treq: ToolRequest = call.request  # type: ignore[assignment]
                rec["tool"] = treq.call.name
                rec["call_id"] = treq.call.id
                rec["arguments_sha256"] = arguments_digest(treq.call.arguments, key=key)
        except Exception as exc:  # an argument the digest cannot encode: record that, run the call
            rec["arguments_sha256"] = None
            log.warning("audit: the arguments of a %s call could not be digested (%s)", call.kind, type(exc).__name__)
        clock = call.ctx.clock
        start = clock.monotonic()
        usage: Usage | None = None
        result: ToolResult | None = None
        outcome, error = "ok", None
        finish: str | None = None
        answered_by: str | None = None
        try:
            async for item in nxt(call):
                if type(item) is Delta:
                    if item.usage is not None:
                        usage = item.usage
                    if item.finish_reason is not None:
                        finish = item.finish_reason
                    if item.model is not None:
                        answered_by = item.model
                elif isinstance(item, ToolResult):
                    result = item
                yield item
        except (asyncio.CancelledError, GeneratorExit):
            outcome = "cancelled"
            raise
        except BaseException as exc:
            outcome, error = "error", _error(exc)
            raise
        finally:
            if outcome == "ok" and result is not None and result.is_error:
                outcome, error = "error", "tool_error"
            rec["outcome"] = outcome
            rec["error"] = error
            rec["duration_s"] = max(clock.monotonic() - start, 0.0)
            if call.kind == "chat":
                rec["response_model"] = answered_by
                rec["finish_reason"] = finish
                rec["input_tokens"] = usage.input_tokens if usage is not None else None
                rec["output_tokens"] = usage.output_tokens if usage is not None else None
                rec["cost_usd"] = str(usage.cost) if usage is not None and usage.cost is not None else None
                rec["cost_source"] = usage.cost_source if usage is not None else None
                rec["cache_hit"] = usage is not None and usage.cost_source == "cache"
            if outcome == "cancelled":
                self._write_later(store, call, rec)
            else:
                await self._write(store, call, rec)


def build(config: Any) -> Audit:
    """The ``audit`` middleware for a validated :class:`~seamkit_audit.config.AuditConfig`; its
    ``store`` slot is built through the registry. Raises :class:`~seamkit.errors.ConfigError` /
    :class:`~seamkit.errors.PluginError` when the store cannot be built."""
    store = None
    if config.store is not None:
        from seamkit.plugin import build_nested

        store = build_nested("store", config.store, at="store")
    secret = getattr(config, "digest_key", None)
    key = secret.get_secret_value().encode("utf-8") if secret is not None else None
    return Audit(store, namespace=config.namespace, digest_key=key)
