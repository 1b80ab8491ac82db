"""The SQLite backend: one object that is both a :class:`~seamkit._ports.StorePort` and a
:class:`~seamkit._ports.CheckpointPort`, on one database file.

Concurrency model
-----------------
- One :mod:`aiosqlite` connection per store object (its own thread); a lock makes every operation
  exclusive on it, so many concurrent runs in one process never interleave statements of two
  transactions. The lock serves single-key ``StorePort`` operations (``get``, ``set``, ``delete``,
  ``append``, ``increment``: the effect ledger's receipts, approvals) before queued checkpoint
  operations: an effect's receipt is written right after the operation in progress, never behind
  every other run's queued checkpoint writes, which keeps the window in which a crash leaves an
  effect's outcome unknown as short as the connection allows.
- Several processes share the file through SQLite's own locking: WAL journal (readers never block
  the writer), ``busy_timeout`` (a writer waits for the lock instead of failing at once), and every
  read-modify-write transaction starts with ``BEGIN IMMEDIATE`` (takes the write lock first, so two
  writers never deadlock upgrading a read lock: no ``SQLITE_BUSY`` that the timeout cannot absorb).
- Multi-statement reads run in one read transaction: a consistent snapshot.
- Every transaction (``save``, ``append``, ``increment``, ``delete_run``, ``prune_runs``, the
  snapshot reads) runs as ONE synchronous function on the connection's thread: ``BEGIN``, the
  statements, ``COMMIT`` (``ROLLBACK`` on any error) - one thread hand-off per operation instead of
  one per statement (the hand-offs, not SQLite, were most of a save's cost). A transaction is
  therefore always closed by the time its function returns, even when the awaiting task is
  cancelled (the function still runs to its end: the operation is then whole or absent).
- Checkpoint saves (``save``, ``save_many``) at ``synchronous="NORMAL"`` (and on ``":memory:"``)
  run on the event loop's thread instead, with no hand-off at all (issue 19: about 60 µs of a
  step's 260). That is safe to do on the loop because nothing in such a commit can wait
  or take long:

  - in WAL mode at ``NORMAL`` a commit appends to the WAL without ``fsync``;
  - the write lock is tried with no busy wait (held by another connection: the save goes to the
    thread and waits there, up to ``busy_timeout_s``);
  - SQLite's automatic WAL checkpoints are off on this connection (they copy pages and ``fsync``):
    this store runs them itself, on the thread, once the WAL holds ``_WAL_CHECKPOINT_BYTES`` (4 MiB,
    SQLite's own 1,000 pages), whoever wrote it. The WAL file's size says so: this connection's
    ``journal_size_limit`` is that size, so the file is cut back to it when the WAL starts over
    after a checkpoint, and grows past it only once the WAL holds more (a limit of 0 would say so
    too, but then every write after a checkpoint extends the file again: ~15 µs a save);
  - a save of more than ``_INLINE_MAX_CHARS`` of text or ``_INLINE_MAX_ROWS`` rows goes to the
    thread;
  - a ``threading.Lock`` is held by whichever thread uses the connection: a save finding it held
    (e.g. an operation whose awaiting task was cancelled still runs on the connection's thread, or
    a store wrongly shared by two event loops) goes to the thread too, and is queued there;
  - after an operation whose awaiting task was cancelled, saves go to the thread until an
    operation there has finished: the cancelled one may still be queued, and goes first (a
    cancelled ``delete_run`` must not delete a save acknowledged after it);
  - the write after a WAL checkpoint goes to the thread: it starts the WAL over and cuts the file
    back to ``journal_size_limit``, which takes long when the WAL had grown big;
  - a connection's first write looks at the WAL's size, so a store that writes a little and
    closes, while another connection keeps the file open, checkpoints too.

  At ``synchronous="FULL"`` every commit waits for ``fsync``: saves stay on the thread.

Schema (created on first connect; ``seamkit_meta.schema_version`` tracks it for later migrations):
``kv`` (store values, codec text, ``expires_at`` in wall-clock unix seconds so it holds across
processes), ``runs`` (one row per run: latest version, status, parent, metadata, ``created_at``;
updated in the same transaction as each save, so the ``expected_version`` check and ``list_runs``
are single indexed reads), ``checkpoints`` (one row per version), ``log`` (the entries each
version appended) and ``writes`` (pending writes per run, version and task id).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
from seamkit.errors import CheckpointConflict, StoreUnavailable, StoreValueError, TTLNotSupported
from seamkit.plugin import (
    FINISHED_STATUSES,
    CheckpointInfo,
    CheckpointRecord,
    PendingWrite,
    SingleFlight,
    StoredCheckpoint,
    codec,
    scope_namespace,
)
from seamkit.values import Scope, freeze

from seamkit_sqlite.config import SqliteConfig

__all__ = ["MEMORY", "SCHEMA_VERSION", "SqliteStore", "build"]

SCHEMA_VERSION = 1
MEMORY = ":memory:"
_MISSING: Any = object()
_T = TypeVar("_T")

#: A checkpoint save of more text than this (state, metadata, log entries and pending writes,
#: characters) or more rows goes to the connection's thread: writing it on the event loop's thread
#: would stop the loop for a noticeable time (100,000 log entries: about 250 ms).
_INLINE_MAX_CHARS = 64 * 1024
_INLINE_MAX_ROWS = 256
#: WAL size at which this store checkpoints it, on the connection's thread (SQLite's own
#: ``wal_autocheckpoint`` default of 1,000 pages of 4 KiB; off in SQLite itself where saves run on
#: the event loop's thread: a checkpoint copies pages and ``fsync``s).
_WAL_CHECKPOINT_BYTES = 4 * 1024 * 1024
#: Pages (an estimate: a leaf of each table and index touched, plus the text) written by this
#: store between two looks at the WAL's size (an ``os.stat``, ~2 µs).
_WAL_LOOK_PAGES = 64
_PAGE = 4096
#: SQLite's primary result codes for a lock held by another connection (extended codes: low byte).
_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED

_SCHEMA: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS seamkit_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS kv (ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
    " expires_at REAL, PRIMARY KEY (ns, key))",
    "CREATE INDEX IF NOT EXISTS kv_expires ON kv (expires_at) WHERE expires_at IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, version INTEGER NOT NULL,"
    " status TEXT NOT NULL, parent_run_id TEXT, metadata TEXT NOT NULL, created_at REAL NOT NULL,"
    " seq INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS runs_recent ON runs (created_at DESC, seq DESC)",
    "CREATE INDEX IF NOT EXISTS runs_status ON runs (status, created_at DESC, seq DESC)",
    "CREATE INDEX IF NOT EXISTS runs_parent ON runs (parent_run_id, created_at DESC, seq DESC)",
    "CREATE TABLE IF NOT EXISTS checkpoints (run_id TEXT NOT NULL, version INTEGER NOT NULL,"
    " status TEXT NOT NULL, state TEXT NOT NULL, parent_run_id TEXT, metadata TEXT NOT NULL,"
    " created_at REAL NOT NULL, PRIMARY KEY (run_id, version))",
    "CREATE TABLE IF NOT EXISTS log (run_id TEXT NOT NULL, version INTEGER NOT NULL,"
    " idx INTEGER NOT NULL, entry TEXT NOT NULL, PRIMARY KEY (run_id, version, idx))",
    "CREATE TABLE IF NOT EXISTS writes (run_id TEXT NOT NULL, version INTEGER NOT NULL,"
    " task_id TEXT NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (run_id, version, task_id))",
)

_LIVE = "(expires_at IS NULL OR expires_at > ?)"
_SQL_GET = f"SELECT value FROM kv WHERE ns = ? AND key = ? AND {_LIVE}"
_SQL_GET_TTL = f"SELECT value, expires_at FROM kv WHERE ns = ? AND key = ? AND {_LIVE}"
_SQL_PUT = (
    "INSERT INTO kv (ns, key, value, expires_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at"
)
# (SQLite 3.40 evaluates `expires_at IS NULL` in a DELETE's RETURNING wrongly, 0 for a NULL: compare in Python)
_SQL_DEL = "DELETE FROM kv WHERE ns = ? AND key = ? RETURNING expires_at"
_SQL_RUN_VERSION = "SELECT version FROM runs WHERE run_id = ?"
_SQL_INSERT_CP = (
    "INSERT INTO checkpoints (run_id, version, status, state, parent_run_id, metadata, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
# seq = the rowid just given to the checkpoint row: a tie-breaker for equal created_at (newest first)
_SQL_UPSERT_RUN = (
    "INSERT INTO runs (run_id, version, status, parent_run_id, metadata, created_at, seq)"
    " VALUES (?, ?, ?, ?, ?, ?, last_insert_rowid())"
    " ON CONFLICT (run_id) DO UPDATE SET version = excluded.version, status = excluded.status,"
    " parent_run_id = excluded.parent_run_id, metadata = excluded.metadata,"
    " created_at = excluded.created_at, seq = excluded.seq"
)
_SQL_PUT_WRITE = (
    "INSERT INTO writes (run_id, version, task_id, payload) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (run_id, version, task_id) DO UPDATE SET payload = excluded.payload"
)
_SQL_INSERT_LOG = "INSERT INTO log (run_id, version, idx, entry) VALUES (?, ?, ?, ?)"
_CP_COLS = "version, status, state, parent_run_id, metadata, created_at"
_SQL_LATEST = f"SELECT {_CP_COLS} FROM checkpoints WHERE run_id = ? ORDER BY version DESC LIMIT 1"
_SQL_AT = f"SELECT {_CP_COLS} FROM checkpoints WHERE run_id = ? AND version = ?"
_SQL_LOG = "SELECT version, entry FROM log WHERE run_id = ? AND version <= ? ORDER BY version, idx"
_FINISHED_SQL = ", ".join(f"'{s}'" for s in FINISHED_STATUSES)
_SQL_FINISHED = f"SELECT run_id FROM runs WHERE status IN ({_FINISHED_SQL}) AND created_at < ?"


def _check_ttl(ttl: float | None, resolution: float) -> float | None:
    """``None`` or the absolute expiry (unix seconds) for ``ttl`` seconds from now."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise TTLNotSupported(f"ttl must be a number of seconds or None, got {type(ttl).__name__}")
    if not math.isfinite(ttl) or ttl <= 0:
        raise TTLNotSupported(f"ttl must be finite and positive, got {ttl!r}")
    if ttl < resolution:
        raise TTLNotSupported(f"ttl {ttl!r}s is finer than this store's resolution ({resolution}s)")
    return time.time() + float(ttl)


def _check_key(scope: Any, key: Any) -> str:
    if not isinstance(scope, Scope):
        raise TypeError(f"scope must be a seamkit Scope, got {type(scope).__name__}")
    if not isinstance(key, str):
        raise TypeError(f"key must be a str, got {type(key).__name__}")
    return scope_namespace(scope)


# exactly what json.dumps(..., separators=(",", ":"), ensure_ascii=False) writes; built once (json.dumps
# with arguments builds a new encoder on every call: a third of a small dict's encoding time)
_META_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _meta_text(metadata: Mapping[str, Any]) -> str:
    return _META_JSON.encode(dict(metadata))


class _LockBusy(Exception):
    """Another connection holds the write lock (a save tried on the event loop's thread)."""


class _Broken(Exception):
    """Raised on the connection thread when ROLLBACK itself failed: the connection is in an unknown
    state and must be dropped; ``error`` is the exception that aborted the transaction."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _in_transaction(db: sqlite3.Connection, begin: str, body: Callable[[sqlite3.Connection], _T]) -> _T:
    """``begin``, ``body(db)``, ``COMMIT``; on any error (the body's own, e.g. CheckpointConflict,
    or SQLite's) roll back so nothing is written, then re-raise it (wrapped in :class:`_Broken`
    when the rollback failed too)."""
    db.execute(begin)
    return _commit(db, body)


def _commit(db: sqlite3.Connection, body: Callable[[sqlite3.Connection], _T]) -> _T:
    """In a transaction begun on ``db``: ``body(db)``, then ``COMMIT``; on any error roll back and
    re-raise it (wrapped in :class:`_Broken` when the rollback failed too)."""
    try:
        result = body(db)
        db.execute("COMMIT")
    except BaseException as exc:
        try:
            db.rollback()  # a no-op when SQLite already rolled the transaction back itself
        except BaseException:
            raise _Broken(exc) from exc
        raise
    return result


def _guarded(
    use: threading.Lock, fn: Callable[[sqlite3.Connection], _T], db: sqlite3.Connection, wal_checkpoint: bool
) -> _T:
    """Run on the connection's thread: ``fn(db)`` holding ``use`` (see the module doc), then, when
    ``wal_checkpoint``, checkpoint the WAL (PASSIVE: never waits for readers or writers; a failure
    is ignored, what ``fn`` did stands)."""
    with use:
        result = fn(db)
        if wal_checkpoint:
            with contextlib.suppress(sqlite3.Error):
                db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        return result


def _statement(sql: str, params: Sequence[Any]) -> Callable[[sqlite3.Connection], tuple[list[Any], int]]:
    """One statement in autocommit mode: its rows and its row count."""

    def run(db: sqlite3.Connection) -> tuple[list[Any], int]:
        cur = db.execute(sql, params)
        try:
            return cur.fetchall(), cur.rowcount
        finally:
            cur.close()

    return run


def _is_busy(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorcode", -1) & 0xFF in _BUSY_CODES  # (Python >= 3.11 sets the code)


class _PriorityLock:
    """An asyncio lock whose ``urgent`` waiters are served before the others (first come, first
    served within each class). ``release`` hands the lock to the next waiter on the event loop's
    next turn rather than at once: the task releasing it may be about to queue its next urgent
    operation (the effect ledger reads a receipt, writes ``prepared``, runs the effect and writes
    ``completed``), and that operation then still goes before the waiting checkpoint writes. A
    handed-over lock is never taken by a newcomer. For one event loop."""

    __slots__ = ("_handing", "_locked", "_normal", "_urgent")

    def __init__(self) -> None:
        self._locked = False
        self._handing = False
        self._urgent: collections.deque[asyncio.Future[None]] = collections.deque()
        self._normal: collections.deque[asyncio.Future[None]] = collections.deque()

    def locked(self) -> bool:
        return self._locked

    async def acquire(self, *, urgent: bool = False) -> None:
        if not self._locked:  # (unlocked means nobody waits: release hands over to a waiter)
            self._locked = True
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue = self._urgent if urgent else self._normal
        queue.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # the lock was handed over as this task was cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):
                    queue.remove(fut)
            raise

    def release(self) -> None:
        if not (self._urgent or self._normal):
            self._locked = False
        elif not self._handing:
            self._handing = True
            asyncio.get_running_loop().call_soon(self._hand_off)

    def _hand_off(self) -> None:
        self._handing = False
        for queue in (self._urgent, self._normal):
            while queue:
                fut = queue.popleft()
                if not fut.done():  # (a cancelled waiter is skipped)
                    fut.set_result(None)
                    return
        self._locked = False


def _info(run_id: str, row: Sequence[Any]) -> CheckpointInfo:
    version, status, parent, metadata, created_at = row
    return CheckpointInfo(
        run_id=run_id,
        version=version,
        status=status,
        parent_run_id=parent,
        metadata=freeze(json.loads(metadata)),
        created_at=created_at,
    )


class SqliteStore:
    """Store and checkpoints in one SQLite database file (see the module doc for the model).

    ``path``: the database file (``":memory:"``: private to this object and gone at ``aclose()``,
    for tests);
    ``busy_timeout_s``: seconds a write waits for the lock held by another connection;
    ``synchronous``: ``"NORMAL"`` or ``"FULL"``. Constructing connects nothing: the file, its
    parent directories and the schema are created on first use. ``aclose()`` releases the
    connection (a later call connects again); ``async with`` closes on exit.

    Every SQLite failure (locked past the timeout, unreadable or corrupt file, disk full...) raises
    :class:`~seamkit.errors.StoreUnavailable` naming the file; the driver's exception is never
    raised. ``ttl_resolution`` is 0.001 s; expiry uses wall-clock time (``time.time()``) so it
    holds across processes. Use one store object from one event loop at a time (successive loops,
    as with repeated ``asyncio.run``, are fine).

    ``persistent`` is ``True`` for a file (every acknowledged write is committed: it survives
    ``close()``, a new process and a killed one; with ``synchronous="NORMAL"`` the last commits
    may be lost on power loss, ``"FULL"`` keeps them) and ``False`` for ``":memory:"``.

    With ``synchronous="NORMAL"`` (and on ``":memory:"``) checkpoint saves run on the event loop's
    thread, never waiting there (module doc); this store then checkpoints the WAL itself.
    ``saves_on_loop=False`` keeps every save on the connection's thread (a disk so slow that the
    OS throttles page-cache writes would stop the loop).
    """

    ttl_resolution: float = 0.001

    def __init__(
        self,
        path: str | Path = ".seamkit/seamkit.db",
        *,
        busy_timeout_s: float = 5.0,
        synchronous: str = "NORMAL",
        saves_on_loop: bool = True,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError("synchronous must be 'NORMAL' or 'FULL'")
        if not (math.isfinite(busy_timeout_s) and busy_timeout_s >= 0):
            raise ValueError("busy_timeout_s must be a finite number >= 0")
        if not isinstance(saves_on_loop, bool):
            raise TypeError(f"saves_on_loop must be True or False, got {saves_on_loop!r}")
        self._memory = str(path) == MEMORY
        self._path: Path | None = None if self._memory else Path(path)
        self._busy_timeout_s = float(busy_timeout_s)
        self._synchronous = synchronous
        self._conn: aiosqlite.Connection | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = _PriorityLock()
        self._flight = SingleFlight()
        # checkpoint saves run on the event loop's thread (see the module doc)
        self._inline = saves_on_loop and (synchronous == "NORMAL" or self._memory)
        # whether this store checkpoints the WAL itself (SQLite's automatic checkpoints are off)
        self._manage_wal = self._inline and not self._memory
        self._wal_file = "" if self._path is None else f"{self._path}-wal"
        self._wal_pages = 0  # pages written (an estimate) since the last look at the WAL's size
        # held by the thread using the sqlite3 connection (the loop's or the connection's)
        self._use = threading.Lock()
        # an operation whose awaiting task was cancelled may still wait, queued, for the
        # connection's thread: saves go there too, behind it (first come, first served), until an
        # operation there has finished
        self._thread_queued = False
        # the WAL was checkpointed: the next write starts it over and cuts the file back to
        # journal_size_limit, which takes long when it had grown big (40 ms for 150 MB): not on
        # the loop's thread
        self._wal_restart = False

    # ------------------------------------------------------------------ plumbing

    @property
    def persistent(self) -> bool:
        """Whether what is written outlives this object (a file: yes; ``":memory:"``: no)."""
        return not self._memory

    @property
    def path(self) -> str:
        """The database file (absolute when built from a config), or ``":memory:"``."""
        return MEMORY if self._path is None else str(self._path)

    def __repr__(self) -> str:
        return f"SqliteStore(path={self.path!r}, synchronous={self._synchronous!r})"

    async def __aenter__(self) -> SqliteStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _unavailable(self, exc: BaseException) -> StoreUnavailable:
        return StoreUnavailable(f"SQLite store {self.path}: {type(exc).__name__}: {exc}")

    def _bind_loop(self) -> _PriorityLock:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # a new event loop (e.g. successive asyncio.run calls): fresh loop-bound helpers
            self._loop = loop
            self._lock = _PriorityLock()
            self._flight = SingleFlight()
        return self._lock

    async def _execute(
        self, sql: str, params: Sequence[Any] = (), *, urgent: bool = False, pages: int = 0
    ) -> tuple[list[Any], int]:
        """One statement on the connection's thread, in autocommit mode: its rows and row count
        (``urgent``: before queued non-urgent operations, for single-key store operations;
        ``pages``: what it writes, an estimate). Driver errors become StoreUnavailable."""
        return await self._transaction(None, _statement(sql, params), urgent=urgent, pages=pages)

    def _driver_error(self, exc: sqlite3.Error | OSError | ValueError) -> BaseException:
        """What a driver error becomes: StoreUnavailable for sqlite3 and OS errors and for a
        ``ValueError`` saying the connection is closed (:meth:`_closed`); another ``ValueError``
        is itself."""
        return self._closed(exc) if isinstance(exc, ValueError) else self._unavailable(exc)

    def _closed(self, exc: ValueError) -> BaseException:
        """What a ``ValueError`` from the driver becomes: StoreUnavailable (and the connection
        dropped) when it says the connection is closed; else ``exc`` itself."""
        if "closed" in str(exc).lower() or "no active connection" in str(exc).lower():
            self._conn = None
            return self._unavailable(exc)
        return exc

    async def _write(
        self, body: Callable[[sqlite3.Connection], _T], *, urgent: bool = False, pages: int = 2, inline: bool = False
    ) -> _T:
        """``body(db)`` in a ``BEGIN IMMEDIATE`` transaction on the connection's thread: committed
        when it returns, rolled back when it raises (its exception is re-raised). ``pages``: what
        it writes, an estimate; ``inline``: run it on the event loop's thread when this store does
        that (see the module doc)."""
        return await self._transaction("BEGIN IMMEDIATE", body, urgent=urgent, pages=pages, inline=inline)

    async def _snapshot(self, body: Callable[[sqlite3.Connection], _T]) -> _T:
        """``body(db)`` in a read transaction: every query inside sees one consistent snapshot."""
        return await self._transaction("BEGIN", body)

    async def _transaction(
        self,
        begin: str | None,
        body: Callable[[sqlite3.Connection], _T],
        *,
        urgent: bool = False,
        pages: int = 0,
        inline: bool = False,
    ) -> _T:
        """``body(db)`` holding the store's lock: in a ``begin`` transaction (``None``: as it is, in
        autocommit mode), on the event loop's thread when ``inline`` allows and this store does
        that (module doc), else on the connection's thread. ``pages``: what it writes, an estimate
        (0: a read). Driver errors become StoreUnavailable."""
        lock = self._bind_loop()
        await lock.acquire(urgent=urgent)
        try:
            conn = await self._connect()
            due = self._wal_due(pages)
            if inline and self._inline and not (due or self._thread_queued or self._wal_restart):
                use = self._use
                if use.acquire(blocking=False):  # (held: the connection's thread still runs something)
                    failed: _Broken | None = None
                    try:
                        return self._on_loop_thread(conn._conn, body)
                    except _LockBusy:
                        pass  # another connection writes: wait for the lock on the thread
                    except _Broken as broken:
                        failed = broken
                    finally:
                        use.release()
                    if failed is not None:
                        await self._drop(conn)
                        raise failed.error from None
            fn = body if begin is None else functools.partial(_in_transaction, begin=begin, body=body)
            result = await self._on_thread(conn, fn, due)
            # a write after a checkpoint started the WAL over (on the thread); a checkpoint now means
            # the next write will
            self._wal_restart = due or (self._wal_restart and not pages)
            return result
        except (sqlite3.Error, OSError, ValueError) as exc:
            err = self._driver_error(exc)
            if err is exc:
                raise
            raise err from None
        finally:
            lock.release()

    async def _on_thread(
        self, conn: aiosqlite.Connection, fn: Callable[[sqlite3.Connection], _T], checkpoint: bool
    ) -> _T:
        """``fn(db)`` on the connection's thread (:func:`_guarded`), then the WAL checkpointed when
        ``checkpoint``. Called holding the store's lock."""
        # aiosqlite (0.22) has no public way to run a function on its connection thread, and a
        # transaction of n statements through its public API costs n+2 thread hand-offs (each an
        # event-loop wake-up). `_execute(fn, *args)` queues `fn(*args)` on that thread and awaits
        # its result; the plugin pins aiosqlite <0.23 for this (and for `_thread` in `_connect`).
        # The queue is FIFO, so if the awaiting task is cancelled the function still runs
        # (commits or rolls back) before any later operation queued there.
        try:
            result: _T = await conn._execute(_guarded, self._use, fn, conn._conn, checkpoint)  # type: ignore[no-untyped-call]
        except _Broken as broken:
            self._thread_queued = False
            await self._drop(conn)
            raise broken.error from None
        except Exception:
            self._thread_queued = False  # it ran (and raised) there: so did everything before it
            raise
        except BaseException:
            self._thread_queued = True  # cancelled: it may still be waiting there
            raise
        self._thread_queued = False
        return result

    def _wal_due(self, pages: int) -> bool:
        """Count ``pages`` written (an estimate); whether the WAL is due for a checkpoint (looked at
        on disk every :data:`_WAL_LOOK_PAGES`: other connections write to it too)."""
        if not self._manage_wal:
            return False
        self._wal_pages += pages
        if self._wal_pages < _WAL_LOOK_PAGES:
            return False
        self._wal_pages = 0
        try:
            return os.stat(self._wal_file).st_size > _WAL_CHECKPOINT_BYTES
        except OSError:
            return False

    def _on_loop_thread(
        self, db: sqlite3.Connection, body: Callable[[sqlite3.Connection], _T]
    ) -> _T:
        """``body(db)`` in a ``BEGIN IMMEDIATE`` transaction run right here, on the event loop's
        thread. Raises :class:`_LockBusy` when another connection holds the write lock (nothing was
        done: the caller waits for it on the connection's thread); what ``body`` or SQLite raise,
        rolled back; :class:`_Broken` when the rollback failed too."""
        # the lock is tried once: waiting for it (busy_timeout) would stop the event loop
        db.execute("PRAGMA busy_timeout = 0")
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise _LockBusy from exc
            raise
        finally:
            db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")
        return _commit(db, body)

    async def _drop(self, conn: aiosqlite.Connection) -> None:
        """Forget and close ``conn`` (a rollback failed: its state is unknown); the next call
        connects again."""
        if self._conn is conn:
            self._conn = None
        with contextlib.suppress(Exception):
            await conn.close()

    async def _connect(self) -> aiosqlite.Connection:
        if self._conn is not None:
            return self._conn
        target = MEMORY
        if self._path is not None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            if self._path.is_dir():  # (SQLite says only "unable to open database file")
                raise StoreUnavailable(
                    f"SQLite store {self.path}: it is a directory; path must name a database file"
                ) from None
            target = str(self._path)
        # check_same_thread=False: checkpoint saves run on the event loop's thread (see the
        # module doc); the store's lock keeps the two threads from ever using it at once
        conn = aiosqlite.connect(target, timeout=self._busy_timeout_s, isolation_level=None, check_same_thread=False)
        # aiosqlite's worker thread is not a daemon: a store nobody closed would keep the process
        # from exiting. SQLite is crash-safe, so a daemon thread loses at most an uncommitted write.
        thread = getattr(conn, "_thread", None)
        if isinstance(thread, threading.Thread) and not thread.is_alive():
            thread.daemon = True
        try:
            await conn
            await self._setup(conn)
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.close()
            if isinstance(thread, threading.Thread) and thread.is_alive():
                # The worker still answers the stop request through this event loop; if the loop
                # closed first, the thread would print "Event loop is closed" at exit (seen when
                # `seamkit stores setup` fails to open a database).
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(thread.join, 5)
            raise
        self._conn = conn
        return conn

    async def _setup(self, conn: aiosqlite.Connection) -> None:
        await conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")
        if not self._memory:
            await self._enable_wal(conn)
        await conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        if self._manage_wal:
            # this store runs the checkpoints, and looks at the WAL's size to know when (module doc)
            await conn.execute("PRAGMA wal_autocheckpoint = 0")
            await conn.execute(f"PRAGMA journal_size_limit = {_WAL_CHECKPOINT_BYTES}")
            # the first write looks at the WAL: a store that writes a little and closes (a CLI
            # command, a short run) while another connection keeps the file open must checkpoint too
            self._wal_pages = _WAL_LOOK_PAGES
        self._thread_queued = False  # a new connection: nothing queued for its thread
        await conn.execute("BEGIN IMMEDIATE")
        try:
            for stmt in _SCHEMA:
                await conn.execute(stmt)
            rows = list(await conn.execute_fetchall("SELECT value FROM seamkit_meta WHERE key = 'schema_version'"))
            if not rows:
                await conn.execute(
                    "INSERT INTO seamkit_meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
            elif int(rows[0][0]) > SCHEMA_VERSION:
                raise sqlite3.DatabaseError(
                    f"database schema version {rows[0][0]} is newer than this seamkit-sqlite supports "
                    f"({SCHEMA_VERSION}); upgrade seamkit-sqlite"
                )
            await conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.rollback()
            raise

    async def _enable_wal(self, conn: aiosqlite.Connection) -> None:
        rows = list(await conn.execute_fetchall("PRAGMA journal_mode"))
        if rows and str(rows[0][0]).lower() == "wal":
            return
        # switching needs a moment of exclusive access; another process may be opening the same
        # new file: retry within the busy timeout
        deadline = time.monotonic() + max(self._busy_timeout_s, 0.1)
        while True:
            try:
                rows = list(await conn.execute_fetchall("PRAGMA journal_mode = WAL"))
                break
            except sqlite3.OperationalError as exc:
                if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.02)
        mode = str(rows[0][0]).lower() if rows else "?"
        if mode != "wal":
            raise sqlite3.OperationalError(f"could not switch the journal to WAL (journal_mode is {mode!r})")

    async def aclose(self) -> None:
        """Close the connection (idempotent). A later call on this store connects again."""
        lock = self._bind_loop()
        await lock.acquire()  # let an operation in progress finish first
        try:
            conn, self._conn = self._conn, None
            if conn is not None:
                try:
                    await conn.close()
                except (sqlite3.Error, ValueError) as exc:
                    raise self._unavailable(exc) from None
        finally:
            lock.release()

    # ------------------------------------------------------------------ StorePort

    async def get(self, scope: Scope, key: str, default: Any = None) -> Any:
        """The value of ``key`` in ``scope``, or ``default`` when missing or expired."""
        value = await self._get(_check_key(scope, key), key)
        return default if value is _MISSING else value

    async def _get(self, ns: str, key: str) -> Any:
        rows, _ = await self._execute(_SQL_GET, (ns, key, time.time()), urgent=True)
        return codec.loads(rows[0][0]) if rows else _MISSING

    async def set(self, scope: Scope, key: str, value: Any, *, ttl: float | None = None) -> None:
        """Store ``value`` (any codec value) under ``key``; ``ttl`` seconds or ``None`` (no
        expiry, also clearing a previous one). Raises TTLNotSupported, CodecError."""
        ns = _check_key(scope, key)
        expires = _check_ttl(ttl, self.ttl_resolution)
        text = codec.dumps(value)
        await self._execute(_SQL_PUT, (ns, key, text, expires), urgent=True, pages=2 + len(text) // _PAGE)

    async def get_or_set(
        self, scope: Scope, key: str, producer: Callable[[], Awaitable[Any]], *, ttl: float | None = None
    ) -> Any:
        """The value of ``key``, or ``await producer()`` stored (with ``ttl``) and returned.
        Concurrent misses in this process run ``producer`` once; its error reaches every waiter
        and nothing is stored."""
        ns = _check_key(scope, key)
        _check_ttl(ttl, self.ttl_resolution)
        self._bind_loop()

        async def produce() -> Any:
            value = await self._get(ns, key)
            if value is not _MISSING:
                return value
            value = await producer()
            await self.set(scope, key, value, ttl=ttl)
            return value

        return await self._flight.run((ns, key), produce)

    async def delete(self, scope: Scope, key: str) -> bool:
        """Delete ``key``; whether it existed (an expired key did not)."""
        ns = _check_key(scope, key)
        rows, _ = await self._execute(_SQL_DEL, (ns, key), urgent=True, pages=2)
        return bool(rows) and (rows[0][0] is None or rows[0][0] > time.time())

    async def append(self, scope: Scope, key: str, value: Any) -> int:
        """Append ``value`` to the list at ``key`` (missing: a new list without expiry; an existing
        TTL is kept) and return the new length. A non-list value raises StoreValueError."""
        ns = _check_key(scope, key)
        codec.dumps(value)  # fail on an unencodable value before touching the database

        def body(db: sqlite3.Connection) -> int:
            row = db.execute(_SQL_GET_TTL, (ns, key, time.time())).fetchone()
            if row:
                items = codec.loads(row[0])
                expires = row[1]
                if not isinstance(items, list):
                    raise StoreValueError(f"append: the value at {key!r} is a {type(items).__name__}, not a list")
                items = [*items, value]
            else:
                items, expires = [value], None
            db.execute(_SQL_PUT, (ns, key, codec.dumps(items), expires))
            return len(items)

        return await self._write(body, urgent=True)

    async def list(self, scope: Scope, key: str, start: int = 0, stop: int | None = None) -> Sequence[Any]:
        """Items ``[start:stop]`` of the list at ``key`` (``[]`` when missing). A non-list value
        raises StoreValueError."""
        value = await self._get(_check_key(scope, key), key)
        if value is _MISSING:
            return []
        if not isinstance(value, list):
            raise StoreValueError(f"list: the value at {key!r} is a {type(value).__name__}, not a list")
        return value[start:stop]

    async def increment(self, scope: Scope, key: str, by: int = 1) -> int:
        """Add ``by`` to the integer at ``key`` (missing or expired = 0, no expiry) atomically,
        across processes too, keeping an existing TTL; returns the new value. A non-integer value
        (``bool`` included) raises StoreValueError and is left unchanged."""
        ns = _check_key(scope, key)
        if type(by) is not int:
            raise TypeError(f"by must be an int, got {type(by).__name__}")

        def body(db: sqlite3.Connection) -> int:
            row = db.execute(_SQL_GET_TTL, (ns, key, time.time())).fetchone()
            if row:
                current = codec.loads(row[0])
                expires = row[1]
                if type(current) is not int:
                    raise StoreValueError(
                        f"increment: the value at {key!r} is a {type(current).__name__}, not an integer"
                    )
            else:
                current, expires = 0, None
            result: int = current + by
            db.execute(_SQL_PUT, (ns, key, codec.dumps(result), expires))
            return result

        return await self._write(body, urgent=True)

    async def prune(self) -> int:
        """Delete expired keys now; how many."""
        _, count = await self._execute(
            "DELETE FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ?", (time.time(),), pages=2
        )
        return count

    # ------------------------------------------------------------------ CheckpointPort

    async def save(self, record: CheckpointRecord, *, expected_version: int | None) -> None:
        """Store ``record`` when the run's latest version is ``expected_version`` (``None``: no
        versions); otherwise CheckpointConflict and nothing written (ValueError, also writing
        nothing, when ``record.version`` is not ``expected_version + 1`` or 1). One ``BEGIN IMMEDIATE``
        transaction: one run-row read, one record row, the entries, the run row."""
        await self._save_many((record,), expected_version, ())

    async def save_many(
        self, records: Sequence[CheckpointRecord], *, expected_version: int | None, writes: Sequence[PendingWrite] = ()
    ) -> None:
        """``save`` of each of ``records`` (consecutive versions of one run, the first following
        ``expected_version``) and ``put_write`` of each of ``writes``, in ONE ``BEGIN IMMEDIATE``
        transaction (one hand-off to the connection's thread): all of it or, on CheckpointConflict
        or ValueError, nothing."""
        await self._save_many(records, expected_version, writes)

    async def _save_many(
        self, records: Sequence[CheckpointRecord], expected_version: int | None, writes: Sequence[PendingWrite]
    ) -> None:
        for r in records:
            if not isinstance(r, CheckpointRecord):
                raise TypeError(f"save needs a CheckpointRecord, got {type(r).__name__}")
        for w in writes:
            if not isinstance(w, PendingWrite) or not isinstance(w.payload, str):
                raise TypeError(f"writes must be PendingWrite values with codec text, got {w!r:.80}")
        run_ids = {r.run_id for r in records}
        if len(run_ids) > 1:
            raise ValueError(f"save_many stores versions of one run, got {sorted(run_ids)}")
        cp_rows: list[tuple[Any, ...]] = []
        run_rows: list[tuple[Any, ...]] = []
        log_rows: list[tuple[Any, ...]] = []
        for r in records:
            meta = _meta_text(r.metadata)
            cp_rows.append((r.run_id, r.version, r.status, r.state, r.parent_run_id, meta, r.created_at))
            run_rows.append((r.run_id, r.version, r.status, r.parent_run_id, meta, r.created_at))
            log_rows.extend((r.run_id, r.version, i, e) for i, e in enumerate(r.entries))
        write_rows = [(w.run_id, w.version, w.task_id, w.payload) for w in writes]
        run_id = records[0].run_id if records else ""
        # every text written: the run id is in every row, and any field may be big
        size = sum(2 * (len(r.run_id) + len(r.status) + len(r.parent_run_id or "") + len(row[5])) + len(r.state)
                   for r, row in zip(records, cp_rows, strict=True))
        size += sum(len(row[0]) + len(row[3]) for row in log_rows)
        size += sum(len(w.run_id) + len(w.task_id) + len(w.payload) for w in writes)
        rows = len(cp_rows) + len(log_rows) + len(write_rows)
        inline = size <= _INLINE_MAX_CHARS and rows <= _INLINE_MAX_ROWS

        def body(db: sqlite3.Connection) -> None:
            if records:
                row = db.execute(_SQL_RUN_VERSION, (run_id,)).fetchone()
                actual = row[0] if row else None
                if actual != expected_version:
                    raise CheckpointConflict(run_id, expected_version, actual)
                want = 1 if expected_version is None else expected_version + 1
                for cp_row in cp_rows:
                    if cp_row[1] != want:
                        raise ValueError(
                            f"record version {cp_row[1]} does not follow expected_version {want - 1 or None}"
                            f" (must be {want})"
                        )
                    want += 1
                    db.execute(_SQL_INSERT_CP, cp_row)
                # the run row says the latest version: written once, for the last record, right
                # after its checkpoint row (its seq is that row's rowid: last_insert_rowid())
                db.execute(_SQL_UPSERT_RUN, run_rows[-1])
                if log_rows:
                    db.executemany(_SQL_INSERT_LOG, log_rows)
            if write_rows:
                db.executemany(_SQL_PUT_WRITE, write_rows)

        await self._write(body, pages=2 * rows + 4 + size // _PAGE, inline=inline)

    async def latest(self, run_id: str) -> StoredCheckpoint | None:
        """The latest stored version of ``run_id`` with its log, or ``None``."""
        return await self._load(run_id, _SQL_LATEST, (run_id,))

    async def at_version(self, run_id: str, version: int) -> StoredCheckpoint | None:
        """Version ``version`` of ``run_id`` with the log up to it, or ``None`` (unknown, pruned)."""
        return await self._load(run_id, _SQL_AT, (run_id, version))

    async def _load(self, run_id: str, sql: str, params: tuple[Any, ...]) -> StoredCheckpoint | None:

        def body(db: sqlite3.Connection) -> tuple[Any, list[Any]] | None:
            row = db.execute(sql, params).fetchone()
            if row is None:
                return None
            return row, db.execute(_SQL_LOG, (run_id, row[0])).fetchall()

        found = await self._snapshot(body)
        if found is None:
            return None
        (version, status, state, parent, metadata, created_at), log = found
        record = CheckpointRecord(
            run_id=run_id,
            version=version,
            status=status,
            state=state,
            entries=tuple(e for v, e in log if v == version),
            parent_run_id=parent,
            metadata=json.loads(metadata),
            created_at=created_at,
        )
        return StoredCheckpoint(record=record, log=tuple(e for _, e in log))

    async def list_versions(self, run_id: str) -> Sequence[CheckpointInfo]:
        """Headers of every stored version of ``run_id``, oldest first."""
        rows, _ = await self._execute(
            "SELECT version, status, parent_run_id, metadata, created_at FROM checkpoints"
            " WHERE run_id = ? ORDER BY version",
            (run_id,),
        )
        return [_info(run_id, r) for r in rows]

    async def list_runs(
        self, *, status: str | None = None, parent_run_id: str | None = None, limit: int = 100
    ) -> Sequence[CheckpointInfo]:
        """The latest version of each run, newest (``created_at``, then latest saved) first; only
        runs with ``status`` / children of ``parent_run_id`` when given; at most ``limit``."""
        if type(limit) is not int:
            raise TypeError(f"limit must be an int, got {type(limit).__name__}")
        where, params = [], []
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if parent_run_id is not None:
            where.append("parent_run_id = ?")
            params.append(parent_run_id)
        sql = "SELECT run_id, version, status, parent_run_id, metadata, created_at FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, seq DESC LIMIT ?"
        rows, _ = await self._execute(sql, (*params, max(limit, 0)))  # SQLite: LIMIT -1 = all
        return [_info(r[0], r[1:]) for r in rows]

    async def put_write(self, run_id: str, version: int, task_id: str, payload: str) -> None:
        """Record task ``task_id``'s result ``payload`` (codec text) for step ``version`` of
        ``run_id``; a second write of one task id replaces the first."""
        if not isinstance(payload, str):
            raise TypeError(f"payload must be codec text (str), got {type(payload).__name__}")
        await self._execute(_SQL_PUT_WRITE, (run_id, version, task_id, payload), pages=2 + len(payload) // _PAGE)

    async def pending_writes(self, run_id: str, version: int) -> Mapping[str, str]:
        """Task id -> payload recorded for step ``version`` of ``run_id``, in recording order."""
        rows, _ = await self._execute(
            "SELECT task_id, payload FROM writes WHERE run_id = ? AND version = ? ORDER BY rowid",
            (run_id, version),
        )
        return {t: p for t, p in rows}

    async def delete_run(self, run_id: str) -> bool:
        """Delete every version, log entry and pending write of ``run_id``; whether it had versions."""

        def body(db: sqlite3.Connection) -> bool:
            n = db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,)).rowcount
            n += db.execute("DELETE FROM checkpoints WHERE run_id = ?", (run_id,)).rowcount
            db.execute("DELETE FROM log WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM writes WHERE run_id = ?", (run_id,))
            return n > 0

        return await self._write(body)

    async def prune_runs(self, *, keep_last: int = 1, finished_before: float | None = None) -> int:
        """Delete whole runs whose latest status is done/failed and whose latest version was
        created before ``finished_before`` (unix seconds), then every version (and its pending
        writes) but the last ``keep_last`` of each remaining run; the log is kept. Returns the
        number of versions deleted. ``keep_last`` must be >= 1."""
        if type(keep_last) is not int or keep_last < 1:
            raise ValueError(f"keep_last must be an int of at least 1, got {keep_last!r}")
        cutoff = None if finished_before is None else float(finished_before)

        def body(db: sqlite3.Connection) -> int:
            deleted = 0
            if cutoff is not None:
                sub = _SQL_FINISHED
                p = (cutoff,)
                deleted += db.execute(f"DELETE FROM checkpoints WHERE run_id IN ({sub})", p).rowcount
                db.execute(f"DELETE FROM log WHERE run_id IN ({sub})", p)
                db.execute(f"DELETE FROM writes WHERE run_id IN ({sub})", p)
                db.execute(f"DELETE FROM runs WHERE run_id IN ({sub})", p)
            older = "version <= (SELECT r.version FROM runs r WHERE r.run_id = {t}.run_id) - ?"
            cur = db.execute(f"DELETE FROM checkpoints WHERE {older.format(t='checkpoints')}", (keep_last,))
            deleted += cur.rowcount
            db.execute(f"DELETE FROM writes WHERE {older.format(t='writes')}", (keep_last,))
            return deleted

        return await self._write(body)


def build(config: SqliteConfig) -> SqliteStore:
    """The ``use: sqlite`` factory: a relative ``path`` is resolved against the current directory
    now (not at first use). Connects nothing."""
    path: str | Path = config.path
    if config.path != MEMORY:
        path = Path(config.path).expanduser()
        if not path.is_absolute():
            path = Path.cwd() / path
    return SqliteStore(
        path, busy_timeout_s=config.busy_timeout_s, synchronous=config.synchronous, saves_on_loop=config.saves_on_loop
    )
