"""seamkit-celery: composed agent runs as Celery tasks on many workers.

- :func:`make_app` (:mod:`seamkit_celery.app`): a Celery app with seamkit's delivery settings
  (late acknowledgement, re-delivery of a dead worker's message, one message per process, JSON).
- :func:`submit` / :func:`submit_resume` (:mod:`seamkit_celery.task`): enqueue a run, or the
  continuation of a suspended or interrupted one; the worker side is the ``seamkit.run`` task.
- :class:`CeleryChildRuns` (:mod:`seamkit_celery.children`): agent tools' child runs with
  ``queue:`` go to the workers; every delivery installs it in the run it runs.
- ``seamkit worker FILE``, ``seamkit submit FILE TASK``, ``seamkit runs wait RUN_ID``.

Importing this package is cheap; Celery loads on first attribute access."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seamkit_celery.app import QueueUnavailable, make_app
    from seamkit_celery.children import CeleryChildRuns
    from seamkit_celery.task import QueueConfigError, check_composition, outcome_of, submit, submit_resume

__all__ = ["CeleryChildRuns", "QueueConfigError", "QueueUnavailable", "check_composition", "make_app", "outcome_of",
           "submit", "submit_resume"]


def __getattr__(name: str) -> Any:
    if name == "CeleryChildRuns":
        from seamkit_celery.children import CeleryChildRuns

        return CeleryChildRuns
    if name in ("make_app", "QueueUnavailable"):
        from seamkit_celery import app

        return getattr(app, name)
    if name in ("QueueConfigError", "check_composition", "outcome_of", "submit", "submit_resume"):
        from seamkit_celery import task

        return getattr(task, name)
    raise AttributeError(f"module 'seamkit_celery' has no attribute {name!r}")
