"""The :class:`~seamkit._ports.StorePort` conformance suite (see :mod:`pytest_seamkit.conformance`)."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from seamkit.errors import StoreValueError, TTLNotSupported
from seamkit.plugin import StorePort, codec
from seamkit.values import Message, Scope, TextBlock, ToolCall, ToolResult, freeze

from pytest_seamkit import _durable
from pytest_seamkit.conformance import _persist

__all__ = ["StoreConformance"]

S = Scope("conformance")

_MISSING = object()


class _Boom(Exception):
    """The error a failing producer raises."""


_same = _durable.same


def _short_ttl(store: Any) -> float:
    """A TTL the backend must accept and that expires quickly (seconds)."""
    return max(0.2, float(store.ttl_resolution))


async def _outlive(store: Any, ttl: float) -> None:
    """Sleep (real time) until a key set with ``ttl`` has certainly expired."""
    await asyncio.sleep(ttl * 1.5 + float(store.ttl_resolution) + 0.1)


def _counting(value: Any, delay: float = 0.1) -> tuple[Callable[[], Awaitable[Any]], list[int]]:
    """A producer returning ``value`` after ``delay`` seconds, and the list its calls are counted in."""
    calls: list[int] = []

    async def producer() -> Any:
        calls.append(1)
        await asyncio.sleep(delay)
        return value

    return producer, calls


_TYPED_VALUES: list[tuple[str, Any]] = [
    ("int", 42),
    ("negative-int", -7),
    ("big-int", 2**70),
    ("float", 0.1),
    ("huge-float", 1.5e300),
    ("str", "plain"),
    ("unicode-str", "ключ 🔑 naïve \u0000 tab\t end"),
    ("empty-str", ""),
    ("true", True),
    ("false", False),
    ("decimal", Decimal("12.3400")),
    ("decimal-negative", Decimal("-0.000001")),
    ("datetime-utc", datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)),
    ("datetime-offset", datetime(2026, 7, 1, 23, 59, 59, 1, tzinfo=timezone(timedelta(hours=5, minutes=30)))),
    ("bytes", b"\x00\xffbinary\x10"),
    ("empty-bytes", b""),
    ("empty-list", []),
    ("empty-dict", {}),
    ("nested", {"a": [1, 2.5, "x", None, True, {"b": []}], "ü": {"deep": [[1], [2, [3]]]}, "n": None}),
    (
        "message",
        Message(
            "assistant",
            (TextBlock("checking"), ToolCall(id="call-1", name="calc", arguments=freeze({"x": 1, "y": [1, 2]}))),
        ),
    ),
    ("tool-message", Message("tool", (ToolResult(call_id="call-1", name="calc", content="3", is_error=False),))),
    ("dict-of-typed", {"when": datetime(2026, 1, 1, tzinfo=UTC), "cost": Decimal("0.0012"), "raw": b"\x01"}),
]

_BAD_TTLS: list[tuple[str, float]] = [
    ("zero", 0),
    ("zero-float", 0.0),
    ("negative", -1),
    ("negative-small", -0.5),
    ("nan", math.nan),
    ("inf", math.inf),
    ("minus-inf", -math.inf),
]

_NON_INTEGERS: list[tuple[str, Any]] = [
    ("str", "7"),
    ("float", 1.5),
    ("whole-float", 2.0),
    ("true", True),
    ("false", False),
    ("dict", {"a": 1}),
    ("list", [1]),
    ("none", None),
    ("decimal", Decimal("3")),
]

_SCOPES: list[Scope] = [
    Scope(),
    Scope("t1"),
    Scope("t2"),
    Scope("t1", user="u1"),
    Scope("t1", user="u2"),
    Scope("t1", user="u1", thread="th1"),
    Scope("t1", user="u1", thread="th2"),
    Scope("t1", thread="th1"),
    Scope("a/b"),
    Scope("a", user="b"),
    Scope("a", user="b/c"),
    Scope("a/b", user="c"),
    Scope("a:b"),
    Scope("a", user=":b"),
    Scope("ключ", user="🔑"),
    # a backend joining the parts with a separator must not merge these
    Scope("acme", user="bob"),
    Scope("acme|bob"),
    Scope("acme", thread="bob"),
    Scope("acme", user="b|ob"),
    Scope("acme|b", user="ob"),
    Scope("acme", user="bob", thread=""),
    Scope("acme", user=""),
    Scope("acme"),
    Scope("acme\x00bob"),
    Scope("acme", user="\x00bob"),
    Scope("acme:bob"),
    Scope("acme/bob"),
    Scope("acme", user="bob/"),
    Scope("acme", user="-"),
    Scope("acme", user="%2F"),
]

_KEYS: list[str] = [
    "a",
    "ab",
    "a*",
    "a?",
    "a[b]",
    "a%",
    "a_",
    "*",
    "?",
    "%",
    "_",
    "a/b",
    "a:b",
    "a b",
    "line\nbreak",
    "'; DROP TABLE kv; --",
    "ключ",
    "🔑",
    "naïve",
    "",
    "k" * 1000,
]

#: keys a backend's collation or column type may merge (case-insensitive comparison, a
#: VARCHAR(255), SQL PAD SPACE, Unicode normalisation): each must hold its own value
LOOKALIKE_KEYS: list[str] = _durable.LOOKALIKE_KEYS


class StoreConformance(_persist.DeclaredPersistence):
    """Tests every :class:`~seamkit._ports.StorePort` must pass. Subclass it and provide an async
    fixture ``store`` yielding a fresh, empty, isolated backend (closed afterwards); for a
    persistent backend also ``open_store`` (a callable opening another instance on the same
    location) and ``store_component`` (``(name, config)`` as YAML names it), see
    :mod:`pytest_seamkit.conformance`."""

    pytestmark = pytest.mark.asyncio

    async def test_the_declared_persistence_is_the_stores(self, store: Any) -> None:
        self.check_declaration(store)

    @pytest.fixture
    def open_store(self) -> Any:
        """Override: a callable (plain or async) returning a new instance on ``store``'s location."""
        return None

    @pytest.fixture
    def store_component(self) -> Any:
        """Override: ``(name, config)`` that builds an instance on ``store``'s location in another
        process: a registered store name (``"sqlite"``) or ``"module:attr"``, and its config mapping."""
        return None

    # --- shape -------------------------------------------------------------------------------

    async def test_is_a_store_port(self, store: Any) -> None:
        assert isinstance(store, StorePort)
        res = store.ttl_resolution
        assert isinstance(res, int | float) and not isinstance(res, bool)
        assert math.isfinite(res) and res > 0, "ttl_resolution must be a finite positive number of seconds"
        persistent = getattr(store, "persistent", True)
        assert isinstance(persistent, bool), f"persistent must be a bool (or absent: True), got {persistent!r}"

    # --- get / set ---------------------------------------------------------------------------

    async def test_get_missing_returns_default(self, store: Any) -> None:
        assert await store.get(S, "missing") is None
        sentinel = object()
        assert await store.get(S, "missing", sentinel) is sentinel
        assert await store.get(S, "missing", default=5) == 5

    @pytest.mark.parametrize(("label", "value"), _TYPED_VALUES, ids=[v[0] for v in _TYPED_VALUES])
    async def test_set_get_round_trips_typed_values(self, store: Any, label: str, value: Any) -> None:
        await store.set(S, f"value-{label}", value)
        got = await store.get(S, f"value-{label}")
        assert _same(got, value), f"{label}: stored {value!r}, read back {got!r}"

    async def test_stored_none_is_a_value_not_missing(self, store: Any) -> None:
        await store.set(S, "k", None)
        assert await store.get(S, "k", "default") is None

    async def test_set_overwrites(self, store: Any) -> None:
        await store.set(S, "k", "first")
        await store.set(S, "k", {"second": 2})
        assert await store.get(S, "k") == {"second": 2}
        await store.set(S, "k", 3)
        assert _same(await store.get(S, "k"), 3)

    async def test_unencodable_value_raises_the_codec_error_and_stores_nothing(self, store: Any) -> None:
        bad = {"ok": 1, "bad": object()}
        with pytest.raises(Exception) as codec_error:
            codec.dumps(bad)
        await store.set(S, "k", "before")
        with pytest.raises(type(codec_error.value)):
            await store.set(S, "k", bad)
        assert await store.get(S, "k") == "before"
        with pytest.raises(type(codec_error.value)):
            await store.set(S, "new", bad)
        assert await store.get(S, "new", _MISSING) is _MISSING

    async def test_returned_values_are_isolated_copies(self, store: Any) -> None:
        value: dict[str, Any] = {"a": [1, 2], "b": {"c": 1}}
        await store.set(S, "k", value)
        value["a"].append(3)
        value["b"]["c"] = 99
        got = await store.get(S, "k")
        assert got == {"a": [1, 2], "b": {"c": 1}}
        got["a"].append(4)
        got["b"]["c"] = -1
        again = await store.get(S, "k")
        assert again == {"a": [1, 2], "b": {"c": 1}}
        assert again is not got

        item = {"x": [1]}
        await store.append(S, "l", item)
        item["x"].append(2)
        listed = await store.list(S, "l")
        assert list(listed) == [{"x": [1]}]
        listed[0]["x"].append(3)
        assert list(await store.list(S, "l")) == [{"x": [1]}]

        producer, _ = _counting({"p": [1]}, delay=0)
        produced = await store.get_or_set(S, "g", producer)
        produced["p"].append(2)
        assert await store.get(S, "g") == {"p": [1]}

    # --- namespaces and keys -----------------------------------------------------------------

    async def test_scopes_are_isolated(self, store: Any) -> None:
        for i, scope in enumerate(_SCOPES):
            await store.set(scope, "same-key", i)
        for i, scope in enumerate(_SCOPES):
            assert await store.get(scope, "same-key") == i, f"scope {scope} read another scope's value"

        assert await store.delete(_SCOPES[1], "same-key") is True
        assert await store.get(_SCOPES[1], "same-key") is None
        for i, scope in enumerate(_SCOPES):
            if i != 1:
                assert await store.get(scope, "same-key") == i

        assert await store.increment(_SCOPES[3], "counter", 5) == 5
        assert await store.increment(_SCOPES[4], "counter", 1) == 1
        assert await store.append(_SCOPES[5], "log", "x") == 1
        assert await store.append(_SCOPES[6], "log", "y") == 1
        assert list(await store.list(_SCOPES[5], "log")) == ["x"]
        assert list(await store.list(_SCOPES[6], "log")) == ["y"]
        assert list(await store.list(_SCOPES[7], "log")) == []

    async def test_arbitrary_unicode_keys(self, store: Any) -> None:
        for i, key in enumerate(_KEYS):
            await store.set(S, key, i)
        for i, key in enumerate(_KEYS):
            assert await store.get(S, key) == i, f"key {key!r}"
        assert await store.delete(S, "a") is True
        for i, key in enumerate(_KEYS):
            if key != "a":
                assert await store.get(S, key) == i, f"deleting 'a' changed {key!r}"
        assert await store.delete(S, "a%") is True
        assert await store.get(S, "a_") == _KEYS.index("a_")
        assert await store.get(S, "ab") == _KEYS.index("ab")

    async def test_keys_differing_only_in_case_length_spaces_or_normalisation_are_distinct(self, store: Any) -> None:
        for i, key in enumerate(LOOKALIKE_KEYS):
            await store.set(S, key, i)
        wrong = [(key, got) for i, key in enumerate(LOOKALIKE_KEYS) if (got := await store.get(S, key)) != i]
        assert not wrong, f"keys that differ only in case, length, trailing spaces or Unicode form were merged: {wrong}"
        assert await store.delete(S, LOOKALIKE_KEYS[0]) is True
        assert await store.get(S, LOOKALIKE_KEYS[1]) == 1, f"deleting {LOOKALIKE_KEYS[0]!r} deleted a lookalike"

    async def test_key_with_nul_character(self, store: Any) -> None:
        await store.set(S, "nul\x00key", 1)
        await store.set(S, "nul", 2)
        assert await store.get(S, "nul\x00key") == 1
        assert await store.get(S, "nul") == 2

    # --- delete ------------------------------------------------------------------------------

    async def test_delete_says_whether_the_key_existed(self, store: Any) -> None:
        await store.set(S, "k", 1)
        assert await store.delete(S, "k") is True
        assert await store.get(S, "k", _MISSING) is _MISSING
        assert await store.delete(S, "k") is False
        assert await store.delete(S, "never-set") is False
        await store.append(S, "l", 1)
        assert await store.delete(S, "l") is True
        assert list(await store.list(S, "l")) == []
        await store.increment(S, "c")
        assert await store.delete(S, "c") is True
        assert await store.increment(S, "c") == 1

    # --- TTL ---------------------------------------------------------------------------------

    async def test_ttl_expiry_and_prune(self, store: Any) -> None:
        ttl = _short_ttl(store)
        other = Scope("conformance", user="other")
        await store.set(S, "short", 1, ttl=ttl)
        await store.set(other, "short", 2, ttl=ttl)
        await store.set(S, "read-after-expiry", 5, ttl=ttl)
        await store.set(S, "long", 3, ttl=60)
        await store.set(S, "forever", 4)
        # live data of every kind that prune() must leave alone
        await store.append(S, "appended", "a")
        await store.append(S, "appended", "b")
        await store.set(S, "set-list", [1, 2])
        await store.increment(S, "counter", 7)
        await store.increment(S, "counter-long-ttl", 2)
        await store.set(S, "long-list", [9], ttl=60)
        await store.append(S, "long-list", 10)
        assert await store.get(S, "short") == 1
        assert await store.get(other, "short") == 2
        await _outlive(store, ttl)
        # An expired key reads as missing before any prune.
        assert await store.get(S, "read-after-expiry", _MISSING) is _MISSING
        assert await store.get(S, "long") == 3
        assert await store.get(S, "forever") == 4
        # prune() returns how many expired keys it deleted: at most the three that expired, and
        # possibly none (a backend that expires keys by itself has nothing left to delete).
        pruned = await store.prune()
        assert type(pruned) is int and 0 <= pruned <= 3, f"prune() returned {pruned!r}; 3 keys had expired"
        assert await store.prune() == 0
        assert await store.get(S, "short", _MISSING) is _MISSING
        assert await store.get(other, "short", "gone") == "gone"
        assert await store.get(S, "long") == 3
        assert await store.get(S, "forever") == 4
        kept = {
            "appended": (list(await store.list(S, "appended")), ["a", "b"]),
            "set-list": (list(await store.list(S, "set-list")), [1, 2]),
            "counter": (await store.get(S, "counter", _MISSING), 7),
            "counter-long-ttl": (await store.get(S, "counter-long-ttl", _MISSING), 2),
            "long-list": (list(await store.list(S, "long-list")), [9, 10]),
        }
        lost = {k: got for k, (got, want) in kept.items() if got != want}
        assert not lost, f"prune() deleted or changed live keys (no TTL or one not yet reached): {lost}"

    async def test_expired_key_is_missing_for_every_operation(self, store: Any) -> None:
        ttl = _short_ttl(store)
        await store.set(S, "get", 1, ttl=ttl)
        await store.set(S, "list", [1, 2], ttl=ttl)
        await store.set(S, "inc", 10, ttl=ttl)
        await store.set(S, "gos", "old", ttl=ttl)
        await store.set(S, "del", 1, ttl=ttl)
        await store.set(S, "app", ["old"], ttl=ttl)
        await _outlive(store, ttl)
        assert await store.get(S, "get", _MISSING) is _MISSING
        assert list(await store.list(S, "list")) == []
        assert await store.increment(S, "inc", 2) == 2
        producer, calls = _counting("new", delay=0)
        assert await store.get_or_set(S, "gos", producer) == "new"
        assert len(calls) == 1
        assert await store.delete(S, "del") is False
        assert await store.append(S, "app", "new") == 1
        assert list(await store.list(S, "app")) == ["new"]

    @pytest.mark.parametrize(("label", "ttl"), _BAD_TTLS, ids=[t[0] for t in _BAD_TTLS])
    async def test_unsupported_ttl_is_refused_and_nothing_stored(self, store: Any, label: str, ttl: float) -> None:
        with pytest.raises(TTLNotSupported):
            await store.set(S, "new", 1, ttl=ttl)
        assert await store.get(S, "new", _MISSING) is _MISSING

        await store.set(S, "existing", "before")
        with pytest.raises(TTLNotSupported):
            await store.set(S, "existing", "after", ttl=ttl)
        assert await store.get(S, "existing") == "before"

        producer, calls = _counting("produced", delay=0)
        with pytest.raises(TTLNotSupported):
            await store.get_or_set(S, "gos", producer, ttl=ttl)
        assert calls == [], "the TTL is checked before the producer runs"
        assert await store.get(S, "gos", _MISSING) is _MISSING

    async def test_ttl_below_resolution_is_refused(self, store: Any) -> None:
        res = float(store.ttl_resolution)
        with pytest.raises(TTLNotSupported):
            await store.set(S, "k", 1, ttl=res / 2)
        assert await store.get(S, "k", _MISSING) is _MISSING
        producer, calls = _counting(1, delay=0)
        with pytest.raises(TTLNotSupported):
            await store.get_or_set(S, "g", producer, ttl=res / 2)
        assert calls == []
        # Exactly the resolution, and whole-number seconds, are accepted.
        await store.set(S, "at-resolution", 1, ttl=res)
        await store.set(S, "int-ttl", 1, ttl=max(1, math.ceil(res)))
        assert await store.get(S, "int-ttl") == 1

    async def test_set_replaces_the_ttl(self, store: Any) -> None:
        ttl = _short_ttl(store)
        await store.set(S, "cleared", 1, ttl=ttl)
        await store.set(S, "cleared", 2)  # no ttl: the earlier one is gone
        await store.set(S, "added", 1)
        await store.set(S, "added", 2, ttl=ttl)
        await store.set(S, "shortened", 1, ttl=60)
        await store.set(S, "shortened", 2, ttl=ttl)
        await store.set(S, "lengthened", 1, ttl=ttl)
        await store.set(S, "lengthened", 2, ttl=60)
        await _outlive(store, ttl)
        assert await store.get(S, "cleared") == 2
        assert await store.get(S, "added", _MISSING) is _MISSING
        assert await store.get(S, "shortened", _MISSING) is _MISSING
        assert await store.get(S, "lengthened") == 2

    # --- get_or_set --------------------------------------------------------------------------

    async def test_get_or_set_is_single_flight(self, store: Any) -> None:
        value = {"n": 42, "items": [1, 2], "cost": Decimal("0.5")}
        producer, calls = _counting(value)
        results = await asyncio.gather(*(store.get_or_set(S, "k", producer) for _ in range(20)))
        assert len(calls) == 1, f"producer ran {len(calls)} times for 20 concurrent misses"
        assert all(_same(r, value) for r in results)
        assert _same(await store.get(S, "k"), value)
        # A hit does not run the producer.
        assert _same(await store.get_or_set(S, "k", producer), value)
        assert len(calls) == 1

    async def test_get_or_set_flights_are_per_key_and_scope(self, store: Any) -> None:
        other = Scope("conformance", user="other")
        pa, ca = _counting("a")
        pb, cb = _counting("b")
        po, co = _counting("other-scope")
        results = await asyncio.gather(
            *(store.get_or_set(S, "a", pa) for _ in range(10)),
            *(store.get_or_set(S, "b", pb) for _ in range(10)),
            *(store.get_or_set(other, "a", po) for _ in range(10)),
        )
        assert (len(ca), len(cb), len(co)) == (1, 1, 1)
        assert results == ["a"] * 10 + ["b"] * 10 + ["other-scope"] * 10
        assert await store.get(S, "a") == "a"
        assert await store.get(other, "a") == "other-scope"

    async def test_get_or_set_hit_returns_stored_value(self, store: Any) -> None:
        await store.set(S, "k", Decimal("1.10"))
        producer, calls = _counting("never", delay=0)
        assert _same(await store.get_or_set(S, "k", producer), Decimal("1.10"))
        assert calls == []

    async def test_get_or_set_raising_producer_caches_nothing(self, store: Any) -> None:
        calls: list[int] = []

        async def failing() -> Any:
            calls.append(1)
            await asyncio.sleep(0.1)
            raise _Boom("producer failed")

        results = await asyncio.gather(*(store.get_or_set(S, "k", failing) for _ in range(20)), return_exceptions=True)
        assert len(calls) == 1, f"producer ran {len(calls)} times for 20 concurrent misses"
        assert all(isinstance(r, _Boom) for r in results), results
        assert await store.get(S, "k", _MISSING) is _MISSING
        producer, good_calls = _counting("recovered", delay=0)
        assert await store.get_or_set(S, "k", producer) == "recovered"
        assert len(good_calls) == 1
        assert await store.get(S, "k") == "recovered"

    async def test_get_or_set_with_ttl_expires(self, store: Any) -> None:
        ttl = _short_ttl(store)
        producer, calls = _counting("v", delay=0)
        assert await store.get_or_set(S, "k", producer, ttl=ttl) == "v"
        assert await store.get_or_set(S, "k", producer, ttl=ttl) == "v"
        assert len(calls) == 1
        await _outlive(store, ttl)
        assert await store.get(S, "k", _MISSING) is _MISSING
        assert await store.get_or_set(S, "k", producer, ttl=ttl) == "v"
        assert len(calls) == 2

    # --- append / list -----------------------------------------------------------------------

    async def test_append_and_list(self, store: Any) -> None:
        msg = Message.user("hello")
        assert await store.append(S, "l", "a") == 1
        assert await store.append(S, "l", {"b": [Decimal("2.50")]}) == 2
        assert await store.append(S, "l", msg) == 3
        assert await store.append(S, "l", None) == 4
        everything = ["a", {"b": [Decimal("2.50")]}, msg, None]
        assert _same(list(await store.list(S, "l")), everything)
        assert _same(list(await store.list(S, "l", 1)), everything[1:])
        assert _same(list(await store.list(S, "l", 0, 2)), everything[0:2])
        assert _same(list(await store.list(S, "l", 1, 3)), everything[1:3])
        assert _same(list(await store.list(S, "l", start=2, stop=3)), everything[2:3])
        assert list(await store.list(S, "l", 4)) == []
        assert list(await store.list(S, "l", 10)) == []
        assert list(await store.list(S, "l", 2, 2)) == []
        assert list(await store.list(S, "l", 3, 1)) == []
        assert _same(list(await store.list(S, "l", 0, 100)), everything)
        assert list(await store.list(S, "missing")) == []
        assert list(await store.list(S, "missing", 1, 5)) == []
        # The appended list is the key's value.
        assert _same(await store.get(S, "l"), everything)

    async def test_list_negative_indices_follow_python_slicing(self, store: Any) -> None:
        items = list(range(6))
        for i in items:
            await store.append(S, "l", i)
        for start, stop in [(-2, None), (0, -1), (-4, -2), (-100, None), (-100, 2), (1, -100), (-1, None)]:
            got = list(await store.list(S, "l", start, stop))
            assert got == items[start:stop], f"[{start}:{stop}]"

    async def test_append_to_a_list_set_with_set(self, store: Any) -> None:
        await store.set(S, "l", [1, 2])
        assert await store.append(S, "l", 3) == 3
        assert list(await store.list(S, "l")) == [1, 2, 3]
        await store.set(S, "l", ["fresh"])
        assert list(await store.list(S, "l")) == ["fresh"]
        assert await store.append(S, "l", "more") == 2

    @pytest.mark.parametrize("value", ["text", 5, {"a": 1}, None], ids=["str", "int", "dict", "none"])
    async def test_append_to_a_non_list_raises_and_leaves_it(self, store: Any, value: Any) -> None:
        await store.set(S, "k", value)
        with pytest.raises(StoreValueError):
            await store.append(S, "k", "x")
        assert _same(await store.get(S, "k", _MISSING), value)

    async def test_concurrent_appends_lose_nothing(self, store: Any) -> None:
        lengths = await asyncio.gather(*(store.append(S, "l", i) for i in range(50)))
        assert sorted(lengths) == list(range(1, 51))
        items = list(await store.list(S, "l"))
        assert sorted(items) == list(range(50))

    # --- increment ---------------------------------------------------------------------------

    async def test_increment(self, store: Any) -> None:
        assert await store.increment(S, "c") == 1
        assert await store.increment(S, "c") == 2
        assert await store.increment(S, "c", 5) == 7
        assert await store.increment(S, "c", by=-10) == -3
        assert _same(await store.get(S, "c"), -3)
        assert await store.increment(S, "missing-negative", -4) == -4
        assert await store.increment(S, "missing-big", 5) == 5
        await store.set(S, "set-int", 10)
        assert await store.increment(S, "set-int", 3) == 13
        assert _same(await store.get(S, "set-int"), 13)

    async def test_increment_is_exact_beyond_float_precision(self, store: Any) -> None:
        big = 2**53
        await store.set(S, "c", big)
        assert await store.increment(S, "c") == big + 1, "increment lost precision (float arithmetic?)"
        assert _same(await store.get(S, "c"), big + 1)
        assert await store.increment(S, "from-missing", 2**70 + 1) == 2**70 + 1
        assert await store.increment(S, "from-missing", -(2**70)) == 1
        assert await store.increment(S, "negative", -(2**53) - 1) == -(2**53) - 1
        assert await store.increment(S, "negative", -1) == -(2**53) - 2
        assert _same(await store.get(S, "negative"), -(2**53) - 2)

    async def test_concurrent_increments_are_atomic(self, store: Any) -> None:
        results = await asyncio.gather(*(store.increment(S, "c") for _ in range(50)))
        assert sorted(results) == list(range(1, 51))
        assert await store.get(S, "c") == 50

    @pytest.mark.parametrize(("label", "value"), _NON_INTEGERS, ids=[v[0] for v in _NON_INTEGERS])
    async def test_increment_of_a_non_integer_raises_and_leaves_it(self, store: Any, label: str, value: Any) -> None:
        await store.set(S, "k", value)
        with pytest.raises(StoreValueError):
            await store.increment(S, "k")
        assert _same(await store.get(S, "k", _MISSING), value), f"{label} changed"

    async def test_increment_of_an_appended_list_raises(self, store: Any) -> None:
        await store.append(S, "l", 1)
        with pytest.raises(StoreValueError):
            await store.increment(S, "l")
        assert list(await store.list(S, "l")) == [1]

    async def test_increment_keeps_the_ttl(self, store: Any) -> None:
        ttl = _short_ttl(store)
        await store.set(S, "with-ttl", 1, ttl=ttl)
        await store.set(S, "without-ttl", 1)
        assert await store.increment(S, "with-ttl") == 2
        assert await store.increment(S, "without-ttl") == 2
        assert await store.get(S, "with-ttl") == 2
        await _outlive(store, ttl)
        assert await store.get(S, "with-ttl", _MISSING) is _MISSING
        assert await store.get(S, "without-ttl") == 2

    # --- durability: reopen, another process, a kill (persistent backends) --------------------

    async def test_reopen_keeps_everything(self, store: Any, open_store: Any) -> None:
        _persist.require_persistence(store, open_store, "open_store")
        await _durable.write_store(store, "reopen")
        await _durable.aclose(store)
        again = await _durable.open_with(open_store)
        try:
            problems = await _durable.check_store(again, "reopen")
            _persist.no_problems(problems, "after closing the store and opening it again")
            # the new instance carries on where the old one stopped
            assert await again.append(_durable.S, "reopen/list", "more") == len(_durable.ITEMS) + 1
            listed = list(await again.list(_durable.S, "reopen/list"))
            assert listed == [*_durable.ITEMS, "more"], (
                f"a list appended to after a reopen must keep its items in the order appended: got {listed!r}")
            assert await again.increment(_durable.S, "reopen/counter") == _durable.COUNTER_END + 1
        finally:
            await _durable.aclose(again)

    async def test_reopen_keeps_ttls(self, store: Any, open_store: Any) -> None:
        """A TTL is an absolute deadline: reopening late in a key's life must not restart it."""
        _persist.require_persistence(store, open_store, "open_store")
        res = float(store.ttl_resolution)
        ttl = max(0.8, 4 * res)
        await store.set(S, "short", 1, ttl=ttl)
        await store.set(S, "long", 2, ttl=3600)
        await store.set(S, "counter", 1, ttl=ttl)
        written = time.monotonic()  # both deadlines are at most written + ttl
        await store.increment(S, "counter")
        await asyncio.sleep(ttl * 0.6 - (time.monotonic() - written))  # reopen late in their life
        await _durable.aclose(store)
        again = await _durable.open_with(open_store)
        try:
            assert await again.get(S, "long", _MISSING) == 2
            # past the original deadline, well before a deadline restarted at the reopen (1.6 * ttl)
            await asyncio.sleep(ttl + res + 0.1 - (time.monotonic() - written))
            lost = "a TTL was lost, or restarted, when the store was reopened"
            assert await again.get(S, "short", _MISSING) is _MISSING, lost
            assert await again.get(S, "counter", _MISSING) is _MISSING, lost
            assert await again.get(S, "long", _MISSING) == 2
        finally:
            await _durable.aclose(again)

    async def test_two_open_instances_see_each_others_writes(self, store: Any, open_store: Any) -> None:
        """Two instances open on one location at once (two processes, two workers): each sees
        the other's acknowledged writes, and neither one's next write undoes the other's."""
        _persist.require_persistence(store, open_store, "open_store")
        assert await store.get(S, "first", _MISSING) is _MISSING  # both instances in use
        other = await _persist.open_second_or_skip(open_store, lambda o: o.get(S, "second", _MISSING))
        try:
            assert await other.get(S, "second", _MISSING) is _MISSING
            await store.set(S, "first", "from the first")
            assert await other.get(S, "first", _MISSING) == "from the first", "a write of another open instance"
            await other.set(S, "second", "from the second")
            assert await store.get(S, "second", _MISSING) == "from the second", "a write of another open instance"
            await store.set(S, "third", 3)
            assert await other.get(S, "second", _MISSING) == "from the second", "another instance's write undid it"
            assert await store.append(S, "list", 1) == 1
            assert await other.append(S, "list", 2) == 2
            assert await store.append(S, "list", 3) == 3
            assert list(await other.list(S, "list")) == [1, 2, 3]
            assert await store.increment(S, "counter") == 1
            assert await other.increment(S, "counter") == 2
            assert await store.increment(S, "counter") == 3
            assert await other.delete(S, "first") is True
            assert await store.get(S, "first", _MISSING) is _MISSING
            assert await store.delete(S, "first") is False
        finally:
            await _durable.aclose(other)

    async def test_another_process_reads_and_writes(self, store: Any, open_store: Any, store_component: Any) -> None:
        _persist.require_persistence(store, open_store, "open_store")
        component = _persist.component_or_skip(store_component, "store_component")
        await _durable.write_store(store, "parent")
        await _durable.aclose(store)
        result = await _persist.child({"kind": "store", "component": component, "check": "parent", "write": "child"})
        assert result.returncode == 0, result.explain()
        again = await _durable.open_with(open_store)
        try:
            _persist.no_problems(await _durable.check_store(again, "child"), "reading what another process wrote")
            _persist.no_problems(await _durable.check_store(again, "parent"), "after another process used the store")
        finally:
            await _durable.aclose(again)

    async def test_acknowledged_writes_survive_a_kill(self, store: Any, open_store: Any, store_component: Any) -> None:
        """A writer killed (SIGKILL) in the middle of a write, round after round: every
        acknowledged write is there, the killed one is absent or a prefix of its calls, and the
        store opens and takes writes (see ``_persist.kill_mid_write``)."""
        _persist.require_persistence(store, open_store, "open_store")
        component = _persist.component_or_skip(store_component, "store_component")
        await _durable.aclose(store)

        async def check(rounds: Sequence[_durable.RoundResult], *, only_last: bool = True) -> list[str]:
            again = await _durable.open_with(open_store)
            try:
                problems = await _durable.check_crash_store(again, rounds, only_last=only_last)
                if not problems:  # still usable: not corrupted
                    await again.set(S, "after-crash", {"round": rounds[-1].plan.round})
                    if not _durable.same(got := await again.get(S, "after-crash"), {"round": rounds[-1].plan.round}):
                        problems.append(f"a value set after the kill reads back {got!r}")
                return problems
            finally:
                await _durable.aclose(again)

        await _persist.kill_mid_write({"kind": "store", "component": component}, check,
                                      lambda rounds: check(rounds, only_last=False))
