"""Running one capability of a compiled agent, with the kernel's rules enforced.

:func:`execute_capability` validates the proposed input against the capability's input type,
calls ``execute(ctx, input)`` with a :class:`CapabilityContext`, and returns its result. Whatever
goes wrong comes back as a :class:`~seamkit.capabilities._model.Failed` with a stable code, never as
an exception the caller must classify:

- ``CAPABILITY_NOT_REGISTERED``: no capability has that id.
- ``INVALID_CAPABILITY_INPUT``: the input does not validate (the problems, by path).
- ``EFFECT_NOT_ALLOWED``: a capability whose effect is not ``write`` called ``ctx.run_effect``.
- ``INVALID_IDEMPOTENCY_KEY``: ``ctx.run_effect`` with a blank or non-text key.
- ``EFFECT_UNCERTAIN``: an effect whose outcome is unknown (its operation raised an ordinary
  exception, now or in an earlier attempt): never run again automatically.
- ``WRITE_EFFECT_NOT_COORDINATED``: a ``write`` capability completed without ``ctx.run_effect``.
- ``EFFECT_NOT_APPLIED``: ``execute`` let an ``EffectNotApplied`` from its operation propagate
  (the effect certainly did not happen; a later attempt may run it).
- ``INVALID_RESULT``: a result the checkpoint cannot store (an output, artifact, fact or
  continuation state the codec cannot encode; the message names the path).
- ``CAPABILITY_ERROR``: ``execute`` raised something else, or returned no result value. The
  message names the exception type only: an exception's text may hold what must not be stored.

A capability that catches the ``EFFECT_UNCERTAIN`` of its effect and completes anyway still fails
with ``EFFECT_UNCERTAIN``: the uncertainty is not the capability's to hide.

Effects go through the run's effect ledger (:meth:`~seamkit._runtime.context.RunContext.run_effect`)
with the key namespaced by capability id (``capability:<id>:<key>``): exactly once across turns and
processes sharing the ledger's store. An ``EffectNotApplied`` from the operation means it certainly
did not happen: the receipt allows a retry and the capability may report a ``Failed`` of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from seamkit._runtime.context import RunContext
from seamkit.capabilities._compiler import CompiledAgent
from seamkit.capabilities._model import (
    Capability,
    CapabilityResult,
    Completed,
    Fact,
    Failed,
    NeedsConfirmation,
    NeedsDependency,
    NeedsInput,
)
from seamkit.errors import CodecError, EffectNotApplied, EffectUncertain, KernelError
from seamkit.values import EMPTY

__all__ = ["CapabilityContext", "effect_key", "execute_capability"]

T = TypeVar("T")
_RESULTS = (Completed, NeedsInput, NeedsDependency, NeedsConfirmation, Failed)


def effect_key(capability_id: str, key: str) -> str:
    """The effect ledger key of a capability's effect ``key``: ``capability:<id>:<key>``."""
    return f"capability:{capability_id}:{key}"


class CapabilityContext:
    """What ``execute`` sees. ``run``: the run's :class:`~seamkit._runtime.context.RunContext`;
    ``capability``: the capability running; ``facts``: what is known (``"name@version"`` ->
    :class:`~seamkit.capabilities._model.Fact`, read-only); :meth:`port` / ``ports``: the only way to
    the outside world (the run's services plus the ports the caller gives); :meth:`run_effect`;
    ``confirmed``: a person confirmed this call; ``state``: the continuation of an earlier
    :class:`~seamkit.capabilities._model.NeedsDependency`, when resuming with its fact."""

    __slots__ = ("capability", "confirmed", "effects", "facts", "ports", "run", "state", "uncertain")

    def __init__(self, run: RunContext, capability: Capability, facts: Mapping[str, Fact],
                 ports: Mapping[str, Any], *, confirmed: bool = False, state: Any = None) -> None:
        self.run = run
        self.capability = capability
        self.facts = facts
        self.ports = ports
        self.confirmed = confirmed  # a person confirmed this call (confirmation required or capability)
        self.state = state  # the continuation a NeedsDependency result stored, when resuming with the fact
        self.effects = 0  # run_effect calls that went to the ledger
        self.uncertain: KernelError | None = None  # the EFFECT_UNCERTAIN raised to execute, if any

    def port(self, name: str) -> Any:
        """The port called ``name``; raises ``KeyError`` naming the ones there are."""
        try:
            return self.ports[name]
        except KeyError:
            raise KeyError(f"no port {name!r} for {self.capability.ref} (have: {sorted(self.ports)})") from None

    async def run_effect(self, key: str, op: Callable[[], Awaitable[T]]) -> T:
        """Run ``op`` (the write's operation) at most once for ``key`` through the effect ledger
        (see the module doc). Raises :class:`~seamkit.capabilities._reducer.KernelError`
        ``EFFECT_NOT_ALLOWED`` (not a ``write`` capability), ``INVALID_IDEMPOTENCY_KEY`` or
        ``EFFECT_UNCERTAIN``; an ``EffectNotApplied`` raised by ``op`` propagates."""
        c = self.capability
        if c.effect != "write":
            raise KernelError("EFFECT_NOT_ALLOWED", (c.ref,),
                              f"{c.ref} has effect {c.effect!r}: only a write may run an effect")
        if not isinstance(key, str) or not key.strip():
            raise KernelError("INVALID_IDEMPOTENCY_KEY", (c.ref,), "an effect needs a non-blank text key")
        self.effects += 1
        try:
            return await self.run.run_effect(effect_key(c.id, key), op)
        except EffectUncertain as exc:
            # the ledger's receipt keeps the reason; the message (shown to the model, stored in the
            # checkpoint) leaves out the operation's exception text
            raise self._uncertain(key) from exc

    def _uncertain(self, key: str) -> KernelError:
        c = self.capability
        self.uncertain = KernelError("EFFECT_UNCERTAIN", (c.ref, key),
                              f"the outcome of {c.ref}'s effect {key!r} is unknown; it is not run again "
                              f"until a person settles it: seamkit runs settle {self.run.run_id} "
                              f"{effect_key(c.id, key)} applied|not-applied")
        return self.uncertain


async def execute_capability(agent: CompiledAgent, capability_id: str, arguments: Mapping[str, Any], *,
                             ctx: RunContext, facts: Mapping[str, Fact] = EMPTY,
                             ports: Mapping[str, Any] = EMPTY, confirmed: bool = False,
                             state: Any = None) -> CapabilityResult:
    """Run ``capability_id`` of ``agent`` on ``arguments`` (the proposed input, JSON data) in the
    run ``ctx``, knowing ``facts``, with the run's services and ``ports`` as its ports (``confirmed``
    and ``state``: see :class:`CapabilityContext`). Returns the
    capability's result, or a :class:`~seamkit.capabilities._model.Failed` with one of the codes of
    the module doc. ``asyncio.CancelledError`` propagates."""
    c = agent.get(capability_id)
    if c is None:
        return Failed("CAPABILITY_NOT_REGISTERED", f"no capability {capability_id!r}; registered: "
                      f"{', '.join(agent.order) or 'none'}", (str(capability_id),))
    try:
        value = agent.input_adapters[c.id].validate(dict(arguments))
    except Exception as exc:
        problems = getattr(exc, "problems", None) or (str(exc),)
        return Failed("INVALID_CAPABILITY_INPUT", f"the input of {c.ref} does not validate: " + "; ".join(problems),
                      (c.ref,))
    context = CapabilityContext(ctx, c, facts, {**ctx.services, **ports}, confirmed=confirmed, state=state)
    try:
        result = await c.execute(context, value)
    except KernelError as exc:
        return Failed(exc.code, str(exc), exc.ids)
    except EffectNotApplied:
        return Failed("EFFECT_NOT_APPLIED", f"{c.ref}'s effect was not applied; a later attempt may run it", (c.ref,))
    except Exception as exc:  # the capability's own failure: typed, its text left out
        return Failed("CAPABILITY_ERROR", f"{c.ref} raised {type(exc).__name__}", (c.ref,))
    if not isinstance(result, _RESULTS):
        return Failed("CAPABILITY_ERROR", f"{c.ref} returned {type(result).__name__}, not a capability result",
                      (c.ref,))
    if context.uncertain is not None and not isinstance(result, Failed):
        u = context.uncertain
        return Failed(u.code, str(u), u.ids)
    if isinstance(result, Completed):
        from seamkit._durability.codec import encode

        try:  # the turn stores all of it in the checkpoint: refused now, not when the turn commits
            encode((result.output, result.artifacts, result.facts, result.evidence))
        except CodecError as exc:
            return Failed("INVALID_RESULT", f"{c.ref} returned a value the checkpoint cannot store at "
                          f"{exc.path}: {exc.reason}", (c.ref,))
    if c.effect == "write" and isinstance(result, Completed) and context.effects == 0:
        return Failed("WRITE_EFFECT_NOT_COORDINATED",
                      f"{c.ref} is a write but completed without ctx.run_effect: its effect is not recorded",
                      (c.ref,))
    return result
