"""The ``postgres`` store beyond the conformance suites: setup and migrations, restart survival,
secrecy of the DSN, the registry, and a flat per-save cost."""

from __future__ import annotations

import asyncio
import logging
import statistics
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
import pytest_asyncio
from psycopg_pool import AsyncConnectionPool
from pydantic import ValidationError
from seamkit._durability.records import CheckpointRecord
from seamkit._plugins.registry import load_registry
from seamkit._ports import CheckpointPort, StorePort
from seamkit.errors import StoreUnavailable
from seamkit.values import Scope
from seamkit_postgres.config import PostgresConfig
from seamkit_postgres.store import LATEST_MIGRATION, PostgresStore
from seamkit_services import free_port, start_postgres

S = Scope("pg-tests")
PASSWORD = "s3cr3t-Pa55word-xyz"


def _schema() -> str:
    return f"t_{uuid.uuid4().hex[:16]}"


def _with_password(dsn: str) -> str:
    return dsn.replace("postgresql://seamkit@", f"postgresql://seamkit:{PASSWORD}@")


async def _drop(dsn: str, schema: str) -> None:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest_asyncio.fixture
async def schema(postgres_dsn: str) -> AsyncIterator[str]:
    name = _schema()
    yield name
    await _drop(postgres_dsn, name)


def _store(dsn: str, schema: str, **kw: object) -> PostgresStore:
    return PostgresStore(PostgresConfig.model_validate({"dsn": dsn, "schema": schema, **kw}))


# --- setup and migrations --------------------------------------------------------------------


async def test_operations_before_setup_say_how_to_set_up(postgres_dsn: str, schema: str) -> None:
    async with _store(postgres_dsn, schema) as store:
        with pytest.raises(StoreUnavailable, match="seamkit stores setup"):
            await store.get(S, "k")
        with pytest.raises(StoreUnavailable, match="seamkit stores setup"):
            await store.latest("run")
        await store.setup()
        assert await store.get(S, "k", "missing") == "missing"


async def test_setup_records_migrations_and_is_idempotent(postgres_dsn: str, schema: str) -> None:
    async with _store(postgres_dsn, schema) as store:
        before = time.time()
        assert await store.setup() == list(range(1, LATEST_MIGRATION + 1))
        assert await store.setup() == []
        await store.set(S, "k", 1)
    async with await psycopg.AsyncConnection.connect(postgres_dsn) as conn:
        cur = await conn.execute(f'SELECT version, applied_at FROM "{schema}".migrations ORDER BY version')
        rows = await cur.fetchall()
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY table_name", (schema,)
        )
        tables = [r[0] for r in await cur.fetchall()]
    assert [r[0] for r in rows] == list(range(1, LATEST_MIGRATION + 1))
    assert all(r[1].timestamp() >= before - 5 for r in rows)
    assert tables == ["checkpoints", "kv", "log_entries", "migrations", "pending_writes", "runs"]
    # a second store on the same schema sees the data: setup did not recreate anything
    async with _store(postgres_dsn, schema) as again:
        assert await again.setup() == []
        assert await again.get(S, "k") == 1


async def test_concurrent_setups_apply_each_migration_once(postgres_dsn: str, schema: str) -> None:
    stores = [_store(postgres_dsn, schema) for _ in range(8)]
    try:
        results = await asyncio.gather(*(s.setup() for s in stores))
    finally:
        for s in stores:
            await s.aclose()
    applied = [r for r in results if r]
    assert applied == [list(range(1, LATEST_MIGRATION + 1))]
    async with await psycopg.AsyncConnection.connect(postgres_dsn) as conn:
        cur = await conn.execute(f'SELECT count(*) FROM "{schema}".migrations')
        assert await cur.fetchone() == (LATEST_MIGRATION,)


def test_config_rejects_bad_values() -> None:
    with pytest.raises(ValidationError):
        PostgresConfig.model_validate({"dsn": "postgresql://x", "schema": 'bad"; DROP'})
    with pytest.raises(ValidationError):
        PostgresConfig.model_validate({"dsn": "postgresql://x", "min_size": 5, "max_size": 2})
    with pytest.raises(ValidationError):
        PostgresConfig.model_validate({"dsn": "postgresql://x", "unknown": 1})
    with pytest.raises(ValidationError):
        PostgresConfig.model_validate({})


# --- restart survival ------------------------------------------------------------------------


async def test_store_survives_a_server_restart(tmp_path: Path) -> None:
    server = start_postgres(tmp_path)
    try:
        store = _store(server.dsn, "seamkit", min_size=2, max_size=4, connect_timeout=2)
        await store.setup()
        await store.set(S, "k", "before")
        await store.save(CheckpointRecord("r", 1, "running", '{"s":1}', ("e1",)), expected_version=None)

        server.restart()  # every pooled connection is now dead
        assert await store.get(S, "k") == "before"
        await store.save(CheckpointRecord("r", 2, "running", '{"s":2}', ("e2",)), expected_version=1)
        latest = await store.latest("r")
        assert latest is not None and latest.log == ("e1", "e2")

        server.stop(remove=False)
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as info:
            await store.get(S, "k")
        assert time.monotonic() - started < 10
        assert "psycopg" not in type(info.value).__module__
        with pytest.raises(StoreUnavailable):
            await store.save(CheckpointRecord("r", 3, "running", "{}"), expected_version=2)

        server.start()
        assert await store.increment(S, "n") == 1
        assert await store.get(S, "k") == "before"
        latest = await store.latest("r")
        assert latest is not None and latest.record.version == 2
        await store.aclose()
    finally:
        server.stop()


async def test_closed_store_refuses_work(postgres_dsn: str, schema: str) -> None:
    store = _store(postgres_dsn, schema)
    await store.setup()
    await store.aclose()
    await store.aclose()
    with pytest.raises(StoreUnavailable, match="closed"):
        await store.get(S, "k")


# --- secrecy ---------------------------------------------------------------------------------


async def test_dsn_never_appears_in_repr_or_errors(
    postgres_dsn: str, schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret_dsn = _with_password(postgres_dsn)
    config = PostgresConfig.model_validate({"dsn": secret_dsn, "schema": schema})
    store = PostgresStore(config)
    for text in (repr(store), str(store), repr(config), str(config), str(config.model_dump())):
        assert PASSWORD not in text and secret_dsn not in text

    # trust auth accepts (and ignores) the password: the store works with it
    await store.setup()
    await store.set(S, "k", 1)
    await store.aclose()
    assert PASSWORD not in repr(store)

    # an unreachable server, a missing database, a malformed DSN: none leaks the password
    dead = f"postgresql://seamkit:{PASSWORD}@127.0.0.1:{free_port()}/seamkit"
    missing_db = secret_dsn.rsplit("/", 1)[0] + "/no_such_db"
    malformed = f"host=127.0.0.1 password={PASSWORD} port=notaport"
    for dsn in (dead, missing_db, malformed):
        bad = _store(dsn, schema, connect_timeout=1, min_size=0)
        with pytest.raises(StoreUnavailable) as info:
            await bad.get(S, "k")
        message = str(info.value)
        assert PASSWORD not in message and dsn not in message, message
        assert info.value.__cause__ is None and info.value.__suppress_context__
        await bad.aclose()
    assert PASSWORD not in caplog.text


async def test_driver_errors_become_store_unavailable(postgres_dsn: str) -> None:
    async with _store(f"postgresql://seamkit@127.0.0.1:{free_port()}/x", _schema(), connect_timeout=1) as store:
        with pytest.raises(StoreUnavailable, match="PostgreSQL store"):
            await store.setup()
        with pytest.raises(StoreUnavailable):
            await store.save(CheckpointRecord("r", 1, "running", "{}"), expected_version=None)


# --- registry --------------------------------------------------------------------------------


async def test_registry_resolves_and_builds_postgres(postgres_dsn: str, schema: str) -> None:
    registry = load_registry()
    assert "postgres" in registry.names("store")
    spec = registry.resolve("store", "postgres")
    assert spec.config_model() is PostgresConfig
    store = spec.build({"dsn": postgres_dsn, "schema": schema, "max_size": 3})
    assert isinstance(store, PostgresStore)
    assert isinstance(store, StorePort) and isinstance(store, CheckpointPort)
    assert store.schema == schema
    # building does not connect: an unreachable DSN builds fine
    unreachable = spec.build({"dsn": f"postgresql://u:{PASSWORD}@127.0.0.1:{free_port()}/db"})
    assert isinstance(unreachable, PostgresStore)
    await store.setup()
    await store.set(S, "k", [1, 2])
    assert await store.get(S, "k") == [1, 2]
    await store.aclose()
    await unreachable.aclose()


# --- cost per save ---------------------------------------------------------------------------


async def test_save_cost_is_flat_over_200_versions(postgres_dsn: str, schema: str) -> None:
    entry = '{"v":1,"data":{"role":"assistant","text":"' + "x" * 1000 + '"}}'
    async with _store(postgres_dsn, schema) as store:
        await store.setup()
        times: list[float] = []
        for v in range(1, 201):
            record = CheckpointRecord(
                "bench", v, "running", f'{{"v":1,"data":{{"step":{v}}}}}', (entry, entry) if v % 2 else (entry,),
                metadata={"agent": "bench"}, created_at=1_700_000_000.0 + v,
            )
            started = time.perf_counter()
            await store.save(record, expected_version=None if v == 1 else v - 1)
            times.append(time.perf_counter() - started)
        first = statistics.median(times[:20]) * 1000
        last = statistics.median(times[-20:]) * 1000
        print(f"postgres save: median first 20 = {first:.3f} ms, last 20 = {last:.3f} ms")
        latest = await store.latest("bench")
        assert latest is not None and len(latest.log) == 300
    assert last <= 2 * first + 1.0, (first, last)


# --- hot path: binary log entries, cheap connection checks -------------------------------------


async def test_log_entries_that_look_like_array_syntax_round_trip(postgres_dsn: str, schema: str) -> None:
    # the entries travel as one binary text[] parameter: nothing is quoted, escaped or read as NULL
    entries = ("NULL", "", " ", "{a,b}", '"', "\\", '{"x": "y, z"}', "a\tb\nc", "null", "{}")
    async with _store(postgres_dsn, schema) as store:
        await store.setup()
        await store.save(CheckpointRecord("arr", 1, "running", "{}", entries[:5]), expected_version=None)
        await store.save(CheckpointRecord("arr", 2, "running", "{}", entries[5:]), expected_version=1)
        latest = await store.latest("arr")
        assert latest is not None
        assert latest.log == entries
        assert latest.record.entries == entries[5:]



async def test_sequential_use_keeps_to_one_server_connection(postgres_dsn: str, schema: str) -> None:
    # the pool is full (min_size) before the first operation, so a sequential caller does not make
    # it grow and then alternate between two server processes
    async with _store(postgres_dsn, schema) as store:
        pids: set[int] = set()
        await store.setup()
        for v in range(1, 31):
            await store.save(CheckpointRecord("seq", v, "running", "{}", ("e",)), expected_version=v - 1 or None)
            await store.put_write("seq", v, "t", "{}")
            async with store._connection("test") as conn:
                pids.add(conn.info.backend_pid)
        assert len(pids) == 1


async def test_recently_used_connections_are_lent_without_a_round_trip(
    postgres_dsn: str, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[object] = []
    original = AsyncConnectionPool.check_connection

    async def counting(conn: psycopg.AsyncConnection[object]) -> None:
        checked.append(conn)
        await original(conn)

    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counting))
    async with _store(postgres_dsn, schema) as store:
        await store.setup()
        for i in range(20):
            await store.set(S, "k", i)
        assert checked == []
        async with store._connection("test") as conn:
            pass
        conn.last_used -= 2.0  # idle for more than a second: the full check runs
        assert await store.get(S, "k") == 19
        assert checked == [conn]


async def test_a_recently_used_connection_the_server_dropped_is_replaced(postgres_dsn: str, schema: str) -> None:
    async with _store(postgres_dsn, schema) as store:
        await store.setup()
        await store.set(S, "k", "v")
        await store.save(CheckpointRecord("drop", 1, "running", "{}", ("e1",)), expected_version=None)
        async with store._connection("test") as conn:
            pid = conn.info.backend_pid
        async with await psycopg.AsyncConnection.connect(postgres_dsn, autocommit=True) as admin:
            cur = await admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
            assert await cur.fetchone() == (True,)
        # used a moment ago, so only the look at its socket stands between it and the next save
        await store.save(CheckpointRecord("drop", 2, "running", "{}", ("e2",)), expected_version=1)
        assert await store.get(S, "k") == "v"
        latest = await store.latest("drop")
        assert latest is not None and latest.log == ("e1", "e2")
        async with store._connection("test") as conn:
            assert conn.info.backend_pid != pid
