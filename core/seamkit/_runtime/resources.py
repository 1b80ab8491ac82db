"""``RunResources``: things a run opens on first use and closes when it ends.

A tool backed by a connection (an MCP server's session, a browser, a database connection that
must not outlive the run) asks the run for it with ``await ctx.resource(key, open)``: the first
call opens it, every later call of the same run (concurrent ones included) gets the same object,
and the agent run that owns the resources closes them all when it ends, on every exit path:
an answer, an error, a suspension for approval, a cancellation or Ctrl-C. A resumed run opens
them again on first use (a crash leaves nothing to close that the operating system does not).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from seamkit._lazy import lazy_module

if TYPE_CHECKING:
    import asyncio
    import logging
else:  # imported on first use: a third of a usable agent's import time (issue 19)
    asyncio = lazy_module("asyncio", globals())
    logging = lazy_module("logging", globals())

__all__ = ["Closeable", "RunResources"]



@runtime_checkable
class Closeable(Protocol):
    """A resource a run holds: ``aclose()`` releases it (and must not hang: bound its own waits)."""

    async def aclose(self) -> None: ...


R = TypeVar("R", bound=Closeable)


class RunResources:
    """The resources of one run, by key, closed together by :meth:`aclose` in the reverse order of
    opening.

    ``get(key, open)`` returns the resource under ``key``, awaiting ``open()`` on first use;
    concurrent first uses of one key open it once (the others wait for it; a failing ``open``
    leaves nothing behind, and each waiter gets its error). ``discard(key)`` closes and forgets
    one resource (a connection found dead), so the next ``get`` opens it again.
    After :meth:`aclose`, ``get`` raises ``RuntimeError`` (the run is over). A resource without an
    ``aclose()`` method is refused when opened, with ``TypeError`` (nothing would close it; one
    with only ``close()`` is told to rename it).
    """

    __slots__ = ("_closed", "_locks", "_open")

    def __init__(self) -> None:
        self._open: dict[str, Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed = False

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys of the resources open now, in the order they were opened."""
        return tuple(self._open)

    async def get(self, key: str, open: Callable[[], Awaitable[R]]) -> R:
        if self._closed:
            raise RuntimeError(f"the run's resources are closed: cannot open {key!r} after the run ended")
        found = self._open.get(key)
        if found is not None:
            return found  # type: ignore[no-any-return]
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        async with lock:
            found = self._open.get(key)
            if found is not None:
                return found  # type: ignore[no-any-return]
            resource = await open()
            if not callable(getattr(resource, "aclose", None)):  # the run could never close it
                raise TypeError(_not_closeable(key, resource))
            if self._closed:  # the run ended while it opened: nobody would close it
                await _close(key, resource)
                raise RuntimeError(f"the run ended while {key!r} was being opened")
            self._open[key] = resource
            return resource

    async def discard(self, key: str) -> None:
        resource = self._open.pop(key, None)
        if resource is not None:
            await _close(key, resource)

    def close_if_idle(self) -> bool:
        """Mark the resources closed and return ``True`` when none is open: what :meth:`aclose`
        would do then, without a coroutine (most runs open none: this is every run's end).
        ``False`` (nothing changed) when some are open: :meth:`aclose` closes them."""
        if self._open:
            return False
        self._closed = True
        return True

    async def aclose(self) -> None:
        """Close every resource, newest first. A resource whose ``aclose`` raises is logged (its
        error does not stop the others from closing, nor replace the run's own outcome)."""
        self._closed = True
        while self._open:
            key, resource = self._open.popitem()
            await _close(key, resource)


def _not_closeable(key: str, resource: Any) -> str:
    what = f"the run resource {key!r} ({type(resource).__name__}) has no aclose()"
    if callable(getattr(resource, "close", None)):
        return (f"{what}, only close(), which seamkit never calls: every resource and component closes with "
                "'async def aclose(self) -> None' (rename close to aclose, or wrap it)")
    return f"{what}: a run closes what it opened with 'await resource.aclose()'"


async def _close(key: str, resource: Any) -> None:
    try:
        await resource.aclose()
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the run's outcome stands; the leak is what is worth reporting
        logging.getLogger("seamkit.runtime.resources").warning("closing the run resource %r failed: %s: %s", key,
                                                               type(exc).__name__, exc)
