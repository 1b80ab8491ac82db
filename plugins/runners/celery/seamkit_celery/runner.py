"""The ``celery`` runner (:class:`~seamkit._runners.Runner`): ``seamkit resume RUN_ID`` on a run a
worker started enqueues its continuation on the queue the run came from."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import QUEUE_KEY, RequeueRequest

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
        """See :meth:`seamkit._runners.Runner.requeue`. Raises ``ValueError`` when no broker is
        configured, :class:`~seamkit_celery.app.QueueUnavailable` when it cannot be reached, and
        what :func:`~seamkit_celery.task.load_checked` raises for a file that cannot run on the queue."""
        import asyncio

        from seamkit.composition import build_store
        from seamkit.plugin import decision_data

        from seamkit_celery.app import DEFAULT_QUEUE, broker_from_env, make_app, mask_url
        from seamkit_celery.task import load_checked, make_spec

        url = broker_from_env(self.broker)
        queue = request.metadata.get(QUEUE_KEY)
        queue = queue if isinstance(queue, str) and queue else DEFAULT_QUEUE
        decisions = decision_data(request.decisions) if request.decisions else None
        composition, _ = load_checked(request.file, request.agent)
        spec = make_spec(request.file, None, run_id=request.run_id, agent=request.agent, decisions=decisions)
        # claimed under the run's latest version, as seamkit submit --resume does: one continuation at a time
        asyncio.run(_send_claimed(make_app(url, queue=queue), build_store(composition), spec, queue, request.file))
        return f"queue {queue!r} on {mask_url(url)}"


async def _send_claimed(app: Any, store: Any, spec: dict[str, Any], queue: str, file: str) -> None:
    from seamkit_celery.task import _send, send_continuation

    stored = await store.latest(str(spec["run_id"])) if store is not None else None
    if stored is None:  # no checkpoint (or no store) to claim under: sent as before
        if store is not None:
            await store.aclose()
        _send(app, spec, queue)
        return
    await send_continuation(app, store, spec, queue, version=stored.record.version, agent_file=file)
