"""Agent tools' child runs on the queue: :class:`CeleryChildRuns`, the
:class:`~seamkit._agent.child_runs.ChildRunDispatcher` every delivery installs in the run it runs.

An agent tool written with ``queue: true`` (or ``queue: {name: Q}``) in a run a worker executes
hands each child to it. It:

1. reads the child's latest checkpoint (the child's run id is derived from the parent's run id,
   step and tool call id, so a re-delivered or resumed parent names the same child): when there is
   none it submits the child (file, agent, task, run id, and the lineage: parent run id,
   ancestors, depth, scope, the tool's name) to the queue ``Q``; when there is one it submits
   nothing. When the broker cannot be reached for that send it raises
   :class:`~seamkit.errors.InfrastructureUnavailable`: not the child's answer, so the caller's
   model is not told; the calling run stops unfinished (``running``, its lease released) and its
   delivery is retried like any infrastructure failure (:mod:`seamkit_celery.task`); the retried
   delivery resumes it and sends the child then;
2. polls the child's checkpoints (in the child agent's store, which must be shared) with backoff
   (50 ms, times 1.5, at most 1 s) until the child is ``done``, ``failed`` or ``suspended``, and
   returns that outcome (with the child's usage). A read that finds the store unreachable is
   tried again the same way (never handed to the caller's model as the child's result). The
   parent's cancellation ends the wait with
   :class:`~seamkit.errors.RunCancelled` (the child is not cancelled: it runs on, and a resumed
   parent finds its result).

Every child sent gets a send record (:mod:`seamkit_celery.sent`) in the child agent's store,
written before its message. While the caller waits for a child with no checkpoint it reads that
record: a child whose message was lost (a worker killed as it took it, the broker) is sent again
every ``requeue_after_s`` seconds (the app's ``requeue_after_s``, ``seamkit worker
--requeue-after``), and a child a worker rejected (its composition could not be loaded there)
ends the wait with a ``failed`` outcome saying why. Two messages of one run id still run it once
(the run's lease and version check).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import TYPE_CHECKING, Any

from seamkit.errors import FailureClass, InfrastructureUnavailable, ToolError
from seamkit.plugin import ChildRunOutcome, ChildRunRequest
from seamkit.values import Usage

if TYPE_CHECKING:
    from celery import Celery
    from seamkit.plugin import RunContext

__all__ = ["CeleryChildRuns", "FIRST_POLL_S", "MAX_POLL_S", "NOT_STARTED_WARNING_S"]

#: The first pause (seconds) between two reads of a child's checkpoint; each next is 1.5 times longer.
FIRST_POLL_S = 0.05
#: The longest pause (seconds) between two reads of a child's checkpoint.
MAX_POLL_S = 1.0
#: Seconds a child may stay unstarted (no checkpoint) before the worker's log says so, once.
NOT_STARTED_WARNING_S = 30.0

log = logging.getLogger("seamkit.celery")


class CeleryChildRuns:
    """Submits agent tools' child runs to the Celery queue they name and waits for their
    checkpoints (see the module doc). ``app``: the worker's Celery app (its broker); ``file``: the
    composition the calling run came from (the child is an agent of the same file);
    ``warn_after_s``: how long a child may stay unstarted before a warning in the log names its
    queue (the usual cause: no worker consumes it)."""

    def __init__(self, app: Celery, file: str, *, warn_after_s: float = NOT_STARTED_WARNING_S,
                 requeue_after_s: float | None = None) -> None:
        self.app = app
        self.file = file
        self.warn_after_s = warn_after_s
        if requeue_after_s is None:
            from seamkit_celery.sent import DEFAULT_REQUEUE_AFTER_S
            from seamkit_celery.task import REQUEUE_AFTER_SETTING

            requeue_after_s = float(app.conf.get(REQUEUE_AFTER_SETTING) or DEFAULT_REQUEUE_AFTER_S)
        self.requeue_after_s = requeue_after_s

    def __repr__(self) -> str:
        return f"CeleryChildRuns(file={self.file!r})"

    async def run_child(self, request: ChildRunRequest, ctx: RunContext) -> ChildRunOutcome:
        """See :meth:`~seamkit._agent.child_runs.ChildRunDispatcher.run_child`. Raises
        :class:`~seamkit.errors.ToolError` when the child agent has no checkpointer or its run id
        was sent before with another spec, :class:`~seamkit.errors.InfrastructureUnavailable` when
        the broker cannot be reached (not the child's answer: the caller's run stops unfinished and
        its delivery is retried, see :func:`~seamkit_celery.task.infrastructure`), and
        :class:`~seamkit.errors.RunCancelled` when the caller is cancelled."""
        from seamkit_celery.app import QueueUnavailable
        from seamkit_celery.sent import LostMessages, SpecConflict, mark_resent, read_record, waiting_messages
        from seamkit_celery.task import _send, make_spec, send_recorded

        cp = request.agent.checkpointer
        if cp is None:
            raise ToolError(f"agent {request.agent.name!r} has no checkpoints: its runs cannot go to a queue")
        store = cp.port if callable(getattr(cp.port, "append", None)) else None  # the send record's store
        queue = request.queue or str(self.app.conf.task_default_queue)
        snap = await _latest(cp, request, ctx)
        sent_at = time.monotonic()
        if snap is None:
            scope = request.scope
            spec = make_spec(self.file, request.task, run_id=request.run_id, agent=request.agent.name, child={
                "tool": request.tool, "parent_run_id": request.parent_run_id,
                "ancestors": list(request.ancestors), "agent_depth": request.agent_depth,
                "scope": {"tenant": scope.tenant, "user": scope.user, "thread": scope.thread},
            })
            try:
                if store is not None:
                    await send_recorded(self.app, store, spec, queue)
                else:
                    _send(self.app, spec, queue)
            except QueueUnavailable as exc:
                raise InfrastructureUnavailable(f"child run {request.run_id} (agent {request.agent.name!r}) could "
                                                f"not be sent: {exc}") from None
            except SpecConflict as exc:
                raise ToolError(f"agent {request.agent.name!r} was not started: {exc}") from None
        pause = FIRST_POLL_S
        lost = LostMessages(self.requeue_after_s)
        cancellation = ctx.cancellation
        warn_at: float | None = time.monotonic() + self.warn_after_s
        while True:
            if snap is not None and snap.status in ("done", "failed", "suspended"):
                return outcome(snap)
            if snap is None and store is not None:
                rec = await read_record(store, request.run_id)
                if rec is not None and rec.state == "rejected":
                    return ChildRunOutcome(run_id=request.run_id, status="failed", output=None, stop_reason=None,
                                           usage=None, error=f"rejected by a worker, nothing ran: {rec.reason}",
                                           failure_class=None, detail=None, pending=())
                child_queue = (rec.queue or queue) if rec is not None else queue
                if (rec is not None and time.monotonic() - sent_at >= self.requeue_after_s
                        and lost.check([rec], time.time(), functools.partial(waiting_messages, self.app, child_queue))):
                    # the child's message was lost (a worker killed as it took it): the workers'
                    # sweeper's rule, here because this caller holds a worker process waiting
                    await mark_resent(store, rec)
                    try:
                        _send(self.app, dict(rec.spec), child_queue)
                        log.warning("child run %s (agent %r) of run %s had not started %.0f s after it was sent and "
                                    "no message waits in its queue %r: sent it again", request.run_id,
                                    request.agent.name, request.parent_run_id, self.requeue_after_s, child_queue)
                    except QueueUnavailable as exc:
                        log.warning("child run %s could not be sent again: %s", request.run_id, exc)
                    sent_at = time.monotonic()
            if snap is None and warn_at is not None and time.monotonic() >= warn_at:
                warn_at = None
                log.warning("child run %s (agent %r) of run %s has not started after %.0f s: is a worker consuming "
                            "the queue %r (seamkit worker FILE --queue %s)? Its caller holds this worker process "
                            "while it waits", request.run_id, request.agent.name, request.parent_run_id,
                            self.warn_after_s, request.queue, request.queue)
            cancellation.raise_if_cancelled()
            try:
                await asyncio.wait_for(cancellation.wait(), timeout=pause)
            except TimeoutError:
                pass
            cancellation.raise_if_cancelled()
            pause = min(pause * 1.5, MAX_POLL_S)
            snap = await _latest(cp, request, ctx)


async def _latest(cp: Any, request: ChildRunRequest, ctx: RunContext) -> Any:
    """The child's latest checkpoint. While its store cannot be reached this waits and reads again
    (same backoff as the polling; the caller's cancellation ends it): a store outage is not the
    child's answer, and the caller's model must not be told it is (said once in the log)."""
    from seamkit.errors import StoreUnavailable

    from seamkit_celery.task import mask_urls

    pause = FIRST_POLL_S
    said = False
    while True:
        try:
            return await cp.latest(request.run_id)
        except StoreUnavailable as exc:
            if not said:
                said = True
                log.warning("child run %s of run %s: its store cannot be reached (%s); reading again until it "
                            "can", request.run_id, request.parent_run_id, mask_urls(str(exc)))
        ctx.cancellation.raise_if_cancelled()
        try:
            await asyncio.wait_for(ctx.cancellation.wait(), timeout=pause)
        except TimeoutError:
            pass
        ctx.cancellation.raise_if_cancelled()
        pause = min(pause * 1.5, MAX_POLL_S)


def outcome(snap: Any) -> ChildRunOutcome:
    """A child's :class:`~seamkit._agent.child_runs.ChildRunOutcome` from its latest checkpoint
    (a finished or suspended :class:`~seamkit._durability.checkpointer.RunSnapshot`)."""
    from seamkit_celery.task import outcome_of

    out = outcome_of(snap)
    st = snap.state
    usage = st.get("usage")
    fc = st.get("failure_class")
    return ChildRunOutcome(
        run_id=snap.run_id,
        status=snap.status,
        output=st.get("output") if snap.status == "done" else None,
        stop_reason=out["stop_reason"],
        usage=usage if isinstance(usage, Usage) else None,
        error=out["error"],
        failure_class=_failure_class(fc),
        detail=out["detail"],
        pending=tuple(out["pending_approvals"]),
    )


def _failure_class(value: Any) -> FailureClass | None:
    try:
        return FailureClass(value) if value is not None else None
    except ValueError:
        return None
