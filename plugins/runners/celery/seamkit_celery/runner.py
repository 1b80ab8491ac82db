"""The ``celery`` runner (:class:`~seamkit.runners.Runner`): ``seamkit resume RUN_ID`` on a run a
worker started enqueues its continuation on the queue the run came from."""

from __future__ import annotations

from seamkit.runners import QUEUE_KEY, RequeueRequest

__all__ = ["CeleryRunner"]


class CeleryRunner:
    """Enqueues continuations on the broker ``broker`` (``None``: ``$SEAMKIT_BROKER_URL``), on the
    queue recorded in the run's metadata (the default queue when none is)."""

    def __init__(self, broker: str | None = None) -> None:
        self.broker = broker

    def __repr__(self) -> str:
        from seamkit_celery.app import mask_url

        return f"CeleryRunner(broker={mask_url(self.broker) if self.broker else None!r})"

    def requeue(self, request: RequeueRequest) -> str:
        """See :meth:`seamkit.runners.Runner.requeue`. Raises ``ValueError`` when no broker is
        configured, :class:`~seamkit_celery.app.QueueUnavailable` when it cannot be reached, and
        what :func:`~seamkit_celery.task.load_checked` raises for a file that cannot run on the queue."""
        from seamkit.durability.approvals import decision_data

        from seamkit_celery.app import DEFAULT_QUEUE, broker_from_env, make_app, mask_url
        from seamkit_celery.task import submit_resume

        url = broker_from_env(self.broker)
        queue = request.metadata.get(QUEUE_KEY)
        queue = queue if isinstance(queue, str) and queue else DEFAULT_QUEUE
        decisions = decision_data(request.decisions) if request.decisions else None
        submit_resume(make_app(url, queue=queue), request.file, request.run_id, agent=request.agent,
                      decisions=decisions, queue=queue)
        return f"queue {queue!r} on {mask_url(url)}"
