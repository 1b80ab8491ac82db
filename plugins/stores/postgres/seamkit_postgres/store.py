"""The ``postgres`` store: :class:`~seamkit._ports.StorePort` and :class:`~seamkit._ports.CheckpointPort`
on PostgreSQL through psycopg 3 and an async connection pool.

- Constructing a :class:`PostgresStore` is cheap and does not connect. The first operation (and the
  first after the server was found unreachable) connects once directly, within ``connect_timeout``
  seconds, and only when that works opens the pool; so an unreachable server or a bad DSN fails
  fast with the cause ("Connection refused", "password authentication failed", "invalid DSN: ...")
  instead of waiting on the pool's retries. The first operation waits until the pool holds
  ``min_size`` connections (at most ``connect_timeout`` seconds), so sequential use keeps to one
  server connection. The pool checks each connection before lending it, so the store keeps working
  after a server restart: a connection idle for more than a second gets a round trip (an empty
  query); one used within the last second gets a non-blocking look at its socket (a server that
  restarted or dropped it has sent an error and closed it, so there is something to read) and the
  round trip only when anything is there. While the server is down operations raise
  :class:`~seamkit.errors.StoreUnavailable` after at most ``connect_timeout`` seconds, naming
  the last connection error.
- Tables live in one schema (``seamkit`` by default) and are created by ``await store.setup()``
  (``seamkit stores setup``): versioned migrations recorded in ``<schema>.migrations``, applied
  under an advisory lock so concurrent setups are safe. Before setup every operation raises
  StoreUnavailable saying so.
- Key-value values are :mod:`seamkit._durability.codec` text; expiry uses the server's clock
  (``now()``), resolution one microsecond.
- A checkpoint save is one SQL statement (one round trip; the new log entries travel as one
  binary ``text[]`` parameter, byte for byte): it moves the run's version from
  ``expected_version`` to the new one (or inserts version 1), writes the record row and appends the
  new log entries. Earlier entries are never rewritten; reading a checkpoint is one query.
- Every driver error becomes StoreUnavailable; the DSN and its password never appear in messages.
  A :class:`logging.Filter` on the ``psycopg`` and ``psycopg.pool`` loggers masks them in the
  drivers' log records too, and drops this store's pool connection warnings when the application
  configured no logging at all (they would otherwise reach stderr through Python's last-resort
  handler); applications that configure logging still receive them, masked.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import select
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Self

import psycopg
import psycopg.errors
from psycopg_pool import AsyncConnectionPool, PoolTimeout
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

from seamkit_postgres._dsn import conninfo_problem, password_fragments, scrub, secret_fragments
from seamkit_postgres.config import PostgresConfig

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["MIGRATIONS", "PostgresStore", "build"]

_MISSING = object()

# (version, statements). ``{s}`` is the quoted schema name. Append new versions; never edit old ones.
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            """CREATE TABLE {s}.kv (
                ns text NOT NULL,
                key bytea NOT NULL,
                value text NOT NULL,
                expires_at timestamptz,
                PRIMARY KEY (ns, key)
            )""",
            "CREATE INDEX kv_expires_idx ON {s}.kv (expires_at) WHERE expires_at IS NOT NULL",
            "CREATE SEQUENCE {s}.runs_touch_seq",
            """CREATE TABLE {s}.runs (
                run_id text PRIMARY KEY,
                version integer NOT NULL,
                status text NOT NULL,
                parent_run_id text,
                metadata text NOT NULL,
                created_at double precision NOT NULL,
                log_len integer NOT NULL,
                touched bigint NOT NULL
            )""",
            "CREATE INDEX runs_listing_idx ON {s}.runs (created_at DESC, touched DESC)",
            "CREATE INDEX runs_parent_idx ON {s}.runs (parent_run_id) WHERE parent_run_id IS NOT NULL",
            """CREATE TABLE {s}.checkpoints (
                run_id text NOT NULL,
                version integer NOT NULL,
                status text NOT NULL,
                state text NOT NULL,
                parent_run_id text,
                metadata text NOT NULL,
                created_at double precision NOT NULL,
                log_len integer NOT NULL,
                n_entries integer NOT NULL,
                PRIMARY KEY (run_id, version)
            )""",
            """CREATE TABLE {s}.log_entries (
                run_id text NOT NULL,
                seq integer NOT NULL,
                version integer NOT NULL,
                payload text NOT NULL,
                PRIMARY KEY (run_id, seq)
            )""",
            """CREATE TABLE {s}.pending_writes (
                run_id text NOT NULL,
                version integer NOT NULL,
                task_id text NOT NULL,
                payload text NOT NULL,
                seq bigint GENERATED ALWAYS AS IDENTITY,
                PRIMARY KEY (run_id, version, task_id)
            )""",
        ),
    ),
)
LATEST_MIGRATION = MIGRATIONS[-1][0]

_NOT_SET_UP = (
    "the PostgreSQL store's tables in schema {schema!r} are not set up (migration {have} of {want}); "
    "run `seamkit stores setup` (or `await store.setup()`) once"
)

# the run row of a save: the first version inserts it, a later one moves it on from the expected
# version (no row returned: a conflict); _SAVE_TAIL then writes the checkpoint and log rows
_SAVE_FIRST_HEAD = """WITH r AS (
  INSERT INTO {s}.runs (run_id, version, status, parent_run_id, metadata, created_at, log_len, touched)
  VALUES (%(run_id)s, %(version)s, %(status)s, %(parent)s, %(meta)s, %(created)s, %(n)s,
          nextval('{s}.runs_touch_seq'))
  ON CONFLICT (run_id) DO NOTHING
  RETURNING run_id, log_len
)"""
_SAVE_NEXT_HEAD = """WITH r AS (
  UPDATE {s}.runs SET version = %(version)s, status = %(status)s, parent_run_id = %(parent)s,
      metadata = %(meta)s, created_at = %(created)s, log_len = log_len + %(n)s,
      touched = nextval('{s}.runs_touch_seq')
  WHERE run_id = %(run_id)s AND version = %(expected)s
  RETURNING run_id, log_len
)"""
_SAVE_TAIL = """,
c AS (
  INSERT INTO {s}.checkpoints
    (run_id, version, status, state, parent_run_id, metadata, created_at, log_len, n_entries)
  SELECT r.run_id, %(version)s, %(status)s, %(state)s, %(parent)s, %(meta)s, %(created)s, r.log_len, %(n)s FROM r
),
e AS (
  INSERT INTO {s}.log_entries (run_id, seq, version, payload)
  SELECT r.run_id, r.log_len - %(n)s + u.ord, %(version)s, u.payload
  FROM r, unnest(%(entries)b::text[]) WITH ORDINALITY AS u(payload, ord)
)
SELECT count(*) FROM r"""

_SQL_TEMPLATES: dict[str, str] = {
    "migrated": "SELECT coalesce(max(version), 0) FROM {s}.migrations",
    "get": "SELECT value FROM {s}.kv WHERE ns = %s AND key = %s AND (expires_at IS NULL OR expires_at > now())",
    "set": (
        "INSERT INTO {s}.kv (ns, key, value, expires_at) "
        "VALUES (%s, %s, %s, now() + %s::float8 * interval '1 second') "
        "ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at"
    ),
    "delete": (
        "DELETE FROM {s}.kv WHERE ns = %s AND key = %s RETURNING (expires_at IS NULL OR expires_at > now())"
    ),
    "ensure_row": "INSERT INTO {s}.kv (ns, key, value) VALUES (%s, %s, %s) ON CONFLICT (ns, key) DO NOTHING",
    "lock_row": (
        "SELECT value, (expires_at IS NOT NULL AND expires_at <= now()) FROM {s}.kv "
        "WHERE ns = %s AND key = %s FOR UPDATE"
    ),
    "update_row": (
        "UPDATE {s}.kv SET value = %s, expires_at = CASE WHEN %s THEN NULL ELSE expires_at END "
        "WHERE ns = %s AND key = %s"
    ),
    "prune_kv": "DELETE FROM {s}.kv WHERE expires_at <= now()",
    "save_first": (
        _SAVE_FIRST_HEAD
        + _SAVE_TAIL
    ),
    "save_next": (
        _SAVE_NEXT_HEAD
        + _SAVE_TAIL
    ),
    # as save_first / save_next, but a conflict (no run row written) is an error (division by zero)
    # that aborts the transaction on the server: save_many sends every statement at once
    "save_first_strict": (
        _SAVE_FIRST_HEAD
        + _SAVE_TAIL.replace("SELECT count(*) FROM r", "SELECT 1 / count(*) FROM r")
    ),
    "save_next_strict": (
        _SAVE_NEXT_HEAD
        + _SAVE_TAIL.replace("SELECT count(*) FROM r", "SELECT 1 / count(*) FROM r")
    ),
    "run_version": "SELECT version FROM {s}.runs WHERE run_id = %s",
    "latest": (
        "SELECT c.run_id, c.version, c.status, c.state, c.parent_run_id, c.metadata, c.created_at, c.n_entries, "
        "(SELECT coalesce(array_agg(l.payload ORDER BY l.seq), '{{}}') FROM {s}.log_entries l "
        " WHERE l.run_id = c.run_id AND l.seq <= c.log_len) "
        "FROM {s}.runs r JOIN {s}.checkpoints c ON c.run_id = r.run_id AND c.version = r.version "
        "WHERE r.run_id = %s"
    ),
    "at_version": (
        "SELECT c.run_id, c.version, c.status, c.state, c.parent_run_id, c.metadata, c.created_at, c.n_entries, "
        "(SELECT coalesce(array_agg(l.payload ORDER BY l.seq), '{{}}') FROM {s}.log_entries l "
        " WHERE l.run_id = c.run_id AND l.seq <= c.log_len) "
        "FROM {s}.checkpoints c WHERE c.run_id = %s AND c.version = %s"
    ),
    "list_versions": (
        "SELECT run_id, version, status, parent_run_id, metadata, created_at FROM {s}.checkpoints "
        "WHERE run_id = %s ORDER BY version"
    ),
    "list_runs": (
        "SELECT run_id, version, status, parent_run_id, metadata, created_at FROM {s}.runs "
        "WHERE (%(status)s::text IS NULL OR status = %(status)s) "
        "AND (%(parent)s::text IS NULL OR parent_run_id = %(parent)s) "
        "ORDER BY created_at DESC, touched DESC LIMIT %(limit)s"
    ),
    "put_write": (
        "INSERT INTO {s}.pending_writes (run_id, version, task_id, payload) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (run_id, version, task_id) DO UPDATE SET payload = excluded.payload"
    ),
    "pending_writes": (
        "SELECT task_id, payload FROM {s}.pending_writes WHERE run_id = %s AND version = %s ORDER BY seq"
    ),
    "delete_run": (
        """WITH a AS (DELETE FROM {s}.runs WHERE run_id = %(run_id)s RETURNING 1),
b AS (DELETE FROM {s}.checkpoints WHERE run_id = %(run_id)s RETURNING 1),
c AS (DELETE FROM {s}.log_entries WHERE run_id = %(run_id)s RETURNING 1),
d AS (DELETE FROM {s}.pending_writes WHERE run_id = %(run_id)s RETURNING 1)
SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b) + (SELECT count(*) FROM c)
     + (SELECT count(*) FROM d)"""
    ),
    "prune_finished": (
        """WITH dead AS (
  DELETE FROM {s}.runs WHERE status = ANY(%(statuses)s) AND created_at < %(before)s RETURNING run_id
),
c AS (DELETE FROM {s}.checkpoints WHERE run_id IN (SELECT run_id FROM dead) RETURNING 1),
l AS (DELETE FROM {s}.log_entries WHERE run_id IN (SELECT run_id FROM dead)),
p AS (DELETE FROM {s}.pending_writes WHERE run_id IN (SELECT run_id FROM dead))
SELECT count(*) FROM c"""
    ),
    "prune_versions": (
        """WITH c AS (
  DELETE FROM {s}.checkpoints c USING {s}.runs r
  WHERE c.run_id = r.run_id AND c.version <= r.version - %(keep)s
  RETURNING c.run_id, c.version
),
p AS (DELETE FROM {s}.pending_writes p USING c WHERE p.run_id = c.run_id AND p.version = c.version)
SELECT count(*) FROM c"""
    ),
}


_POOL_PREFIX = "seamkit-postgres-"
# a pooled connection used less than this many seconds ago is lent after a look at its socket
# instead of a round trip (see PostgresStore._check_connection)
_RECENTLY_USED_S = 1.0
_POLL = getattr(select, "poll", None)


class _PooledConnection(psycopg.AsyncConnection[Any]):
    """psycopg's async connection plus ``last_used``: the monotonic time (seconds) it was opened or
    last finished an operation without error."""

    last_used: float = 0.0


_Pool = AsyncConnectionPool[_PooledConnection]


def _quiet(conn: psycopg.AsyncConnection[Any]) -> bool:
    """True when ``conn`` is open, idle, and its socket has nothing to read (no error message or
    end of stream from the server); False when unsure. Does not block or touch the server."""
    if _POLL is None or conn.closed or conn.broken:
        return False
    pgconn = conn.pgconn
    if pgconn.status != psycopg.pq.ConnStatus.OK or pgconn.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return False
    poller = _POLL()
    poller.register(pgconn.socket, select.POLLIN)
    return not poller.poll(0)


_LIVE_STORES: weakref.WeakSet[PostgresStore] = weakref.WeakSet()


class _ScrubDriverLogs(logging.Filter):
    """Masks the DSN and password of every live :class:`PostgresStore` in records of psycopg's
    loggers, and drops this module's pools' records when no handler is configured anywhere (they
    would reach stderr through :data:`logging.lastResort`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        secrets: set[str] = set()
        passwords: set[str] = set()
        for store in list(_LIVE_STORES):
            secrets.update(store._secrets)
            passwords.update(store._passwords)
        try:
            text = record.getMessage()
        except Exception:  # a broken record: let logging report it as usual
            return True
        masked = scrub(text, secrets, passwords)
        if masked != text:
            record.msg, record.args = masked, None
        # this store's pools are named "seamkit-postgres-<schema>" and name themselves in warnings
        return _POOL_PREFIX not in masked or logging.getLogger(record.name).hasHandlers()


_LOG_FILTER = _ScrubDriverLogs()
for _name in ("psycopg", "psycopg.pool"):
    logging.getLogger(_name).addFilter(_LOG_FILTER)


def _key(key: str) -> bytes:
    """Keys are stored as UTF-8 ``bytea`` (PostgreSQL ``text`` cannot hold NUL; any str is a key)."""
    if not isinstance(key, str):
        raise TypeError(f"store keys are str, got {type(key).__name__}")
    return key.encode("utf-8", "surrogatepass")


def _check_ttl(ttl: float | None, resolution: float) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise TTLNotSupported(f"ttl must be a number of seconds or None, got {type(ttl).__name__}")
    ttl = float(ttl)
    if not math.isfinite(ttl) or ttl <= 0:
        raise TTLNotSupported(f"ttl must be finite and positive (seconds), got {ttl!r}")
    if ttl < resolution:
        raise TTLNotSupported(f"ttl {ttl!r}s is finer than the PostgreSQL store's resolution ({resolution}s)")
    return ttl


def _info(row: Sequence[Any]) -> CheckpointInfo:
    return CheckpointInfo(
        run_id=row[0],
        version=row[1],
        status=row[2],
        parent_run_id=row[3],
        metadata=freeze(json.loads(row[4])),
        created_at=row[5],
    )


def _stored(row: Sequence[Any]) -> StoredCheckpoint:
    log = tuple(row[8])
    n = row[7]
    record = CheckpointRecord(
        run_id=row[0],
        version=row[1],
        status=row[2],
        state=row[3],
        parent_run_id=row[4],
        metadata=freeze(json.loads(row[5])),
        created_at=row[6],
        entries=log[len(log) - n :] if n else (),
    )
    return StoredCheckpoint(record=record, log=log)


class PostgresStore:
    """Key-value store and checkpoint store on PostgreSQL (see the module docstring).

    ``config``: :class:`~seamkit_postgres.config.PostgresConfig`. ``ttl_resolution`` is 1e-6 s.
    Use ``async with store:`` or ``await store.aclose()``. Raises StoreUnavailable for every
    server or connection problem (including "not set up"), TTLNotSupported for a bad ``ttl``,
    StoreValueError for ``increment``/``append`` on a value of the wrong type, CheckpointConflict
    for a stale ``save``.

    ``persistent`` is ``True``: an acknowledged write is a committed transaction, so it outlives
    this object and its process (a server crash keeps it as far as the server's ``fsync`` /
    ``synchronous_commit`` settings do; both are on by default).
    """

    #: committed transactions outlive the store object and its process
    persistent: bool = True
    ttl_resolution: float = 1e-6

    def __init__(self, config: PostgresConfig) -> None:
        self._config = config
        self.schema = config.db_schema
        quoted = '"' + self.schema.replace('"', '""') + '"'
        self._quoted_schema = quoted
        self._sql = {name: sql.format(s=quoted) for name, sql in _SQL_TEMPLATES.items()}
        self._pool: _Pool | None = None
        self._pool_lock: asyncio.Lock | None = None
        self._ready = False
        self._closed = False
        self._purging = False
        self._closing: set[asyncio.Task[None]] = set()
        self._flight = SingleFlight()
        dsn = config.dsn.get_secret_value()
        self._secrets = secret_fragments(dsn)
        self._passwords = password_fragments(dsn)
        # the last failed connection attempt of the pool (monotonic time, secret-free text)
        self._last_connect_error: tuple[float, str] | None = None
        # failed direct connections so far and why the last one failed (without the operation)
        self._probe_failures = 0
        self._probe_error = ""
        _LIVE_STORES.add(self)

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("open" if self._pool is not None else "not connected")
        return f"PostgresStore(schema={self.schema!r}, {state})"

    __str__ = __repr__

    # ------------------------------------------------------------------ plumbing

    def _mask(self, text: str) -> str:
        return scrub(text, self._secrets, self._passwords)

    def _describe(self, exc: BaseException) -> str:
        """``exc`` on one line, secret-free, without psycopg's "connection failed: " prefix."""
        text = " ".join(str(exc).split()) or type(exc).__name__
        return self._mask(text.removeprefix("connection failed: "))

    def _unavailable(self, exc: BaseException, what: str) -> StoreUnavailable:
        return StoreUnavailable(f"PostgreSQL store ({what}): {self._describe(exc)}")

    def _connection_class(self) -> type[_PooledConnection]:
        """The pool's connection class: like psycopg's, but a failed connection attempt is
        remembered (secret-free) so that a pool timeout can say why it could not connect."""
        store = weakref.ref(self)

        class _Connection(_PooledConnection):
            @classmethod
            async def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
                try:
                    conn = await super().connect(conninfo, **kwargs)
                except Exception as exc:
                    owner = store()
                    if owner is not None:
                        owner._last_connect_error = (time.monotonic(), owner._describe(exc))
                    raise
                conn.last_used = time.monotonic()
                return conn

        return _Connection

    async def _probe(self, what: str) -> None:
        """One direct connection attempt within ``connect_timeout`` seconds (closed at once):
        raises StoreUnavailable with the cause, the DSN and its password masked."""
        cfg = self._config
        dsn = cfg.dsn.get_secret_value()
        try:
            async with asyncio.timeout(cfg.connect_timeout):
                conn = await psycopg.AsyncConnection.connect(
                    dsn, autocommit=True, connect_timeout=max(1, math.ceil(cfg.connect_timeout))
                )
        except TimeoutError:
            detail = f"no connection to the server within {cfg.connect_timeout:g} s (connect_timeout)"
        except psycopg.ProgrammingError as exc:  # the DSN does not parse, or a bad option value
            detail = f"invalid DSN: {conninfo_problem(exc, dsn)}"
        except (psycopg.Error, OSError) as exc:
            detail = f"cannot connect to the server: {self._describe(exc)}"
        else:
            await conn.close()
            return
        self._probe_failures += 1
        self._probe_error = detail
        raise StoreUnavailable(f"PostgreSQL store ({what}): {detail}") from None

    async def _get_pool(self, what: str) -> _Pool:
        """The pool, opened after a successful direct connection (see :meth:`_probe`). Callers
        that waited while another one's direct connection failed get that failure at once."""
        if self._closed:
            raise StoreUnavailable("the PostgreSQL store is closed")
        if self._pool is not None:
            return self._pool
        if self._pool_lock is None:
            self._pool_lock = asyncio.Lock()
        failures = self._probe_failures
        async with self._pool_lock:
            if self._closed:
                raise StoreUnavailable("the PostgreSQL store is closed")
            if self._pool is None:
                if self._probe_failures != failures:
                    raise StoreUnavailable(f"PostgreSQL store ({what}): {self._probe_error}") from None
                await self._probe(what)
                cfg = self._config
                pool: _Pool = AsyncConnectionPool(
                    cfg.dsn.get_secret_value(),
                    connection_class=self._connection_class(),
                    min_size=cfg.min_size,
                    max_size=cfg.max_size,
                    open=False,
                    check=self._check_connection,
                    timeout=cfg.connect_timeout,
                    name=f"seamkit-postgres-{self.schema}",
                    kwargs={"autocommit": True, "connect_timeout": max(1, math.ceil(cfg.connect_timeout))},
                )
                # wait for the pool's first min_size connections: a request arriving before they
                # are ready would make the pool open one more, and a sequential caller would then
                # alternate between two server processes (psycopg_pool lends the least recently
                # returned connection), which costs a good part of a round trip per operation
                started = time.monotonic()
                try:
                    await pool.open(wait=True, timeout=cfg.connect_timeout)
                except Exception as exc:
                    await self._close_quietly(pool)
                    last = self._last_connect_error
                    cause = f"; last connection error: {last[1]}" if last is not None and last[0] >= started else ""
                    raise StoreUnavailable(
                        f"PostgreSQL store ({what}): opening the connection pool: {self._describe(exc)}{cause}"
                    ) from None
                self._pool = pool
        return self._pool

    def _discard_pool(self, pool: _Pool) -> None:
        if self._pool is pool:
            self._pool = None
            task = asyncio.get_running_loop().create_task(self._close_quietly(pool))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    @staticmethod
    async def _close_quietly(pool: _Pool) -> None:
        try:
            await pool.close(timeout=5.0)
        except Exception:  # a pool being thrown away: its errors do not matter
            pass

    async def _check_connection(self, conn: _PooledConnection) -> None:
        """The pool's check before lending a connection: none beyond :func:`_quiet` for one used
        within the last :data:`_RECENTLY_USED_S` seconds, else ``AsyncConnectionPool.check_connection``
        (a round trip). A broken one means the server restarted or dropped us: every idle connection
        is checked (and replaced) at once, so the pool does not back off once per dead connection."""
        if time.monotonic() - conn.last_used < _RECENTLY_USED_S and _quiet(conn):
            return
        try:
            await AsyncConnectionPool.check_connection(conn)
        except Exception:
            pool = self._pool
            if pool is not None and not self._purging:
                self._purging = True
                try:
                    await pool.check()
                finally:
                    self._purging = False
            raise

    @asynccontextmanager
    async def _connection(self, what: str, *, check_setup: bool = True) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled autocommit connection; driver errors leave as StoreUnavailable."""
        pool = await self._get_pool(what)
        errors_before = pool.get_stats().get("connections_errors", 0)
        started = time.monotonic()
        try:
            # getconn/putconn rather than pool.connection(): autocommit connections need no
            # commit/rollback on the way back (putconn rolls back a transaction left open)
            conn = await pool.getconn()
            try:
                if check_setup and not self._ready:
                    await self._check_setup(conn)
                yield conn
                conn.last_used = time.monotonic()
            finally:
                await pool.putconn(conn)
        except psycopg.errors.UndefinedTable:
            self._ready = False
            raise StoreUnavailable(_NOT_SET_UP.format(schema=self.schema, have=0, want=LATEST_MIGRATION)) from None
        except PoolTimeout as exc:
            if pool.get_stats().get("connections_errors", 0) > errors_before:
                # the server is unreachable: the pool's reconnect backoff would keep waiting after the
                # server is back, so start over with a new pool on the next operation
                self._discard_pool(pool)
                last = self._last_connect_error
                if last is not None and last[0] >= started:
                    raise StoreUnavailable(
                        f"PostgreSQL store ({what}): {self._describe(exc)}; last connection error: {last[1]}"
                    ) from None
            raise self._unavailable(exc, what) from None
        except (psycopg.Error, OSError) as exc:
            raise self._unavailable(exc, what) from None

    async def _check_setup(self, conn: psycopg.AsyncConnection[Any]) -> None:
        try:
            cur = await conn.execute(self._sql["migrated"])
            row = await cur.fetchone()
            have = int(row[0]) if row else 0
        except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName):
            have = 0
        if have < LATEST_MIGRATION:
            raise StoreUnavailable(_NOT_SET_UP.format(schema=self.schema, have=have, want=LATEST_MIGRATION))
        self._ready = True

    async def _fetchone(self, what: str, sql: str, params: Sequence[Any] | Mapping[str, Any]) -> Any:
        async with self._connection(what) as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchone()

    async def _fetchall(self, what: str, sql: str, params: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
        async with self._connection(what) as conn:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

    # ------------------------------------------------------------------ lifecycle

    async def setup(self) -> list[int]:
        """Create the schema and apply missing migrations; returns the versions applied now.

        Idempotent, and safe when several processes run it at once (a transaction-scoped advisory
        lock serialises them). Raises StoreUnavailable when the server cannot be reached.
        """
        applied: list[int] = []
        s = self._quoted_schema
        async with self._connection("setup", check_setup=False) as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("seamkit-migrations:" + self.schema,))
            await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {s}.migrations ("
                "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            cur = await conn.execute(f"SELECT version FROM {s}.migrations")
            done = {row[0] for row in await cur.fetchall()}
            for version, statements in MIGRATIONS:
                if version in done:
                    continue
                for statement in statements:
                    await conn.execute(statement.format(s=s))
                await conn.execute(f"INSERT INTO {s}.migrations (version) VALUES (%s)", (version,))
                applied.append(version)
        self._ready = True
        return applied

    async def aclose(self) -> None:
        """Close the pool (idempotent). The store cannot be used afterwards."""
        self._closed = True
        pool, self._pool = self._pool, None
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        if pool is not None:
            try:
                await pool.close()
            except Exception as exc:
                raise self._unavailable(exc, "closing") from None

    async def __aenter__(self) -> PostgresStore:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ StorePort

    async def get(self, scope: Scope, key: str, default: Any = None) -> Any:
        """The value of ``key`` in ``scope``, or ``default`` when missing or expired."""
        row = await self._fetchone("get", self._sql["get"], (scope_namespace(scope), _key(key)))
        return default if row is None else codec.loads(row[0])

    async def set(self, scope: Scope, key: str, value: Any, *, ttl: float | None = None) -> None:
        """Store ``value`` (replacing any), expiring ``ttl`` seconds from now (server clock) or never."""
        seconds = _check_ttl(ttl, self.ttl_resolution)
        text = codec.dumps(value)
        async with self._connection("set") as conn:
            await conn.execute(self._sql["set"], (scope_namespace(scope), _key(key), text, seconds))

    async def get_or_set(
        self, scope: Scope, key: str, producer: Callable[[], Awaitable[Any]], *, ttl: float | None = None
    ) -> Any:
        """The stored value, or ``await producer()`` stored with ``ttl`` (single-flight per key in
        this process). A raising producer stores nothing; its exception reaches every waiter."""
        _check_ttl(ttl, self.ttl_resolution)
        ns = scope_namespace(scope)

        async def fetch_or_produce() -> Any:
            found = await self.get(scope, key, _MISSING)
            if found is not _MISSING:
                return found
            value = await producer()
            await self.set(scope, key, value, ttl=ttl)
            return value

        return await self._flight.run((ns, key), fetch_or_produce)

    async def delete(self, scope: Scope, key: str) -> bool:
        """Remove ``key``; True when it existed (an expired key did not)."""
        row = await self._fetchone("delete", self._sql["delete"], (scope_namespace(scope), _key(key)))
        return bool(row is not None and row[0])

    async def _modify(
        self, what: str, scope: Scope, key: str, empty: Any, change: Callable[[Any], Any]
    ) -> Any:
        """Read-modify-write of one key under a row lock; ``change(current) -> new``. An expired
        value counts as ``empty`` (and loses its expiry); a live one keeps its TTL."""
        ns = scope_namespace(scope)
        bkey = _key(key)
        async with self._connection(what) as conn, conn.transaction():
            await conn.execute(self._sql["ensure_row"], (ns, bkey, codec.dumps(empty)))
            cur = await conn.execute(self._sql["lock_row"], (ns, bkey))
            row = await cur.fetchone()
            if row is None:  # pragma: no cover - the row was just ensured inside this transaction
                raise StoreUnavailable(f"PostgreSQL store ({what}): row vanished")
            expired = bool(row[1])
            current = empty if expired else codec.loads(row[0])
            new = change(current)
            await conn.execute(self._sql["update_row"], (codec.dumps(new), expired, ns, bkey))
            return new

    async def append(self, scope: Scope, key: str, value: Any) -> int:
        """Append ``value`` to the list at ``key`` (missing = empty); returns the new length.
        Raises StoreValueError (value unchanged) when the stored value is not a list."""

        def change(current: Any) -> list[Any]:
            if not isinstance(current, list | tuple):
                raise StoreValueError(f"cannot append to key {key!r}: it holds a {type(current).__name__}, not a list")
            return [*current, value]

        new = await self._modify("append", scope, key, [], change)
        return len(new)

    async def list(self, scope: Scope, key: str, start: int = 0, stop: int | None = None) -> Sequence[Any]:
        """Items ``[start:stop]`` of the list at ``key`` (``[]`` when missing or expired).
        Raises StoreValueError when the stored value is not a list."""
        value = await self.get(scope, key, _MISSING)
        if value is _MISSING:
            return []
        if not isinstance(value, list | tuple):
            raise StoreValueError(f"key {key!r} holds a {type(value).__name__}, not a list")
        return list(value[start:stop])

    async def increment(self, scope: Scope, key: str, by: int = 1) -> int:
        """Add ``by`` to the integer at ``key`` (missing = 0) atomically; returns the result and
        keeps the TTL. Raises StoreValueError (value unchanged) when the stored value is not an
        ``int`` (``bool`` is not), TypeError when ``by`` is not an int."""
        if isinstance(by, bool) or not isinstance(by, int):
            raise TypeError(f"increment 'by' must be an int, got {type(by).__name__}")

        def change(current: Any) -> int:
            if type(current) is not int:
                raise StoreValueError(
                    f"cannot increment key {key!r}: it holds a {type(current).__name__}, not an integer"
                )
            return current + by

        result: int = await self._modify("increment", scope, key, 0, change)
        return result

    async def prune(self) -> int:
        """Delete expired keys now; returns how many."""
        async with self._connection("prune") as conn:
            cur = await conn.execute(self._sql["prune_kv"])
            return max(cur.rowcount, 0)

    async def prune_runs(self, *, keep_last: int = 1, finished_before: float | None = None) -> int:
        """Delete whole runs whose latest status is done/failed and whose latest version was created
        before ``finished_before`` (unix seconds), then every version (and its pending writes) but
        the last ``keep_last`` of each remaining run; the log is kept. Returns the number of versions
        deleted. Raises ValueError when ``keep_last`` is not an int >= 1."""
        keep = keep_last
        if type(keep) is not int or keep < 1:
            raise ValueError(f"keep_last must be an integer >= 1, got {keep_last!r}")
        deleted = 0
        async with self._connection("prune") as conn, conn.transaction():
            if finished_before is not None:
                cur = await conn.execute(
                    self._sql["prune_finished"],
                    {"statuses": list(FINISHED_STATUSES), "before": float(finished_before)},
                )
                row = await cur.fetchone()
                deleted += int(row[0]) if row else 0
            cur = await conn.execute(self._sql["prune_versions"], {"keep": keep})
            row = await cur.fetchone()
            deleted += int(row[0]) if row else 0
        return deleted

    # ------------------------------------------------------------------ CheckpointPort

    async def save(self, record: CheckpointRecord, *, expected_version: int | None) -> None:
        """Store ``record`` when the run's latest version is ``expected_version`` (None: no versions),
        in one statement. Raises CheckpointConflict (nothing written) otherwise, ValueError when
        ``record.version`` is not ``expected_version + 1`` (or 1)."""
        params = _save_params(record, expected_version)
        sql = self._sql["save_first" if expected_version is None else "save_next"]
        async with self._connection("save") as conn:
            cur = await conn.execute(sql, params)
            row = await cur.fetchone()
            if row is not None and row[0] == 1:
                return
            cur = await conn.execute(self._sql["run_version"], (record.run_id,))
            actual_row = await cur.fetchone()
        raise CheckpointConflict(record.run_id, expected_version, None if actual_row is None else actual_row[0])

    async def save_many(
        self, records: Sequence[CheckpointRecord], *, expected_version: int | None, writes: Sequence[PendingWrite] = ()
    ) -> None:
        """``save`` of each of ``records`` (consecutive versions of one run) and ``put_write`` of each
        of ``writes`` in one transaction sent as one pipeline with one Sync: one round trip. A
        conflict of any record aborts the transaction on the server (nothing written) and raises
        CheckpointConflict."""
        run_ids = {r.run_id for r in records}
        if len(run_ids) > 1:
            raise ValueError(f"save_many stores versions of one run, got {sorted(run_ids)}")
        statements: list[tuple[str, dict[str, Any]]] = []
        expected = expected_version
        for r in records:
            statements.append((self._sql["save_first_strict" if expected is None else "save_next_strict"],
                               _save_params(r, expected)))
            expected = r.version
        rows = []
        for w in writes:
            if not isinstance(w.payload, str):
                raise TypeError(f"payload must be codec text (str), got {type(w.payload).__name__}")
            rows.append((w.run_id, w.version, w.task_id, w.payload))
        conflict = False
        async with self._connection("save") as conn:
            try:
                # no explicit transaction: every statement up to the pipeline's one Sync runs in
                # one implicit transaction of the extended protocol (atomic; an error aborts all of
                # it), and BEGIN / COMMIT would each wait for the server (3 round trips, not 1)
                async with conn.pipeline():
                    for sql, params in statements:
                        await conn.execute(sql, params)
                    for row in rows:
                        await conn.execute(self._sql["put_write"], row)
            except psycopg.errors.DivisionByZero:  # a record's version check failed (see save_next_strict)
                conflict = True
            if conflict:
                cur = await conn.execute(self._sql["run_version"], (records[0].run_id,))
                actual_row = await cur.fetchone()
        if conflict:
            raise CheckpointConflict(records[0].run_id, expected_version,
                                     None if actual_row is None else actual_row[0])

    async def latest(self, run_id: str) -> StoredCheckpoint | None:
        """The run's latest version with its log, or None for an unknown run."""
        row = await self._fetchone("latest", self._sql["latest"], (run_id,))
        return None if row is None else _stored(row)

    async def at_version(self, run_id: str, version: int) -> StoredCheckpoint | None:
        """Version ``version`` of the run with the log up to it, or None (unknown or pruned)."""
        row = await self._fetchone("at_version", self._sql["at_version"], (run_id, version))
        return None if row is None else _stored(row)

    async def list_versions(self, run_id: str) -> Sequence[CheckpointInfo]:
        """Headers of the run's stored versions, oldest first."""
        rows = await self._fetchall("list_versions", self._sql["list_versions"], (run_id,))
        return [_info(r) for r in rows]

    async def list_runs(
        self, *, status: str | None = None, parent_run_id: str | None = None, limit: int = 100
    ) -> Sequence[CheckpointInfo]:
        """The latest version of each run, newest first (by ``created_at``, then save order)."""
        rows = await self._fetchall(
            "list_runs",
            self._sql["list_runs"],
            {"status": status, "parent": parent_run_id, "limit": max(0, int(limit))},
        )
        return [_info(r) for r in rows]

    async def put_write(self, run_id: str, version: int, task_id: str, payload: str) -> None:
        """Record ``payload`` (codec text) for ``task_id`` of the step after ``version`` (replaces)."""
        async with self._connection("put_write") as conn:
            await conn.execute(self._sql["put_write"], (run_id, version, task_id, payload))

    async def pending_writes(self, run_id: str, version: int) -> Mapping[str, str]:
        """``task_id -> payload`` recorded for the step after ``version``, in recording order."""
        rows = await self._fetchall("pending_writes", self._sql["pending_writes"], (run_id, version))
        return {task_id: payload for task_id, payload in rows}

    async def delete_run(self, run_id: str) -> bool:
        """Delete every version, log entry and pending write of ``run_id``; True when anything existed."""
        row = await self._fetchone("delete", self._sql["delete_run"], {"run_id": run_id})
        return bool(row and row[0])


def _save_params(record: CheckpointRecord, expected_version: int | None) -> dict[str, Any]:
    """The parameters of a save statement for ``record``; ValueError when its version does not
    follow ``expected_version``."""
    want = 1 if expected_version is None else expected_version + 1
    if record.version != want:
        raise ValueError(
            f"record version {record.version} must be {want} when expected_version is {expected_version}"
        )
    return {
        "run_id": record.run_id,
        "version": record.version,
        "expected": expected_version,
        "status": record.status,
        "state": record.state,
        "parent": record.parent_run_id,
        "meta": json.dumps(record.metadata, separators=(",", ":")),
        "created": float(record.created_at),
        "n": len(record.entries),
        "entries": list(record.entries),
    }


def build(config: PostgresConfig) -> PostgresStore:
    """Factory of the ``postgres`` store component (does not connect)."""
    return PostgresStore(config)

