"""The :class:`~seamkit._ports.CheckpointPort` conformance suite (see :mod:`pytest_seamkit.conformance`)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from seamkit.errors import CheckpointConflict
from seamkit.plugin import CheckpointInfo, CheckpointPort, CheckpointRecord, PendingWrite, StoredCheckpoint, codec
from seamkit.values import FrozenDict, freeze

from pytest_seamkit import _durable
from pytest_seamkit.conformance import _persist

__all__ = ["CheckpointConformance"]

T0 = 1_767_225_600.125  # 2026-01-01T00:00:00.125Z, unix seconds


def _state(tag: str) -> str:
    return codec.dumps({"state": tag})


def _entry(tag: str) -> str:
    return codec.dumps({"role": "user", "text": tag})


def _rec(
    run_id: str,
    version: int,
    *,
    status: str = "running",
    state: str | None = None,
    entries: Sequence[str] | None = None,
    parent: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    created_at: float | None = None,
) -> CheckpointRecord:
    return CheckpointRecord(
        run_id=run_id,
        version=version,
        status=status,
        state=_state(f"{run_id}/v{version}") if state is None else state,
        entries=(
            (_entry(f"{run_id}/v{version}/a"), _entry(f"{run_id}/v{version}/b")) if entries is None else tuple(entries)
        ),
        parent_run_id=parent,
        metadata=freeze({"agent": "conformance", "v": version} if metadata is None else metadata),
        created_at=T0 + version if created_at is None else created_at,
    )


def _info(rec: CheckpointRecord) -> CheckpointInfo:
    return CheckpointInfo(
        run_id=rec.run_id,
        version=rec.version,
        status=rec.status,
        parent_run_id=rec.parent_run_id,
        metadata=rec.metadata,
        created_at=rec.created_at,
    )


def _log(records: Sequence[CheckpointRecord]) -> tuple[str, ...]:
    return tuple(e for r in records for e in r.entries)


def _check_metadata(got: Any, want: FrozenDict) -> None:
    assert isinstance(got, FrozenDict), f"metadata must be a FrozenDict, got {type(got).__name__}"
    assert got == want
    for key, value in want.items():
        assert type(got[key]) is type(value), f"metadata[{key!r}]: {got[key]!r} is not {value!r}"


def _check_record(got: Any, want: CheckpointRecord) -> None:
    assert type(got) is CheckpointRecord
    assert got == want, f"{got!r} != {want!r}"
    assert type(got.created_at) is float
    assert type(got.version) is int
    _check_metadata(got.metadata, want.metadata)


def _check_stored(got: Any, want: CheckpointRecord, log: tuple[str, ...]) -> None:
    assert type(got) is StoredCheckpoint, f"expected a StoredCheckpoint, got {got!r}"
    _check_record(got.record, want)
    assert type(got.log) is tuple, f"log must be a tuple, got {type(got.log).__name__}"
    assert got.log == log


def _check_infos(got: Sequence[Any], want: Sequence[CheckpointRecord]) -> None:
    got = list(got)
    assert [(i.run_id, i.version) for i in got] == [(r.run_id, r.version) for r in want]
    for info, rec in zip(got, want, strict=True):
        assert type(info) is CheckpointInfo
        assert info == _info(rec)
        _check_metadata(info.metadata, rec.metadata)


async def _chain(cp: Any, run_id: str, n: int, **kw: Any) -> list[CheckpointRecord]:
    """Save versions 1..n of ``run_id``; returns the records."""
    records = []
    for v in range(1, n + 1):
        rec = _rec(run_id, v, **kw)
        await cp.save(rec, expected_version=None if v == 1 else v - 1)
        records.append(rec)
    return records


async def _snapshot(cp: Any, run_id: str) -> tuple[Any, ...]:
    versions = list(await cp.list_versions(run_id))
    return (
        await cp.latest(run_id),
        versions,
        [await cp.at_version(run_id, i.version) for i in versions],
        list(await cp.list_runs(limit=1000)),
    )


class CheckpointConformance(_persist.DeclaredPersistence):
    """Tests every :class:`~seamkit._ports.CheckpointPort` must pass. Subclass it and provide an
    async fixture ``checkpoints`` yielding a fresh, empty, isolated backend (closed afterwards); for
    a persistent backend also ``open_checkpoints`` (a callable opening another instance on the same
    location) and ``checkpoints_component`` (``(name, config)`` as YAML names it), see
    :mod:`pytest_seamkit.conformance`."""

    pytestmark = pytest.mark.asyncio

    async def test_the_declared_persistence_is_the_stores(self, checkpoints: Any) -> None:
        self.check_declaration(checkpoints)

    @pytest.fixture
    def open_checkpoints(self) -> Any:
        """Override: a callable (plain or async) returning a new instance on ``checkpoints``' location."""
        return None

    @pytest.fixture
    def checkpoints_component(self) -> Any:
        """Override: ``(name, config)`` that builds an instance on ``checkpoints``' location in another
        process: a registered store name (``"sqlite"``) or ``"module:attr"``, and its config mapping."""
        return None

    async def test_is_a_checkpoint_port(self, checkpoints: Any) -> None:
        assert isinstance(checkpoints, CheckpointPort)
        persistent = getattr(checkpoints, "persistent", True)
        assert isinstance(persistent, bool), f"persistent must be a bool (or absent: True), got {persistent!r}"

    # --- save / latest -----------------------------------------------------------------------

    async def test_save_first_and_next_version(self, checkpoints: Any) -> None:
        cp = checkpoints
        v1 = _rec("run", 1)
        await cp.save(v1, expected_version=None)
        _check_stored(await cp.latest("run"), v1, v1.entries)
        v2 = _rec("run", 2, status="suspended")
        await cp.save(v2, expected_version=1)
        _check_stored(await cp.latest("run"), v2, v1.entries + v2.entries)

    async def test_latest_returns_the_record_exactly(self, checkpoints: Any) -> None:
        cp = checkpoints
        rec = _rec(
            "child",
            1,
            status="suspended",
            entries=[_entry("one"), _entry("two"), _entry("three")],
            parent="parent-run",
            metadata={"agent": "ägent", "steps": 3, "ratio": 0.25, "flag": True, "off": False, "none": None},
            created_at=T0 + 0.123456,
        )
        await cp.save(rec, expected_version=None)
        _check_stored(await cp.latest("child"), rec, rec.entries)
        _check_stored(await cp.at_version("child", 1), rec, rec.entries)
        for status in ("running", "done", "failed"):
            run = f"status-{status}"
            r = _rec(run, 1, status=status, metadata={}, entries=())
            await cp.save(r, expected_version=None)
            _check_stored(await cp.latest(run), r, ())

    async def test_unknown_run_reads_as_none(self, checkpoints: Any) -> None:
        cp = checkpoints
        assert await cp.latest("nope") is None
        assert await cp.at_version("nope", 1) is None
        assert list(await cp.list_versions("nope")) == []
        assert list(await cp.list_runs()) == []
        assert dict(await cp.pending_writes("nope", 1)) == {}

    # --- conflicts ---------------------------------------------------------------------------

    @pytest.mark.parametrize(
        ("expected", "version"),
        [(1, 2), (None, 1), (5, 6)],
        ids=["stale", "none-but-run-exists", "ahead"],
    )
    async def test_stale_writer_gets_a_conflict_and_writes_nothing(
        self, checkpoints: Any, expected: int | None, version: int
    ) -> None:
        cp = checkpoints
        await _chain(cp, "run", 2)
        await cp.put_write("run", 2, "call-1", _state("w"))
        before = await _snapshot(cp, "run")
        loser = _rec("run", version, state=_state("loser"), entries=[_entry("loser-entry")], status="done")
        with pytest.raises(CheckpointConflict) as exc:
            await cp.save(loser, expected_version=expected)
        assert exc.value.run_id == "run"
        assert exc.value.expected == expected
        assert exc.value.actual == 2
        assert await _snapshot(cp, "run") == before
        latest = await cp.latest("run")
        assert _entry("loser-entry") not in latest.log
        assert dict(await cp.pending_writes("run", 2)) == {"call-1": _state("w")}

    async def test_conflict_on_a_run_without_versions(self, checkpoints: Any) -> None:
        cp = checkpoints
        with pytest.raises(CheckpointConflict) as exc:
            await cp.save(_rec("fresh", 4), expected_version=3)
        assert (exc.value.run_id, exc.value.expected, exc.value.actual) == ("fresh", 3, None)
        assert await cp.latest("fresh") is None
        assert list(await cp.list_versions("fresh")) == []
        assert list(await cp.list_runs()) == []
        # The run can still start at version 1.
        v1 = _rec("fresh", 1)
        await cp.save(v1, expected_version=None)
        _check_stored(await cp.latest("fresh"), v1, v1.entries)

    async def test_record_version_must_follow_the_expected_version(self, checkpoints: Any) -> None:
        cp = checkpoints
        with pytest.raises((ValueError, CheckpointConflict)):
            await cp.save(_rec("run", 2), expected_version=None)
        assert await cp.latest("run") is None
        assert list(await cp.list_runs()) == []
        v1 = _rec("run", 1)
        await cp.save(v1, expected_version=None)
        with pytest.raises((ValueError, CheckpointConflict)):
            await cp.save(_rec("run", 3, entries=[_entry("skip")]), expected_version=1)
        with pytest.raises((ValueError, CheckpointConflict)):
            await cp.save(_rec("run", 1, entries=[_entry("same")]), expected_version=1)
        _check_stored(await cp.latest("run"), v1, v1.entries)
        _check_infos(await cp.list_versions("run"), [v1])

    async def test_concurrent_savers_exactly_one_wins(self, checkpoints: Any) -> None:
        cp = checkpoints
        v1 = _rec("run", 1)
        await cp.save(v1, expected_version=None)
        contenders = [_rec("run", 2, state=_state(f"w{i}"), entries=[_entry(f"w{i}")]) for i in range(20)]
        results = await asyncio.gather(*(cp.save(r, expected_version=1) for r in contenders), return_exceptions=True)
        winners = [c for c, r in zip(contenders, results, strict=True) if r is None]
        losers = [r for r in results if r is not None]
        assert len(winners) == 1, results
        assert all(isinstance(r, CheckpointConflict) and (r.expected, r.actual) == (1, 2) for r in losers), losers
        _check_stored(await cp.latest("run"), winners[0], v1.entries + winners[0].entries)
        _check_infos(await cp.list_versions("run"), [v1, winners[0]])

        firsts = [_rec("new", 1, state=_state(f"f{i}"), entries=[_entry(f"f{i}")]) for i in range(20)]
        results = await asyncio.gather(*(cp.save(r, expected_version=None) for r in firsts), return_exceptions=True)
        winners = [c for c, r in zip(firsts, results, strict=True) if r is None]
        assert len(winners) == 1, results
        assert all(isinstance(r, CheckpointConflict) and r.actual == 1 for r in results if r is not None)
        _check_stored(await cp.latest("new"), winners[0], winners[0].entries)

    # --- log, at_version, list_versions ------------------------------------------------------

    async def test_log_and_at_version(self, checkpoints: Any) -> None:
        cp = checkpoints
        records = [
            _rec("run", 1, entries=[_entry("a"), _entry("b")]),
            _rec("run", 2, entries=[]),
            _rec("run", 3, entries=[_entry("c")]),
            _rec("run", 4, entries=[_entry("d"), _entry("e"), _entry("f")], status="done"),
        ]
        for r in records:
            await cp.save(r, expected_version=None if r.version == 1 else r.version - 1)
        _check_stored(await cp.latest("run"), records[-1], _log(records))
        for k, rec in enumerate(records, start=1):
            _check_stored(await cp.at_version("run", k), rec, _log(records[:k]))
        for missing in (0, 5, 99):
            assert await cp.at_version("run", missing) is None
        assert await cp.at_version("other", 1) is None

    async def test_list_versions_oldest_first(self, checkpoints: Any) -> None:
        cp = checkpoints
        records = await _chain(cp, "run", 4, parent="p")
        other = await _chain(cp, "run-2", 2)
        _check_infos(await cp.list_versions("run"), records)
        _check_infos(await cp.list_versions("run-2"), other)
        assert list(await cp.list_versions("run-")) == []

    # --- list_runs ---------------------------------------------------------------------------

    async def test_list_runs_newest_first_with_filters(self, checkpoints: Any) -> None:
        cp = checkpoints
        a1 = _rec("r-a", 1, created_at=T0 + 1)
        a2 = _rec("r-a", 2, status="done", created_at=T0 + 5)
        b1 = _rec("r-b", 1, created_at=T0 + 2)
        c1 = _rec("r-c", 1, status="suspended", parent="r-a", created_at=T0 + 3)
        d1 = _rec("r-d", 1, parent="r-a", created_at=T0 + 4)
        d2 = _rec("r-d", 2, status="failed", parent="r-a", created_at=T0 + 6)
        e1 = _rec("r-e", 1, status="done", parent="r-b", created_at=T0 + 7)
        # Saved out of created_at order: listings order by the latest version's created_at.
        for r in (a1, a2, b1, c1, d1, d2, e1):
            await cp.save(r, expected_version=None if r.version == 1 else r.version - 1)

        _check_infos(await cp.list_runs(), [e1, d2, a2, c1, b1])
        _check_infos(await cp.list_runs(status="done"), [e1, a2])
        _check_infos(await cp.list_runs(status="running"), [b1])
        _check_infos(await cp.list_runs(status="failed"), [d2])
        _check_infos(await cp.list_runs(status="suspended"), [c1])
        _check_infos(await cp.list_runs(parent_run_id="r-a"), [d2, c1])
        _check_infos(await cp.list_runs(parent_run_id="r-b"), [e1])
        _check_infos(await cp.list_runs(parent_run_id="nobody"), [])
        _check_infos(await cp.list_runs(status="failed", parent_run_id="r-a"), [d2])
        _check_infos(await cp.list_runs(status="done", parent_run_id="r-a"), [])
        _check_infos(await cp.list_runs(limit=2), [e1, d2])
        _check_infos(await cp.list_runs(status="done", limit=1), [e1])
        _check_infos(await cp.list_runs(parent_run_id="r-a", limit=1), [d2])

    async def test_list_runs_ties_list_the_later_save_first(self, checkpoints: Any) -> None:
        """Runs with one ``created_at`` (saved within one clock tick) list the later save first,
        whatever their ids."""
        cp = checkpoints
        b1, a1, c1 = (_rec(r, 1, created_at=T0) for r in ("tie-b", "tie-a", "tie-c"))
        for r in (b1, a1, c1):
            await cp.save(r, expected_version=None)
        _check_infos(await cp.list_runs(), [c1, a1, b1])
        b2 = _rec("tie-b", 2, created_at=T0)
        await cp.save(b2, expected_version=1)
        _check_infos(await cp.list_runs(), [b2, c1, a1])
        _check_infos(await cp.list_runs(status="running", limit=2), [b2, c1])

    # --- pending writes ----------------------------------------------------------------------

    async def test_pending_writes_per_version(self, checkpoints: Any) -> None:
        cp = checkpoints
        await _chain(cp, "run", 1)
        await _chain(cp, "sibling", 1)
        p = [_state(f"payload-{i}") for i in range(5)]
        await cp.put_write("run", 1, "call-a", p[0])
        await cp.put_write("run", 1, "call-b", p[1])
        await cp.put_write("sibling", 1, "call-a", p[4])
        assert dict(await cp.pending_writes("run", 1)) == {"call-a": p[0], "call-b": p[1]}
        assert dict(await cp.pending_writes("run", 2)) == {}
        await cp.save(_rec("run", 2), expected_version=1)
        await cp.put_write("run", 2, "call-a", p[2])
        await cp.put_write("run", 2, "call-a", p[3])  # the same task again: the last write wins
        assert dict(await cp.pending_writes("run", 1)) == {"call-a": p[0], "call-b": p[1]}
        assert dict(await cp.pending_writes("run", 2)) == {"call-a": p[3]}
        assert dict(await cp.pending_writes("sibling", 1)) == {"call-a": p[4]}
        assert dict(await cp.pending_writes("unknown", 1)) == {}

    # --- save_many (optional: checked when the store has it) ----------------------------------

    #: Whether the store has the optional ``save_many``: ``False`` leaves its checks out when the
    #: tests are collected (counted in pytest's summary) instead of skipping them one by one;
    #: ``None`` (said nothing) skips them at run time for a store without it.
    declared_save_many: bool | None = None

    @classmethod
    def not_applicable(cls, name: str, params: dict[str, Any]) -> str | None:
        if cls.declared_save_many is False and name.startswith("test_save_many_"):
            return "the store has no save_many (optional: the checkpointer calls save and put_write one by one)"
        return super().not_applicable(name, params)

    def _save_many(self, cp: Any) -> Any:
        save_many = getattr(cp, "save_many", None)
        said = type(self).declared_save_many
        if said is not None:
            assert said == (save_many is not None), (
                f"the test class says declared_save_many={said} but {type(cp).__name__} "
                f"{'has' if save_many is not None else 'has no'} save_many")
        if save_many is None:
            pytest.skip(f"{type(cp).__name__} has no save_many (optional: the checkpointer then calls save and "
                        "put_write one by one)")
        return save_many

    async def test_the_declared_save_many_is_the_stores(self, checkpoints: Any) -> None:
        said = type(self).declared_save_many
        if said is not None:
            has = getattr(checkpoints, "save_many", None) is not None
            assert said == has, (f"the test class says declared_save_many={said} but {type(checkpoints).__name__} "
                                 f"{'has' if has else 'has no'} save_many")

    async def test_save_many_stores_the_versions_and_writes_of_a_step(self, checkpoints: Any) -> None:
        cp = checkpoints
        save_many = self._save_many(cp)
        (v1,) = await _chain(cp, "run", 1)
        v2, v3 = _rec("run", 2), _rec("run", 3, status="suspended", entries=[_entry("v3")])
        writes = [PendingWrite("run", 1, "call-a", _state("a")), PendingWrite("run", 2, "call-b", _state("b"))]
        await save_many([v2, v3], expected_version=1, writes=writes)
        _check_stored(await cp.latest("run"), v3, _log([v1, v2, v3]))
        _check_stored(await cp.at_version("run", 2), v2, _log([v1, v2]))
        _check_infos(await cp.list_versions("run"), [v1, v2, v3])
        _check_infos(await cp.list_runs(), [v3])
        assert dict(await cp.pending_writes("run", 1)) == {"call-a": _state("a")}
        assert dict(await cp.pending_writes("run", 2)) == {"call-b": _state("b")}
        # a run's first versions, and writes alone
        await save_many([_rec("new", 1), _rec("new", 2)], expected_version=None)
        await save_many([], expected_version=None, writes=[PendingWrite("new", 2, "call", _state("c"))])
        assert (await cp.latest("new")).record.version == 2
        assert dict(await cp.pending_writes("new", 2)) == {"call": _state("c")}

    @pytest.mark.parametrize("expected", [1, 3], ids=["stale", "ahead"])
    async def test_save_many_conflict_writes_nothing(self, checkpoints: Any, expected: int) -> None:
        """Another worker stored version 2 after this one read version 1: saving versions 2 and 3
        on top of version 1 conflicts (the second record, which expects the version the first
        would have stored, must not land on the other worker's version 2), and no write lands."""
        cp = checkpoints
        save_many = self._save_many(cp)
        await _chain(cp, "run", 2)
        before = await _snapshot(cp, "run")
        mine = [_rec("run", expected + 1, state=_state("loser")), _rec("run", expected + 2, state=_state("loser"))]
        with pytest.raises(CheckpointConflict) as exc:
            await save_many(mine, expected_version=expected,
                            writes=[PendingWrite("run", 2, "loser-call", _state("loser"))])
        assert (exc.value.run_id, exc.value.expected, exc.value.actual) == ("run", expected, 2)
        assert await _snapshot(cp, "run") == before
        assert dict(await cp.pending_writes("run", 2)) == {}

    async def test_save_many_versions_must_follow_one_another(self, checkpoints: Any) -> None:
        cp = checkpoints
        save_many = self._save_many(cp)
        (v1,) = await _chain(cp, "run", 1)
        with pytest.raises((ValueError, CheckpointConflict)):
            await save_many([_rec("run", 2), _rec("run", 4)], expected_version=1)
        _check_stored(await cp.latest("run"), v1, v1.entries)
        _check_infos(await cp.list_versions("run"), [v1])

    # --- delete ------------------------------------------------------------------------------

    async def test_delete_removes_one_run_only(self, checkpoints: Any) -> None:
        cp = checkpoints
        await _chain(cp, "run-1", 3)
        kept = {rid: await _chain(cp, rid, 3) for rid in ("run-10", "run-1/x", "run-")}
        for rid in ("run-1", *kept):
            await cp.put_write(rid, 3, "call", _state(rid))
        assert await cp.delete_run("run-1") is True
        assert await cp.latest("run-1") is None
        assert await cp.at_version("run-1", 1) is None
        assert list(await cp.list_versions("run-1")) == []
        assert dict(await cp.pending_writes("run-1", 3)) == {}
        assert "run-1" not in {i.run_id for i in await cp.list_runs()}
        for rid, records in kept.items():
            _check_stored(await cp.latest(rid), records[-1], _log(records))
            _check_infos(await cp.list_versions(rid), records)
            assert dict(await cp.pending_writes(rid, 3)) == {"call": _state(rid)}
        assert await cp.delete_run("run-1") is False
        assert await cp.delete_run("never-existed") is False
        # The id can be used again, starting from an empty log.
        fresh = _rec("run-1", 1, entries=[_entry("fresh")])
        await cp.save(fresh, expected_version=None)
        _check_stored(await cp.latest("run-1"), fresh, fresh.entries)

    # --- prune -------------------------------------------------------------------------------

    async def test_prune_keep_last(self, checkpoints: Any) -> None:
        cp = checkpoints
        a = await _chain(cp, "a", 5)
        b = await _chain(cp, "b", 1)
        c = await _chain(cp, "c", 3)
        for v in range(1, 6):
            await cp.put_write("a", v, "call", _state(f"a{v}"))
        assert await cp.prune_runs(keep_last=2) == 4
        _check_infos(await cp.list_versions("a"), a[3:])
        _check_stored(await cp.latest("a"), a[4], _log(a))
        _check_stored(await cp.at_version("a", 4), a[3], _log(a[:4]))
        for v in (1, 2, 3):
            assert await cp.at_version("a", v) is None
            assert dict(await cp.pending_writes("a", v)) == {}
        for v in (4, 5):
            assert dict(await cp.pending_writes("a", v)) == {"call": _state(f"a{v}")}
        _check_infos(await cp.list_versions("b"), b)
        _check_stored(await cp.latest("b"), b[0], _log(b))
        _check_infos(await cp.list_versions("c"), c[1:])
        _check_stored(await cp.latest("c"), c[2], _log(c))
        assert await cp.prune_runs(keep_last=2) == 0
        _check_infos(await cp.list_runs(), [a[4], c[2], b[0]])

        # Saving continues after a prune, and the log keeps growing.
        a6 = _rec("a", 6)
        await cp.save(a6, expected_version=5)
        _check_stored(await cp.latest("a"), a6, _log([*a, a6]))
        assert await cp.prune_runs() == 3  # keep_last defaults to 1
        _check_infos(await cp.list_versions("a"), [a6])
        _check_stored(await cp.latest("a"), a6, _log([*a, a6]))
        _check_infos(await cp.list_versions("c"), c[2:])
        _check_stored(await cp.latest("c"), c[2], _log(c))

    async def test_prune_finished_before(self, checkpoints: Any) -> None:
        cp = checkpoints
        cutoff = T0 + 100
        runs: dict[str, list[CheckpointRecord]] = {
            "old-done": [_rec("old-done", 1, created_at=T0 + 1), _rec("old-done", 2, status="done", created_at=T0 + 2)],
            "old-failed": [_rec("old-failed", 1, status="failed", created_at=T0 + 3)],
            "old-running": [_rec("old-running", 1, created_at=T0 + 4)],
            "old-suspended": [_rec("old-suspended", 1, status="suspended", created_at=T0 + 5)],
            "new-done": [_rec("new-done", 1, status="done", created_at=T0 + 200)],
            "resumed": [
                _rec("resumed", 1, status="done", created_at=T0 + 6),
                _rec("resumed", 2, status="running", created_at=T0 + 7),
            ],
            "finished-late": [
                _rec("finished-late", 1, status="done", created_at=T0 + 8),
                _rec("finished-late", 2, status="done", created_at=T0 + 150),
            ],
            "at-cutoff": [_rec("at-cutoff", 1, status="done", created_at=cutoff)],
            "child-of-old": [_rec("child-of-old", 1, parent="old-done", created_at=T0 + 9)],
        }
        for records in runs.values():
            for r in records:
                await cp.save(r, expected_version=None if r.version == 1 else r.version - 1)
                await cp.put_write(r.run_id, r.version, "call", _state(r.run_id))
        assert await cp.prune_runs(keep_last=10, finished_before=cutoff) == 3
        for gone in ("old-done", "old-failed"):
            assert await cp.latest(gone) is None
            assert list(await cp.list_versions(gone)) == []
            assert await cp.at_version(gone, 1) is None
            for v in (1, 2):
                assert dict(await cp.pending_writes(gone, v)) == {}
        kept = {k: v for k, v in runs.items() if k not in ("old-done", "old-failed")}
        for rid, records in kept.items():
            _check_stored(await cp.latest(rid), records[-1], _log(records))
            _check_infos(await cp.list_versions(rid), records)
            assert dict(await cp.pending_writes(rid, 1)) == {"call": _state(rid)}
        listed = {i.run_id for i in await cp.list_runs(limit=1000)}
        assert listed == set(kept)
        assert await cp.prune_runs(keep_last=10, finished_before=cutoff) == 0

    async def test_prune_counts_both_kinds(self, checkpoints: Any) -> None:
        cp = checkpoints
        old = await _chain(cp, "old", 3, status="done", created_at=T0)
        live = await _chain(cp, "live", 3)
        assert len(old) == 3
        assert await cp.prune_runs(keep_last=1, finished_before=T0 + 10) == 5
        assert await cp.latest("old") is None
        _check_infos(await cp.list_versions("live"), live[2:])
        _check_stored(await cp.latest("live"), live[2], _log(live))

    # --- scale and payloads ------------------------------------------------------------------

    async def test_concurrent_runs_do_not_mix(self, checkpoints: Any) -> None:
        cp = checkpoints
        n_runs, n_versions = 100, 5

        def record(i: int, v: int) -> CheckpointRecord:
            rid = f"run-{i}"
            return _rec(
                rid,
                v,
                state=_state(f"{rid}:{v}"),
                entries=[_entry(f"{rid}:{v}:{k}") for k in range(v % 3)],
                parent=f"run-{i // 10}" if i >= 10 else None,
                metadata={"i": i, "v": v},
                created_at=T0 + i * 0.001 + v,
            )

        async def drive(i: int) -> None:
            for v in range(1, n_versions + 1):
                await cp.save(record(i, v), expected_version=None if v == 1 else v - 1)
                await cp.put_write(f"run-{i}", v, f"call-{v}", _state(f"w{i}:{v}"))
                await asyncio.sleep(0)

        await asyncio.gather(*(drive(i) for i in range(n_runs)))
        for i in range(n_runs):
            rid = f"run-{i}"
            records = [record(i, v) for v in range(1, n_versions + 1)]
            _check_stored(await cp.latest(rid), records[-1], _log(records))
            _check_infos(await cp.list_versions(rid), records)
            for v in range(1, n_versions + 1):
                assert dict(await cp.pending_writes(rid, v)) == {f"call-{v}": _state(f"w{i}:{v}")}
        listed = list(await cp.list_runs(limit=1000))
        assert sorted(i.run_id for i in listed) == sorted(f"run-{i}" for i in range(n_runs))
        assert all(i.version == n_versions for i in listed)

    async def test_payloads_are_stored_verbatim(self, checkpoints: Any) -> None:
        cp = checkpoints
        odd = '{ "v":1,  "data": {"z": 1, "a": [1.50, 1e3], "s": "ключ 🔑 \\u0000 naïve"}\n}'
        big = '{"v":1,"data":"' + ("x" * 999 + "é") * 1000 + '"}'  # about 1 MB
        entries = [odd, '{"v":1,"data":"日本語 — \\"quoted\\" \\\\ back"}', "[]", big]
        rid = "рун/🔑 1"
        rec = _rec(
            rid,
            1,
            state=big,
            entries=entries,
            parent="родитель",
            metadata={"имя": "значение 🔑", "n": 1},
        )
        await cp.save(rec, expected_version=None)
        got = await cp.latest(rid)
        _check_stored(got, rec, tuple(entries))
        assert got.record.state == big
        rec2 = _rec(rid, 2, state=odd, entries=[big], parent="родитель")
        await cp.save(rec2, expected_version=1)
        _check_stored(await cp.latest(rid), rec2, (*entries, big))
        _check_stored(await cp.at_version(rid, 1), rec, tuple(entries))
        await cp.put_write(rid, 2, "вызов-1", big)
        assert dict(await cp.pending_writes(rid, 2)) == {"вызов-1": big}
        _check_infos(await cp.list_runs(parent_run_id="родитель"), [rec2])
        assert await cp.delete_run(rid) is True

    # --- durability: reopen, another process, a kill (persistent backends) --------------------

    async def test_reopen_keeps_everything(self, checkpoints: Any, open_checkpoints: Any) -> None:
        _persist.require_persistence(checkpoints, open_checkpoints, "open_checkpoints")
        await _durable.write_checkpoints(checkpoints, "reopen")
        await _durable.aclose(checkpoints)
        again = await _durable.open_with(open_checkpoints)
        try:
            problems = await _durable.check_checkpoints(again, "reopen")
            _persist.no_problems(problems, "after closing the checkpoint store and opening it again")
            # versions carry on: the next save follows the reopened latest version, a stale one conflicts
            with pytest.raises(CheckpointConflict) as exc:
                await again.save(_rec("reopen-run", 1), expected_version=None)
            assert exc.value.actual == 3
            nxt = _rec("reopen-run", 4, entries=[_entry("after reopen")])
            await again.save(nxt, expected_version=3)
            latest = await again.latest("reopen-run")
            assert latest is not None and latest.record == nxt and latest.log[-1] == _entry("after reopen")
        finally:
            await _durable.aclose(again)

    async def test_two_open_instances_share_one_location(self, checkpoints: Any, open_checkpoints: Any) -> None:
        """Two instances open on one location at once (``seamkit resume`` in another shell, two
        workers): of two saves of one version exactly one wins, and each sees the other's writes."""
        _persist.require_persistence(checkpoints, open_checkpoints, "open_checkpoints")
        cp = checkpoints
        assert await cp.latest("shared") is None  # both instances in use
        other = await _persist.open_second_or_skip(open_checkpoints, lambda o: o.latest("shared"))
        try:
            assert await other.latest("shared") is None
            first = _rec("shared", 1, state=_state("the first instance's"))
            await cp.save(first, expected_version=None)
            with pytest.raises(CheckpointConflict):
                await other.save(_rec("shared", 1, state=_state("the second instance's")), expected_version=None)
            _check_stored(await other.latest("shared"), first, first.entries)
            v2 = _rec("shared", 2)
            await other.save(v2, expected_version=1)
            _check_stored(await cp.latest("shared"), v2, _log([first, v2]))
            with pytest.raises(CheckpointConflict):
                await cp.save(_rec("shared", 2), expected_version=1)
            await other.put_write("shared", 2, "task", _state("payload"))
            assert dict(await cp.pending_writes("shared", 2)) == {"task": _state("payload")}
            solo = _rec("solo", 1, created_at=T0)
            await cp.save(solo, expected_version=None)
            _check_infos(await other.list_runs(), [v2, solo])
            assert await other.delete_run("solo") is True
            assert await cp.latest("solo") is None
            _check_stored(await other.latest("shared"), v2, _log([first, v2]))
        finally:
            await _durable.aclose(other)

    async def test_another_process_reads_and_writes(
        self, checkpoints: Any, open_checkpoints: Any, checkpoints_component: Any
    ) -> None:
        _persist.require_persistence(checkpoints, open_checkpoints, "open_checkpoints")
        component = _persist.component_or_skip(checkpoints_component, "checkpoints_component")
        await _durable.write_checkpoints(checkpoints, "parent")
        await _durable.aclose(checkpoints)
        request = {"kind": "checkpoints", "component": component, "check": "parent", "write": "child"}
        result = await _persist.child(request)
        assert result.returncode == 0, result.explain()
        again = await _durable.open_with(open_checkpoints)
        try:
            problems = await _durable.check_checkpoints(again, "child")
            _persist.no_problems(problems, "reading checkpoints another process wrote")
            problems = await _durable.check_checkpoints(again, "parent")
            _persist.no_problems(problems, "after another process used the checkpoint store")
        finally:
            await _durable.aclose(again)

    async def test_acknowledged_writes_survive_a_kill(
        self, checkpoints: Any, open_checkpoints: Any, checkpoints_component: Any
    ) -> None:
        """A writer killed (SIGKILL) in the middle of a save or pending write, round after round
        (a run per round): every acknowledged version and pending write is there, the killed
        ones absent or whole, and the run carries on from its latest version."""
        _persist.require_persistence(checkpoints, open_checkpoints, "open_checkpoints")
        component = _persist.component_or_skip(checkpoints_component, "checkpoints_component")
        await _durable.aclose(checkpoints)

        async def after_each(rounds: Sequence[_durable.RoundResult]) -> list[str]:
            again = await _durable.open_with(open_checkpoints)
            try:
                problems = await _durable.check_crash_checkpoints(again, rounds[-1])
                if not problems:  # the run carries on from its latest version
                    run = _durable.crash_run(rounds[-1].plan.round)
                    latest = await again.latest(run)
                    v = (latest.record.version if latest is not None else 0) + 1
                    await again.save(_durable.crash_record(rounds[-1].plan.round, v),
                                     expected_version=v - 1 if v > 1 else None)
                    after = await again.latest(run)
                    if after is None or after.record.version != v:
                        problems.append(f"saved version {v} of {run!r} after the kill, latest() is {after!r}")
                return problems
            finally:
                await _durable.aclose(again)

        async def after_all(rounds: Sequence[_durable.RoundResult]) -> list[str]:
            again = await _durable.open_with(open_checkpoints)
            try:
                return [p for r in rounds for p in await _durable.check_crash_checkpoints(again, r, continued=True)]
            finally:
                await _durable.aclose(again)

        await _persist.kill_mid_write({"kind": "checkpoints", "component": component}, after_each, after_all)
