"""Redis specifics: secrets kept out of reprs and errors, StoreUnavailable when the server is down
(and recovery when it is back), the registry entry and config, native TTLs, key hygiene, atomic
version checks across clients, and a flat per-save cost."""

from __future__ import annotations

import asyncio
import pickle
import statistics
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic
import pytest
import redis.asyncio as aioredis
from seamkit._durability import codec
from seamkit._durability.checkpointer import Checkpointer
from seamkit._durability.records import CheckpointRecord
from seamkit._plugins.registry import load_registry
from seamkit._ports import CheckpointPort, StorePort
from seamkit.errors import CheckpointConflict, ConfigError, StoreUnavailable, StoreValueError, TTLNotSupported
from seamkit.values import Message, Scope
from seamkit_redis.config import RedisConfig
from seamkit_redis.store import RedisStore, build
from seamkit_services import free_port, start_redis

S = Scope("redis-tests")
PASSWORD = "pa55-W0rd-s3cret"


def _rec(run_id: str, version: int, *, entries: int = 2, size: int = 1000, status: str = "running") -> CheckpointRecord:
    return CheckpointRecord(
        run_id=run_id,
        version=version,
        status=status,
        state=codec.dumps({"step": version, "note": "s" * 200}),
        entries=tuple(codec.dumps({"v": version, "i": i, "text": "x" * size}) for i in range(entries)),
        metadata={"agent": "bench"},
        created_at=time.time(),
    )


async def _keys(url: str, pattern: str) -> list[str]:
    client = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        return sorted([k async for k in client.scan_iter(match=pattern, count=1000)])
    finally:
        await client.aclose()


async def _drop(url: str, pattern: str) -> None:
    client = aioredis.Redis.from_url(url)
    try:
        keys = [k async for k in client.scan_iter(match=pattern, count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


# --------------------------------------------------------------------------- secrets


def test_password_never_in_repr_str_or_config_dump() -> None:
    url = f"redis://user:{PASSWORD}@127.0.0.1:6399/0?password={PASSWORD}"
    cfg = RedisConfig(url=url, prefix="p")
    store = build(cfg)
    for text in (repr(store), str(store), repr(cfg), str(cfg), repr(cfg.model_dump()), cfg.model_dump_json(),
                 store.safe_url):
        assert PASSWORD not in text, text
    assert "127.0.0.1:6399" in repr(store)
    assert store.safe_url.startswith("redis://user:***@127.0.0.1:6399/0")
    token_only = RedisStore(f"redis://{PASSWORD}@127.0.0.1:6399")
    assert PASSWORD not in repr(token_only)
    with pytest.raises(TypeError):
        pickle.dumps(store)


def test_invalid_url_error_does_not_echo_the_secret() -> None:
    with pytest.raises(pydantic.ValidationError) as exc:
        RedisConfig(url=f"http://user:{PASSWORD}@example.invalid/")
    assert PASSWORD not in str(exc.value)
    assert "redis://" in str(exc.value)
    reg = load_registry()
    with pytest.raises(ConfigError) as cexc:
        reg.resolve("store", "redis").build({"url": f"mysql://u:{PASSWORD}@h/db"})
    assert PASSWORD not in str(cexc.value)


async def test_server_errors_do_not_leak_the_password(redis_url: str) -> None:
    # No user "nobody" on the test server: AUTH fails, and the error must not carry the password.
    url = redis_url.replace("redis://", f"redis://nobody:{PASSWORD}@")
    store = RedisStore(url, prefix=f"t-{uuid.uuid4().hex[:8]}", retries=0)
    try:
        with pytest.raises(StoreUnavailable) as exc:
            await store.get(S, "k")
        assert PASSWORD not in str(exc.value)
        # the driver's exception is not chained into tracebacks
        assert exc.value.__cause__ is None and exc.value.__suppress_context__
    finally:
        await store.aclose()
    closed = RedisStore(f"redis://:{PASSWORD}@127.0.0.1:{free_port()}/0", retries=0, socket_connect_timeout=1)
    with pytest.raises(StoreUnavailable) as exc2:
        await closed.set(S, "k", 1)
    assert PASSWORD not in str(exc2.value)
    assert "***" in str(exc2.value)


# --------------------------------------------------------------------------- server down


async def test_server_down_raises_store_unavailable_for_every_operation() -> None:
    store = RedisStore(f"redis://127.0.0.1:{free_port()}/0", retries=1, socket_connect_timeout=1, socket_timeout=1)

    async def producer() -> int:
        return 1

    calls: list[Callable[[], Any]] = [
        lambda: store.get(S, "k"),
        lambda: store.set(S, "k", 1),
        lambda: store.set(S, "k", 1, ttl=5),
        lambda: store.get_or_set(S, "k", producer),
        lambda: store.delete(S, "k"),
        lambda: store.append(S, "k", 1),
        lambda: store.list(S, "k"),
        lambda: store.increment(S, "k"),
        lambda: store.prune(),
        lambda: store.save(_rec("r", 1), expected_version=None),
        lambda: store.latest("r"),
        lambda: store.at_version("r", 1),
        lambda: store.list_versions("r"),
        lambda: store.list_runs(),
        lambda: store.put_write("r", 1, "t", "{}"),
        lambda: store.pending_writes("r", 1),
        lambda: store.delete_run("r"),
        lambda: store.prune_runs(keep_last=1),
        lambda: store.ping(),
    ]
    for call in calls:
        with pytest.raises(StoreUnavailable) as exc:
            await call()
        assert "redis" in str(exc.value)
    await store.aclose()


async def test_recovers_when_the_server_comes_back(tmp_path: Path) -> None:
    server = start_redis(tmp_path / "a")
    port = server.port
    store = RedisStore(server.url, prefix="recover", retries=2, socket_connect_timeout=1, socket_timeout=2,
                       health_check_interval=1)
    try:
        await store.set(S, "k", "before")
        await store.save(_rec("run", 1), expected_version=None)
        server.stop()
        with pytest.raises(StoreUnavailable):
            await store.get(S, "k")
        from seamkit_services import RedisServer

        again = RedisServer(tmp_path / "b", port=port)
        again.start()
        try:
            # a fresh server (no persistence): the store reconnects on its own
            assert await store.get(S, "k", "missing") == "missing"
            await store.save(_rec("run", 1), expected_version=None)
            got = await store.latest("run")
            assert got is not None and got.record.version == 1
        finally:
            again.stop()
    finally:
        await store.aclose()
        server.stop()


# --------------------------------------------------------------------------- registry and config


def test_registry_resolves_and_builds_redis(redis_url: str) -> None:
    reg = load_registry()
    assert "redis" in reg.names("store")
    spec = reg.resolve("store", "redis")
    assert spec.distribution == "seamkit-redis"
    assert spec.config_model() is RedisConfig
    store = spec.build({"url": redis_url, "prefix": "built", "socket_timeout": 2, "retries": 1})
    assert isinstance(store, RedisStore)
    assert isinstance(store, StorePort) and isinstance(store, CheckpointPort)
    assert store.prefix == "built"
    assert store._redis is None, "building must not connect"
    Checkpointer(store)  # the agent's facade accepts it


def test_config_rejects_unknown_keys_and_bad_values() -> None:
    with pytest.raises(pydantic.ValidationError) as exc:
        RedisConfig.model_validate({"url": "redis://127.0.0.1", "prefx": "x"})
    assert "prefx" in str(exc.value)
    for bad in ({"socket_timeout": 0}, {"retries": -1}, {"prefix": ""}, {"prefix": "a b"},
                {"health_check_interval": -5}, {"max_connections": 0}):
        with pytest.raises(pydantic.ValidationError):
            RedisConfig.model_validate(bad)
    reg = load_registry()
    with pytest.raises(ConfigError) as cexc:
        reg.resolve("store", "redis").build({"hostname": "x"})
    assert "hostname" in str(cexc.value)
    cfg = RedisConfig()
    assert cfg.prefix == "seamkit" and cfg.url.get_secret_value() == "redis://127.0.0.1:6379/0"
    props = RedisConfig.model_json_schema()["properties"]
    assert all(p.get("description") for p in props.values())


# --------------------------------------------------------------------------- store details


async def test_ttl_is_native_in_milliseconds(redis_store: RedisStore, redis_url: str) -> None:
    await redis_store.set(S, "k", 1, ttl=2.5)
    await redis_store.set(S, "fine", 1, ttl=0.3)
    keys = await _keys(redis_url, f"{redis_store.prefix}:kv:*")
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        ttls = {k.rsplit(":", 1)[1]: await client.pttl(k) for k in keys}
    finally:
        await client.aclose()
    assert 2000 < ttls["k"] <= 2500
    assert 0 < ttls["fine"] <= 300
    await asyncio.sleep(0.4)
    assert await redis_store.get(S, "fine", "gone") == "gone"
    assert await redis_store.prune() == 1
    with pytest.raises(TTLNotSupported):
        await redis_store.set(S, "k", 1, ttl=0.0004)
    with pytest.raises(TTLNotSupported):
        await redis_store.set(S, "k", 1, ttl="5")  # type: ignore[arg-type]
    with pytest.raises(TTLNotSupported):
        await redis_store.set(S, "k", 1, ttl=True)


async def test_increment_is_exact_for_big_integers_and_typed(redis_store: RedisStore) -> None:
    await redis_store.set(S, "big", 2**70)
    assert await redis_store.increment(S, "big", 2**64) == 2**70 + 2**64
    assert await redis_store.get(S, "big") == 2**70 + 2**64
    await redis_store.set(S, "flag", True)
    with pytest.raises(StoreValueError):
        await redis_store.increment(S, "flag")
    assert await redis_store.get(S, "flag") is True
    with pytest.raises(TypeError):
        await redis_store.increment(S, "c", 1.5)  # type: ignore[arg-type]
    results = await asyncio.gather(*(redis_store.increment(S, "shared", 2) for _ in range(40)))
    assert sorted(results) == list(range(2, 82, 2))


async def test_increments_from_many_clients_are_atomic(make_store: Callable[..., RedisStore]) -> None:
    prefix = f"t-{uuid.uuid4().hex[:12]}"
    stores = [make_store(prefix) for _ in range(10)]
    results = await asyncio.gather(*(s.increment(S, "c") for s in stores for _ in range(10)))
    assert sorted(results) == list(range(1, 101))
    assert await stores[0].get(S, "c") == 100


async def test_keys_live_under_the_prefix_and_close_reopens(redis_store: RedisStore, redis_url: str) -> None:
    await redis_store.set(Scope("t", user="u"), "a:b", Message.user("hi"))
    await redis_store.append(S, "l", 1)
    await redis_store.save(_rec("run", 1), expected_version=None)
    everything = await _keys(redis_url, "*")
    mine = [k for k in everything if k.startswith(f"{redis_store.prefix}:")]
    assert len(mine) >= 5
    assert any(k.endswith(":kv:=t/=u/-:a:b") for k in mine), mine
    await redis_store.aclose()
    await redis_store.aclose()  # idempotent
    assert await redis_store.get(Scope("t", user="u"), "a:b") == Message.user("hi")  # reconnects lazily
    async with RedisStore(redis_url, prefix=redis_store.prefix) as other:
        assert list(await other.list(S, "l")) == [1]


async def test_store_and_checkpoint_names_do_not_collide(redis_store: RedisStore) -> None:
    await redis_store.set(S, "run", 1)
    await redis_store.save(_rec("run", 1), expected_version=None)
    await redis_store.save(_rec("run", 2), expected_version=1)
    assert await redis_store.prune() == 0  # StorePort: expired keys only
    assert len(await redis_store.list_versions("run")) == 2
    assert await redis_store.prune_runs(keep_last=1) == 1
    assert await redis_store.delete(S, "run") is True  # a key, not the run
    assert await redis_store.latest("run") is not None
    assert await redis_store.delete_run("run") is True
    assert await redis_store.latest("run") is None
    with pytest.raises(ValueError):
        await redis_store.prune_runs(keep_last=0)


def test_usable_from_successive_event_loops(redis_url: str) -> None:
    """``run_sync`` runs each call in a fresh loop: the store reconnects instead of failing."""
    store = RedisStore(redis_url, prefix=f"t-{uuid.uuid4().hex[:12]}")

    async def step(i: int) -> Any:
        await store.set(S, "k", i)
        await store.save(_rec("run", i), expected_version=i - 1 or None)
        return await store.get(S, "k")

    try:
        assert [asyncio.run(step(i)) for i in (1, 2, 3)] == [1, 2, 3]
    finally:
        asyncio.run(store.aclose())
        asyncio.run(_drop(redis_url, f"{store.prefix}:*"))


async def test_lone_surrogate_and_binary_like_keys(redis_store: RedisStore) -> None:
    for i, key in enumerate(["\ud800", "a\udfffb", "\x00\x01", "k:\u2028"]):
        await redis_store.set(S, key, i)
        assert await redis_store.get(S, key) == i
        assert await redis_store.append(S, key + "-l", key) == 1
        assert list(await redis_store.list(S, key + "-l")) == [key]


# --------------------------------------------------------------------------- checkpoints


async def test_delete_and_prune_leave_no_keys_of_the_run(redis_store: RedisStore, redis_url: str) -> None:
    p = redis_store.prefix
    for run in ("gone", "kept"):
        for v in range(1, 4):
            await redis_store.save(_rec(run, v, status="done" if v == 3 else "running"), expected_version=v - 1 or None)
            await redis_store.put_write(run, v, "call", "{}")
    await redis_store.save(
        CheckpointRecord(run_id="child", version=1, status="running", state="{}", parent_run_id="gone"),
        expected_version=None,
    )
    assert await redis_store.delete_run("gone") is True
    left = await _keys(redis_url, f"{p}:*")
    assert not [k for k in left if k.endswith(":gone") and ":parent:" not in k], left
    assert f"{p}:cp:parent:gone" in left  # the child's index is the child's, not the parent's
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        for status in ("running", "suspended", "done", "failed"):
            assert await client.zscore(f"{p}:cp:status:{status}", "gone") is None
        assert await client.zscore(f"{p}:cp:runs", "gone") is None
    finally:
        await client.aclose()
    assert await redis_store.prune_runs(keep_last=1, finished_before=time.time() + 10) == 3
    left = await _keys(redis_url, f"{p}:*")
    assert not [k for k in left if k.endswith(":kept")], left
    assert await redis_store.delete_run("child") is True
    assert await _keys(redis_url, f"{p}:*") == []


async def test_conflicts_are_exact_under_20_concurrent_clients(make_store: Callable[..., RedisStore]) -> None:
    prefix = f"t-{uuid.uuid4().hex[:12]}"
    stores = [make_store(prefix) for _ in range(20)]
    await stores[0].save(_rec("run", 1, entries=1), expected_version=None)
    for version in range(2, 12):
        contenders = [_rec("run", version, entries=1 + i % 3) for i in range(20)]
        results = await asyncio.gather(
            *(s.save(r, expected_version=version - 1) for s, r in zip(stores, contenders, strict=True)),
            return_exceptions=True,
        )
        winners = [r for r, res in zip(contenders, results, strict=True) if res is None]
        losers = [res for res in results if res is not None]
        assert len(winners) == 1, results
        assert len(losers) == 19
        assert all(isinstance(e, CheckpointConflict) for e in losers), losers
        assert all((e.run_id, e.expected, e.actual) == ("run", version - 1, version) for e in losers)
        latest = await stores[version % 20].latest("run")
        assert latest is not None
        assert latest.record.entries == winners[0].entries
        assert latest.record.state == winners[0].state
    # the log holds exactly the winners' entries, in order
    versions = await stores[0].list_versions("run")
    assert [i.version for i in versions] == list(range(1, 12))
    final = await stores[0].latest("run")
    assert final is not None
    expected_log: list[str] = []
    for v in range(1, 12):
        at = await stores[0].at_version("run", v)
        assert at is not None
        expected_log.extend(at.record.entries)
        assert at.log == tuple(expected_log)
    assert final.log == tuple(expected_log)


async def test_per_save_cost_is_flat(redis_store: RedisStore) -> None:
    """200 saves of one run (2 entries of ~1 KB each): the median of the last 20 is not
    meaningfully above the median of the first 20 (no rewrite of earlier entries)."""
    await redis_store.ping()  # connect first: the first save must not pay for it
    times: list[float] = []
    for v in range(1, 201):
        rec = _rec("bench", v, entries=1 + v % 2)
        t0 = time.perf_counter()
        await redis_store.save(rec, expected_version=v - 1 if v > 1 else None)
        times.append((time.perf_counter() - t0) * 1000)
    first, last = statistics.median(times[:20]), statistics.median(times[-20:])
    print(f"\nredis per-save median ms: first 20 {first:.3f}, last 20 {last:.3f}, all {statistics.median(times):.3f}")
    assert last <= max(first * 1.5, first + 0.5), (first, last)
    latest = await redis_store.latest("bench")
    assert latest is not None and latest.record.version == 200
    assert len(latest.log) == sum(1 + v % 2 for v in range(1, 201))
