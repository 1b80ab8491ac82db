"""seamkit-vector-sqlite behaviour on real sqlite-vec: exact nearest neighbours against brute force,
tenant isolation, metadata filters, upsert replace, delete/count, dimension errors, persistence."""

from __future__ import annotations

import asyncio
import math
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._ports import VectorPort
from seamkit.errors import StoreUnavailable, StoreValueError
from seamkit.values import Scope
from seamkit_vector_sqlite.store import SqliteVectorStore, VectorDimensionError

A = Scope("tenant-a")
B = Scope("tenant-b")
DIM = 4


def _f32(vector: list[float]) -> list[float]:
    return list(struct.unpack(f"{len(vector)}f", struct.pack(f"{len(vector)}f", *vector)))


def _score(metric: str, a: list[float], b: list[float]) -> float:
    a, b = _f32(a), _f32(b)
    if metric == "l2":
        return -math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)))
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


_coord = st.floats(min_value=-1, max_value=1, allow_nan=False, width=32)
_vec = st.lists(_coord, min_size=DIM, max_size=DIM).filter(lambda v: math.sqrt(sum(x * x for x in v)) > 0.05)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    vectors=st.lists(_vec, min_size=1, max_size=30),
    query=_vec,
    k=st.integers(min_value=1, max_value=12),
    metric=st.sampled_from(["cosine", "l2"]),
)
def test_query_is_exact_nearest_neighbours(vectors: list[list[float]], query: list[float], k: int, metric: str) -> None:
    async def run() -> list[tuple[str, float, dict[str, object]]]:
        async with SqliteVectorStore(":memory:", dimensions=DIM, metric=metric) as store:  # type: ignore[arg-type]
            await store.upsert(A, [(f"v{i}", v, {"i": i}) for i, v in enumerate(vectors)])
            return await store.query(A, query, k=k)

    got = asyncio.run(run())
    brute = sorted(((_score(metric, v, query), f"v{i}") for i, v in enumerate(vectors)), reverse=True)
    assert len(got) == min(k, len(vectors))
    # best first, each score equal to the brute-force score at that rank
    assert [s for _, s, _ in got] == sorted((s for _, s, _ in got), reverse=True)
    for (item_id, score, meta), (want_score, _) in zip(got, brute, strict=False):
        assert score == pytest.approx(want_score, abs=1e-4)
        assert meta == {"i": int(item_id[1:])}
        assert _score(metric, vectors[int(item_id[1:])], query) == pytest.approx(score, abs=1e-4)
    # the same set of ids, unless the k-th and (k+1)-th are a near tie
    if len(brute) <= k or brute[k - 1][0] - brute[k][0] > 1e-3:
        assert {i for i, _, _ in got} == {i for _, i in brute[:k]}


async def test_scores_higher_is_better_for_both_metrics() -> None:
    async with SqliteVectorStore(":memory:", dimensions=2, metric="cosine") as cos:
        await cos.upsert(A, [("same", [2, 0], {}), ("orth", [0, 1], {}), ("opp", [-1, 0], {})])
        got = await cos.query(A, [1, 0], k=3)
        assert [i for i, _, _ in got] == ["same", "orth", "opp"]
        assert [s for _, s, _ in got] == pytest.approx([1.0, 0.0, -1.0], abs=1e-6)
    async with SqliteVectorStore(":memory:", dimensions=2, metric="l2") as l2:
        await l2.upsert(A, [("near", [1, 1], {}), ("far", [4, 4], {})])
        got = await l2.query(A, [1, 0], k=2)
        assert [(i, round(s, 5)) for i, s, _ in got] == [("near", -1.0), ("far", -5.0)]


async def test_is_a_vector_port() -> None:
    store = SqliteVectorStore(":memory:", dimensions=DIM)
    assert isinstance(store, VectorPort)
    assert "dimensions=4" in repr(store)
    await store.aclose()


async def test_tenants_never_see_each_other() -> None:
    async with SqliteVectorStore(":memory:", dimensions=2) as store:
        await store.upsert(A, [("doc", [1, 0], {"owner": "a"}), ("a-only", [1, 0.1], {"owner": "a"})])
        await store.upsert(B, [("doc", [0, 1], {"owner": "b"})])
        got_a = await store.query(A, [0, 1], k=10)
        got_b = await store.query(B, [1, 0], k=10)
        assert {i for i, _, _ in got_a} == {"doc", "a-only"}
        assert all(m == {"owner": "a"} for _, _, m in got_a)
        assert [(i, m) for i, _, m in got_b] == [("doc", {"owner": "b"})]
        assert got_b[0][1] == pytest.approx(0.0, abs=1e-6)
        # user/thread do not partition: the tenant is the boundary
        assert len(await store.query(Scope("tenant-a", user="u", thread="t"), [1, 0], k=10)) == 2
        assert await store.query(Scope("nobody"), [1, 0]) == []
        assert await store.delete(B, ["a-only"]) == 0
        assert (await store.count(A), await store.count(B)) == (2, 1)
        assert await store.delete(B, ["doc"]) == 1
        assert await store.count(A) == 2


async def test_metadata_filters() -> None:
    async with SqliteVectorStore(":memory:", dimensions=2) as store:
        await store.upsert(
            A,
            [
                ("en1", [1, 0], {"lang": "en", "n": 1, "flag": True}),
                ("en2", [1, 0.2], {"lang": "en", "n": 1.0, "flag": False}),
                ("de1", [1, 0.1], {"lang": "de", "n": 2, "flag": None}),
                ("fr1", [0.9, 0.3], {"lang": "fr", "n": "1"}),
                ("bare", [1, 0.05], {}),
            ],
        )

        async def ids(where: dict[str, object], k: int = 10) -> list[str]:
            return [i for i, _, _ in await store.query(A, [1, 0], k=k, where=where)]

        assert await ids({"lang": "en"}) == ["en1", "en2"]
        assert await ids({"lang": "en", "flag": False}) == ["en2"]
        assert await ids({"n": 1}) == ["en1", "en2"]  # int and float compare like Python; "1" does not
        assert await ids({"n": "1"}) == ["fr1"]
        assert await ids({"flag": True}) == ["en1"]  # True is not 1
        assert await ids({"flag": 1}) == []
        assert await ids({"flag": None}) == ["de1"]  # a null value, not a missing key
        assert await ids({"lang": {"$in": ["de", "fr"]}}) == ["de1", "fr1"]
        assert await ids({"lang": {"$in": []}}) == []
        assert await ids({"lang": "xx"}) == []
        assert await ids({}) == ["en1", "bare", "de1", "en2", "fr1"]
        assert await ids({"lang": "en"}, k=1) == ["en1"]


async def test_filter_applies_during_the_search_not_after() -> None:
    """With 200 near items that do not match and 3 far ones that do, k=3 still returns the 3."""
    async with SqliteVectorStore(":memory:", dimensions=2) as store:
        await store.upsert(A, [(f"near{i}", [1, i / 1000], {"kind": "noise"}) for i in range(200)])
        await store.upsert(A, [(f"far{i}", [-1, i / 10 + 0.1], {"kind": "wanted"}) for i in range(3)])
        got = await store.query(A, [1, 0], k=3, where={"kind": "wanted"})
        assert sorted(i for i, _, _ in got) == ["far0", "far1", "far2"]


@pytest.mark.parametrize(
    ("where", "error"),
    [
        ({"x": [1, 2]}, TypeError),
        ({"x": {"$gt": 1}}, ValueError),
        ({"x": {"$in": "ab"}}, TypeError),
        ({'x"y': 1}, ValueError),
        ({"x": float("nan")}, ValueError),
        ({"x": 2**70}, ValueError),
        ("x", TypeError),
    ],
)
async def test_bad_filters_are_refused_clearly(where: object, error: type[Exception]) -> None:
    async with SqliteVectorStore(":memory:", dimensions=2) as store:
        with pytest.raises(error):
            await store.query(A, [1, 0], where=where)  # type: ignore[arg-type]


async def test_upsert_replaces_by_id_and_delete_counts() -> None:
    async with SqliteVectorStore(":memory:", dimensions=2) as store:
        await store.upsert(A, [("x", [1, 0], {"v": 1}), ("y", [0, 1], {"v": 1})])
        await store.upsert(A, [("x", [0, 1], {"v": 2})])
        assert await store.count(A) == 2
        got = await store.query(A, [0, 1], k=5)
        assert {(i, round(s, 5)) for i, s, _ in got} == {("x", 1.0), ("y", 1.0)}
        assert dict((i, m) for i, _, m in got) == {"x": {"v": 2}, "y": {"v": 1}}
        # a later duplicate in one batch wins
        await store.upsert(A, [("z", [1, 0], {"v": "first"}), ("z", [1, 1], {"v": "last"})])
        assert await store.count(A) == 3
        assert (await store.query(A, [1, 1], k=1))[0][0::2] == ("z", {"v": "last"})
        assert await store.delete(A, ["x", "x", "missing"]) == 1
        assert await store.delete(A, []) == 0
        assert {i for i, _, _ in await store.query(A, [0, 1], k=5)} == {"y", "z"}
        await store.upsert(A, [])
        assert await store.count(A) == 2


async def test_dimension_and_vector_errors_write_nothing() -> None:
    async with SqliteVectorStore(":memory:", dimensions=3) as store:
        with pytest.raises(VectorDimensionError, match="has 2 dimensions; this store holds 3-dimensional"):
            await store.upsert(A, [("ok", [1, 0, 0], {}), ("short", [1, 0], {})])
        assert await store.count(A) == 0  # the batch is all or nothing
        with pytest.raises(VectorDimensionError, match="query vector has 4 dimensions"):
            await store.query(A, [1, 0, 0, 0])
        assert issubclass(VectorDimensionError, StoreValueError) and issubclass(VectorDimensionError, ValueError)
        with pytest.raises(ValueError, match="zero vector"):
            await store.upsert(A, [("z", [0, 0, 0], {})])
        with pytest.raises(ValueError, match="NaN or infinity"):
            await store.query(A, [1, float("inf"), 0])
        with pytest.raises(ValueError, match="float32"):
            await store.upsert(A, [("big", [1e300, 0, 0], {})])
        with pytest.raises(TypeError, match="sequence of numbers"):
            await store.upsert(A, [("s", "abc", {})])  # type: ignore[list-item]
        with pytest.raises(TypeError, match="JSON data"):
            await store.upsert(A, [("m", [1, 0, 0], {"when": object()})])
        with pytest.raises(TypeError, match="non-empty str"):
            await store.upsert(A, [("", [1, 0, 0], {})])
        with pytest.raises(TypeError, match="Scope"):
            await store.query("tenant-a", [1, 0, 0])  # type: ignore[arg-type]
        for bad_k in (0, 5000, True):
            with pytest.raises(ValueError, match="k must be"):
                await store.query(A, [1, 0, 0], k=bad_k)
        assert await store.count(A) == 0
    with pytest.raises(ValueError, match="dimensions"):
        SqliteVectorStore(":memory:", dimensions=0)


async def test_metadata_round_trips_as_json() -> None:
    meta = {"source": "docs/größe.md#日本", "tags": ["a", "b"], "nested": {"x": [1, 2.5, None, True]}, "f": 1.0}
    async with SqliteVectorStore(":memory:", dimensions=2) as store:
        await store.upsert(A, [("m", [1, 0], meta)])
        [(item_id, _, got)] = await store.query(A, [1, 0], where={"source": "docs/größe.md#日本"})
        assert (item_id, got) == ("m", meta)
        assert isinstance(got["f"], float)


async def test_l2_accepts_the_zero_vector() -> None:
    async with SqliteVectorStore(":memory:", dimensions=2, metric="l2") as store:
        await store.upsert(A, [("origin", [0, 0], {})])
        assert (await store.query(A, [0, 0]))[0][:2] == ("origin", 0.0)


async def test_persists_across_reopen_and_refuses_other_settings(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "vectors.db"
    async with SqliteVectorStore(path, dimensions=3) as store:
        await store.upsert(A, [("x", [1, 0, 0], {"src": "docs/a.md#intro"}), ("y", [0, 1, 0], {})])
        await store.upsert(B, [("x", [0, 0, 1], {})])
    assert path.exists()
    async with SqliteVectorStore(path, dimensions=3) as again:
        assert (await again.count(A), await again.count(B)) == (2, 1)
        got = await again.query(A, [1, 0.1, 0], k=1)
        assert got[0][0] == "x" and got[0][2] == {"src": "docs/a.md#intro"}
        mode = await again._run(lambda db: db.execute("PRAGMA journal_mode").fetchone()[0])
        assert mode == "wal"
    with pytest.raises(VectorDimensionError, match="created with dimensions=3 metric='cosine'"):
        async with SqliteVectorStore(path, dimensions=4) as other:
            await other.count(A)
    with pytest.raises(VectorDimensionError, match="metric='l2'"):
        async with SqliteVectorStore(path, dimensions=3, metric="l2") as other:
            await other.count(A)


async def test_closed_store_and_unusable_path(tmp_path: Path) -> None:
    store = SqliteVectorStore(":memory:", dimensions=2)
    await store.upsert(A, [("x", [1, 0], {})])
    await store.aclose()
    await store.aclose()
    with pytest.raises(StoreUnavailable, match="closed"):
        await store.count(A)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    bad = SqliteVectorStore(blocker / "sub" / "v.db", dimensions=2)
    with pytest.raises(StoreUnavailable, match="sqlite-vec store"):
        await bad.count(A)
    await bad.aclose()
    not_db = tmp_path / "garbage.db"
    not_db.write_bytes(b"this is not a database file at all" * 100)
    garbage = SqliteVectorStore(not_db, dimensions=2)
    with pytest.raises(StoreUnavailable, match="DatabaseError"):
        await garbage.count(A)
    await garbage.aclose()


async def test_concurrent_writers_and_readers_in_one_process(tmp_path: Path) -> None:
    async with SqliteVectorStore(tmp_path / "c.db", dimensions=2) as store:

        async def writer(t: int) -> None:
            scope = Scope(f"t{t % 3}")
            for i in range(10):
                await store.upsert(scope, [(f"w{t}-{i}", [1, (t * 10 + i) / 100], {"w": t})])
                await store.query(scope, [1, 0], k=3, where={"w": t})

        await asyncio.gather(*(writer(t) for t in range(9)))
        assert [await store.count(Scope(f"t{n}")) for n in range(3)] == [30, 30, 30]
        got = await store.query(Scope("t1"), [1, 0.4], k=50, where={"w": {"$in": [4, 7]}})
        assert sorted(i for i, _, _ in got) == sorted(f"w{t}-{i}" for t in (4, 7) for i in range(10))
