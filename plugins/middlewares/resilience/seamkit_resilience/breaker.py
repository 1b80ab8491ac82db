"""The ``circuit_breaker`` middleware: fail fast on a model that keeps failing.

One breaker per ``provider:model`` (read from ``call.model``), shared by every run that uses this
middleware instance. States:

- **closed**: calls pass. A call that fails with a :class:`~seamkit.errors.ProviderError` of an
  ``on`` class counts one failure; a call whose stream ends normally resets the count. Other
  outcomes (another failure class, another exception, a caller closing the stream early) neither
  count nor reset. ``failure_threshold`` consecutive failures open the breaker.
- **open**: calls are refused before dispatch with ``ProviderError`` class ``overloaded``, code
  ``circuit_open`` and ``retry_after`` = seconds until the breaker turns half-open.
- **half-open** (``reset_after_s`` after opening): one trial call at a time passes; others are
  refused as above (``retry_after`` ``None``). The trial's success closes the breaker; its failure
  (an ``on`` class) opens it again for ``reset_after_s``; any other outcome leaves it half-open.

Time is ``call.ctx.clock.monotonic()`` (seconds). State changes never await, so concurrent calls
on one event loop see a consistent breaker.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

from seamkit.errors import FailureClass, ProviderError
from seamkit.plugin import Call, ClockPort, Next, middleware

from seamkit_resilience._stream import aclose, model_label
from seamkit_resilience.config import CircuitBreakerConfig

__all__ = ["BreakerState", "CircuitBreaker", "build"]

BreakerState = Literal["closed", "open", "half_open"]


@dataclass(slots=True)
class _Breaker:
    failures: int = 0
    opened_at: float | None = None
    trial_in_flight: bool = False
    last_class: FailureClass | None = None


class CircuitBreaker:
    """The ``circuit_breaker`` middleware (see the module doc); ``config`` is a
    :class:`CircuitBreakerConfig`. :meth:`state` reports a breaker's state."""

    def __init__(self, config: CircuitBreakerConfig | None = None) -> None:
        self.config = config if config is not None else CircuitBreakerConfig()
        self._on: frozenset[FailureClass] = frozenset(self.config.on)
        self._breakers: dict[str, _Breaker] = {}

    def __repr__(self) -> str:
        c = self.config
        return (f"CircuitBreaker(failure_threshold={c.failure_threshold}, reset_after_s={c.reset_after_s}, "
                f"on={[x.value for x in c.on]})")

    def state(self, key: str, clock: ClockPort) -> BreakerState:
        """The state of the breaker for ``key`` (``"provider:model"``) at ``clock.monotonic()``."""
        b = self._breakers.get(key)
        if b is None or b.opened_at is None:
            return "closed"
        return "open" if clock.monotonic() < b.opened_at + self.config.reset_after_s else "half_open"

    def failures(self, key: str) -> int:
        """Consecutive failures counted for ``key`` since the last success."""
        b = self._breakers.get(key)
        return b.failures if b is not None else 0

    def _refuse(self, key: str, b: _Breaker, provider: str | None, retry_after: float | None) -> ProviderError:
        why = f"after {b.failures} consecutive failure{'s' if b.failures != 1 else ''}"
        if b.last_class is not None:
            why += f" (last: {b.last_class.value})"
        if retry_after is not None:
            msg = f"circuit open for {key} {why}; next trial in {retry_after:.3g} s"
        else:
            msg = f"circuit half-open for {key} {why}; a trial call is in flight"
        return ProviderError(msg, FailureClass.OVERLOADED, provider=provider, retry_after=retry_after,
                             code="circuit_open")

    async def __call__(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        if call.kind != "chat":
            async for item in nxt(call):
                yield item
            return
        key = model_label(call.model)
        clock = call.ctx.clock
        b = self._breakers.get(key)
        if b is None:
            b = self._breakers[key] = _Breaker()
        trial = False
        if b.opened_at is not None:
            left = b.opened_at + self.config.reset_after_s - clock.monotonic()
            provider = getattr(call.model, "provider", None)
            if left > 0:
                raise self._refuse(key, b, provider, left)
            if b.trial_in_flight:
                raise self._refuse(key, b, provider, None)
            b.trial_in_flight = trial = True
        stream: AsyncIterator[Any] | None = None
        try:
            stream = nxt(call)
            async for d in stream:
                yield d
        except ProviderError as exc:
            if exc.failure_class in self._on:
                b.failures += 1
                b.last_class = exc.failure_class
                if trial or b.failures >= self.config.failure_threshold:
                    b.opened_at = clock.monotonic()
            raise
        else:
            b.failures = 0
            b.opened_at = None
            b.last_class = None
        finally:
            if trial:
                b.trial_in_flight = False
            if stream is not None:
                await aclose(stream)


def build(config: CircuitBreakerConfig) -> CircuitBreaker:
    """Factory of the ``circuit_breaker`` component: a :class:`CircuitBreaker` for chat calls only."""
    return middleware(kinds=("chat",))(CircuitBreaker(config))  # type: ignore[return-value]
