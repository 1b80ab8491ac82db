"""SQLite specifics: WAL, the default path, errors as StoreUnavailable, the registry entry, the
config, many concurrent runs in one process, and several processes writing one file."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from seamkit._durability.records import CheckpointRecord, PendingWrite
from seamkit._plugins.registry import load_registry
from seamkit._ports import CheckpointPort, StorePort
from seamkit.errors import CheckpointConflict, ConfigError, StoreUnavailable, StoreValueError
from seamkit.values import Scope
from seamkit_sqlite.config import SqliteConfig
from seamkit_sqlite.store import MEMORY, SCHEMA_VERSION, SqliteStore, build

DIST = "seamkit-sqlite"
S = Scope("t")


def _rec(run_id: str, version: int, *entries: str, status: str = "running", **kw: object) -> CheckpointRecord:
    return CheckpointRecord(
        run_id=run_id, version=version, status=status, state=f'{{"step":{version}}}', entries=entries, **kw  # type: ignore[arg-type]
    )


def _pragma(path: Path, name: str) -> object:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]


# --------------------------------------------------------------------------- file and modes


async def test_wal_mode_schema_version_and_lazy_connect(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "db.sqlite"
    store = SqliteStore(path)
    assert not path.parent.exists(), "constructing the store must not touch the disk"
    assert isinstance(store, StorePort) and isinstance(store, CheckpointPort)
    await store.set(S, "k", 1)
    assert path.exists()
    assert _pragma(path, "journal_mode") == "wal"
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT value FROM seamkit_meta WHERE key = 'schema_version'").fetchone()
    assert row == (str(SCHEMA_VERSION),)
    await store.aclose()
    await store.aclose()  # idempotent
    # a closed store connects again on the next call
    assert await store.get(S, "k") == 1
    await store.aclose()


async def test_synchronous_setting_is_applied(tmp_path: Path) -> None:
    for mode, code in (("NORMAL", 1), ("FULL", 2)):
        store = SqliteStore(tmp_path / f"{mode}.db", synchronous=mode)
        await store.set(S, "k", 1)
        assert store._conn is not None
        rows = list(await store._conn.execute_fetchall("PRAGMA synchronous"))
        assert rows[0][0] == code
        await store.aclose()


async def test_default_path_is_relative_to_the_cwd_at_build_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = build(SqliteConfig())
    assert store.path == str(tmp_path / ".seamkit" / "seamkit.db")
    monkeypatch.chdir(tmp_path.parent)  # moving away after the build changes nothing
    async with store:
        await store.set(S, "k", "v")
    assert (tmp_path / ".seamkit" / "seamkit.db").is_file()
    assert _pragma(tmp_path / ".seamkit" / "seamkit.db", "journal_mode") == "wal"


async def test_memory_database_is_private_to_one_store() -> None:
    a, b = SqliteStore(":memory:"), SqliteStore(":memory:")
    await a.set(S, "k", 1)
    assert await b.get(S, "k") is None
    assert await a.get(S, "k") == 1
    await a.aclose()
    await b.aclose()


async def test_store_survives_successive_event_loops(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db")

    async def bump() -> int:
        return await store.increment(S, "n")

    # asyncio.run in a worker thread: each call has its own loop (this test's loop keeps running)
    loop = asyncio.get_running_loop()
    assert await loop.run_in_executor(None, asyncio.run, bump()) == 1
    assert await loop.run_in_executor(None, asyncio.run, bump()) == 2
    assert await store.increment(S, "n") == 3
    await store.aclose()


# --------------------------------------------------------------------------- errors


async def test_a_failed_open_leaves_no_worker_thread_behind(tmp_path: Path) -> None:
    """Regression: after a failed open, aiosqlite's worker thread answered its stop request after
    the event loop had closed and printed "Event loop is closed" with a traceback at exit (seen,
    now and then, from `seamkit stores setup` on a bad path)."""
    import threading

    def workers() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if "_connection_worker_thread" in t.name}

    before = workers()
    store = SqliteStore(tmp_path)
    with pytest.raises(StoreUnavailable):
        await store.get(S, "k")
    assert workers() - before == set()
    await store.aclose()


async def test_path_that_is_a_directory_is_store_unavailable(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    with pytest.raises(StoreUnavailable, match=f"{tmp_path}: it is a directory") as info:
        await store.get(S, "k")
    assert not isinstance(info.value, sqlite3.Error)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    with pytest.raises(StoreUnavailable):
        await store.save(_rec("r", 1), expected_version=None)
    await store.aclose()


async def test_corrupt_file_is_store_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.db"
    path.write_bytes(b"this is not a database" * 500)
    store = SqliteStore(path)
    with pytest.raises(StoreUnavailable, match="not a database"):
        await store.set(S, "k", 1)
    with pytest.raises(StoreUnavailable):
        await store.latest("r")
    await store.aclose()


async def test_parent_that_is_a_file_is_store_unavailable(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    store = SqliteStore(tmp_path / "file" / "db.sqlite")
    with pytest.raises(StoreUnavailable):
        await store.get(S, "k")


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db"
    store = SqliteStore(path)
    await store.set(S, "k", 1)
    await store.aclose()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE seamkit_meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(StoreUnavailable, match="newer"):
        await store.get(S, "k")


async def test_write_lock_held_past_the_timeout_is_store_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "db"
    store = SqliteStore(path, busy_timeout_s=0.2)
    await store.set(S, "k", 1)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        t0 = time.monotonic()
        with pytest.raises(StoreUnavailable, match="locked"):
            await store.increment(S, "k")
        assert time.monotonic() - t0 >= 0.15, "the busy timeout was not waited"
        # reads are not blocked by a writer under WAL
        assert await store.get(S, "k") == 1
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert await store.increment(S, "k") == 2, "the store recovers once the lock is released"
    await store.aclose()


async def test_an_effect_receipt_is_not_queued_behind_other_runs_checkpoint_writes(tmp_path: Path) -> None:
    """Many runs share one store: the effect ledger's receipts (prepared, then completed) go right
    after the write in progress, before the checkpoint writes already waiting, so the window in
    which a crash leaves an effect's outcome unknown does not grow with other runs' traffic."""
    from seamkit._durability.ledger import EffectLedger

    path = tmp_path / "db"
    store = SqliteStore(path, busy_timeout_s=60)
    await store.save(_rec("slow", 1), expected_version=None)  # connected, schema created
    finished: list[str] = []

    async def track(name: str, op: Any) -> None:
        await op
        finished.append(name)

    async def charge() -> str:
        finished.append("the effect ran")
        return "charged"

    big = "x" * 200_000
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock: the next save waits for it
    try:
        in_progress = asyncio.create_task(track("slow save", store.save(_rec("slow", 2, big), expected_version=1)))
        await asyncio.sleep(0.05)
        queued = [asyncio.create_task(track(f"save {i}", store.save(_rec(f"run{i}", 1, big), expected_version=None)))
                  for i in range(5)]
        await asyncio.sleep(0.05)
        effect = asyncio.create_task(track("receipt completed", EffectLedger(store).run("run-x:1:call-1", charge)))
        await asyncio.sleep(0.05)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await asyncio.gather(in_progress, *queued, effect)
    assert finished == ["slow save", "the effect ran", "receipt completed", *(f"save {i}" for i in range(5))]
    assert (await EffectLedger(store).receipt("run-x:1:call-1")) == {"status": "completed", "value": "charged"}
    await store.aclose()


async def test_queued_operations_keep_their_order_within_a_class_and_survive_cancellation(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db", busy_timeout_s=60)
    await store.set(S, "k", 0)
    blocker = sqlite3.connect(tmp_path / "db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        first = asyncio.create_task(store.save(_rec("r", 1), expected_version=None))
        await asyncio.sleep(0.05)
        increments = [asyncio.create_task(store.increment(S, "k")) for _ in range(5)]
        doomed = asyncio.create_task(store.set(S, "gone", 1))
        saves = [asyncio.create_task(store.save(_rec(f"q{i}", 1), expected_version=None)) for i in range(3)]
        await asyncio.sleep(0.05)
        doomed.cancel()
        saves[1].cancel()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await first
    assert [await t for t in increments] == [1, 2, 3, 4, 5]  # first come, first served
    await asyncio.gather(saves[0], saves[2])
    for t in (doomed, saves[1]):
        with pytest.raises(asyncio.CancelledError):
            await t
    assert await store.get(S, "gone") is None and await store.latest("q1") is None
    assert await store.latest("q2") is not None
    await store.aclose()


# --------------------------------------------------------------------------- registry and config


def test_registry_resolves_sqlite_as_a_store(tmp_path: Path) -> None:
    reg = load_registry()
    report = next(r for r in reg.reports if r.distribution == DIST)
    assert report.status == "ok", report.error
    assert ("store", "sqlite") in [tuple(c) for c in report.components]
    spec = reg.resolve("store", "sqlite", distribution=DIST)
    assert isinstance(spec.factory, str) and isinstance(spec.config, str)  # lazy registration
    assert spec.config_model() is SqliteConfig
    store = spec.build({"path": str(tmp_path / "r.db"), "busy_timeout_s": 1, "synchronous": "FULL"})
    assert isinstance(store, SqliteStore)
    assert store.path == str(tmp_path / "r.db")
    assert not (tmp_path / "r.db").exists()


def test_config_rejects_unknown_and_bad_values() -> None:
    reg = load_registry()
    spec = reg.resolve("store", "sqlite", distribution=DIST)
    with pytest.raises(ConfigError, match=r"paht|Extra inputs"):
        spec.build({"paht": "x.db"})
    with pytest.raises(ConfigError, match="synchronous"):
        spec.build({"synchronous": "OFF"})
    with pytest.raises(ConfigError, match="busy_timeout_s"):
        spec.build({"busy_timeout_s": -1})
    with pytest.raises(ConfigError, match="busy_timeout_s"):
        spec.build({"busy_timeout_s": float("inf")})
    with pytest.raises(ConfigError, match="path"):
        spec.build({"path": ""})
    for bad in ("sometimes", "true", "on", 1, 0.0):  # (a newcomer's: all were read as booleans)
        with pytest.raises(ConfigError, match="saves_on_loop"):
            spec.build({"saves_on_loop": bad})
    for bad in (True, "1e3", "5"):  # a number, not a boolean or text
        with pytest.raises(ConfigError, match="busy_timeout_s"):
            spec.build({"busy_timeout_s": bad})
    with pytest.raises(TypeError, match="saves_on_loop"):
        SqliteStore(":memory:", saves_on_loop="no")  # type: ignore[arg-type]
    import seamkit_sqlite

    assert seamkit_sqlite.SqliteStore is SqliteStore  # the documented import
    defaults = {"path": ".seamkit/seamkit.db", "busy_timeout_s": 5.0, "synchronous": "NORMAL", "saves_on_loop": True}
    assert SqliteConfig().model_dump() == defaults


def test_plugin_module_is_cheap_to_import() -> None:
    code = "import sys, seamkit_sqlite.plugin; print('aiosqlite' in sys.modules, 'seamkit_sqlite.store' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# --------------------------------------------------------------------------- port details


async def test_key_and_run_namespaces_are_separate(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db")
    await store.set(S, "r1", "a key named like the run")
    for v in (1, 2, 3):
        await store.save(_rec("r1", v, f"e{v}"), expected_version=v - 1 or None)
    await store.set(S, "short", 1, ttl=0.05)
    await asyncio.sleep(0.1)
    assert await store.prune() == 1  # StorePort: expired keys only
    assert len(await store.list_versions("r1")) == 3
    assert await store.prune_runs(keep_last=2) == 1
    assert [i.version for i in await store.list_versions("r1")] == [2, 3]
    assert await store.delete(S, "r1") is True  # the key
    assert (await store.latest("r1")) is not None
    assert await store.delete_run("r1") is True  # the run
    assert await store.latest("r1") is None
    assert await store.delete_run("r1") is False
    with pytest.raises(ValueError, match="keep_last"):
        await store.prune_runs(keep_last=0)
    await store.aclose()


async def test_save_conflict_writes_nothing_and_latest_has_the_log(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db")
    await store.save(_rec("r", 1, "a", "b", metadata={"agent": "x"}, created_at=10.0), expected_version=None)
    await store.save(_rec("r", 2, "c"), expected_version=1)
    with pytest.raises(CheckpointConflict) as info:
        await store.save(_rec("r", 2, "stale"), expected_version=1)
    assert (info.value.expected, info.value.actual) == (1, 2)
    with pytest.raises(CheckpointConflict) as info:
        await store.save(_rec("r", 1, "stale"), expected_version=None)
    assert info.value.actual == 2
    with pytest.raises(CheckpointConflict):
        await store.save(_rec("fresh", 4), expected_version=3)
    with pytest.raises(ValueError, match="follow"):
        await store.save(_rec("r", 5), expected_version=2)
    latest = await store.latest("r")
    assert latest is not None
    assert latest.record == _rec("r", 2, "c")
    assert latest.log == ("a", "b", "c")
    first = await store.at_version("r", 1)
    assert first is not None and first.log == ("a", "b")
    assert first.record == _rec("r", 1, "a", "b", metadata={"agent": "x"}, created_at=10.0)
    assert await store.at_version("r", 3) is None
    assert await store.latest("fresh") is None
    await store.aclose()


async def test_list_runs_prune_finished_and_pending_writes(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db")
    await store.save(_rec("old-done", 1, status="done", created_at=100.0), expected_version=None)
    await store.save(_rec("old-running", 1, created_at=100.0), expected_version=None)
    await store.save(_rec("parent", 1, created_at=200.0), expected_version=None)
    await store.save(_rec("child", 1, parent_run_id="parent", created_at=300.0), expected_version=None)
    await store.save(_rec("child", 2, status="failed", parent_run_id="parent", created_at=301.0), expected_version=1)
    assert [i.run_id for i in await store.list_runs()] == ["child", "parent", "old-running", "old-done"]
    assert [i.run_id for i in await store.list_runs(limit=2)] == ["child", "parent"]
    assert [i.run_id for i in await store.list_runs(status="running")] == ["parent", "old-running"]
    children = await store.list_runs(parent_run_id="parent")
    assert [(i.run_id, i.version, i.status) for i in children] == [("child", 2, "failed")]

    await store.put_write("parent", 1, "call-b", "B")
    await store.put_write("parent", 1, "call-a", "A")
    await store.put_write("parent", 1, "call-b", "B2")
    await store.put_write("child", 1, "call-x", "X")
    assert dict(await store.pending_writes("parent", 1)) == {"call-b": "B2", "call-a": "A"}
    assert list(await store.pending_writes("parent", 1)) == ["call-b", "call-a"]
    assert await store.pending_writes("parent", 2) == {}

    # finished before 250: old-done goes whole; keep_last=1 trims child v1 (and its write)
    assert await store.prune_runs(keep_last=1, finished_before=250.0) == 2
    assert [i.run_id for i in await store.list_runs()] == ["child", "parent", "old-running"]
    assert await store.pending_writes("child", 1) == {}
    assert await store.at_version("child", 1) is None
    assert await store.latest("old-done") is None
    assert await store.delete_run("child") is True
    assert await store.pending_writes("parent", 1) != {}, "deleting a run touched another run"
    await store.aclose()


async def test_non_integer_increment_and_non_list_append_change_nothing(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db")
    await store.set(S, "b", True)
    with pytest.raises(StoreValueError):
        await store.increment(S, "b")
    assert await store.get(S, "b") is True
    await store.set(S, "s", "x")
    with pytest.raises(StoreValueError):
        await store.append(S, "s", 1)
    with pytest.raises(StoreValueError):
        await store.list(S, "s")
    assert await store.get(S, "s") == "x"
    await store.aclose()


async def test_cancelled_save_leaves_the_connection_usable(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db")
    await store.save(_rec("r", 1), expected_version=None)
    for i in range(20):
        task = asyncio.create_task(store.save(_rec("r", 2, "x"), expected_version=1))
        await asyncio.sleep(i * 0.0001)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):  # cancelled, or it had already finished
            await task
        latest = await store.latest("r")
        assert latest is not None
        if latest.record.version == 2:
            assert latest.log == ("x",), "a committed save is whole"
            assert await store.delete_run("r")
            await store.save(_rec("r", 1), expected_version=None)
        else:
            assert latest.log == (), "a cancelled save left a partial write"
    await store.save(_rec("r", 2, "y"), expected_version=1)
    assert (await store.latest("r")).log == ("y",)  # type: ignore[union-attr]
    await store.aclose()


def _write_now(path: Path) -> None:
    """Take the write lock from another connection without waiting: fails if one is still held."""
    with contextlib.closing(sqlite3.connect(path, timeout=0, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")


async def test_failed_transactions_release_the_write_lock_and_write_nothing(tmp_path: Path) -> None:
    path = tmp_path / "db"
    store = SqliteStore(path)
    await store.save(_rec("r", 1, "a"), expected_version=None)
    await store.set(S, "s", "x")
    with pytest.raises(CheckpointConflict):
        await store.save(_rec("r", 1, "b"), expected_version=None)
    _write_now(path)
    with pytest.raises(ValueError, match="must be 2"):
        await store.save(_rec("r", 3, "b"), expected_version=1)
    _write_now(path)
    with pytest.raises(StoreValueError):
        await store.append(S, "s", 1)
    _write_now(path)
    assert [i.version for i in await store.list_versions("r")] == [1]
    assert (await store.latest("r")).log == ("a",)  # type: ignore[union-attr]
    assert await store.get(S, "s") == "x"
    await store.save(_rec("r", 2, "b"), expected_version=1)
    _write_now(path)
    assert (await store.latest("r")).log == ("a", "b")  # type: ignore[union-attr]
    await store.aclose()


def test_in_transaction_commits_rolls_back_and_flags_a_failed_rollback() -> None:
    from seamkit_sqlite.store import _Broken, _in_transaction

    db = sqlite3.connect(":memory:", isolation_level=None)
    db.execute("CREATE TABLE t (x INTEGER)")
    assert _in_transaction(db, "BEGIN IMMEDIATE", lambda d: d.execute("INSERT INTO t VALUES (1)").rowcount) == 1

    def fail(d: sqlite3.Connection) -> None:
        d.execute("INSERT INTO t VALUES (2)")
        raise CheckpointConflict("r", 1, 2)

    with pytest.raises(CheckpointConflict):
        _in_transaction(db, "BEGIN IMMEDIATE", fail)
    assert not db.in_transaction
    assert db.execute("SELECT x FROM t").fetchall() == [(1,)]

    class NoRollback:  # a connection whose ROLLBACK fails
        def __init__(self) -> None:
            self.db = db

        def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
            return self.db.execute(sql, *args)

        def rollback(self) -> None:
            raise sqlite3.OperationalError("disk I/O error")

    with pytest.raises(_Broken) as info:
        _in_transaction(NoRollback(), "BEGIN IMMEDIATE", fail)  # type: ignore[arg-type]
    assert isinstance(info.value.error, CheckpointConflict)
    db.rollback()
    db.close()


@pytest.mark.parametrize("synchronous", ["NORMAL", "FULL"])  # the save on the loop's thread / on the connection's
async def test_a_failed_rollback_drops_the_connection_and_the_next_call_reconnects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, synchronous: str
) -> None:
    import seamkit_sqlite.store as mod

    store = SqliteStore(tmp_path / "db", synchronous=synchronous)
    await store.save(_rec("r", 1), expected_version=None)
    first = store._conn

    def broken(*args: object, **kwargs: object) -> object:
        raise mod._Broken(sqlite3.OperationalError("disk I/O error"))

    with monkeypatch.context() as patch:
        patch.setattr(mod, "_in_transaction", broken)
        patch.setattr(store, "_on_loop_thread", broken)
        with pytest.raises(StoreUnavailable, match="disk I/O error"):
            await store.save(_rec("r", 2), expected_version=1)
    assert store._conn is None
    await store.save(_rec("r", 2), expected_version=1)
    assert store._conn is not None and store._conn is not first
    assert (await store.latest("r")).record.version == 2  # type: ignore[union-attr]
    await store.aclose()


# --------------------------------------------------------------------------- concurrency


async def test_100_concurrent_runs_on_one_store(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db")

    async def run(n: int) -> None:
        prev = None
        for v in range(1, 11):
            await store.save(_rec(f"run-{n}", v, f"{n}:{v}:a", f"{n}:{v}:b"), expected_version=prev)
            await store.put_write(f"run-{n}", v, f"call-{v}", f"{n}:{v}")
            prev = v
            await asyncio.sleep(0)

    await asyncio.gather(*(run(n) for n in range(100)))
    for n in range(100):
        latest = await store.latest(f"run-{n}")
        assert latest is not None and latest.record.version == 10
        assert latest.log == tuple(f"{n}:{v}:{x}" for v in range(1, 11) for x in "ab")
        assert await store.pending_writes(f"run-{n}", 10) == {"call-10": f"{n}:10"}
    assert len(await store.list_runs(limit=1000)) == 100
    await store.aclose()


_WORKER = textwrap.dedent(
    """
    import asyncio, json, sys
    from seamkit._durability.records import CheckpointRecord
    from seamkit.values import Scope
    from seamkit_sqlite.store import SqliteStore

    async def main(path, worker, n):
        store = SqliteStore(path, busy_timeout_s=30)
        errors = []
        prev = None
        for v in range(1, n + 1):
            try:
                rec = CheckpointRecord(run_id=f"w{worker}", version=v, status="running",
                                       state=json.dumps({"v": v}), entries=(f"{worker}:{v}",))
                await store.save(rec, expected_version=prev)
                prev = v
                await store.increment(Scope("shared"), "counter")
                await store.append(Scope("shared"), "log", f"{worker}:{v}")
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
        await store.aclose()
        print(json.dumps(errors))

    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
    """
)


def test_several_processes_write_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "db.sqlite"  # created by the racing processes themselves
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), str(w), "50"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert json.loads(out) == [], f"worker errors: {out}"
        assert "locked" not in err

    async def check() -> None:
        store = SqliteStore(path)
        assert await store.get(Scope("shared"), "counter") == 200
        log = await store.list(Scope("shared"), "log")
        assert sorted(log) == sorted(f"{w}:{v}" for w in range(4) for v in range(1, 51))
        for w in range(4):
            latest = await store.latest(f"w{w}")
            assert latest is not None and latest.record.version == 50
            assert latest.log == tuple(f"{w}:{v}" for v in range(1, 51))
            assert [i.version for i in await store.list_versions(f"w{w}")] == list(range(1, 51))
        await store.aclose()

    asyncio.run(check())
    assert _pragma(path, "journal_mode") == "wal"


_RACER = textwrap.dedent(
    """
    import asyncio, sys
    from seamkit._durability.records import CheckpointRecord
    from seamkit.errors import CheckpointConflict
    from seamkit_sqlite.store import SqliteStore

    async def main(path, worker):
        store = SqliteStore(path, busy_timeout_s=30)
        won = 0
        for v in range(1, 41):
            rec = CheckpointRecord(run_id="contested", version=v, status="running", state="{}",
                                   entries=(f"{worker}:{v}",))
            try:
                await store.save(rec, expected_version=v - 1 or None)
                won += 1
            except CheckpointConflict:
                pass
        await store.aclose()
        print(won)

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


def test_processes_racing_on_one_run_never_both_win_a_version(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    script = tmp_path / "racer.py"
    script.write_text(_RACER)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), str(w)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for w in range(3)
    ]
    wins = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        wins.append(int(out))
    assert sum(wins) == 40, wins  # every version won by exactly one process

    async def check() -> None:
        store = SqliteStore(path)
        latest = await store.latest("contested")
        assert latest is not None and latest.record.version == 40
        assert len(latest.log) == 40  # one entry per version: losers wrote nothing
        assert [e.split(":")[1] for e in latest.log] == [str(v) for v in range(1, 41)]
        await store.aclose()

    asyncio.run(check())


def test_a_store_nobody_closed_does_not_keep_the_process_alive(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import asyncio
        from seamkit.values import Scope
        from seamkit_sqlite.store import SqliteStore
        STORE = SqliteStore({str(tmp_path / "db")!r})
        asyncio.run(STORE.set(Scope(), "k", 1))
        print("done")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done"


async def test_a_run_step_is_one_transaction(tmp_path: Path) -> None:
    """Issue 19 (W4): each step of a checkpointed run (model turn + tool batch) is ONE
    transaction: the tool result, the version after the batch and the version after the next
    model turn together."""
    from seamkit import Agent, tool
    from seamkit.testing import ScriptedModel

    @tool(side_effecting=False, blocking=False)
    def note(text: str) -> str:
        """Write a note.

        Args:
            text: the note
        """
        return f"noted {text}"

    steps = 6
    turns: list[Any] = [{"tool_calls": [{"id": f"c{i}", "name": "note", "arguments": {"text": str(i)}}]}
                        for i in range(steps)]
    async with SqliteStore(tmp_path / "runs.db") as store:
        await store.list_runs()  # connect (and create the schema) first
        transactions: list[str] = []
        assert store._conn is not None
        # every statement the connection runs, on whichever thread
        store._conn._conn.set_trace_callback(lambda sql: sql == "BEGIN IMMEDIATE" and transactions.append(sql))
        agent = Agent(ScriptedModel([*turns, "done"]), tools=[note], checkpointer=store)
        result = await agent.run("take notes")
        assert result.output == "done"
        # begin, the first model turn, then one per step (the last with the final answer)
        assert len(transactions) == steps + 2
        history = await agent.checkpointer.history(result.run_id)
        assert len(history) == 2 * steps + 2
        snap = await agent.checkpointer.at_version(result.run_id, 3)
        assert snap is not None and snap.transcript[-1].role == "tool"
        assert list(await store.pending_writes(result.run_id, 2)) == ["c0"]  # the result, for version 2


# --------------------------------------------------------------------------- saves on the event loop's thread


def _commit_threads(store: SqliteStore) -> list[int]:
    """Start recording the thread of every COMMIT the store's connection runs."""
    assert store._conn is not None
    threads: list[int] = []
    store._conn._conn.set_trace_callback(lambda sql: sql == "COMMIT" and threads.append(threading.get_ident()))
    return threads


@pytest.mark.parametrize(("path", "synchronous", "saves_on_loop", "on_loop"), [
    ("db", "NORMAL", True, True), (":memory:", "NORMAL", True, True), (":memory:", "FULL", True, True),
    ("db", "FULL", True, False), ("db", "NORMAL", False, False), (":memory:", "NORMAL", False, False),
])
async def test_which_saves_run_on_the_event_loops_thread(
    tmp_path: Path, path: str, synchronous: str, saves_on_loop: bool, on_loop: bool
) -> None:
    """Issue 19 (W4): at synchronous=NORMAL (a commit appends to the WAL, no fsync) and in memory a
    save runs where it is awaited, with no hand-off, unless saves_on_loop is off; at FULL every
    commit waits for fsync, so saves go to the connection's thread. Store operations and reads
    always go there."""
    config = SqliteConfig(path=path if path == MEMORY else str(tmp_path / path), synchronous=synchronous,
                          saves_on_loop=saves_on_loop)
    store = build(config)
    await store.list_runs()
    threads = _commit_threads(store)
    await store.save(_rec("r", 1, "a"), expected_version=None)
    await store.save_many([_rec("r", 2, "b"), _rec("r", 3)], expected_version=1,
                          writes=[PendingWrite("r", 3, "c1", "out")])
    here = threading.get_ident()
    assert threads == [here, here] if on_loop else (len(threads) == 2 and here not in threads)
    del threads[:]
    assert await store.increment(S, "n") == 1
    assert threads and here not in threads, "a store operation ran on the event loop's thread"
    latest = await store.latest("r")
    assert latest is not None and latest.record.version == 3 and latest.log == ("a", "b")
    assert await store.pending_writes("r", 3) == {"c1": "out"}
    await store.aclose()


@pytest.mark.parametrize("big", ["entry", "entries", "empty entries", "metadata", "writes", "run id", "parent",
                                 "task id"])
async def test_a_big_save_goes_to_the_connections_thread(tmp_path: Path, big: str) -> None:
    """Whatever makes a save big (text in any field, or many rows, even empty ones: an outside
    tester's 100,000 empty log entries stopped the loop for 250 ms) sends it to the thread."""
    from seamkit_sqlite.store import _INLINE_MAX_CHARS, _INLINE_MAX_ROWS

    store = SqliteStore(tmp_path / "db")
    await store.list_runs()
    threads = _commit_threads(store)
    await store.save(_rec("r", 1, "x" * (_INLINE_MAX_CHARS // 2)), expected_version=None)
    many = _INLINE_MAX_ROWS + 1
    # (outside tester: a big run id is in every row; ids and keys count like any text)
    run_id = "r" * (_INLINE_MAX_CHARS // 200) if big == "run id" else "r"
    if run_id != "r":
        await store.save(_rec(run_id, 1), expected_version=None)
        threads[1:] = []
    entries: tuple[str, ...] = {"entry": ("y" * (_INLINE_MAX_CHARS + 1),), "entries": ("yy",) * many,
                                "empty entries": ("",) * many, "run id": ("e",) * 200}.get(big, ())
    metadata = {"note": "m" * (_INLINE_MAX_CHARS + 1)} if big == "metadata" else {}
    parent = "p" * (_INLINE_MAX_CHARS + 1) if big == "parent" else None
    writes = [PendingWrite(run_id, 2, f"c{i}", "w") for i in range(many)] if big == "writes" else []
    if big == "task id":
        writes = [PendingWrite(run_id, 2, "t" * (_INLINE_MAX_CHARS + 1), "w")]
    await store.save_many([_rec(run_id, 2, *entries, metadata=metadata, parent_run_id=parent)], expected_version=1,
                          writes=writes)
    assert threads[0] == threading.get_ident() and threads[1] != threading.get_ident()
    latest = await store.latest(run_id)
    assert latest is not None and latest.log[1 if run_id == "r" else 0:] == entries
    assert dict(latest.record.metadata) == metadata and latest.record.parent_run_id == parent
    assert len(await store.pending_writes(run_id, 2)) == len(writes)
    await store.aclose()


async def _ticks_while(op: Any, release: Any, after: float = 0.3) -> tuple[Any, int]:
    """Await ``op`` while a ticker counts 5 ms sleeps; ``release()`` is called from the event loop
    ``after`` seconds. Returns op's result and the ticks: few ticks = the loop was blocked."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    async def releaser() -> None:
        await asyncio.sleep(after)
        release()

    tick = asyncio.create_task(ticker())
    rel = asyncio.create_task(releaser())
    try:
        result = await asyncio.wait_for(op, 10)
    finally:
        tick.cancel()
        await rel
    return result, ticks


async def test_a_save_never_waits_for_another_connections_lock_on_the_event_loop(tmp_path: Path) -> None:
    """Another process holds the write lock: the save must wait on the connection's thread (up to
    busy_timeout_s), not stop the event loop; the lock is released from the loop itself, so a save
    that waited on the loop's thread would fail with 'locked' after the timeout instead."""
    path = tmp_path / "db"
    store = SqliteStore(path, busy_timeout_s=5)
    await store.save(_rec("r", 1), expected_version=None)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    t0 = time.monotonic()
    _, ticks = await _ticks_while(store.save(_rec("r", 2, "a"), expected_version=1), blocker.rollback)
    blocker.close()
    assert ticks >= 20, f"the event loop was blocked (ticked {ticks} times in {time.monotonic() - t0:.2f} s)"
    assert 0.25 <= time.monotonic() - t0 < 4, "the save did not wait for the lock, or waited for the timeout"
    assert (await store.latest("r")).log == ("a",)  # type: ignore[union-attr]
    # the busy timeout is what was configured, for the next operation that must wait
    assert store._conn is not None
    assert store._conn._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    await store.save(_rec("r", 3), expected_version=2)  # and saves run on the loop's thread again
    await store.aclose()


async def test_a_save_after_a_cancelled_operation_does_not_run_beside_it(tmp_path: Path) -> None:
    """A store operation whose task was cancelled still runs on the connection's thread (here: it
    waits for a lock another process holds). A save right after it must queue behind it there, not
    run on the loop's thread beside it (which would stop the loop, waiting for the connection)."""
    path = tmp_path / "db"
    store = SqliteStore(path, busy_timeout_s=5)
    await store.save(_rec("r", 1), expected_version=None)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    doomed = asyncio.create_task(store.set(S, "late", 1))
    await asyncio.sleep(0.05)
    doomed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await doomed
    _, ticks = await _ticks_while(store.save(_rec("r", 2, "a"), expected_version=1), blocker.rollback)
    blocker.close()
    assert ticks >= 20, f"the event loop was blocked (ticked {ticks} times)"
    assert (await store.latest("r")).log == ("a",)  # type: ignore[union-attr]
    assert await store.get(S, "late") == 1, "the cancelled operation ran (as documented) before the save"
    threads = _commit_threads(store)
    await store.save(_rec("r", 3), expected_version=2)
    assert threads == [threading.get_ident()], "once the thread is idle again saves run on the loop's thread"
    await store.aclose()


def _wal_size(path: Path) -> int:
    return Path(f"{path}-wal").stat().st_size


@pytest.mark.parametrize(("op", "n", "size"), [("save", 1500, 300), ("set", 1500, 300), ("set", 40, 800_000)])
async def test_the_store_checkpoints_the_wal_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op: str, n: int, size: int
) -> None:
    """SQLite's automatic WAL checkpoints are off on the store's connection (they would copy pages
    and fsync on the event loop's thread); the store runs them on its thread. Without them the WAL
    would grow by every page ever written (here 30-40 MB). Each runs once the WAL holds 4 MiB, not
    on every look at it (the WAL file must shrink when it starts over)."""
    import seamkit_sqlite.store as mod

    checkpoints = 0
    real = mod._guarded

    def counted(use: threading.Lock, fn: Any, db: sqlite3.Connection, wal_checkpoint: bool) -> Any:
        nonlocal checkpoints
        checkpoints += wal_checkpoint
        return real(use, fn, db, wal_checkpoint)

    monkeypatch.setattr(mod, "_guarded", counted)
    path = tmp_path / "db"
    store = SqliteStore(path)
    await store.list_runs()
    assert store._conn is not None
    assert store._conn._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    for v in range(1, n + 1):
        if op == "save":
            await store.save(_rec("r", v, "e" * size), expected_version=v - 1 or None)
        else:
            await store.set(S, f"k{v}", "v" * size)
    wal = await asyncio.to_thread(_wal_size, path)
    assert wal < 8 * 1024 * 1024, f"the WAL grew to {wal} bytes"
    written = n * (size + 10 * 4096)  # the text and a leaf of each table and index touched, at most
    assert 1 <= checkpoints <= written // (3 * 1024 * 1024), checkpoints
    # the data is whole, read by another connection
    with contextlib.closing(sqlite3.connect(path)) as other:
        table = "checkpoints" if op == "save" else "kv"
        assert other.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == n
    await store.aclose()


async def test_short_lived_stores_checkpoint_the_wal_another_connection_keeps_open(tmp_path: Path) -> None:
    """Outside tester: a process keeps a store open (a worker, a long run) while many short ones
    (CLI commands, runs) each write a little and close. Closing checkpoints only the last
    connection's WAL, and each store counted only its own writes, so the WAL grew by ~15 MB a
    round; a store looks at the WAL's size on disk, whoever wrote it."""
    path = tmp_path / "db"
    keeper = SqliteStore(path)
    await keeper.list_runs()
    for i in range(30):
        async with SqliteStore(path) as store:
            for v in range(1, 26):
                await store.save(_rec(f"r{i}", v, "e" * 8000), expected_version=v - 1 or None)
    # and stores that write too little to look at the WAL ever again: their first write looks
    for i in range(100):
        async with SqliteStore(path) as store:
            for v in (1, 2):
                await store.save(_rec(f"s{i}", v, "e" * 60_000), expected_version=v - 1 or None)
    wal = await asyncio.to_thread(_wal_size, path)
    assert wal < 8 * 1024 * 1024, f"the WAL grew to {wal} bytes"
    assert len(await keeper.list_runs(limit=200)) == 130
    await keeper.aclose()


async def test_a_save_waits_while_the_connections_thread_uses_the_connection(tmp_path: Path) -> None:
    """Whatever runs on the connection's thread (an operation cancelled while it ran, a WAL
    checkpoint) holds the connection's thread-safety lock: a save then queues there behind it,
    never runs beside it on the loop's thread (an outside tester saw 'cannot commit transaction -
    SQL statements in progress' and the loop stopped for 170 ms)."""
    store = SqliteStore(tmp_path / "db")
    await store.save(_rec("r", 1), expected_version=None)
    held = threading.Event()
    holder = threading.Thread(target=lambda: (store._use.acquire(), held.set(), time.sleep(0.3), store._use.release()))
    holder.start()
    await asyncio.to_thread(held.wait)
    threads = _commit_threads(store)
    _, ticks = await _ticks_while(store.save(_rec("r", 2, "a"), expected_version=1), lambda: None, after=0)
    holder.join()
    assert ticks >= 20, f"the event loop was blocked (ticked {ticks} times)"
    assert len(threads) == 1 and threads[0] != threading.get_ident()
    assert (await store.latest("r")).log == ("a",)  # type: ignore[union-attr]
    await store.aclose()


async def test_a_cancelled_operation_checkpointing_the_wal_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside tester: a `set` cancelled while the store checkpointed the WAL after it (its task
    cancelled by a timeout) left the checkpoint running on the thread while the next save ran on
    the loop's thread on the same connection."""
    import seamkit_sqlite.store as mod

    real = mod._guarded

    def slow_checkpoint(use: threading.Lock, fn: Any, db: sqlite3.Connection, wal_checkpoint: bool) -> Any:
        with use:
            if wal_checkpoint:
                time.sleep(0.3)
        return real(use, fn, db, wal_checkpoint)

    path = tmp_path / "db"
    store = SqliteStore(path)
    await store.save(_rec("r", 1), expected_version=None)
    monkeypatch.setattr(mod, "_guarded", slow_checkpoint)
    for i in range(60):  # 100 KB each: past the WAL's 4 MiB
        task = asyncio.create_task(store.set(S, f"k{i}", "v" * 100_000))
        await asyncio.sleep(0.02)
        if not task.done():  # its checkpoint: cancel it
            task.cancel()
            break
        await task
    else:
        pytest.fail("no set was slow: the WAL was never checkpointed")
    threads = _commit_threads(store)
    await store.save(_rec("r", 2, "a"), expected_version=1)
    assert (await store.latest("r")).log == ("a",)  # type: ignore[union-attr]
    assert threads and threads[0] != threading.get_ident(), "the save ran beside the checkpoint"
    await store.aclose()


async def test_saves_on_the_stores_thread_keep_sqlites_automatic_wal_checkpoints(tmp_path: Path) -> None:
    for store in (SqliteStore(tmp_path / "db", synchronous="FULL"), SqliteStore(tmp_path / "db", saves_on_loop=False)):
        await store.list_runs()
        assert store._conn is not None
        assert store._conn._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        await store.aclose()


async def test_a_save_never_overtakes_a_cancelled_operation_still_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside tester: a `delete_run` cancelled after it was handed to the connection's thread but
    before that thread started it; a save of the run right after it ran on the loop's thread,
    was acknowledged, and was then deleted by the cancelled operation. First come, first served:
    the save queues behind it (here: finds no run and conflicts)."""
    import seamkit_sqlite.store as mod

    real = mod._guarded
    slow = [True]

    def slow_to_start(use: threading.Lock, fn: Any, db: sqlite3.Connection, wal_checkpoint: bool) -> Any:
        if slow and slow.pop():
            time.sleep(0.2)  # the thread has not started it yet
        return real(use, fn, db, wal_checkpoint)

    store = SqliteStore(tmp_path / "db")
    await store.save(_rec("r", 1), expected_version=None)
    monkeypatch.setattr(mod, "_guarded", slow_to_start)
    doomed = asyncio.create_task(store.delete_run("r"))
    await asyncio.sleep(0.05)
    doomed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await doomed
    with pytest.raises(CheckpointConflict):
        await store.save(_rec("r", 2), expected_version=1)
    assert await store.latest("r") is None
    await store.save(_rec("r", 1, "again"), expected_version=None)
    threads = _commit_threads(store)
    await store.save(_rec("r", 2), expected_version=1)
    assert threads == [threading.get_ident()], "saves did not come back to the loop's thread"
    await store.aclose()


async def test_the_write_after_a_wal_checkpoint_is_on_the_connections_thread(tmp_path: Path) -> None:
    """Outside tester: the write after a checkpoint starts the WAL over and cuts its file back to
    journal_size_limit; after a 150 MB write that took 40 ms, on the loop's thread when the write
    was a save. It goes to the connection's thread; the one after it is on the loop's again."""
    store = SqliteStore(tmp_path / "db")
    await store.save(_rec("r", 1), expected_version=None)
    real = store._wal_due
    once = [True]
    store._wal_due = lambda pages: bool(once and once.pop()) or real(pages)  # type: ignore[method-assign]
    await store.set(S, "k", "v" * 100_000)  # checkpointed after it
    threads = _commit_threads(store)
    await store.save(_rec("r", 2), expected_version=1)
    await store.save(_rec("r", 3), expected_version=2)
    assert threads[0] != threading.get_ident() and threads[1] == threading.get_ident(), threads
    await store.aclose()
