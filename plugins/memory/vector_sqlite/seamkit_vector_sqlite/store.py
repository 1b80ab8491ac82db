"""The sqlite-vec backend: a :class:`~seamkit._ports.VectorPort` on one SQLite file.

Layout
------
- ``vec_items`` (a regular table): ``rid`` (integer row id), ``tenant``, ``id``, ``metadata`` (SQLite
  JSONB: filters read it without re-parsing JSON text); ``UNIQUE (tenant, id)`` - ids are per tenant.
- ``vec_index`` (a sqlite-vec ``vec0`` virtual table): ``rowid`` = ``vec_items.rid``, ``tenant`` as
  the vec0 *partition key* (the index is sharded per tenant: a KNN query only reads that tenant's
  vectors), ``embedding float[dimensions]`` with the configured ``distance_metric``.
- ``vec_meta``: ``dimensions``, ``metric`` and ``schema_version``, checked on every open.

Queries are exact (vec0 scans every vector of the tenant: O(n_tenant x dimensions)). A ``where``
filter selects the matching ``rid`` s from ``vec_items`` (O(n_tenant) JSON checks) and hands them to
the KNN as ``rowid IN (...)``, so the filter applies *during* the search: ``k`` results whenever at
least ``k`` items match.

Concurrency
-----------
One connection per store object, created and used only by one worker thread (a single-thread
executor). Every operation is ONE function run on that thread (``BEGIN IMMEDIATE`` ... ``COMMIT``
for writes), so concurrent tasks in one process never interleave statements, and an operation whose
awaiting task is cancelled still runs whole. Other processes share the file through WAL and
``busy_timeout``.

SQLite build: the standard library's ``sqlite3`` is often compiled without loadable extensions
(macOS, pyenv), so the connection comes from ``sqlean`` (sqlean.py: the ``sqlite3`` module with
SQLite 3.50 and extension loading), on every platform.
"""

from __future__ import annotations

import asyncio
import json
import math
import struct
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, TypeVar

import sqlean  # type: ignore[import-untyped]
import sqlite_vec  # type: ignore[import-untyped]
from seamkit.errors import StoreUnavailable, StoreValueError
from seamkit.values import Scope

from seamkit_vector_sqlite.config import VectorSqliteConfig

__all__ = ["MEMORY", "MAX_K", "SCHEMA_VERSION", "SqliteVectorStore", "VectorDimensionError", "build"]

SCHEMA_VERSION = 1
MEMORY = ":memory:"
MAX_K = 4096  # sqlite-vec's own limit on k
_INT64 = (-(2**63), 2**63 - 1)
_FLOAT32_MAX = 3.4028234663852886e38
_T = TypeVar("_T")
Metric = Literal["cosine", "l2"]


class VectorDimensionError(StoreValueError, ValueError):
    """A vector's length is not the store's ``dimensions`` (or a file was created with other
    ``dimensions`` / ``metric`` than the config asks for)."""


# ---------------------------------------------------------------------------------------------
# input checks (run in the caller, before any thread hand-off)


def _check_scope(scope: Any) -> str:
    if not isinstance(scope, Scope):
        raise TypeError(f"scope must be a seamkit Scope, got {type(scope).__name__}")
    return scope.tenant


def _blob(vector: Any, dimensions: int, metric: str, what: str) -> bytes:
    """``vector`` as sqlite-vec's float32 blob; raises VectorDimensionError / ValueError / TypeError."""
    if isinstance(vector, str | bytes | Mapping):
        raise TypeError(f"{what} must be a sequence of numbers, got {type(vector).__name__}")
    try:
        values = [float(x) for x in vector]
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be a sequence of numbers ({exc})") from None
    if len(values) != dimensions:
        raise VectorDimensionError(
            f"{what} has {len(values)} dimensions; this store holds {dimensions}-dimensional vectors"
        )
    if not all(math.isfinite(x) for x in values):
        raise ValueError(f"{what} contains NaN or infinity")
    if metric == "cosine" and not any(values):
        raise ValueError(f"{what} is the zero vector: it has no direction for cosine distance")
    if any(abs(x) > _FLOAT32_MAX for x in values):
        raise ValueError(f"{what} has a value outside float32 range (|x| > {_FLOAT32_MAX:.4g})")
    return struct.pack(f"{dimensions}f", *values)


def _metadata_text(metadata: Any, item_id: str) -> str:
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata of {item_id!r} must be a mapping, got {type(metadata).__name__}")
    if not all(isinstance(key, str) for key in metadata):
        raise TypeError(f"metadata keys of {item_id!r} must be strings")
    try:
        return json.dumps(dict(metadata), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"metadata of {item_id!r} must be JSON data ({exc})") from None


def _scalar_condition(value: Any, path: str, key: str) -> tuple[str, list[Any]]:
    """SQL and parameters matching items whose metadata ``key`` (at JSON ``path``) equals ``value``
    (type-exact except int/float: ``True`` never equals ``1``)."""
    if value is None:
        return "json_type(metadata, ?) = 'null'", [path]
    if isinstance(value, bool):
        return "json_type(metadata, ?) = ?", [path, "true" if value else "false"]
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise ValueError(f"filter value for {key!r} is outside the 64-bit integer range")
        return "(json_type(metadata, ?) IN ('integer', 'real') AND json_extract(metadata, ?) = ?)", [path, path, value]
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"filter value for {key!r} must be finite")
        return "(json_type(metadata, ?) IN ('integer', 'real') AND json_extract(metadata, ?) = ?)", [path, path, value]
    if isinstance(value, str):
        return "(json_type(metadata, ?) = 'text' AND json_extract(metadata, ?) = ?)", [path, path, value]
    raise TypeError(
        f"filter value for {key!r} must be a str, int, float, bool or None (or {{'$in': [...]}}), "
        f"got {type(value).__name__}"
    )


def _where_sql(where: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """``where`` as an SQL condition on ``vec_items.metadata`` (``"1"`` when empty). Keys are ANDed;
    a value is a JSON scalar (equality) or ``{"$in": [scalars]}``. Raises TypeError / ValueError."""
    if where is None:
        return "1", []
    if not isinstance(where, Mapping):
        raise TypeError(f"where must be a mapping of metadata key to value, got {type(where).__name__}")
    parts: list[str] = []
    params: list[Any] = []
    for key, value in where.items():
        if not isinstance(key, str) or not key or '"' in key:
            raise ValueError(f"filter key {key!r} must be a non-empty string without double quotes")
        path = f'$."{key}"'
        if isinstance(value, Mapping):
            if set(value) != {"$in"}:
                raise ValueError(f"filter for {key!r}: the only operator is '$in', got {sorted(map(str, value))}")
            options = value["$in"]
            if isinstance(options, str | bytes) or not isinstance(options, Sequence | set | frozenset):
                raise TypeError(f"filter for {key!r}: '$in' takes a list of values")
            if not options:
                parts.append("0")
                continue
            ors = [_scalar_condition(option, path, key) for option in options]
            parts.append("(" + " OR ".join(sql for sql, _ in ors) + ")")
            for _, p in ors:
                params.extend(p)
        else:
            sql, p = _scalar_condition(value, path, key)
            parts.append(sql)
            params.extend(p)
    return (" AND ".join(parts) or "1"), params


# ---------------------------------------------------------------------------------------------


class SqliteVectorStore:
    """A tenant-scoped vector index in one SQLite file (see the module docstring).

    ``dimensions``: the length of every vector; ``metric``: ``"cosine"`` (score = cosine similarity)
    or ``"l2"`` (score = minus the Euclidean distance): higher is better. ``path`` is a file (parent
    directories created on first use) or ``":memory:"``. Backend failures raise
    :class:`~seamkit.errors.StoreUnavailable`; bad input raises TypeError / ValueError /
    :class:`VectorDimensionError` before anything is written.
    """

    def __init__(
        self,
        path: str | Path = ".seamkit/vectors.db",
        *,
        dimensions: int,
        metric: Metric = "cosine",
        busy_timeout_s: float = 5.0,
    ) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            raise ValueError(f"dimensions must be a positive integer, got {dimensions!r}")
        if metric not in ("cosine", "l2"):
            raise ValueError(f"metric must be 'cosine' or 'l2', got {metric!r}")
        self.path = path if path == MEMORY else Path(path)
        self.dimensions = dimensions
        self.metric: Metric = metric
        self._busy_timeout_s = busy_timeout_s
        self._executor: ThreadPoolExecutor | None = None
        self._db: Any = None  # touched only on the executor's thread
        self._closed = False

    def __repr__(self) -> str:
        return f"SqliteVectorStore(path={str(self.path)!r}, dimensions={self.dimensions}, metric={self.metric!r})"

    # -- thread plumbing ---------------------------------------------------------------------

    async def _run(self, fn: Callable[[Any], _T]) -> _T:
        if self._closed:
            raise StoreUnavailable("the vector store is closed")
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seamkit-vector-sqlite")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, fn)

    def _call(self, fn: Callable[[Any], _T]) -> _T:
        try:
            if self._db is None:
                self._db = self._open()
            return fn(self._db)
        except (sqlean.Error, OSError) as exc:
            raise StoreUnavailable(f"sqlite-vec store {str(self.path)!r}: {type(exc).__name__}: {exc}") from None

    def _open(self) -> Any:
        if self.path != MEMORY:
            assert isinstance(self.path, Path)
            self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlean.connect(str(self.path), timeout=self._busy_timeout_s, isolation_level=None)
        try:
            db.enable_load_extension(True)
            sqlite_vec.load(db)
            db.enable_load_extension(False)
            if self.path != MEMORY:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
            db.execute("BEGIN IMMEDIATE")
            try:
                self._ensure_schema(db)
                db.execute("COMMIT")
            except BaseException:
                db.rollback()
                raise
        except BaseException:
            db.close()
            raise
        return db

    def _ensure_schema(self, db: Any) -> None:
        db.execute("CREATE TABLE IF NOT EXISTS vec_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        stored = dict(db.execute("SELECT key, value FROM vec_meta").fetchall())
        if stored:
            if int(stored.get("dimensions", -1)) != self.dimensions or stored.get("metric") != self.metric:
                raise VectorDimensionError(
                    f"{str(self.path)!r} was created with dimensions={stored.get('dimensions')} "
                    f"metric={stored.get('metric')!r}; this store is configured with dimensions={self.dimensions} "
                    f"metric={self.metric!r} (use another path, or the same settings)"
                )
            return
        db.executemany(
            "INSERT INTO vec_meta (key, value) VALUES (?, ?)",
            [("schema_version", str(SCHEMA_VERSION)), ("dimensions", str(self.dimensions)), ("metric", self.metric)],
        )
        db.execute(
            "CREATE TABLE IF NOT EXISTS vec_items (rid INTEGER PRIMARY KEY, tenant TEXT NOT NULL,"
            " id TEXT NOT NULL, metadata BLOB NOT NULL, UNIQUE (tenant, id))"
        )
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS vec_index USING vec0(tenant TEXT PARTITION KEY,"
            f" embedding float[{self.dimensions}] distance_metric={self.metric})"
        )

    # -- the port ------------------------------------------------------------------------------

    async def upsert(self, scope: Scope, items: Sequence[tuple[str, Sequence[float], Mapping[str, Any]]]) -> None:
        """Insert or replace (by id, within ``scope.tenant``) each ``(id, vector, metadata)``; a
        later duplicate id in one batch wins. All or nothing: one transaction, and every item is
        checked before anything is written."""
        tenant = _check_scope(scope)
        rows: list[tuple[str, bytes, str]] = []
        for n, item in enumerate(items):
            try:
                item_id, vector, metadata = item
            except (TypeError, ValueError):
                raise TypeError(f"item {n} must be an (id, vector, metadata) tuple") from None
            if not isinstance(item_id, str) or not item_id:
                raise TypeError(f"item {n}: id must be a non-empty str, got {item_id!r}")
            rows.append(
                (
                    item_id,
                    _blob(vector, self.dimensions, self.metric, f"vector of {item_id!r}"),
                    _metadata_text(metadata, item_id),
                )
            )
        if not rows:
            return

        def write(db: Any) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                for item_id, blob, meta in rows:
                    found = db.execute(
                        "SELECT rid FROM vec_items WHERE tenant = ? AND id = ?", (tenant, item_id)
                    ).fetchone()
                    if found is None:
                        rid = db.execute(
                            "INSERT INTO vec_items (tenant, id, metadata) VALUES (?, ?, jsonb(?))",
                            (tenant, item_id, meta),
                        ).lastrowid
                    else:
                        rid = found[0]
                        db.execute("UPDATE vec_items SET metadata = jsonb(?) WHERE rid = ?", (meta, rid))
                        db.execute("DELETE FROM vec_index WHERE rowid = ?", (rid,))
                    db.execute("INSERT INTO vec_index (rowid, tenant, embedding) VALUES (?, ?, ?)", (rid, tenant, blob))
                db.execute("COMMIT")
            except BaseException:
                db.rollback()
                raise

        await self._run(write)

    async def query(
        self, scope: Scope, vector: Sequence[float], *, k: int = 5, where: Mapping[str, Any] | None = None
    ) -> list[tuple[str, float, dict[str, Any]]]:
        """The ``k`` items of ``scope.tenant`` nearest to ``vector`` (exact), best first, as
        ``(id, score, metadata)``; only items matching ``where`` (see the module docs) are
        considered. ``k`` is 1..4096."""
        tenant = _check_scope(scope)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ValueError(f"k must be an integer from 1 to {MAX_K}, got {k!r}")
        blob = _blob(vector, self.dimensions, self.metric, "query vector")
        condition, params = _where_sql(where)
        sql = (
            "SELECT i.id, m.distance, json(i.metadata) FROM (SELECT rowid, distance FROM vec_index"
            " WHERE embedding MATCH ? AND k = ? AND tenant = ?"
        )
        args: list[Any] = [blob, k, tenant]
        if where:
            sql += f" AND rowid IN (SELECT rid FROM vec_items WHERE tenant = ? AND {condition})"
            args += [tenant, *params]
        sql += ") AS m JOIN vec_items AS i ON i.rid = m.rowid ORDER BY m.distance, i.id"

        def read(db: Any) -> list[tuple[str, float, str]]:
            return list(db.execute(sql, args).fetchall())

        rows = await self._run(read)
        if self.metric == "cosine":
            return [(item_id, 1.0 - float(distance), json.loads(meta)) for item_id, distance, meta in rows]
        return [(item_id, -float(distance), json.loads(meta)) for item_id, distance, meta in rows]

    async def delete(self, scope: Scope, ids: Sequence[str]) -> int:
        """Delete the items of ``scope.tenant`` with these ids; returns how many existed."""
        tenant = _check_scope(scope)
        if isinstance(ids, str):
            raise TypeError("ids must be a sequence of ids, not one str")
        wanted = list(dict.fromkeys(ids))
        if not all(isinstance(i, str) for i in wanted):
            raise TypeError("ids must be strings")

        def write(db: Any) -> int:
            db.execute("BEGIN IMMEDIATE")
            try:
                removed = 0
                for item_id in wanted:
                    found = db.execute(
                        "SELECT rid FROM vec_items WHERE tenant = ? AND id = ?", (tenant, item_id)
                    ).fetchone()
                    if found is not None:
                        db.execute("DELETE FROM vec_index WHERE rowid = ?", (found[0],))
                        db.execute("DELETE FROM vec_items WHERE rid = ?", (found[0],))
                        removed += 1
                db.execute("COMMIT")
            except BaseException:
                db.rollback()
                raise
            return removed

        return await self._run(write) if wanted else 0

    async def count(self, scope: Scope) -> int:
        """How many items ``scope.tenant`` holds."""
        tenant = _check_scope(scope)
        return int(
            await self._run(
                lambda db: db.execute("SELECT count(*) FROM vec_items WHERE tenant = ?", (tenant,)).fetchone()[0]
            )
        )

    async def aclose(self) -> None:
        """Close the connection (idempotent); later calls raise StoreUnavailable."""
        if self._closed:
            return
        self._closed = True
        executor, self._executor = self._executor, None
        if executor is None:
            return

        def shut() -> None:
            if self._db is not None:
                self._db.close()
                self._db = None

        try:
            await asyncio.get_running_loop().run_in_executor(executor, shut)
        finally:
            executor.shutdown(wait=False)

    async def __aenter__(self) -> SqliteVectorStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def build(config: VectorSqliteConfig) -> SqliteVectorStore:
    """The ``use: sqlite_vec`` factory: a relative ``path`` is resolved against the current
    directory now (not at first use). Connects nothing."""
    path: str | Path = config.path
    if config.path != MEMORY:
        path = Path(config.path).expanduser()
        if not path.is_absolute():
            path = Path.cwd() / path
    return SqliteVectorStore(
        path, dimensions=config.dimensions, metric=config.metric, busy_timeout_s=config.busy_timeout_s
    )
