"""Runners: where a run goes when it does not run in the calling process (a queue of workers).

A runner is a plugin component (registry kind ``runner``, hook ``seamkit_register_runners``)
that can hand a run to workers elsewhere. A run that a runner started records the runner's
registered name in its checkpoint metadata under :data:`QUEUED_KEY` (``{"queued": "celery"}``),
and where it came from under :data:`QUEUE_KEY` (the queue's name); ``seamkit resume RUN_ID`` on
such a run hands its continuation back to that runner (:meth:`Runner.requeue`) instead of running
it in the calling process (``--here`` runs it here anyway).

Nothing here imports a queue; the runner is the deployment's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from seamkit._durability.approvals import Decision

__all__ = ["QUEUED_KEY", "QUEUE_KEY", "RequeueRequest", "Runner", "queued_by"]

#: The checkpoint metadata key naming the runner (its registered name) that started a run.
QUEUED_KEY = "queued"
#: The checkpoint metadata key naming the queue a queued run was taken from (``None``: unknown).
QUEUE_KEY = "queue"


@dataclass(frozen=True, slots=True)
class RequeueRequest:
    """The continuation of one run, for a :class:`Runner` to enqueue."""

    file: str
    """The composition YAML file, absolute (workers need the same path)."""
    agent: str | None
    """The agent of ``file`` whose run it is (``None``: the entry agent)."""
    run_id: str
    decisions: Mapping[str, Decision] | None = None
    """Decisions on the run's pending tool calls (call id -> decision), already checked against
    them; ``None`` for a run that waits for none (interrupted, or settled since)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """The run's checkpoint metadata (:data:`QUEUED_KEY`, :data:`QUEUE_KEY`...)."""


@runtime_checkable
class Runner(Protocol):
    """Hands runs to workers elsewhere."""

    def requeue(self, request: RequeueRequest) -> str:
        """Enqueue the continuation of ``request.run_id`` and return where it went, for a person
        (e.g. ``"queue 'seamkit' on redis://host:6379/0"``, no secrets). Raises ``ValueError``
        when the runner is not configured to reach its queue (the message says how to configure
        it), :class:`~seamkit.errors.SeamkitError` subclasses when the queue cannot be reached."""
        ...


def queued_by(metadata: Mapping[str, Any]) -> str | None:
    """The registered name of the runner that started the run with checkpoint ``metadata``, or
    ``None`` for a run started in a process of its own."""
    name = metadata.get(QUEUED_KEY)
    return name if isinstance(name, str) and name else None
