"""The Redis backend: :class:`RedisStore`, a :class:`~seamkit._ports.StorePort` and a
:class:`~seamkit._ports.CheckpointPort` on redis-py's asyncio client.

- Values are codec text (:mod:`seamkit._durability.codec`); TTLs are native (``PX``,
  millisecond resolution). ``increment`` is a compare-and-set in Lua (exact for any size of
  integer, keeps the TTL); ``append`` pushes onto a Redis list.
- A checkpoint ``save`` is one Lua script: it checks the run's latest version and writes the
  record, state, log entries and indexes, or writes nothing and reports the conflict. ``latest``
  and ``at_version`` are one round trip each (the log prefix is ``LRANGE``'d by the stored log
  length of that version). Key layout: :mod:`seamkit_redis._lua`.
- Every driver error becomes :class:`~seamkit.errors.StoreUnavailable` (the URL's password is
  never in it). Connection errors are retried by redis-py (``retries``, exponential backoff).
  As with any network store, a command whose connection broke after the server ran it may run
  again on retry: ``append`` may then add twice; ``save`` cannot (its version check turns the
  repeat into a :class:`~seamkit.errors.CheckpointConflict`).
"""

from __future__ import annotations

import asyncio
import json
import math
import numbers
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from seamkit.errors import CheckpointConflict, StoreUnavailable, StoreValueError, TTLNotSupported
from seamkit.plugin import (
    CheckpointInfo,
    CheckpointRecord,
    PendingWrite,
    SingleFlight,
    StoredCheckpoint,
    codec,
    scope_namespace,
)
from seamkit.values import Scope, freeze

from seamkit_redis import _lua
from seamkit_redis.config import RedisConfig

__all__ = ["RedisStore", "build"]

#: At most this many ARGV in one CP_SAVE_MANY (Lua's unpack() is limited by its C stack, ~8000).
_UNPACK_MAX = 7000

_MISSING: Any = object()
_CAS_ATTEMPTS = 200


def build(config: RedisConfig) -> RedisStore:
    """Factory of the ``redis`` store component: a :class:`RedisStore` for ``config`` (does not connect)."""
    return RedisStore(
        config.url,
        prefix=config.prefix,
        socket_timeout=config.socket_timeout,
        socket_connect_timeout=config.socket_connect_timeout,
        health_check_interval=config.health_check_interval,
        retries=config.retries,
        max_connections=config.max_connections,
    )


def _redact_url(url: str) -> str:
    """``url`` with any password (userinfo or ``password=`` query parameter) replaced by ``***``."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, host = netloc.rpartition("@")
            user, sep, _pw = userinfo.partition(":")
            netloc = f"{user}:***@{host}" if sep else f"***@{host}"
        query = parts.query
        if query:
            pairs = [(k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(query, keep_blank_values=True)]
            query = urlencode(pairs, safe="*")
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "<redis url>"


def _url_secrets(url: str) -> list[str]:
    """The strings that must never appear in a message: the URL, its password (raw and decoded)."""
    found = {url}
    try:
        parts = urlsplit(url)
        if parts.password:
            found.update({parts.password, unquote(parts.password)})
        if "@" in parts.netloc and not parts.password:
            user = parts.netloc.rpartition("@")[0]
            if user:
                found.update({user, unquote(user)})  # redis://token@host: the token is the password
        for k, v in parse_qsl(parts.query, keep_blank_values=True):
            if k.lower() == "password" and v:
                found.add(v)
                found.add(quote(v, safe=""))
    except ValueError:
        pass
    return sorted((s for s in found if s), key=len, reverse=True)


class _Translate:
    """Context manager turning driver errors into :class:`StoreUnavailable` without secrets."""

    __slots__ = ("_store", "_what")

    def __init__(self, store: RedisStore, what: str) -> None:
        self._store = store
        self._what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Literal[False]:
        if exc is None or not isinstance(exc, RedisError | OSError):
            return False
        message = self._store._scrub(f"{type(exc).__name__}: {exc}")
        raise StoreUnavailable(f"redis store {self._store.safe_url} failed to {self._what}: {message}") from None


def _abandon(client: aioredis.Redis) -> None:
    """Best effort for a client whose event loop is gone (nothing can be awaited, the loop cannot
    close transports): shut its sockets down so the server drops the connections now; the file
    descriptors are released when the objects are collected."""
    pool = client.connection_pool
    conns = [*getattr(pool, "_available_connections", ()), *getattr(pool, "_in_use_connections", ())]
    for conn in conns:
        try:
            sock = conn._writer.transport.get_extra_info("socket")
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except Exception:  # nothing more can be done for a dead loop's sockets
            continue


def _check_ttl(ttl: Any, resolution: float) -> int | None:
    """``ttl`` seconds as whole milliseconds for ``PX``; ``None`` for no expiry; TTLNotSupported otherwise."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, numbers.Real):
        raise TTLNotSupported(f"ttl must be a number of seconds or None, got {type(ttl).__name__}")
    seconds = float(ttl)
    if not math.isfinite(seconds) or seconds <= 0:
        raise TTLNotSupported(f"ttl must be finite and positive, got {ttl!r}")
    if seconds < resolution:
        raise TTLNotSupported(f"ttl {ttl!r} is finer than this store's resolution of {resolution} s")
    return max(1, round(seconds * 1000))


def _decode_list(kind: str, payload: Any, key: str) -> list[Any]:
    if kind == "l":
        return [codec.loads(item) for item in payload]
    if kind == "s":
        value = codec.loads(payload)
        if isinstance(value, list | tuple):
            return list(value)
        raise StoreValueError(f"key {key!r} holds a {type(value).__name__}, not a list")
    raise StoreValueError(f"key {key!r} holds a Redis {payload} this store did not write")


class RedisStore:
    """A key-value store and checkpoint store on one Redis server.

    ``url``: ``redis://``, ``rediss://`` or ``unix://`` URL (a ``SecretStr`` or ``str``; its
    password never appears in ``repr``, errors or logs). ``prefix``: every key starts with
    ``<prefix>:``. ``socket_timeout`` / ``socket_connect_timeout`` in seconds;
    ``health_check_interval`` in seconds (0: off); ``retries`` of a command after a connection
    error; ``max_connections`` of the pool.

    Constructing it does not connect; the client is created on first use. ``aclose()`` releases
    the connections (the store reconnects if used again); usable as ``async with``.
    ``ttl_resolution`` is 0.001 s. Every method raises :class:`~seamkit.errors.StoreUnavailable`
    when Redis cannot be reached or fails.

    ``persistent`` is ``True``, meaning: the data lives in the Redis server, so it outlives this
    object and this process (another store on the same URL and prefix sees every acknowledged
    write, and killing the client loses none). Whether it outlives a *server* restart or crash
    is the server's configuration, not this store's: with ``appendonly yes`` and
    ``appendfsync everysec`` (the usual AOF setting) up to about a second of writes may be lost;
    ``always`` loses none; RDB snapshots alone lose everything since the last snapshot; with
    neither (``save ""`` and no AOF) nothing survives a restart. ``maxmemory`` eviction
    policies other than ``noeviction`` may also drop keys. Configure the server for the
    durability your runs need.
    """

    #: outlives the client and its process; a server restart keeps what its AOF/RDB config keeps
    persistent: bool = True
    ttl_resolution: float = 0.001

    def __init__(
        self,
        url: Any = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "seamkit",
        socket_timeout: float = 5.0,
        socket_connect_timeout: float = 5.0,
        health_check_interval: int = 30,
        retries: int = 3,
        max_connections: int = 64,
    ) -> None:
        raw = url.get_secret_value() if hasattr(url, "get_secret_value") else str(url)
        self.__url = raw
        self._secrets = _url_secrets(raw)
        self.safe_url = _redact_url(raw)
        self.prefix = prefix
        self._socket_timeout = socket_timeout
        self._socket_connect_timeout = socket_connect_timeout
        self._health_check_interval = health_check_interval
        self._retries = retries
        self._max_connections = max_connections
        # waiting for a free pooled connection (all busy) is bounded like a command
        self._pool_timeout = socket_connect_timeout + socket_timeout
        self._redis: aioredis.Redis | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scripts: dict[str, Any] = {}
        self._flight = SingleFlight()
        self._kv = f"{prefix}:kv:"
        self._expiry_index = f"{prefix}:kvx"
        self._cp = f"{prefix}:cp:"

    def __repr__(self) -> str:
        return f"RedisStore(url={self.safe_url!r}, prefix={self.prefix!r})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("RedisStore cannot be pickled (it holds a connection URL)")

    def _scrub(self, text: str) -> str:
        from seamkit.plugin import mask_secrets  # a short password: only inside the URL, its user:pw@

        return mask_secrets(text, self._secrets)

    # -- connection -------------------------------------------------------------------------

    def _client(self) -> aioredis.Redis:
        loop = asyncio.get_running_loop()
        client = self._redis
        if client is not None and self._loop is not loop:
            # used from another event loop (e.g. a second run_sync): the pool's connections belong
            # to the old loop and cannot be awaited here; drop them and connect afresh
            _abandon(client)
            client = self._redis = None
        if client is None:
            try:
                pool = aioredis.BlockingConnectionPool.from_url(
                    self.__url,
                    timeout=self._pool_timeout,
                    decode_responses=True,
                    encoding_errors="surrogatepass",
                    socket_timeout=self._socket_timeout,
                    socket_connect_timeout=self._socket_connect_timeout,
                    health_check_interval=self._health_check_interval,
                    retry=Retry(
                        ExponentialBackoff(cap=1.0, base=0.05),
                        self._retries,
                        supported_errors=(RedisConnectionError,),
                    ),
                    max_connections=self._max_connections,
                )
                client = aioredis.Redis.from_pool(pool)
            except (ValueError, TypeError, RedisError) as exc:
                message = self._scrub(f"{type(exc).__name__}: {exc}")
                raise StoreUnavailable(f"redis store {self.safe_url}: invalid connection settings: {message}") from None
            self._redis = client
            self._loop = loop
            self._scripts = {}
        return client

    def _script(self, name: str) -> Any:
        client = self._client()  # first: it resets the scripts when the client is replaced
        script = self._scripts.get(name)
        if script is None:
            script = client.register_script(getattr(_lua, name))
            self._scripts[name] = script
        return script

    async def _run(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        return await self._script(name)(keys=list(keys), args=list(args))

    async def ping(self) -> None:
        """Check the server answers. Raises StoreUnavailable."""
        with _Translate(self, "ping"):
            await self._client().ping()

    async def aclose(self) -> None:
        """Close the connection pool (idempotent); a later call reconnects."""
        client, self._redis = self._redis, None
        self._scripts = {}
        if client is not None and self._loop is not asyncio.get_running_loop():
            _abandon(client)
        elif client is not None:
            with _Translate(self, "close"):
                await client.aclose()

    async def __aenter__(self) -> RedisStore:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- StorePort --------------------------------------------------------------------------

    def _key(self, scope: Scope, key: str) -> str:
        if not isinstance(key, str):
            raise TypeError(f"store keys are str, got {type(key).__name__}")
        return f"{self._kv}{scope_namespace(scope)}:{key}"

    async def _read(self, rkey: str, key: str) -> Any:
        with _Translate(self, "read a key"):
            found = await self._run("KV_GET", [rkey], [])
        if not found:
            return _MISSING
        kind, payload = found
        if kind == "s":
            return codec.loads(payload)
        return _decode_list(kind, payload, key)

    async def get(self, scope: Scope, key: str, default: Any = None) -> Any:
        """The value of ``key`` in ``scope`` (a list for a key built by ``append``), or ``default``
        when missing or expired. Raises StoreUnavailable, CodecError for an undecodable value."""
        value = await self._read(self._key(scope, key), key)
        return default if value is _MISSING else value

    async def set(self, scope: Scope, key: str, value: Any, *, ttl: float | None = None) -> None:
        """Store ``value`` (replacing any value and TTL). ``ttl`` seconds (>= 0.001) or ``None``.
        Raises TTLNotSupported, CodecError (value not encodable), StoreUnavailable."""
        px = _check_ttl(ttl, self.ttl_resolution)
        rkey = self._key(scope, key)
        text = codec.dumps(value)
        with _Translate(self, "write a key"):
            await self._run("KV_SET", [rkey, self._expiry_index], [text, "" if px is None else str(px)])

    async def get_or_set(
        self, scope: Scope, key: str, producer: Callable[[], Awaitable[Any]], *, ttl: float | None = None
    ) -> Any:
        """The stored value, or ``await producer()`` stored with ``ttl`` and returned. Concurrent
        misses in this process run ``producer`` once; a raising producer stores nothing and its
        error reaches every waiter."""
        _check_ttl(ttl, self.ttl_resolution)
        rkey = self._key(scope, key)

        async def fill() -> Any:
            value = await self._read(rkey, key)
            if value is not _MISSING:
                return value
            value = await producer()
            await self.set(scope, key, value, ttl=ttl)
            return value

        return await self._flight.run(rkey, fill)

    async def delete(self, scope: Scope, key: str) -> bool:
        """Delete ``key`` in ``scope``; ``True`` when it existed (and had not expired)."""
        rkey = self._key(scope, key)
        with _Translate(self, "delete a key"):
            async with self._client().pipeline(transaction=True) as pipe:
                pipe.delete(rkey)
                pipe.zrem(self._expiry_index, rkey)
                deleted, _ = await pipe.execute()
        return bool(deleted)

    async def append(self, scope: Scope, key: str, value: Any) -> int:
        """Append ``value`` to the list at ``key`` (created when missing; a stored list value is
        extended) and return the new length. Keeps the key's TTL. Raises StoreValueError when the
        key holds a non-list value (left unchanged)."""
        rkey = self._key(scope, key)
        item = codec.dumps(value)
        for _ in range(_CAS_ATTEMPTS):
            with _Translate(self, "append"):
                result = await self._run("APPEND", [rkey], [item])
            if isinstance(result, int):
                return result
            kind, payload = result
            items = _decode_list(kind, payload, key)
            encoded = [codec.dumps(x) for x in items]
            with _Translate(self, "append"):
                n = await self._run("APPEND_CONVERT", [rkey], [payload, *encoded, item])
            if n >= 0:
                return int(n)
        raise StoreUnavailable(f"append to {key!r}: the value kept changing (contention)")

    async def list(self, scope: Scope, key: str, start: int = 0, stop: int | None = None) -> Sequence[Any]:
        """Items ``[start:stop]`` of the list at ``key`` (Python slice semantics); ``[]`` when
        missing. Raises StoreValueError when the key holds a non-list value."""
        rkey = self._key(scope, key)
        if start >= 0 and (stop is None or stop >= 0):
            if stop is not None and stop <= start:
                lo, hi = 1, 0  # an empty range that still checks the key's type
            else:
                lo, hi = start, (-1 if stop is None else stop - 1)
            sliced = True
        else:
            lo, hi, sliced = 0, -1, False
        with _Translate(self, "read a list"):
            found = await self._run("KV_LIST", [rkey], [lo, hi])
        if not found:
            return []
        kind, payload = found
        items = _decode_list(kind, payload, key)
        if kind == "l" and sliced:
            return items
        return items[start:stop]

    async def increment(self, scope: Scope, key: str, by: int = 1) -> int:
        """Add ``by`` to the integer at ``key`` (missing = 0), atomically, keeping its TTL; returns
        the new value. Raises StoreValueError (value left unchanged) when the stored value is not
        an ``int`` (``bool`` is not), TypeError when ``by`` is not an ``int``."""
        if type(by) is not int:
            raise TypeError(f"increment 'by' must be an int, got {type(by).__name__}")
        rkey = self._key(scope, key)
        with _Translate(self, "increment"):
            found = await self._run("KV_GET", [rkey], [])
        current: str | None = None
        if found:
            kind, payload = found
            if kind != "s":
                raise StoreValueError(f"cannot increment key {key!r}: it holds a list, not an integer")
            current = payload
        for _ in range(_CAS_ATTEMPTS):
            if current is None:
                new = by
            else:
                value = codec.loads(current)
                if type(value) is not int:
                    raise StoreValueError(f"cannot increment key {key!r}: it holds a {type(value).__name__}, "
                                          "not an integer")
                new = value + by
            with _Translate(self, "increment"):
                result = await self._run(
                    "CAS_SET", [rkey], ["0" if current is None else "1", current or "", codec.dumps(new)]
                )
            if result[0] == 1:
                return new
            if result[0] == -1:
                raise StoreValueError(f"cannot increment key {key!r}: it holds a list, not an integer")
            current = result[1] if len(result) > 1 else None
        raise StoreUnavailable(f"increment of {key!r}: the value kept changing (contention)")

    async def prune(self) -> int:
        """Count (and forget) the keys whose TTL has passed since the last prune: Redis deletes
        them itself (they never read back); this store keeps an index of keys set with a TTL so
        the count is exact. Returns how many expired."""
        total = 0
        batch = 500
        with _Translate(self, "prune expired keys"):
            while True:
                expired, dropped, seen = await self._run("KV_PRUNE", [self._expiry_index], [batch])
                total += int(expired)
                if int(seen) < batch or int(expired) + int(dropped) == 0:
                    return total

    # -- CheckpointPort ---------------------------------------------------------------------

    def _run_keys(self, run_id: str) -> tuple[str, str, str, str, str]:
        if not isinstance(run_id, str) or not run_id:
            raise ValueError("run_id must be a non-empty str")
        p = self._cp
        return f"{p}meta:{run_id}", f"{p}rec:{run_id}", f"{p}log:{run_id}", f"{p}wv:{run_id}", f"{p}state:{run_id}"

    async def save(self, record: CheckpointRecord, *, expected_version: int | None) -> None:
        """Store ``record`` when the run's latest version is ``expected_version`` (``None``: no
        versions); else raise CheckpointConflict and write nothing. ``record.version`` must be
        ``expected_version + 1`` (or 1), else ValueError. One Lua script, atomic on the server."""
        self._check_follows(record, expected_version)
        meta, rec, log, _wv, state = self._run_keys(record.run_id)
        args = self._save_args(record, expected_version)
        with _Translate(self, "save a checkpoint"):
            result = await self._run("CP_SAVE", [meta, rec, log, state, f"{self._cp}runs"], args)
        if result[0] != 1:
            actual = int(result[1]) if result[1] else None
            raise CheckpointConflict(record.run_id, expected_version, actual)

    async def save_many(
        self, records: Sequence[CheckpointRecord], *, expected_version: int | None, writes: Sequence[PendingWrite] = ()
    ) -> None:
        """``save`` of each of ``records`` (consecutive versions of one run) and ``put_write`` of
        each of ``writes`` in one Lua script: one round trip, atomic on the server (a conflict of
        the first record writes nothing)."""
        run_ids = {r.run_id for r in records} | {w.run_id for w in writes}
        if len(run_ids) != 1:
            raise ValueError(f"save_many stores one run's versions and writes, got {sorted(run_ids)}")
        expected = expected_version
        args: list[Any] = [str(len(records))]
        for r in records:
            self._check_follows(r, expected)
            one = self._save_args(r, expected)
            args.append(str(len(one)))
            args.extend(one)
            expected = r.version
        (run_id,) = run_ids
        meta, rec, log, wv, state = self._run_keys(run_id)
        for w in writes:
            if not isinstance(w.payload, str):
                raise TypeError(f"payload must be codec text (str), got {type(w.payload).__name__}")
            args.extend((f"{self._cp}w:{int(w.version)}:{run_id}", str(int(w.version)), w.task_id, w.payload))
        if len(args) > _UNPACK_MAX:  # Lua's unpack() has a stack limit: one call per record then
            for r in records:
                await self.save(r, expected_version=expected_version)
                expected_version = r.version
            for w in writes:
                await self.put_write(w.run_id, w.version, w.task_id, w.payload)
            return
        with _Translate(self, "save checkpoints"):
            result = await self._run("CP_SAVE_MANY", [meta, rec, log, state, f"{self._cp}runs", wv], args)
        if result[0] != 1:
            actual = int(result[1]) if result[1] else None
            raise CheckpointConflict(run_id, expected_version, actual)

    @staticmethod
    def _check_follows(record: CheckpointRecord, expected_version: int | None) -> None:
        if not isinstance(record, CheckpointRecord):
            raise TypeError(f"save needs a CheckpointRecord, got {type(record).__name__}")
        want = 1 if expected_version is None else expected_version + 1
        if record.version != want:
            raise ValueError(
                f"record version {record.version} does not follow expected version {expected_version}"
            )

    def _save_args(self, record: CheckpointRecord, expected_version: int | None) -> list[Any]:
        """CP_SAVE's ARGV for ``record``."""
        header = json.dumps(
            {"s": record.status, "p": record.parent_run_id, "m": record.metadata, "t": record.created_at},
            separators=(",", ":"),
        )
        parent = "" if record.parent_run_id is None else "=" + record.parent_run_id
        return [
            self._cp,
            record.run_id,
            "" if expected_version is None else str(expected_version),
            str(record.version),
            record.status,
            repr(float(record.created_at)),
            parent,
            str(len(record.entries)),
            header,
            record.state,
            *record.entries,
        ]

    def _parse_rec(self, run_id: str, version: str, value: str) -> tuple[int, int, dict[str, Any]]:
        counts, _, header = value.partition("\n")
        n, k = counts.split(" ")
        return int(n), int(k), json.loads(header)

    async def _read_checkpoint(self, run_id: str, version: int | None) -> StoredCheckpoint | None:
        meta, rec, log, _wv, state = self._run_keys(run_id)
        with _Translate(self, "read a checkpoint"):
            found = await self._run("CP_READ", [meta, rec, log, state], ["" if version is None else str(version)])
        if not found:
            return None
        v, value, state_text, entries = found
        n, k, h = self._parse_rec(run_id, v, value)
        entries = tuple(entries)
        record = CheckpointRecord(
            run_id=run_id,
            version=int(v),
            status=h["s"],
            state=state_text,
            entries=entries[n - k : n],
            parent_run_id=h["p"],
            metadata=h["m"],
            created_at=float(h["t"]),
        )
        return StoredCheckpoint(record=record, log=entries)

    async def latest(self, run_id: str) -> StoredCheckpoint | None:
        """The run's latest version with its log, or ``None``. One round trip."""
        return await self._read_checkpoint(run_id, None)

    async def at_version(self, run_id: str, version: int) -> StoredCheckpoint | None:
        """Version ``version`` of the run with the log up to it, or ``None`` (unknown or pruned)."""
        if type(version) is not int:
            raise TypeError("version must be an int")
        if version < 1:
            return None
        return await self._read_checkpoint(run_id, version)

    def _info(self, run_id: str, version: str, value: str) -> CheckpointInfo:
        _n, _k, h = self._parse_rec(run_id, version, value)
        return CheckpointInfo(
            run_id=run_id,
            version=int(version),
            status=h["s"],
            parent_run_id=h["p"],
            metadata=freeze(h["m"]),
            created_at=float(h["t"]),
        )

    async def list_versions(self, run_id: str) -> Sequence[CheckpointInfo]:
        """A header per stored version of the run, oldest first (``[]`` for an unknown run)."""
        _meta, rec, _log, _wv, _state = self._run_keys(run_id)
        with _Translate(self, "list versions"):
            found = await self._client().hgetall(rec)
        infos = [self._info(run_id, str(v), str(value)) for v, value in found.items()]
        infos.sort(key=lambda i: i.version)
        return infos

    async def list_runs(
        self, *, status: str | None = None, parent_run_id: str | None = None, limit: int = 100
    ) -> Sequence[CheckpointInfo]:
        """The latest version of each run, newest (``created_at``) first, the later save first
        among equal ``created_at``, at most ``limit``; only runs whose latest status is ``status``
        and/or children of ``parent_run_id``."""
        if limit <= 0:
            return []
        if parent_run_id is not None:
            index, filt = f"{self._cp}parent:{parent_run_id}", status or ""
        elif status is not None:
            index, filt = f"{self._cp}status:{status}", ""
        else:
            index, filt = f"{self._cp}runs", ""
        with _Translate(self, "list runs"):
            flat = await self._run("CP_LIST_RUNS", [index], [self._cp, str(limit), filt])
        found = [(self._info(flat[i], flat[i + 1], flat[i + 2]), int(flat[i + 3])) for i in range(0, len(flat), 4)]
        # equal created_at: the later save first (the index orders ties by run id)
        found.sort(key=lambda t: (t[0].created_at, t[1]), reverse=True)
        return [info for info, _touched in found[:limit]]

    async def put_write(self, run_id: str, version: int, task_id: str, payload: str) -> None:
        """Record ``payload`` (codec text) for ``task_id`` of the step after ``version``."""
        _meta, _rec, _log, wv, _state = self._run_keys(run_id)
        with _Translate(self, "record a pending write"):
            async with self._client().pipeline(transaction=True) as pipe:
                pipe.hset(f"{self._cp}w:{int(version)}:{run_id}", task_id, payload)
                pipe.sadd(wv, str(int(version)))
                await pipe.execute()

    async def pending_writes(self, run_id: str, version: int) -> Mapping[str, str]:
        """Task id -> payload recorded for ``version`` of the run (``{}`` when none)."""
        self._run_keys(run_id)
        with _Translate(self, "read pending writes"):
            found = await self._client().hgetall(f"{self._cp}w:{int(version)}:{run_id}")
        return {str(k): str(v) for k, v in found.items()}

    async def delete_run(self, run_id: str) -> bool:
        """Delete every version, log entry and pending write of the run; ``True`` when it existed."""
        meta, rec, log, wv, state = self._run_keys(run_id)
        with _Translate(self, "delete a run"):
            removed = await self._run("CP_DELETE", [meta, rec, log, wv, state, f"{self._cp}runs"], [self._cp, run_id])
        return bool(removed)

    async def prune_runs(self, *, keep_last: int = 1, finished_before: float | None = None) -> int:
        """Keep each run's last ``keep_last`` (>= 1) versions (the log is kept) and delete whole
        runs whose latest status is ``done``/``failed`` and whose latest version was created before
        ``finished_before`` (unix seconds). Returns the number of versions deleted. Each run is
        pruned atomically (one script per run)."""
        if type(keep_last) is not int or keep_last < 1:
            raise ValueError("keep_last must be an int >= 1")
        fb = "" if finished_before is None else repr(float(finished_before))
        runs_key = f"{self._cp}runs"
        total = 0
        with _Translate(self, "prune checkpoints"):
            client = self._client()
            run_ids = [r async for r in client.zscan_iter(runs_key, count=500)]
            for i in range(0, len(run_ids), 200):
                chunk = run_ids[i : i + 200]
                async with client.pipeline(transaction=False) as pipe:
                    for item in chunk:
                        run_id = item[0] if isinstance(item, tuple | list) else item
                        meta, rec, log, wv, state = self._run_keys(run_id)
                        await self._script("CP_PRUNE_RUN")(
                            keys=[meta, rec, log, wv, state, runs_key],
                            args=[self._cp, run_id, str(keep_last), fb],
                            client=pipe,
                        )
                    results = await pipe.execute()
                total += sum(int(r) for r in results)
        return total

