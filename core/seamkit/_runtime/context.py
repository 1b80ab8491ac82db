"""``RunContext``: what every call in a run can see, and the cancellation token."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from seamkit._lazy import lazy_module
from seamkit._runtime.clock import SYSTEM_CLOCK, ClockPort
from seamkit._runtime.resources import Closeable, RunResources
from seamkit.errors import RunCancelled
from seamkit.values import EMPTY, Scope

if TYPE_CHECKING:
    from seamkit._durability.ledger import EffectLedger

    R = TypeVar("R", bound=Closeable)

if TYPE_CHECKING:
    import asyncio
else:  # imported on first use: a third of a usable agent's import time (issue 19)
    asyncio = lazy_module("asyncio", globals())

__all__ = ["CancellationToken", "RunContext", "new_run_id", "owning_resources"]

T = TypeVar("T")

_DEFAULT_SCOPE = Scope()


#: run ids' random parts drawn from ``os.urandom`` at once: one system call per this many runs
#: instead of one a run (a getrandom call costs about as much as the rest of a run context)
_IDS_PER_DRAW = 64
#: random parts (32 hex digits each) drawn and not handed out yet; ``list.pop`` hands each out
#: once, also to threads creating runs at the same time. Emptied in a forked child, which must
#: never hand out its parent's ids.
_drawn: list[str] = []
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drawn.clear)


def new_run_id() -> str:
    """A fresh run id: ``run_`` + 32 random hex digits (128 bits from ``os.urandom``)."""
    try:
        return "run_" + _drawn.pop()
    except IndexError:
        digits = os.urandom(16 * _IDS_PER_DRAW).hex()
        parts = [digits[i:i + 32] for i in range(0, len(digits), 32)]
        mine = parts.pop()
        _drawn.extend(parts)
        return "run_" + mine


class CancellationToken:
    """Cooperative cancellation for a run and its children.

    ``cancel(reason)`` marks it (and every child token) cancelled; ``raise_if_cancelled()`` raises
    :class:`~seamkit.errors.RunCancelled`; ``await wait()`` returns once cancelled;
    ``add_callback(callback)`` calls ``callback()`` when it is cancelled. ``cancel()`` may be called
    from any thread (a tool running in a worker thread, a signal handler's thread): ``wait()``
    wakes up on its own event loop, and callbacks run in the thread that called ``cancel()``.
    The agent loop uses ``add_callback`` to stop a tool batch in flight: async tools are cancelled,
    tools running in a worker thread see ``ctx.cancellation.cancelled`` turn true.
    """

    __slots__ = ("_callbacks", "_children", "_event", "_loop", "_reason")

    def __init__(self) -> None:
        self._reason: str | None = None
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._children: list[CancellationToken] | None = None
        self._callbacks: list[Callable[[], None]] | None = None

    @property
    def cancelled(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        return self._reason

    def cancel(self, reason: str = "cancelled") -> None:
        if self._reason is not None:
            return
        self._reason = reason
        event, loop = self._event, self._loop
        if event is not None and loop is not None:
            if _running_loop() is loop:
                event.set()
            elif not loop.is_closed():
                loop.call_soon_threadsafe(event.set)
        for callback in list(self._callbacks or ()):
            callback()
        for child in self._children or ():
            child.cancel(reason)

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` when this token is cancelled (at once if it already is), in the
        thread that calls :meth:`cancel`. Remove it with :meth:`remove_callback`."""
        if self._reason is not None:
            callback()
        elif self._callbacks is None:
            self._callbacks = [callback]
        else:
            self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[], None]) -> None:
        """Forget ``callback`` (added with :meth:`add_callback`); nothing happens if it is not there."""
        callbacks = self._callbacks
        if callbacks:
            try:
                callbacks.remove(callback)
            except ValueError:
                pass

    def child(self) -> CancellationToken:
        """A token cancelled whenever this one is (but not the other way round)."""
        tok = CancellationToken()
        if self._reason is not None:
            tok.cancel(self._reason)
        elif self._children is None:
            self._children = [tok]
        else:
            self._children.append(tok)
        return tok

    def raise_if_cancelled(self) -> None:
        if self._reason is not None:
            raise RunCancelled(self._reason)

    async def wait(self) -> None:
        if self._reason is not None:
            return
        if self._event is None:
            self._event = asyncio.Event()
            self._loop = asyncio.get_running_loop()
            if self._reason is not None:  # cancelled from another thread before the event existed
                return
        await self._event.wait()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


@dataclass(slots=True)
class RunContext:
    """What every call in one run can see.

    ``run_id`` identifies the run; ``parent_run_id`` is set for a child run. ``scope`` says who it
    runs for. ``services`` maps names to port implementations (``"store"``, ``"tracer"``, ...).
    ``cancellation`` is checked between steps; ``clock`` is the time source. ``state`` is scratch
    space for middlewares (per run, not persisted). ``effects``: the effect ledger
    :meth:`run_effect` uses (the agent's durable one when it has a checkpointer; otherwise one kept
    in this process, created on first use). ``ancestors``: the run ids above this one, parent
    first (empty for a top-level run; ``ancestors[0] == parent_run_id`` when set by :meth:`child`).
    ``agent_depth``: how many agent tool calls this run is nested in (0 for a run no agent tool
    started, whatever its parents: a workflow step, a caller's own parent run; an agent tool's
    child is one deeper than its caller); :meth:`child` keeps it, only an agent tool adds one
    (see :mod:`seamkit._agent.as_tool`).
    ``idempotency_key``: set only while a side-effecting tool runs through the effect ledger (a run
    with a checkpointer): that call's key, ``"<run id>:<step>:<tool call id>"``, the same for every
    attempt of the call (after a crash and resume too) and different for every other call. Hand it
    to the outside system (e.g. an ``Idempotency-Key`` header) so that a repeated attempt is
    applied at most once; a tool that does so declares ``@tool(side_effecting=True,
    idempotent=True)`` and is then retried automatically after a crash.
    ``resources``: what the run opened on first use (:meth:`resource`), closed when the agent run
    that created it ends; :meth:`child` shares it, so a child run reuses its parent's connections.
    ``warnings``: messages for the run's warnings (:meth:`warn`), moved into
    ``AgentResult.warnings`` after each tool batch.
    """

    run_id: str = field(default_factory=new_run_id)
    parent_run_id: str | None = None
    scope: Scope = _DEFAULT_SCOPE
    services: Mapping[str, Any] = EMPTY
    cancellation: CancellationToken = field(default_factory=CancellationToken)
    clock: ClockPort = SYSTEM_CLOCK
    state: dict[str, Any] = field(default_factory=dict)
    effects: EffectLedger | None = None
    ancestors: tuple[str, ...] = ()
    idempotency_key: str | None = None
    agent_depth: int = 0
    resources: RunResources | None = None
    warnings: list[str] = field(default_factory=list)

    async def resource(self, key: str, open: Callable[[], Awaitable[R]]) -> R:
        """The run's resource under ``key`` (a connection, a session), opened with ``await open()``
        on first use and closed when the agent run owning :attr:`resources` ends, on every exit
        path (see :mod:`seamkit._runtime.resources`). Outside an agent run (no ``resources``)
        raises ``RuntimeError``: nobody would close it."""
        if self.resources is None:
            raise RuntimeError(
                f"no run resources to open {key!r} in: call tools from an agent run, or set "
                "ctx.resources = RunResources() and close it (await ctx.resources.aclose()) yourself"
            )
        return await self.resources.get(key, open)

    def warn(self, message: str) -> None:
        """Add ``message`` to the run's warnings (``AgentResult.warnings``, checkpointed), once:
        for a tool to say something the person running the agent should know (a definition that
        changed, a server that restarted) without failing the call."""
        if message not in self.warnings:
            self.warnings.append(message)

    async def run_effect(self, key: str, op: Callable[[], Awaitable[T]]) -> T:
        """Run ``op`` (an operation with outside effects) at most once for the idempotency ``key``:
        a completed key returns its stored value without running ``op``. Raises
        :class:`~seamkit.errors.EffectUncertain` when the key's outcome is unknown (never retried
        automatically); see :class:`~seamkit._durability.ledger.EffectLedger`."""
        if self.effects is None:
            from seamkit._durability.ledger import EffectLedger

            self.effects = EffectLedger(tenant=self.scope.tenant)
        return await self.effects.run(key, op)

    def child(self, *, scope: Scope | None = None) -> RunContext:
        """A context for a child run: a new run id, this run as parent, the same services, clock
        and ``agent_depth``, and a cancellation token cancelled with this one."""
        return RunContext(
            run_id=new_run_id(),
            parent_run_id=self.run_id,
            scope=scope or self.scope,
            services=self.services,
            cancellation=self.cancellation.child(),
            clock=self.clock,
            effects=self.effects,
            ancestors=(self.run_id, *self.ancestors),
            agent_depth=self.agent_depth,
            resources=self.resources,
        )

    def service(self, name: str) -> Any:
        """The service registered as ``name``; raises ``KeyError`` naming what is available."""
        try:
            return self.services[name]
        except KeyError:
            raise KeyError(f"no service {name!r} in this run (have: {sorted(self.services)})") from None


async def owning_resources(ctx: RunContext, work: Callable[[], Awaitable[T]]) -> T:
    """``await work()`` with ``ctx.resources`` in place: the context's own when it brings them
    (a child run shares its parent's), else new ones, closed (and taken off ``ctx``) when the
    work ends, on every exit path. How an agent run and a workflow run own their resources."""
    if ctx.resources is not None:
        return await work()
    ctx.resources = resources = RunResources()
    try:
        return await work()
    finally:
        ctx.resources = None
        if not resources.close_if_idle():
            await resources.aclose()
