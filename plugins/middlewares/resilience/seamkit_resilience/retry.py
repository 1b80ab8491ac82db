"""The ``retry`` middleware: retries transient provider failures of chat calls.

Rules (every decision reads :attr:`~seamkit.errors.ProviderError.failure_class`, never a message):

- Only a :class:`~seamkit.errors.ProviderError` whose class is in ``retry_on`` (transient classes
  only) is retried. Permanent classes (``quota``, ``authentication``, ``invalid_request``,
  ``context_length``, ``content_filter``, ``refusal``, ``unknown``),
  :class:`~seamkit.errors.UnsupportedFeature`, :class:`~seamkit.errors.BudgetExceeded`, any other
  exception and cancellation (``asyncio.CancelledError``, :class:`~seamkit.errors.RunCancelled`)
  propagate at once.
- The server's own advice wins over the class (``ProviderError.should_retry``, from the
  ``x-should-retry`` response header OpenAI and Anthropic send; their SDKs obey it the same way):
  ``false`` stops retrying whatever the class; ``true`` allows a retry of an error seamkit
  classified as permanent (the server knows better than the status code). It never overrides the
  configuration: a transient class left out of ``retry_on`` stays unretried, and ``max_attempts``
  and ``max_retry_after_s`` still bound the tries. ``fallback`` and ``circuit_breaker`` do not read
  it: it advises against sending this request to this server again, while a fallback sends it to
  another model and a breaker counts the model's failures.
- Never after a token: once a text, reasoning or tool-call delta has been yielded to the caller,
  a failure propagates (the caller has seen output that a second try could contradict). Deltas
  that are not tokens (warnings, the model name, usage) are held back until the first token or
  the end of the stream, so a failed try leaves nothing behind.
- Delay before try ``n + 1``: the server's requested delay exactly, when it sent one and it is at
  most ``max_retry_after_s`` (above that: give up at once, raising a ``ProviderError`` of the same
  class that says why); otherwise full jitter (AWS Architecture Blog, "Exponential Backoff And
  Jitter"): ``uniform(0, min(max_delay_s, base_delay_s * 2 ** (n - 1)))`` seconds. The requested
  delay is ``ProviderError.retry_delay(call.ctx.clock.now())``: a ``Retry-After`` HTTP date is
  measured against the run's clock, not the wall clock.
- All waiting goes through ``call.ctx.clock`` (a :class:`~seamkit._ports.ClockPort`) and is cut
  short by the run's cancellation token.
- After ``max_attempts`` tries the last error is raised, with a note saying how many tries were made.
"""

from __future__ import annotations

import math
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from seamkit.errors import FailureClass, ProviderError
from seamkit.plugin import Call, Next, middleware
from seamkit.values import Delta

from seamkit_resilience._stream import aclose, is_token, sleep_unless_cancelled
from seamkit_resilience.config import RetryConfig

__all__ = ["Retry", "backoff_ceiling", "full_jitter_delay", "build"]


def backoff_ceiling(attempt: int, base_delay_s: float, max_delay_s: float) -> float:
    """The upper bound, in seconds, of the backoff after failed try ``attempt`` (1-based):
    ``min(max_delay_s, base_delay_s * 2 ** (attempt - 1))``, without overflow for large attempts.
    Raises ``ValueError`` when ``attempt < 1`` or a delay is negative or not finite."""
    if attempt < 1:
        raise ValueError(f"attempt must be >= 1, got {attempt}")
    for name, v in (("base_delay_s", base_delay_s), ("max_delay_s", max_delay_s)):
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {v}")
    try:
        grown = math.ldexp(base_delay_s, attempt - 1)  # base * 2 ** (attempt - 1), exact
    except OverflowError:
        return max_delay_s
    return min(max_delay_s, grown)


def full_jitter_delay(attempt: int, base_delay_s: float, max_delay_s: float, rng: random.Random) -> float:
    """A full-jitter backoff delay in seconds after failed try ``attempt`` (1-based): uniform in
    ``[0, backoff_ceiling(attempt, base_delay_s, max_delay_s)]``, drawn from ``rng``."""
    ceiling = backoff_ceiling(attempt, base_delay_s, max_delay_s)
    return min(ceiling, max(0.0, rng.uniform(0.0, ceiling)))


class Retry:
    """The ``retry`` middleware (see the module doc). ``config`` is a :class:`RetryConfig`;
    ``rng`` replaces the jitter's random generator (default ``random.Random(config.seed)``).

    Call it as ``mw(call, next)``; it yields the deltas of the successful try."""

    def __init__(self, config: RetryConfig | None = None, *, rng: random.Random | None = None) -> None:
        self.config = config if config is not None else RetryConfig()
        self.rng = rng if rng is not None else random.Random(self.config.seed)
        self._retry_on: frozenset[FailureClass] = frozenset(self.config.retry_on)

    def __repr__(self) -> str:
        c = self.config
        return (f"Retry(max_attempts={c.max_attempts}, base_delay_s={c.base_delay_s}, max_delay_s={c.max_delay_s}, "
                f"max_retry_after_s={c.max_retry_after_s}, retry_on={[x.value for x in c.retry_on]})")

    def delay_for(self, exc: ProviderError, attempt: int, now: datetime | None = None) -> float:
        """Seconds to wait after failed try ``attempt`` (1-based) that raised ``exc``; ``now`` is the
        run's time (``call.ctx.clock.now()``) against which a ``retry_at`` date is measured (default:
        the wall clock).

        Raises ``exc`` itself when it must not be retried (class not in ``retry_on`` and no
        ``x-should-retry: true`` for a permanent class, ``x-should-retry: false``, or no try left:
        with a note saying so), and a new :class:`~seamkit.errors.ProviderError` of the same class
        (chained to ``exc``) when the server asked to wait longer than ``max_retry_after_s``.
        """
        c = self.config
        if exc.should_retry is False:
            exc.add_note("retry: not retried: the server said x-should-retry: false")
            raise exc
        allowed = exc.failure_class in self._retry_on or (
            exc.should_retry is True and not exc.failure_class.transient
        )
        if not allowed:
            raise exc
        if attempt >= c.max_attempts:
            tries = "1 try" if attempt == 1 else f"{attempt} tries"
            exc.add_note(f"retry: gave up after {tries} (max_attempts={c.max_attempts})")
            raise exc
        ra = exc.retry_delay(now if now is not None else datetime.now(UTC))
        if ra is not None:
            if not math.isfinite(ra) or ra > c.max_retry_after_s:
                raise exc.replace(
                    f"{exc.args[0] if exc.args else exc} (retry: not retried: the server asked to wait {ra:g} s, "
                    f"more than max_retry_after_s={c.max_retry_after_s:g}; gave up after try {attempt} "
                    f"of {c.max_attempts})"
                ) from exc
            return max(0.0, float(ra))
        return full_jitter_delay(attempt, c.base_delay_s, c.max_delay_s, self.rng)

    async def __call__(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        if call.kind != "chat":
            async for item in nxt(call):
                yield item
            return
        attempt = 0
        while True:
            attempt += 1
            held: list[Delta] = []
            streamed = False
            stream: AsyncIterator[Any] | None = None
            try:
                stream = nxt(call)
                async for d in stream:
                    if streamed:
                        yield d
                    elif is_token(d):
                        streamed = True
                        for h in held:
                            yield h
                        held.clear()
                        yield d
                    else:
                        held.append(d)
            except ProviderError as exc:
                if streamed:
                    exc.add_note("retry: not retried: output was already streamed to the caller")
                    raise
                delay = self.delay_for(exc, attempt, call.ctx.clock.now())
            else:
                for h in held:
                    yield h
                return
            finally:
                if stream is not None:
                    await aclose(stream)
            await sleep_unless_cancelled(call.ctx, delay)


def build(config: RetryConfig) -> Retry:
    """Factory of the ``retry`` component: a :class:`Retry` marked for chat calls only."""
    return middleware(kinds=("chat",))(Retry(config))  # type: ignore[return-value]
