"""Pending continuations: one continuation of a suspended run on the queue at a time.

A continuation (``seamkit submit FILE --resume RUN_ID --approve ...``, or ``seamkit resume`` on
a queued run) is a message a worker takes later. Until one does, the run's checkpoints still say
``suspended``, so a second, conflicting continuation (``--reject`` the same call) would be
accepted too and one of the two silently dropped; and ``seamkit runs wait`` would report the old
suspension. So every continuation sent is *claimed* first in the composition's store (scope
``Scope()``), under the run's latest checkpoint version at sending time::

    seamkit-continuation:<run id>:<version>   a list of {"token", "at", "what"}, in claim order

The first claim of that version younger than :data:`PENDING_FOR_S` wins; a later one is refused
(:class:`ContinuationPending`, naming when the first was sent and what it decided). Once a worker
resumes the run its version moves on, so the claim no longer applies. A claim older than
:data:`PENDING_FOR_S` no longer counts (its message was most likely lost): a new continuation may
then be sent. ``append`` orders concurrent claims (two commands racing both see the same first
claim); the list has no TTL (a StorePort list has none): a few bytes per continuation sent.
"""

from __future__ import annotations

import shlex
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from seamkit.values import Scope

__all__ = ["PENDING_FOR_S", "ContinuationPending", "claim", "clear", "describe", "pending", "release"]

#: Seconds a continuation sent counts as pending while no worker has taken it.
PENDING_FOR_S = 300.0
_SCOPE = Scope()


class ContinuationPending(ValueError):
    """A continuation of the run was already sent and no worker has taken it yet."""


def _key(run_id: str, version: int) -> str:
    return f"seamkit-continuation:{run_id}:{version}"


def describe(decisions: Mapping[str, Mapping[str, Any]] | None) -> str:
    """``approve call_0_0, reject call_0_1`` for decision data; ``continue`` for none."""
    if not decisions:
        return "continue"
    parts = []
    for call_id, d in sorted(decisions.items()):
        verb = "edit" if d.get("arguments") is not None else "approve" if d.get("approved") else "reject"
        parts.append(f"{verb} {call_id}")
    return ", ".join(parts)


def _first(items: Any, now: float) -> Mapping[str, Any] | None:
    for item in items or ():
        if isinstance(item, Mapping) and isinstance(item.get("at"), (int, float)) and now - item["at"] < PENDING_FOR_S:
            return item
    return None


async def pending(store: Any, run_id: str, version: int, *, now: Callable[[], float] = time.time
                  ) -> Mapping[str, Any] | None:
    """The continuation pending on ``run_id`` at ``version`` (``{"token", "at", "what"}``), or
    ``None``. Raises :class:`~seamkit.errors.StoreUnavailable`."""
    return _first(await store.list(_SCOPE, _key(run_id, version)), now())


async def claim(store: Any, run_id: str, version: int, what: str, *, agent_file: str,
                now: Callable[[], float] = time.time) -> str:
    """Claim the continuation of ``run_id`` at checkpoint ``version`` (call it before sending);
    returns the claim's token (for :func:`release`). Raises :class:`ContinuationPending` when
    another continuation of that version is pending, saying when it was sent, what it decided and
    how to wait for it (``agent_file``: for the command printed)."""
    token = uuid.uuid4().hex
    await store.append(_SCOPE, _key(run_id, version), {"token": token, "at": now(), "what": what})
    first = _first(await store.list(_SCOPE, _key(run_id, version)), now())
    if first is not None and first.get("token") != token:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(first["at"])))
        raise ContinuationPending(
            f"a continuation of run {run_id} was already sent at {when} ({first.get('what')}) and no worker has "
            f"taken it yet; wait for it: seamkit runs wait {run_id} --agent {shlex.quote(agent_file)} (a "
            f"continuation not taken within {PENDING_FOR_S:g} s no longer counts, and another may then be sent)")
    return token


async def release(store: Any, run_id: str, version: int, token: str) -> None:
    """Withdraw claim ``token`` (its message could not be sent), so that a continuation may be sent
    again at once. Best effort: a store that fails here leaves it pending until it is stale."""
    try:
        first = _first(await store.list(_SCOPE, _key(run_id, version)), time.time())
        if first is not None and first.get("token") == token:  # the later claims were refused
            await store.delete(_SCOPE, _key(run_id, version))
    except Exception:
        return


async def clear(store: Any, run_id: str, version: int) -> None:
    """Drop every claim of ``run_id`` at ``version``: a worker refused the continuation (its
    decisions no longer fit; the run still waits at that version), so a corrected one may be sent
    at once rather than after :data:`PENDING_FOR_S`. Best effort, as :func:`release`."""
    try:
        await store.delete(_SCOPE, _key(run_id, version))
    except Exception:
        return
