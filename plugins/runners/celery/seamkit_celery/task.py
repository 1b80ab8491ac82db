"""The task that runs one delivery of a composed agent run, and :func:`submit` that enqueues one.

A task message carries a *spec* (a JSON object, :func:`make_spec`)::

    {"v": 1, "file": "/abs/agent.yaml", "agent": null, "task": "...", "variables": {...},
     "run_id": "...", "decisions": null | {call_id: {"approved": bool, "arguments": {...}|null,
                                                     "reason": str|null}}}

What one delivery does (:func:`deliver`), by what the run's latest checkpoint says:

- none: start the run under ``run_id`` (a fresh delivery). Another delivery of the same run
  starting at the same moment loses the version check on the first checkpoint and retries later.
- ``running``, its lease held by a live worker: do nothing now; retry with a countdown
  (:class:`LeaseHeld`). Never two workers on one run.
- ``running``, lease released, expired or its owner process gone (the worker died, the message came
  back): resume from the last checkpoint (:meth:`Agent.resume`, which claims the run with a
  version check and never steals a live lease). Finished tool calls are not run again; a
  side-effecting call the dead worker was running is re-run only when its tool is idempotent
  (with the same idempotency key), else the run suspends for a person to settle it.
- ``suspended``: a continuation (``submit_resume``) with decisions, or of a run that waited for
  a person to settle a tool call, resumes it; anything else only reports it. A suspended run
  does not hold a worker.
- ``done`` / ``failed``: report it, run nothing.

A delivery whose composition cannot be loaded on this worker (its file is missing here, it no
longer validates) runs nothing and returns status ``rejected`` with the reason (also logged, and
written into the run's send record in the store of the worker's own composition, when the app
has one: ``make_app(composition=...)``; see :mod:`seamkit_celery.sent`).

Every delivery that returns is acknowledged; its return value is the run's *outcome*
(:func:`outcome_of`): ``{"run_id", "status", "stop_reason", "output", "error", "detail",
"pending_approvals", "worker"}``.

Infrastructure failures are never acknowledged as done. A failure is the *run's own* when its
checkpoint says ``failed`` (a provider error, ``BudgetExceeded``, output that does not validate, a
guardrail: the loop checkpoints those as ``failed`` and the delivery reports them). Everything else
that stops a delivery before the run is done, failed or suspended is *infrastructure*
(:func:`infrastructure`): the checkpoint store unreachable (:class:`~seamkit.errors.StoreUnavailable`
from any read or write, before, while or after the run: the loop leaves such a run ``running``), or
any error after which the run's checkpoint still says ``running``. Such a delivery is retried
(:class:`RetryLater`, :func:`run_delivery`):

1. ``Task.retry(countdown=...)`` publishes a copy of the message (``retries`` + 1) with a countdown
   that backs off (:data:`FIRST_RETRY_S`, doubling) up to :func:`retry_countdown`'s cap (5 s, and
   at most half the broker's visibility timeout), then raises Celery's ``Retry``, on which the
   worker acknowledges the *original* message (``acks_late``): the copy carries the run on. The
   run resumes from its last checkpoint when the store is back. Each retry is logged once (warning
   ``run RUN_ID: ...; delivery retried in S s``) with the reason's URL passwords masked.
2. When that publish fails (the broker is unreachable too), Celery's ``retry`` raises
   ``Reject(requeue=False)``, which would drop the message: the delivery waits the countdown and
   raises ``Reject(requeue=True)`` instead. The worker then rejects the message *with requeue*:
   with the broker back the message is queued again at once; while it is down the reject cannot
   reach it, the message stays unacknowledged there and the broker delivers it again after the
   visibility timeout. Either way it is not acknowledged, and a broker that keeps its data (AOF)
   loses nothing.

``task_acks_on_failure_or_timeout`` (default ``True``) would acknowledge a task that *raises*;
no infrastructure error is let out of the task for that reason: it becomes ``Retry`` or
``Reject(requeue=True)``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Celery, Task
    from seamkit import Agent
    from seamkit.composition import Composition
    from seamkit.plugin import RunContext
    from seamkit.workflows import Workflow

__all__ = [
    "COMPOSITION_SETTING",
    "FIRST_RETRY_S",
    "REQUEUE_AFTER_SETTING",
    "SHARED_STORES",
    "LeaseHeld",
    "QueueConfigError",
    "RetryLater",
    "check_composition",
    "deliver",
    "entry_agent",
    "infrastructure",
    "make_spec",
    "mask_urls",
    "outcome_of",
    "register",
    "retry",
    "send_recorded",
    "submit",
    "submit_resume",
]

#: The checkpoint stores every worker can reach. A run checkpointed anywhere else (sqlite: one
#: machine's file; memory: one process) could not be resumed by another worker.
SHARED_STORES = ("postgres", "redis")
#: Longest wait (seconds) before a delivery that found the run's lease held looks again. Kept below
#: any sensible visibility timeout: a message waiting for its countdown is unacknowledged too.
MAX_RETRY_COUNTDOWN_S = 5.0
#: The first wait (seconds) before a delivery stopped by an infrastructure failure is tried again;
#: each next retry of the message waits twice as long, up to :func:`retry_countdown`'s cap.
FIRST_RETRY_S = 0.5
SPEC_VERSION = 1

log = logging.getLogger("seamkit.celery")


class QueueConfigError(ValueError):
    """A composition (or a submit) that cannot be run on the queue; the message says why and where."""


class RetryLater(Exception):
    """The run stopped without finishing for a reason outside it (its store went away, say): the
    delivery is tried again in ``retry_in`` seconds (``None``: after the backoff of
    :func:`run_delivery`). ``why``: the reason, URL passwords masked."""

    def __init__(self, run_id: str, why: str, retry_in: float | None = None) -> None:
        self.run_id = run_id
        self.why = mask_urls(why)
        self.retry_in = retry_in
        super().__init__(f"run {run_id} stopped unfinished ({self.why})")


class LeaseHeld(RetryLater):
    """Another live worker is running the run (or started it a moment ago): look again in
    ``retry_in`` seconds."""

    def __init__(self, run_id: str, owner: str, retry_in: float) -> None:
        self.run_id = run_id
        self.owner = owner
        self.why = f"held by {owner}"
        self.retry_in: float = retry_in
        Exception.__init__(self, f"run {run_id} is held by {owner}; retrying in {retry_in:.1f} s")


_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)[^/\s@]+@")


def mask_urls(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@host`` in it replaced by
    ``***`` (a store's or broker's URL quoted in an error)."""
    return _URL_PASSWORD.sub(lambda m: f"{m.group('head')}***@", text)


def infrastructure(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure of the infrastructure rather than of the run: a
    :class:`~seamkit.errors.StoreUnavailable` or :class:`~seamkit.errors.InfrastructureUnavailable`
    (a queued child's broker unreachable), also as the cause or context of another error.
    (Any error after which the run's checkpoint still says ``running`` is one too; that is
    :func:`deliver`'s to see.)"""
    from seamkit.errors import InfrastructureUnavailable, StoreUnavailable

    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, StoreUnavailable | InfrastructureUnavailable):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


# -- compositions -----------------------------------------------------------------------------------


def _agent_config(composition: Composition, agent: str | None) -> tuple[str, tuple[str | int, ...], Any]:
    agents = composition.all_agents()
    if agent is None:
        name = next(iter(agents))
        return (name, *agents[name])
    if agent not in agents:
        raise QueueConfigError(f"no agent {agent!r} in {composition.file}; its agents: {', '.join(agents)}")
    return (agent, *agents[agent])


def _where(composition: Composition, path: tuple[str | int, ...]) -> str:
    pos = composition.position(path)
    file = str(composition.file) if composition.file is not None else "<text>"
    return f"{file}:{pos.line}:{pos.column}" if pos is not None else file


def _store_of(composition: Composition, name: str, path: tuple[str | int, ...],
              config: Any) -> tuple[str | None, tuple[str | int, ...]]:
    """The store ``use`` agent ``name`` checkpoints into (``None``: ``checkpoints: null``) and where
    that is written."""
    from seamkit.plugin import DEFAULT_STORE

    if "checkpoints" not in config.model_fields_set:
        return DEFAULT_STORE, path
    if config.checkpoints is None:
        return None, (*path, "checkpoints")
    return config.checkpoints.use, (*path, "checkpoints")


def check_composition(composition: Composition, agent: str | None = None) -> str:
    """Check that ``agent`` of ``composition`` (``None``: its entry agent, or its workflow) can run
    on the queue and return its name (for a workflow: its entry agent's, whose store holds the
    workflow's checkpoints). Raises :class:`QueueConfigError` (located) for an unknown agent, or a
    checkpoint store that is not shared by every worker (sqlite, memory, none): a re-delivered run
    must find its checkpoints on whichever worker gets it. The same holds for the agent of every
    agent tool with ``queue:`` in the file (located at its ``queue:``): its child runs are started,
    and waited for, by whichever worker runs the caller; and, for a workflow, for the agent of every
    agent step (located at its ``queue:``, or its ``agent:``): a re-delivered workflow continues
    its steps' runs, or waits for them, on whichever worker gets it."""
    if composition.workflow is not None and agent is None:
        return _check_workflow(composition)
    name, path, config = _agent_config(composition, agent)
    use, at = _store_of(composition, name, path, config)
    if use is None:
        raise QueueConfigError(f"{_where(composition, at)}: agent {name!r} has "
                               "'checkpoints: null'; a queued run needs checkpoints in a store every worker shares "
                               f"({' or '.join(SHARED_STORES)})")
    if use not in SHARED_STORES:
        what = "the default store" if at == path else f"'{use}'"
        raise QueueConfigError(
            f"{_where(composition, at)}: agent {name!r} checkpoints into {what} ({use}), which other workers "
            f"cannot read: a queued run is resumed by whichever worker gets it, so its checkpoints must be in "
            f"a shared store: set checkpoints: {{use: redis, url: ${{REDIS_URL}}}} or {{use: postgres, "
            f"dsn: ${{DATABASE_URL}}}}")
    _check_queued_children(composition)
    return name


def _check_workflow(composition: Composition) -> str:
    """:func:`check_composition` for the workflow of ``composition``; returns its entry agent's name."""
    from seamkit.plugin import AgentStepConfig

    shared = " or ".join(SHARED_STORES)
    workflow = composition.workflow
    assert workflow is not None
    wname = workflow.name or (composition.file.stem if composition.file is not None else "workflow")
    name, path, config = _agent_config(composition, None)
    use, at = _store_of(composition, name, path, config)
    if use not in SHARED_STORES:
        what = ("no store ('checkpoints: null')" if use is None else
                "the default store" if at == path else f"'{use}'")
        raise QueueConfigError(
            f"{_where(composition, at)}: workflow {wname!r} checkpoints into the store of its entry agent "
            f"{name!r}, {what}, which other workers cannot read: a queued workflow is resumed by whichever worker "
            f"gets it, so set the entry agent's checkpoints: {{use: redis, url: ${{REDIS_URL}}}} or {{use: postgres, "
            f"dsn: ${{DATABASE_URL}}}} ({shared})")
    agents = composition.all_agents()
    for step, s in workflow.steps.items():
        if not isinstance(s, AgentStepConfig) or s.agent not in agents:
            continue
        what = _unshared_store(composition, s.agent, *agents[s.agent])
        if what is None:
            continue
        queued = s.queue_name() is not None
        key = "queue" if queued else "agent"
        why = ("sends its agent run to the queue, and the workflow's worker waits for its checkpoints from "
               "another worker" if queued else
               "runs in the workflow's worker, and a re-delivered workflow continues it on whichever worker gets it")
        raise QueueConfigError(
            f"{_where(composition, ('workflow', 'steps', step, key))}: step {step!r} {why}, but agent {s.agent!r} "
            f"checkpoints into {what}: set its checkpoints: {{use: redis, url: ${{REDIS_URL}}}} ({shared})")
    _check_queued_children(composition)
    return name


def _unshared_store(composition: Composition, name: str, path: tuple[str | int, ...], config: Any) -> str | None:
    """How agent ``name`` checkpoints when that is not into a store every worker shares (``"no store
    ('checkpoints: null')"``, ``"the default store"``, ``"'sqlite'"``), for a message; ``None`` when it is."""
    use, _ = _store_of(composition, name, path, config)
    if use in SHARED_STORES:
        return None
    if use is None:
        return "no store ('checkpoints: null')"
    return "the default store" if "checkpoints" not in config.model_fields_set else f"'{use}'"


def _check_queued_children(composition: Composition) -> None:
    from seamkit.composition import AgentToolRef

    agents = composition.all_agents()
    for caller, (path, config) in agents.items():
        for i, t in enumerate(config.tools):
            if not isinstance(t, AgentToolRef) or t.queue_name() is None or t.agent not in agents:
                continue
            what = _unshared_store(composition, t.agent, *agents[t.agent])
            if what is None:
                continue
            raise QueueConfigError(
                f"{_where(composition, (*path, 'tools', i, 'queue'))}: agent {caller!r} sends its {t.agent!r} runs to "
                f"the queue, but agent {t.agent!r} checkpoints into {what}: the caller waits for the child's "
                f"checkpoints from another worker, so they must be in a shared store "
                f"({' or '.join(SHARED_STORES)}); set its checkpoints: {{use: redis, url: ${{REDIS_URL}}}}, or "
                "remove 'queue:' to run it in the caller's process")


def load_checked(file: str | os.PathLike[str], agent: str | None = None) -> tuple[Composition, str]:
    """Load ``file`` and :func:`check_composition` it. Raises ``FileNotFoundError``,
    :class:`~seamkit.errors.ConfigError` (located) and :class:`QueueConfigError`."""
    from seamkit.composition import load_composition
    from seamkit.plugin import get_registry

    path = Path(file)
    if not path.is_file():
        raise FileNotFoundError(2, "no such file", str(file))
    composition = load_composition(path, registry=get_registry())
    return composition, check_composition(composition, agent)


# -- submitting -------------------------------------------------------------------------------------


def make_spec(
    file: str | os.PathLike[str],
    task: str | None,
    *,
    run_id: str | None = None,
    agent: str | None = None,
    variables: Mapping[str, str] | None = None,
    decisions: Mapping[str, Mapping[str, Any]] | None = None,
    child: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The task message for one run (see the module doc); ``file`` is made absolute (a worker on
    another machine needs the same path: a shared checkout or image). ``run_id``: generated when
    ``None``. ``child``: for an agent tool's child run (:mod:`seamkit_celery.children`), the
    tool's name and the caller's lineage (``tool``, ``parent_run_id``, ``ancestors``,
    ``agent_depth``, ``scope``)."""
    spec = {
        "v": SPEC_VERSION,
        "file": str(Path(file).resolve()),
        "agent": agent,
        "task": task,
        "variables": dict(variables or {}),
        "run_id": run_id or uuid.uuid4().hex,
        "decisions": {k: dict(v) for k, v in decisions.items()} if decisions else None,
    }
    if child is not None:
        spec["child"] = dict(child)
    return spec


def submit(
    app: Celery,
    file: str | os.PathLike[str],
    task: str,
    *,
    run_id: str | None = None,
    agent: str | None = None,
    variables: Mapping[str, str] | None = None,
    queue: str | None = None,
    check: bool = True,
    record: bool = True,
) -> str:
    """Enqueue one run of ``agent`` (``None``: the entry agent) of the composition ``file`` on
    ``task`` and return its run id (``run_id``, or a new one). ``check``: load the file first and
    refuse one that cannot run on the queue (:func:`load_checked`); a caller that checked it
    already, or whose file needs components registered only in the workers, passes
    ``check=False``. ``record``: record the send in the composition's store first
    (:func:`send_recorded`), so that ``seamkit runs wait`` knows the run at once, a lost message is
    sent again and a rejection is reported (a batch keeps its own records: ``record=False``).
    With ``check=False`` the send is recorded when the file loads here and passes the check (the
    composition is kept per file and modification time in this process, so a loop of submits
    loads it once); when it does not (a component registered only in the workers, a file only on
    their machines, a store that is not shared) the run is sent unrecorded, as before: ``runs
    wait`` then says it was never submitted until its first checkpoint. Submitting the same
    ``run_id`` twice with the same spec runs it once (the second delivery finds the run). Raises
    what :func:`load_checked` raises (``check`` only), :class:`~seamkit_celery.sent.SpecConflict`
    (recorded sends: the run id was submitted with another file, agent, task or variables),
    :class:`~seamkit.errors.StoreUnavailable` (recorded sends: nothing was sent) and
    :class:`~seamkit_celery.app.QueueUnavailable` when the broker cannot be reached."""
    spec = make_spec(file, task, run_id=run_id, agent=agent, variables=variables)
    if check:
        composition, _ = load_checked(file, agent)
    elif record:
        found = _loaded_for_record(file, agent)
        if found is None:
            _send(app, spec, queue)
            return str(spec["run_id"])
        composition = found
    if not record:
        _send(app, spec, queue)
        return str(spec["run_id"])
    from seamkit.composition import build_store

    store = build_store(composition)
    _sync(send_recorded(app, store, spec, queue or str(app.conf.task_default_queue), close=True,
                        entry=entry_agent(composition)))
    return str(spec["run_id"])


_LOADED: dict[tuple[str, int, str | None], Composition | None] = {}


def _loaded_for_record(file: str | os.PathLike[str], agent: str | None) -> Composition | None:
    """``file``'s composition for recording an unchecked submit, or ``None`` when it cannot be
    loaded or checked here (see :func:`submit`); kept per path, modification time and agent."""
    from seamkit.errors import SeamkitError

    path = Path(file).resolve()
    try:
        key = (str(path), path.stat().st_mtime_ns, agent)
    except OSError:
        return None
    if key not in _LOADED:
        if len(_LOADED) > 64:  # a long-lived process submitting many files: keep the memory bounded
            _LOADED.clear()
        try:
            _LOADED[key] = load_checked(path, agent)[0]
        except (OSError, SeamkitError, QueueConfigError) as exc:
            log.debug("run of %s sent unrecorded: its composition does not load here (%s: %s)", path,
                      type(exc).__name__, mask_urls(str(exc)))
            _LOADED[key] = None
    return _LOADED[key]


def _sync(coro: Any) -> Any:
    """Run ``coro`` to its end from synchronous code, also when called inside a running event loop
    (then in a thread of its own)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def entry_agent(composition: Composition) -> str | None:
    """The name a spec's ``agent: None`` stands for in ``composition``: its entry agent's, or
    ``None`` for a workflow file (there ``None`` is the workflow). For
    :func:`~seamkit_celery.sent.spec_digest`."""
    if composition.workflow is not None:
        return None
    return next(iter(composition.all_agents()), None)


async def send_recorded(app: Celery, store: Any, spec: dict[str, Any], queue: str, *, close: bool = False,
                        entry: str | None = None) -> None:
    """Send ``spec`` to ``queue`` with a send record in ``store`` (:mod:`seamkit_celery.sent`),
    written *before* the message is sent (why: see there); ``store`` ``None``: sent unrecorded.
    ``close``: close ``store`` after. ``entry``: the file's entry agent (:func:`entry_agent`), so
    that ``agent`` ``None`` and that name named are one run.
    Raises :class:`~seamkit_celery.sent.SpecConflict` for a run id submitted before with another
    file, agent, task or variables (or checkpointed from another file), and
    :class:`~seamkit_celery.app.QueueUnavailable` (the record written for it is removed)."""
    from seamkit_celery.app import QueueUnavailable
    from seamkit_celery.batch import was_enqueued
    from seamkit_celery.sent import forget, record_send, refuse_other_checkpoints, refuse_unrecorded

    if store is None:  # the entry agent has no store (a named agent of the file runs): nowhere to record
        _send(app, spec, queue)
        return
    try:
        await refuse_other_checkpoints(store, spec)
        await refuse_unrecorded(store, spec, batch_run=await was_enqueued(store, str(spec["run_id"])))
        _, new = await record_send(store, spec, queue, entry=entry)
        try:
            _send(app, spec, queue)
        except QueueUnavailable:
            if new:
                await forget(store, str(spec["run_id"]))
            raise
    finally:
        if close:
            await store.aclose()


async def send_continuation(app: Celery, store: Any, spec: dict[str, Any], queue: str | None, *, version: int,
                            agent_file: str) -> None:
    """Send the continuation ``spec`` (a resume message) of a run whose latest checkpoint is
    ``version``, claimed first in ``store`` (closed after; ``None``: sent unclaimed) so that a
    second continuation of that version is refused while this one is pending (see
    :mod:`seamkit_celery.pending`). Raises :class:`UsageError` for one already pending (the
    message says when it was sent and how to wait for it), and
    :class:`~seamkit_celery.app.QueueUnavailable` (the claim withdrawn)."""
    from seamkit.plugin import UsageError

    from seamkit_celery.app import QueueUnavailable
    from seamkit_celery.pending import ContinuationPending, claim, describe, release

    if store is None:
        _send(app, spec, queue)
        return
    run_id = str(spec["run_id"])
    try:
        try:
            token = await claim(store, run_id, version, describe(spec.get("decisions")), agent_file=agent_file)
        except ContinuationPending as exc:
            raise UsageError(str(exc)) from None
        try:
            _send(app, spec, queue)
        except QueueUnavailable:
            await release(store, run_id, version, token)
            raise
    finally:
        await store.aclose()


def submit_resume(
    app: Celery,
    file: str | os.PathLike[str],
    run_id: str,
    *,
    agent: str | None = None,
    decisions: Mapping[str, Mapping[str, Any]] | None = None,
    queue: str | None = None,
) -> str:
    """Enqueue the continuation of ``run_id``: a suspended run with ``decisions`` (call id ->
    ``{"approved": bool, "arguments": {...} | None, "reason": str | None}``), or an interrupted
    one. Returns ``run_id``. Raises like :func:`submit`."""
    load_checked(file, agent)
    spec = make_spec(file, None, run_id=run_id, agent=agent, decisions=decisions)
    _send(app, spec, queue)
    return run_id


def _send(app: Celery, spec: dict[str, Any], queue: str | None) -> None:
    from seamkit_celery.app import TASK_NAME, QueueUnavailable, _reason, mask_url

    url = str(app.conf.broker_url)
    try:
        app.send_task(
            TASK_NAME, args=(spec,), queue=queue, task_id=f"{spec['run_id']}:{uuid.uuid4().hex[:8]}",
            retry=True, retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5,
                                      "interval_max": 1.0},
        )
    except Exception as exc:  # kombu's OperationalError, redis' ConnectionError...
        raise QueueUnavailable(f"could not enqueue run {spec['run_id']}: the broker {mask_url(url)} is "
                               f"unreachable: {_reason(exc, url)}") from None


# -- running (in the worker) ------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _jsonable(dump(mode="json"))
    if is_dataclass(value) and not isinstance(value, type):
        return _jsonable(asdict(value))
    return str(value)


def outcome_of(snap: Any) -> dict[str, Any]:
    """A run's outcome from its latest checkpoint (a :class:`~seamkit._durability.checkpointer.RunSnapshot`):
    ``run_id``, ``status``, ``stop_reason``, ``output`` (JSON), ``error``, ``detail`` (why it
    waits or stopped) and ``pending_approvals`` (``[{call_id, tool, arguments}]``)."""
    st = snap.state
    pending = [
        {"call_id": p.call_id, "tool": p.tool, "arguments": _jsonable(p.arguments)}
        for p in st.get("pending_approvals") or ()
        if hasattr(p, "call_id")
    ]
    error = st.get("error")
    return {
        "run_id": snap.run_id,
        "status": snap.status,
        "stop_reason": st.get("stop_reason"),
        "output": _jsonable(st.get("output")) if snap.status == "done" else None,
        "error": str(error) if error is not None else None,
        "detail": st.get("status_detail"),
        "pending_approvals": pending,
    }


def _decisions(raw: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not raw:
        return None
    from seamkit.plugin import decisions_from_data

    return dict(decisions_from_data(raw))


def _continues(spec: Mapping[str, Any], snap: Any, decisions: Mapping[str, Any] | None) -> bool:
    """Whether ``spec`` continues the suspended run ``snap``: a resume message (no task) with
    decisions, or one for a run that waited for a person to settle a call (settled since)."""
    if spec.get("task") is not None:  # the run submitted again: report it, do not continue it
        return False
    return decisions is not None or snap.state.get("waiting_for") == "settlement"


def _metadata(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The checkpoint metadata of a run a worker starts: its file, the runner that started it and
    the queue it came from (``seamkit resume`` enqueues its continuation there; see
    :mod:`seamkit._runners`)."""
    from seamkit.plugin import QUEUE_KEY, QUEUED_KEY

    from seamkit_celery.sent import TASK_DIGEST_KEY, task_digest

    meta: dict[str, Any] = {"agent_file": str(spec["file"]), QUEUED_KEY: "celery"}
    if spec.get("task") is not None:  # a run started here (a continuation keeps its first metadata)
        meta[TASK_DIGEST_KEY] = task_digest(spec["task"], spec.get("variables"))
    if spec.get("queue"):
        meta[QUEUE_KEY] = str(spec["queue"])
    return meta


def run_context(spec: Mapping[str, Any], services: Mapping[str, Any] | None = None) -> RunContext:
    """The context a delivery runs ``spec``'s run in: its run id, the ``services`` (the worker's
    child-run dispatcher), and for an agent tool's child (``spec["child"]``) its parent, ancestors,
    depth and scope (so a shared budget charges it to the root run)."""
    from seamkit.plugin import RunContext
    from seamkit.values import EMPTY, Scope

    child = spec.get("child") or {}
    scope = child.get("scope")
    return RunContext(
        run_id=str(spec["run_id"]),
        parent_run_id=child.get("parent_run_id"),
        ancestors=tuple(str(a) for a in child.get("ancestors") or ()),
        agent_depth=int(child.get("agent_depth") or 0),
        scope=Scope(**scope) if isinstance(scope, Mapping) else Scope(),
        services=services if services is not None else EMPTY,
    )


async def deliver(agent: Agent | Workflow, spec: Mapping[str, Any],
                  services: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run one delivery of ``spec`` with ``agent`` (an agent, or a workflow file's workflow) and
    return the run's outcome, by the run's latest checkpoint (see the module doc): none, start it
    (a workflow: :func:`~seamkit.workflows.run_workflow`, the task as its input, a JSON object
    being its structured input); ``running`` with a live lease, :class:`LeaseHeld`; ``running``
    otherwise (or an agent's ``suspended`` run this message continues), resume it (a workflow:
    :func:`~seamkit.workflows.resume_workflow`: finished activations are not run again, an agent
    step's child run is continued or waited for); anything else (a workflow at a gate or waiting
    for an outside event included): report it. A workflow's lease is its checkpointer's, as an
    agent run's. ``services``: for the run's context (see :func:`run_context`). Raises
    :class:`LeaseHeld` when another live worker runs it, :class:`RetryLater` when an
    infrastructure failure (:func:`infrastructure`: the store unreachable, before, while or after
    the run) stopped it unfinished: retry later, never acknowledge as done."""
    from seamkit.errors import StoreUnavailable
    from seamkit.workflows import Workflow, resume_workflow, run_workflow

    run_id = str(spec["run_id"])
    ctx = run_context(spec, services)
    if isinstance(agent, Workflow):
        workflow = agent

        async def start() -> Any:
            return await run_workflow(workflow, _workflow_input(str(spec["task"])), ctx=ctx, metadata=_metadata(spec))

        async def resume() -> Any:
            return await resume_workflow(workflow, run_id, ctx=ctx)

        def continues(snap: Any) -> bool:
            return False  # a workflow at a gate or waiting for an event is answered with seamkit resume
    else:
        one = agent
        decisions = _decisions(spec.get("decisions"))

        async def start() -> Any:
            return await one.run(str(spec["task"]), ctx=ctx, variables=dict(spec.get("variables") or {}) or None,
                                 metadata=_metadata(spec))

        async def resume() -> Any:
            return await one.resume(run_id, decisions=decisions, ctx=ctx)

        def continues(snap: Any) -> bool:
            return bool(snap.status == "suspended" and _continues(spec, snap, decisions))
    cp = agent.checkpointer
    if cp is None:  # check_composition refuses these; a spec built by hand may still name one
        raise QueueConfigError(f"{agent.name!r} has no checkpoints: it cannot run on the queue")
    try:
        return await _deliver(cp, run_id, spec.get("task") is not None, start, resume, continues,
                              decided=bool(spec.get("decisions")))
    except StoreUnavailable as exc:  # a read of the run's checkpoints (before or after running it)
        raise RetryLater(run_id, f"StoreUnavailable: {exc}") from None


def _held(cp: Any, snap: Any, run_id: str) -> LeaseHeld | None:
    held = cp.lease_holder(snap) if snap is not None else None
    return None if held is None else LeaseHeld(run_id, held[0], min(max(held[1], 0.2), MAX_RETRY_COUNTDOWN_S))


async def _deliver(cp: Any, run_id: str, has_task: bool, start: Callable[[], Awaitable[Any]],
                   resume: Callable[[], Awaitable[Any]], continues: Callable[[Any], bool], *,
                   decided: bool = False) -> dict[str, Any]:
    """:func:`deliver`'s decision by the latest checkpoint, with ``start`` / ``resume`` running
    the run and ``continues(snapshot)`` saying whether a run that is not ``running`` is resumed.
    ``decided``: the message carries decisions (a person's continuation): one that finds the run
    no longer waiting for them is logged (a warning naming the run), not dropped silently."""
    from seamkit.errors import CheckpointConflict, RunNotResumable

    snap = await cp.latest(run_id)
    error: BaseException | None = None
    if snap is None:
        if not has_task:
            return {"run_id": run_id, "status": "unknown", "stop_reason": None, "output": None,
                    "error": f"run {run_id} has no checkpoints in this store: nothing to resume",
                    "detail": None, "pending_approvals": []}
        try:
            await start()
        except CheckpointConflict:  # another delivery of this run began it a moment ago
            raise LeaseHeld(run_id, "another delivery", 0.5) from None
        except Exception as exc:  # the run failed (its checkpoint says so), or stopped unfinished
            error = exc
    elif snap.status == "running" or continues(snap):
        held = _held(cp, snap, run_id)
        if held is not None:
            raise held
        try:
            await resume()
        except RunNotResumable:
            after = await cp.latest(run_id)
            held = _held(cp, after, run_id)
            if held is not None:  # another worker claimed it first
                raise held from None
            if after is None:
                raise
            out = outcome_of(after)
            if after.status == "running":  # not resumable for a reason of its own (e.g. settlement)
                out["detail"] = out["detail"] or "the run could not be resumed"
            return out
        except Exception as exc:  # the run failed (its checkpoint says so), or stopped unfinished
            error = exc
    elif decided:  # another continuation (or seamkit resume --here) got there first
        log.warning("run %s: a continuation with decisions arrived, but the run is %s (continued by another "
                    "continuation, or finished): its decisions were not applied", run_id, snap.status)
    final = await cp.latest(run_id)
    if error is not None and (final is None or final.status == "running") and (
            final is not None or infrastructure(error)):
        # not a failure of the run (that would be checkpointed as failed): the store went away
        # before the first checkpoint or mid-run; the run stays resumable (or startable), so this
        # delivery is tried again
        raise RetryLater(run_id, f"{type(error).__name__}: {error}") from None
    if final is None:
        raise RuntimeError(f"run {run_id} wrote no checkpoint") from error
    out = outcome_of(final)
    if error is not None and final.status == "suspended":
        # a continuation the run refused before changing anything (decisions that do not fit it;
        # seamkit submit checks them first): the run still waits; say why rather than nothing
        why = mask_urls(f"{type(error).__name__}: {error}")
        log.warning("run %s: its continuation was refused, the run still waits: %s", run_id, why)
        out["error"] = why
        port = getattr(cp, "port", None)
        if callable(getattr(port, "delete", None)):  # its claim: a corrected continuation may be sent now
            from seamkit_celery.pending import clear

            await clear(port, run_id, final.version)
    return out


def _workflow_input(task: str) -> Any:
    """A workflow's input from a message's task, as ``seamkit run`` reads it: a JSON object is the
    structured input, anything else the text."""
    try:
        parsed = json.loads(task)
    except ValueError:
        return task
    return parsed if isinstance(parsed, dict) else task


class _Process:
    """What one worker process keeps between deliveries: one event loop (the stores' connection
    pools belong to it) and the agents (and workflows) built so far, by file (and its mtime) and
    agent name."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.runner = asyncio.Runner()
        self.agents: dict[tuple[str, int, str | None, str | None], Agent | Workflow] = {}
        self.homes: dict[str, Any] = {}

    def home_store(self, file: str) -> Any:
        """The store of the composition ``file`` (the worker's own), built once per process."""
        if file not in self.homes:
            from seamkit.composition import build_store, load_composition
            from seamkit.plugin import get_registry

            self.homes[file] = build_store(load_composition(Path(file), registry=get_registry()))
        return self.homes[file]

    def agent(self, spec: Mapping[str, Any]) -> Agent | Workflow:
        """The agent ``spec`` runs; for a workflow file without an agent name, its workflow."""
        from seamkit.composition import build_agent, build_agents, build_workflow

        file = str(spec["file"])
        name = spec.get("agent")
        tool = (spec.get("child") or {}).get("tool")
        key = (file, Path(file).stat().st_mtime_ns, name, tool)
        found = self.agents.get(key)
        if found is not None:
            return found
        composition, checked = load_checked(file, name)
        agent: Agent | Workflow
        if tool is not None:  # a child: the agent as its tool runs it (the tool's middlewares, max_steps)
            agent = _tool_agent(build_agents(composition), checked, str(tool))
        elif name is None and composition.workflow is not None:
            agent = build_workflow(composition)
        else:
            agent = build_agent(composition) if name is None else build_agents(composition)[checked]
        for old in [k for k in self.agents if k[0] == file and k[2] == name and k[3] == tool]:
            stale = self.agents.pop(old)
            if stale.checkpointer is not None:
                try:
                    self.runner.run(stale.checkpointer.aclose())
                except Exception as exc:  # a store that is down now: its pool is dropped all the same
                    log.debug("closing the store of a replaced agent failed: %s", mask_urls(str(exc)))
        self.agents[key] = agent
        return agent


def _tool_agent(agents: Mapping[str, Agent], name: str, tool: str) -> Agent:
    """The agent ``name`` as the agent tool ``tool`` (of any agent in ``agents``) runs it; the
    agent itself when no such tool is found (the file changed since the child was submitted)."""
    from seamkit import AgentTool

    for a in agents.values():
        for t in a.tools:
            if isinstance(t, AgentTool) and t.name == tool and t.agent.name == name:
                return t.agent
    return agents[name]


_process: _Process | None = None


def _here() -> _Process:
    global _process
    if _process is None or _process.pid != os.getpid():  # a forked pool process starts its own
        _process = _Process()
    return _process


def retry_countdown(app: Celery, wanted: float) -> float:
    """The countdown of a retry: ``wanted`` seconds, at most half the broker's visibility timeout.
    A message waiting for its countdown is unacknowledged; one held past the timeout would be
    delivered again meanwhile, and each copy would retry in turn, multiplying the copies."""
    options = app.conf.broker_transport_options or {}
    timeout = options.get("visibility_timeout")
    cap = MAX_RETRY_COUNTDOWN_S if not isinstance(timeout, int | float) else min(MAX_RETRY_COUNTDOWN_S, timeout / 2)
    return max(0.1, min(wanted, cap))


def run_delivery(task: Task, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The body of the :data:`~seamkit_celery.app.TASK_NAME` task."""
    from seamkit.errors import ConfigError
    from seamkit.plugin import worker_id

    if not isinstance(spec, Mapping) or spec.get("v") != SPEC_VERSION:
        raise QueueConfigError(f"not a seamkit run message (version {SPEC_VERSION}): {str(spec)[:200]}")
    here = _here()
    home = task.app.conf.get(COMPOSITION_SETTING)
    if home:  # built while the worker's file still loads, so a file edited into an invalid one later
        try:  # can still have its rejections recorded (once per process: it is cached)
            here.home_store(str(home))
        except Exception:
            pass
    try:
        agent = here.agent(spec)
    except (OSError, ConfigError, QueueConfigError) as exc:
        # nothing ran and no checkpoint was written: a file missing on this machine, a composition
        # that no longer loads. Said once in the worker's log; the message is acknowledged.
        why = f"{type(exc).__name__}: {exc}"
        log.error("run %s rejected: %s", spec.get("run_id"), why)
        _record_rejection(task.app, here, str(spec.get("run_id")), why)
        return {"run_id": spec.get("run_id"), "status": "rejected", "stop_reason": None, "output": None,
                "error": why, "detail": None, "pending_approvals": [], "worker": worker_id()}
    from seamkit.plugin import CHILD_RUNS_SERVICE

    from seamkit_celery.children import CeleryChildRuns

    services = {CHILD_RUNS_SERVICE: CeleryChildRuns(task.app, str(spec["file"]))}
    queue = (getattr(task.request, "delivery_info", None) or {}).get("routing_key")
    if queue and not spec.get("queue"):  # recorded in the run's metadata: where a resume goes back to
        spec = {**spec, "queue": queue}
    try:
        outcome = here.runner.run(deliver(agent, spec, services))
    except RetryLater as exc:
        retries = int(getattr(task.request, "retries", 0) or 0)
        wanted = exc.retry_in if exc.retry_in is not None else FIRST_RETRY_S * 2 ** min(retries, 16)
        countdown = retry_countdown(task.app, wanted)
        if not isinstance(exc, LeaseHeld):  # a held lease is routine (debug-level in Celery's own log)
            log.warning("run %s: %s; delivery retried in %.1f s (retry %d)", exc.run_id, exc.why, countdown,
                        retries + 1)
        raise retry(task, countdown, exc.run_id) from None
    outcome["worker"] = worker_id()
    return outcome


def retry(task: Task, countdown: float, run_id: str) -> BaseException:
    """Retry ``task``'s delivery in ``countdown`` seconds (see the module doc); returns Celery's
    ``Retry`` to raise (the copy was published), or ``Reject(requeue=True)`` when the copy could
    not be published (the broker is unreachable too), after waiting ``countdown`` seconds."""
    from celery.exceptions import Reject, Retry

    out: BaseException
    try:
        task.retry(countdown=countdown, max_retries=None)  # raises (throw=True)
        out = RuntimeError(f"run {run_id}: Celery's Task.retry returned instead of raising")
    except Retry as exc:
        out = exc
    except Reject as exc:
        if exc.requeue:
            out = exc
        else:
            # Celery would drop the message (reject without requeue): keep it unacknowledged instead
            log.warning("run %s: the retry could not be sent (%s); the message is put back unacknowledged",
                        run_id, mask_urls(str(exc.reason)))
            time.sleep(countdown)
            out = Reject(mask_urls(str(exc.reason)), requeue=True)
    return out


#: The Celery setting (``make_app(composition=...)``) naming the composition whose store holds the
#: send records this worker reports rejections into and sweeps.
COMPOSITION_SETTING = "seamkit_composition"
#: The Celery setting of the seconds a sent run may stay unstarted before it is sent again.
REQUEUE_AFTER_SETTING = "seamkit_requeue_after_s"


def _record_rejection(app: Celery, here: _Process, run_id: str, why: str) -> None:
    """Write ``rejected`` and ``why`` into ``run_id``'s send record, in the store of the worker's
    own composition (the message's could not be loaded). Best effort: logged when that fails."""
    from seamkit_celery.sent import mark_rejected

    file = app.conf.get(COMPOSITION_SETTING)
    if not file:
        return
    try:
        store = here.home_store(str(file))
        if store is None or not here.runner.run(mark_rejected(store, run_id, why)):
            log.warning("run %s has no send record in the store of %s: its submitter is not told", run_id, file)
    except Exception as exc:
        log.warning("could not record the rejection of run %s in the store of %s (%s: %s)", run_id, file,
                    type(exc).__name__, exc)


def register(app: Celery) -> None:
    """Register the :data:`~seamkit_celery.app.TASK_NAME` task on ``app``."""
    from seamkit_celery.app import TASK_NAME

    def seamkit_run(self: Task, spec: dict[str, Any]) -> dict[str, Any]:
        return run_delivery(self, spec)

    app.task(name=TASK_NAME, bind=True, max_retries=None, acks_late=True, reject_on_worker_lost=True,
             typing=False)(seamkit_run)


def dumps(outcome: Mapping[str, Any]) -> str:
    return json.dumps(outcome, ensure_ascii=False)
