"""The Celery app seamkit's workers and submitters share: :func:`make_app`.

Delivery settings (stated here because the guarantees in ``docs`` rest on them):

- ``task_acks_late=True``: a message is acknowledged when its task *returns*, not when a worker
  takes it, so a worker that dies mid-run leaves its message unacknowledged and the broker
  delivers it again (Redis: once ``visibility_timeout`` has passed; RabbitMQ: when the
  connection drops).
- ``task_reject_on_worker_lost=True``: a pool process killed under a live worker (OOM killer,
  ``kill -9`` of the child) puts its message back at once instead of acknowledging it.
- ``worker_prefetch_multiplier=1``: a worker process reserves one message at a time, so a dead
  worker strands at most one message per process and long runs do not queue behind each other.
- JSON only (``task_serializer``, ``result_serializer``, ``accept_content``): no pickle on the wire.
- Redis transport ``visibility_timeout`` (seconds, :data:`DEFAULT_VISIBILITY_TIMEOUT_S`): how long
  an unacknowledged message waits before another worker gets it. It bounds how long a run of a
  dead worker waits; a message whose run is still running when it comes back finds the run's lease
  held and waits (retry with a countdown), so a short timeout costs polling, never a second worker
  on one run. Unacknowledged messages are scanned for every ``unacked_restore_interval`` seconds
  (a fifth of the timeout, 1 to 10 s).

Nothing here imports seamkit's agent machinery; the task body is :mod:`seamkit_celery.task`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from celery import Celery, bootsteps
from seamkit.errors import SeamkitError

__all__ = [
    "BROKER_CONNECT_TIMEOUT_S",
    "BROKER_ENV",
    "DEFAULT_QUEUE",
    "DEFAULT_VISIBILITY_TIMEOUT_S",
    "TASK_NAME",
    "QueueUnavailable",
    "SweepStep",
    "broker_from_env",
    "check_broker",
    "check_broker_url",
    "make_app",
    "mask_url",
    "url_password",
    "url_secrets",
]

#: The environment variable naming the broker when no ``--broker`` is given.
BROKER_ENV = "SEAMKIT_BROKER_URL"
#: The Celery task that runs one delivery of a composed agent run.
TASK_NAME = "seamkit.run"
#: The queue seamkit's tasks go to unless told otherwise.
DEFAULT_QUEUE = "seamkit"
#: Seconds an unacknowledged message waits on a Redis broker before it is delivered again.
DEFAULT_VISIBILITY_TIMEOUT_S = 3600.0
#: Seconds one connection attempt to the broker may take, TCP and TLS handshake included: a
#: ``rediss://`` URL to a plain-text server otherwise waits forever for the server's TLS answer.
BROKER_CONNECT_TIMEOUT_S = 3.0


class QueueUnavailable(SeamkitError):
    """The broker could not be reached; the message names it (password masked) and why."""


def _query_pairs(query: str) -> list[tuple[str, str]]:
    """``query``'s ``(key, raw value)`` pairs, keys percent-decoded, values as written."""
    from urllib.parse import unquote_plus

    pairs = []
    for part in re.split(r"[&;]", query):
        key, _, value = part.partition("=")
        if key:
            pairs.append((unquote_plus(key), value))
    return pairs


def _query_secrets(query: str) -> list[tuple[str, str]]:
    """The ``(raw, decoded)`` values of ``query``'s parameters named like a secret
    (:func:`~seamkit.composition._models.is_secret_name`: ``password``, ``token``, ``auth``...)."""
    from urllib.parse import unquote_plus

    from seamkit.plugin import is_secret_name

    out = []
    for part in re.split(r"[&;]", query):
        key, sep, value = part.partition("=")
        if sep and value and is_secret_name(unquote_plus(key)):
            out.append((value, unquote_plus(value)))
    return out


def mask_url(url: str) -> str:
    """``url`` with its secrets replaced by ``***``: the userinfo password, and the value of every
    query parameter named like a secret (``?password=...``, ``&token=...``; see
    :func:`~seamkit.composition._models.is_secret_name`). A text that does not parse as a URL is
    ``***`` as a whole (it may hold a secret where nothing can find it)."""
    from seamkit.plugin import is_secret_name

    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "***"
    netloc = parts.netloc
    if password:
        userinfo, _, host = netloc.rpartition("@")
        netloc = f"{userinfo.partition(':')[0]}:***@{host}"
    query = parts.query
    if query:
        from urllib.parse import unquote_plus

        def one(part: str) -> str:
            key, sep, value = part.partition("=")
            return f"{key}=***" if sep and value and is_secret_name(unquote_plus(key)) else part

        query = re.sub(r"[^&;]+", lambda m: one(m.group(0)), query)
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str) -> list[str]:
    """Every secret in ``url`` (to be masked in output), as written and percent-decoded: the
    userinfo password and the values of query parameters named like a secret."""
    from urllib.parse import unquote

    try:
        parts = urlsplit(url)
        raw_userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    except ValueError:
        return [url]
    found: list[str] = []
    if ":" in raw_userinfo:
        raw = raw_userinfo.partition(":")[2]
        found += [raw, unquote(raw)]
    for raw, decoded in _query_secrets(parts.query):
        found += [raw, decoded]
    return [s for s in dict.fromkeys(found) if s]


def url_password(url: str) -> str | None:
    """The userinfo password in ``url``, or ``None`` (see :func:`url_secrets` for all its secrets)."""
    try:
        return urlsplit(url).password or None
    except ValueError:
        return None


def check_broker_url(url: str) -> None:
    """Refuse a broker URL that cannot name a broker: no ``scheme://``, a transport Celery does not
    know (with the ones it does), a port that is not a number. Raises ``ValueError`` (the URL
    masked in the message): a usage error, found before any connection is tried."""
    from kombu.transport import TRANSPORT_ALIASES

    for one in url.split(";"):  # Celery's fail-over form: several URLs joined by ';'
        one = one.strip()
        if "://" not in one:
            raise ValueError(f"the broker URL {mask_url(one)!r} is not a URL: write scheme://host:port/db, "
                             "e.g. redis://127.0.0.1:6379/1")
        scheme = one.split("://", 1)[0].split("+", 1)[0]
        if scheme not in TRANSPORT_ALIASES:
            known = ", ".join(s for s in ("redis", "rediss", "amqp", "amqps", "sqs") if s in TRANSPORT_ALIASES)
            raise ValueError(f"the broker URL {mask_url(one)!r} names no transport Celery knows ({scheme!r}); "
                             f"use one of {known}, e.g. redis://127.0.0.1:6379/1")
        try:
            parts = urlsplit(one)
            _ = parts.port
        except ValueError as exc:
            raise ValueError(f"the broker URL {mask_url(one)!r} is malformed: {exc}") from None
        if any(k.lower() == "password" for k, _ in _query_pairs(parts.query)):
            raise ValueError(f"the broker URL {mask_url(one)!r} has its password in the query string, which Celery "
                             f"does not read there: write it in the URL's userinfo, {parts.scheme}://:PASSWORD@"
                             f"{parts.hostname or 'host'}{f':{parts.port}' if parts.port else ''}{parts.path}")
        from kombu import Connection

        try:  # kombu reads every query parameter as a connection option: an unknown one is an error
            Connection(one).release()
        except (TypeError, ValueError, KeyError) as exc:
            why = _reason(exc, one)
            raise ValueError(f"the broker URL {mask_url(one)!r} is not one Celery accepts: {why}") from None


def broker_from_env(explicit: str | None = None) -> str:
    """The broker URL: ``explicit`` when given, else ``$SEAMKIT_BROKER_URL``. Raises ``ValueError``
    (saying how to name one) when neither is set."""
    url = explicit if explicit is not None else os.environ.get(BROKER_ENV)
    if url is None or not url.strip():
        raise ValueError(f"no broker: pass --broker URL or set {BROKER_ENV} (e.g. redis://127.0.0.1:6379/1)")
    return url.strip()


def make_app(
    broker_url: str,
    *,
    result_backend: str | None = None,
    visibility_timeout_s: float = DEFAULT_VISIBILITY_TIMEOUT_S,
    queue: str = DEFAULT_QUEUE,
    composition: str | os.PathLike[str] | None = None,
    requeue_after_s: float = 60.0,
    sweep_every_s: float | None = None,
    **conf: Any,
) -> Celery:
    """A Celery app on ``broker_url`` with seamkit's delivery settings (see the module doc) and the
    :data:`TASK_NAME` task registered. ``result_backend``: where Celery stores task results
    (``None``: nowhere; a run's outcome is in its checkpoints, read with ``seamkit runs wait``).
    ``visibility_timeout_s``: the Redis transport's re-delivery delay (> 0). ``queue``: the
    default queue. ``composition``: for a worker, the composition file whose checkpoint store
    holds the send records (:mod:`seamkit_celery.sent`): a message the worker rejects is recorded
    there, and the worker runs the sweeper (a bootstep: also with ``celery -A ... worker``) that
    sends again, every ``sweep_every_s`` seconds (default ``requeue_after_s / 4``, at least 0.25;
    ``0``: no sweeper), the runs of its queues still unstarted ``requeue_after_s`` seconds after
    their latest send. ``requeue_after_s`` also applies to queued child runs
    (:class:`~seamkit_celery.children.CeleryChildRuns`). ``conf``: more Celery settings, applied
    last (they may override these). Raises ``ValueError`` for a timeout that is not positive."""
    if not visibility_timeout_s > 0:
        raise ValueError(f"visibility_timeout_s must be > 0, got {visibility_timeout_s!r}")
    if not requeue_after_s > 0:
        raise ValueError(f"requeue_after_s must be > 0, got {requeue_after_s!r}")
    if sweep_every_s is not None and not sweep_every_s >= 0:
        raise ValueError(f"sweep_every_s must be >= 0, got {sweep_every_s!r}")
    app = Celery("seamkit", broker=broker_url, backend=result_backend, set_as_current=False)
    restore_every = min(10.0, max(1.0, visibility_timeout_s / 5))
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        task_default_queue=queue,
        task_ignore_result=result_backend is None,
        broker_transport_options={
            "visibility_timeout": visibility_timeout_s,
            "unacked_restore_interval": restore_every,
            "unacked_restore_throttle": 1,
            "socket_connect_timeout": BROKER_CONNECT_TIMEOUT_S,  # Redis: connect + TLS handshake
        },
        broker_connection_timeout=BROKER_CONNECT_TIMEOUT_S,  # AMQP's connect
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        task_send_sent_event=False,
        seamkit_composition=None if composition is None else str(Path(composition).resolve()),
        seamkit_requeue_after_s=requeue_after_s,
        seamkit_sweep_every_s=max(0.25, requeue_after_s / 4) if sweep_every_s is None else sweep_every_s,
    )
    if conf:
        app.conf.update(conf)

    from seamkit_celery.task import register

    register(app)
    if composition is not None:
        app.steps["worker"].add(SweepStep)
    return app


class SweepStep(bootsteps.StartStopStep):
    """The worker bootstep that runs :class:`~seamkit_celery.sent.SweepThread` in the worker's main
    process while it consumes (``make_app(composition=...)``): it sends again the runs of the
    worker's queues whose message was lost (see :mod:`seamkit_celery.sent`). It starts after the
    pool, so the pool's processes are not forked from a process with the sweeper's thread."""

    requires = ("celery.worker.components:Pool",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.sweeper: Any = None

    def start(self, parent: Any) -> None:
        from seamkit_celery.sent import SweepThread, waiting_messages
        from seamkit_celery.task import _send

        app = parent.app
        every = float(app.conf.get("seamkit_sweep_every_s") or 0)
        file = app.conf.get("seamkit_composition")
        if not every or not file:
            return
        queues = sorted(app.amqp.queues.consume_from or app.amqp.queues)

        def open_store() -> Any:
            from seamkit.composition import build_store, load_composition
            from seamkit.plugin import get_registry

            return build_store(load_composition(Path(file), registry=get_registry()))

        self.sweeper = SweepThread(open_store, queues, send=lambda spec, q: _send(app, dict(spec), q),
                                   waiting=lambda q: waiting_messages(app, q),
                                   requeue_after_s=float(app.conf.get("seamkit_requeue_after_s") or 60.0),
                                   every_s=every)
        self.sweeper.start()

    def stop(self, parent: Any) -> None:
        if self.sweeper is not None:
            self.sweeper.stop()
            self.sweeper = None

    shutdown = stop


def check_broker(app: Celery, *, timeout_s: float = 5.0) -> None:
    """Connect to ``app``'s broker once; raises :class:`QueueUnavailable` (naming the broker, its
    password masked) when it cannot be reached within about ``timeout_s`` seconds."""
    url = str(app.conf.broker_url)
    conn = None
    try:
        conn = app.connection_for_write()
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0.5, timeout=timeout_s)
    except Exception as exc:
        raise QueueUnavailable(f"the broker {mask_url(url)} is unreachable: {_reason(exc, url)}") from None
    finally:
        if conn is not None:
            conn.release()


def _reason(exc: BaseException, url: str) -> str:
    """Why ``exc`` failed, in words, with every secret of ``url`` masked; a timeout on a
    ``rediss://``/``amqps://`` URL says that the server may not speak TLS."""
    text = str(exc) or type(exc).__name__
    said = f"{type(exc).__name__} {text}".lower()
    if isinstance(exc, TimeoutError) or "timeout" in said or "timed out" in said:
        text = f"timed out after {BROKER_CONNECT_TIMEOUT_S:g} s ({text})"
        if urlsplit(url).scheme in ("rediss", "amqps"):
            text += ("; a TLS URL (rediss://, amqps://) to a server that does not speak TLS on that port times "
                     "out like this: check the scheme and the port")
    from seamkit.plugin import secret_forms  # each as written, JSON-escaped and in a repr

    for form in sorted(secret_forms(url_secrets(url)), key=len, reverse=True):
        text = text.replace(form, "***")
    return text
