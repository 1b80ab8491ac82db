"""The ``memoize`` middleware: answer a repeated model call from a store.

How a chat call goes through it (tool calls are not wrapped):

1. **Key.** :func:`seamkit_memoize.key.request_key`: a SHA-256 of the canonical request (see
   :mod:`seamkit_memoize.key` for what is in and out of it). The store key is
   ``<namespace>:<hex digest>`` in the scope ``Scope(tenant=ctx.scope.tenant)``: answers are shared
   by the users and threads of one tenant, never across tenants. A request that has no canonical
   form (an object in ``extra``) is not cached.
2. **Lookup, single-flight.** ``StorePort.get_or_set``: a hit replays the stored answer; on a miss
   the rest of the chain runs once, and concurrent identical calls in this process wait for it and
   replay its answer. A miss streams to its caller as the provider answers (the deltas are
   collected on the side and stored once the answer is complete).
3. **What is stored.** Only a complete answer: the stream ended with ``finish_reason`` ``stop``,
   ``tool_calls`` or ``length``, and every tool call's arguments decoded. Never an error (the
   provider's error reaches the caller and every waiter; the next call tries again), a
   ``content_filter`` / ``refusal`` / ``error`` finish (a refusal can depend on moderation state
   that changes; the caller gets it, uncached), a stream without a finish reason, or a stream
   that was cancelled or closed early. A waiter whose leader's answer was not stored runs its own
   call.
4. **Replay.** A hit is a stream of :class:`~seamkit.values.Delta`: reasoning, text, one delta per
   tool call (id, name, arguments JSON), then one delta with the model, the
   finish reason and a usage whose tokens are the original call's, ``requests`` 0, ``cost``
   ``Decimal(0)`` and ``cost_source`` ``"cache"``. The ``budget`` middleware charges a usage its
   ``cost`` (0), and :func:`seamkit._pricing.price_usage` leaves a ``cache`` cost alone, so a hit
   is never charged. Place ``memoize`` before ``budget`` (outer) so that a hit is not even
   reserved against the ceiling. Warnings of the original call are not replayed (they were
   reported to the run that made it; those of middlewares inside this one, such as ``budget``'s
   ceiling notes, would be false for a hit).
5. **Store failures** (:class:`~seamkit.errors.StoreUnavailable`, a TTL the store refuses, a
   backend's bug: any exception that does not come from the rest of the chain) never fail the
   call: it runs uncached (or, when the answer was streamed but could not be stored, that is all)
   and the failure is logged.

Units: ``ttl`` is seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

from seamkit.errors import SeamkitError, StoreUnavailable
from seamkit.plugin import Accumulator, Call, Next
from seamkit.values import Delta, Scope, ToolCallDelta, Usage, thaw

from seamkit_memoize.config import MemoizeConfig
from seamkit_memoize.key import UnkeyableRequest, request_key

__all__ = ["Memoize", "RECORD_VERSION", "build"]

log = logging.getLogger("seamkit.memoize")

#: Version of the stored record; a record of another version reads as a miss.
RECORD_VERSION = 1
_CACHEABLE = frozenset({"stop", "tool_calls", "length"})
_ZERO = Decimal(0)


class _Uncacheable(Exception):
    """The leader's answer is not to be stored; it carries the deltas to hand to its caller."""

    def __init__(self, deltas: list[Delta]) -> None:
        super().__init__("answer not cacheable")
        self.deltas = deltas


def _record(deltas: list[Delta]) -> dict[str, Any] | None:
    """The storable form of a complete answer (plain JSON data), or ``None`` when it must not be
    stored (see the module doc, 3)."""
    acc = Accumulator()
    for d in deltas:
        acc.add(d)
    if acc.finish_reason not in _CACHEABLE:
        return None
    result = acc.result()
    calls = []
    for c in result.tool_calls:
        if c.arguments_error is not None:
            return None
        calls.append({"id": c.id, "name": c.name, "arguments": json.dumps(thaw(c.arguments), ensure_ascii=False)})
    reasoning = next((b for b in result.message.content if getattr(b, "type", "") == "reasoning"), None)
    u = result.usage
    return {
        "v": RECORD_VERSION,
        "text": result.text,
        "reasoning": getattr(reasoning, "text", None),
        "signature": getattr(reasoning, "signature", None),
        "tool_calls": calls,
        "finish_reason": result.finish_reason,
        "model": result.model,
        "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                  "cache_read_tokens": u.cache_read_tokens, "cache_write_tokens": u.cache_write_tokens,
                  "reasoning_tokens": u.reasoning_tokens},
    }


def replay(record: dict[str, Any]) -> list[Delta]:
    """The deltas of a stored answer (see the module doc, 4). Raises ``KeyError`` / ``TypeError``
    for a malformed record."""
    out: list[Delta] = []
    if record.get("reasoning") or record.get("signature"):
        out.append(Delta(reasoning=record.get("reasoning") or None, reasoning_signature=record.get("signature")))
    if record["text"]:
        out.append(Delta(text=record["text"]))
    for i, c in enumerate(record["tool_calls"]):
        out.append(Delta(tool_call=ToolCallDelta(i, c["id"], c["name"], c["arguments"])))
    u = record["usage"]
    usage = Usage(int(u["input_tokens"]), int(u["output_tokens"]), int(u["cache_read_tokens"]),
                  int(u["cache_write_tokens"]), int(u["reasoning_tokens"]), 0, _ZERO, "cache")
    out.append(Delta(usage=usage, finish_reason=record["finish_reason"], model=record["model"]))
    return out


async def _live(queue: asyncio.Queue[Delta], task: asyncio.Future[Any]) -> AsyncIterator[Delta]:
    """The deltas put on ``queue`` while ``task`` runs, then those left on it once it is done."""
    while not task.done():
        getter = asyncio.ensure_future(queue.get())
        try:
            await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not getter.done():
                getter.cancel()
        if getter.done() and not getter.cancelled():
            yield getter.result()
    while not queue.empty():
        yield queue.get_nowait()


def _cancelled_here() -> bool:
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


class Memoize:
    """The ``memoize`` chat middleware (see the module doc). ``store``: a
    :class:`~seamkit._ports.StorePort`, or ``None`` to use the run's checkpoint store
    (``ctx.effects.store``); ``ttl``: seconds (``None``: no expiry); ``namespace``: key prefix.

    ``hits`` / ``misses`` count calls answered from the store / by the rest of the chain (this
    instance, this process). Calling it (``mw(call, next)``) returns the async iterator of deltas;
    it raises what the rest of the chain raises, never a store's error.
    """

    kinds = frozenset({"chat"})
    #: a hit is answered here: middlewares listed after this one (inside it) never see it; list
    #: ``audit`` before ``memoize`` to audit hits too (see :func:`seamkit._middleware.hidden_calls`)
    answers_without_next = True

    def __init__(self, store: Any = None, *, ttl: float | None = None, namespace: str = "memoize") -> None:
        if ttl is not None and not (ttl > 0 and ttl != float("inf")):
            raise ValueError("ttl must be a positive, finite number of seconds")
        self.store = store
        self.ttl = ttl
        self.namespace = namespace
        self.hits = 0
        self.misses = 0
        self._warned = False

    def __repr__(self) -> str:
        where = type(self.store).__name__ if self.store is not None else "checkpoints"
        return f"Memoize(store={where}, ttl={self.ttl})"

    async def aclose(self) -> None:
        """Close the configured store (not the run's checkpoint store, which its agent owns)."""
        if self.store is not None:
            await self.store.aclose()

    def _store_for(self, call: Call) -> Any:
        if self.store is not None:
            return self.store
        effects = call.ctx.effects
        store = getattr(effects, "store", None) if effects is not None else None
        if store is None and not self._warned:
            self._warned = True
            log.warning("memoize: no store configured and the run has no checkpoint store; calls are not cached")
        return store

    async def __call__(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        if call.kind != "chat":
            async for item in nxt(call):
                yield item
            return
        store = self._store_for(call)
        if store is None:
            async for d in nxt(call):
                yield d
            return
        try:
            digest = request_key(getattr(call.model, "provider", None), getattr(call.model, "model", None),
                                 call.request)  # type: ignore[arg-type]
        except UnkeyableRequest:
            async for d in nxt(call):
                yield d
            return
        scope = Scope(call.ctx.scope.tenant)
        key = f"{self.namespace}:{digest}"
        record: Any = None
        ran = False  # this call ran the rest of the chain (and streamed its deltas live)
        chain_error: BaseException | None = None  # what the rest of the chain raised, if anything
        for _ in range(3):
            queue: asyncio.Queue[Delta] = asyncio.Queue()

            async def produce(queue: asyncio.Queue[Delta] = queue) -> dict[str, Any]:
                nonlocal ran, chain_error
                ran = True
                deltas: list[Delta] = []
                stream = nxt(call)
                try:
                    async for d in stream:
                        deltas.append(d)
                        queue.put_nowait(d)
                except BaseException as exc:
                    chain_error = exc
                    raise
                finally:
                    close = getattr(stream, "aclose", None)
                    if close is not None:
                        await close()
                record = _record(deltas)
                if record is None:
                    raise _Uncacheable(deltas)
                return record

            # the lookup runs as a task so that a miss streams to this caller while it is produced
            task = asyncio.ensure_future(store.get_or_set(scope, key, produce, ttl=self.ttl))
            try:
                async for d in _live(queue, task):
                    yield d
                record = task.result()
                break
            except _Uncacheable:
                if ran:  # its deltas were streamed: nothing is stored
                    self.misses += 1
                    return
                break  # another call's answer was not stored: run this one
            except asyncio.CancelledError:
                if _cancelled_here() or ran:
                    raise
                # the call this one waited for was cancelled by its own caller: try again
                continue
            except Exception as exc:
                if exc is chain_error:
                    raise  # the provider's (or an inner middleware's) error: never cached, never hidden
                what = type(exc).__name__ if not isinstance(exc, StoreUnavailable) else f"StoreUnavailable: {exc}"
                if ran:  # the answer was streamed; only storing it failed
                    log.warning("memoize: the answer could not be stored (%s)", what)
                    self.misses += 1
                    return
                log.warning("memoize: the store failed (%s); the call runs uncached", what)
                break
            finally:
                if not task.done():  # this stream was closed or cancelled: stop the lookup and the call
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
        if ran:  # this call ran the chain: its own deltas (real usage) were streamed
            self.misses += 1
            return
        if isinstance(record, dict) and record.get("v") == RECORD_VERSION:
            try:
                deltas = replay(record)
            except (KeyError, TypeError, ValueError, SeamkitError) as exc:
                log.warning("memoize: a stored answer is malformed (%s: %s); the call runs uncached",
                            type(exc).__name__, exc)
            else:
                self.hits += 1
                for d in deltas:
                    yield d
                return
        self.misses += 1
        async for d in nxt(call):
            yield d


def build(config: MemoizeConfig) -> Memoize:
    """The ``memoize`` middleware for a validated :class:`~seamkit_memoize.config.MemoizeConfig`;
    its ``store`` slot is built through the registry. Raises
    :class:`~seamkit.errors.ConfigError` / :class:`~seamkit.errors.PluginError` when the store cannot
    be built."""
    store = None
    if config.store is not None:
        from seamkit.plugin import build_nested

        store = build_nested("store", config.store, at="store")
        resolution = getattr(store, "ttl_resolution", None)
        if config.ttl is not None and isinstance(resolution, int | float) and config.ttl < resolution:
            from seamkit.errors import ConfigError, ConfigIssue

            raise ConfigError([ConfigIssue(f"ttl {config.ttl:g} s is finer than the store's resolution of "
                                           f"{resolution:g} s", "ttl")])
    return Memoize(store, ttl=config.ttl, namespace=config.namespace)
