"""Deep freezing: ``seamkit._frozen`` (``freeze``, ``thaw``, ``FrozenDict``, ``FrozenList``)."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seamkit._frozen import FrozenDict, FrozenList, freeze, thaw

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
json_like = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=25,
)
containers = st.dictionaries(st.text(max_size=6), json_like, max_size=5) | st.lists(json_like, max_size=5)


def normalise(value: Any) -> Any:
    """What freezing promises to keep: tuples become lists, everything else as is."""
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    return value


def containers_in(value: Any) -> Iterator[Any]:
    """Every dict/list inside ``value`` (also those inside tuples), itself included."""
    if isinstance(value, (dict, list)):
        yield value
    if isinstance(value, (dict, list, tuple)):
        children = value.values() if isinstance(value, dict) else value
        for child in children:
            yield from containers_in(child)


def _ior(d: Any) -> None:
    d |= {"k": 1}


def _iadd(lst: Any) -> None:
    lst += [1]


def _imul(lst: Any) -> None:
    lst *= 2


def _slice_set(lst: Any) -> None:
    lst[0:1] = [9]


def _slice_del(lst: Any) -> None:
    del lst[0:1]


DICT_MUTATIONS: list[Callable[[Any], object]] = [
    lambda d: d.__setitem__("k", 1),
    lambda d: d.__delitem__(next(iter(d), "k")),
    lambda d: d.update({"k": 1}),
    lambda d: d.update(k=1),
    lambda d: d.pop(next(iter(d), "k")),
    lambda d: d.popitem(),
    lambda d: d.clear(),
    lambda d: d.setdefault("k", 1),
    _ior,
]
LIST_MUTATIONS: list[Callable[[Any], object]] = [
    lambda lst: lst.__setitem__(0, 1),
    lambda lst: lst.__delitem__(0),
    lambda lst: lst.append(1),
    lambda lst: lst.extend([1]),
    lambda lst: lst.insert(0, 1),
    lambda lst: lst.remove(lst[0] if lst else 1),
    lambda lst: lst.pop(),
    lambda lst: lst.clear(),
    lambda lst: lst.sort(),
    lambda lst: lst.reverse(),
    _iadd,
    _imul,
    _slice_set,
    _slice_del,
]


@given(containers)
def test_freeze_copies_the_callers_data(original: Any) -> None:
    before = normalise(copy.deepcopy(original))
    frozen = freeze(original)
    # Mutate every mutable container of the original; the frozen value must not move.
    for c in list(containers_in(original)):
        if isinstance(c, dict):
            c["__mutated__"] = 1
        else:
            c.append("__mutated__")
    assert thaw(frozen) == before


@given(containers)
def test_json_dumps_matches_the_normalised_original(original: Any) -> None:
    frozen = freeze(original)
    assert json.dumps(frozen, sort_keys=True) == json.dumps(normalise(original), sort_keys=True)
    assert json.loads(json.dumps(frozen)) == json.loads(json.dumps(normalise(original)))


@dataclasses.dataclass(frozen=True)
class Holder:
    payload: Any


@given(containers)
def test_dataclasses_asdict_on_a_holder(original: Any) -> None:
    frozen = freeze(original)
    assert dataclasses.asdict(Holder(frozen)) == {"payload": normalise(original)}


@given(containers)
def test_deepcopy_and_pickle_round_trip(original: Any) -> None:
    frozen = freeze(original)
    assert copy.deepcopy(frozen) == frozen
    assert copy.copy(frozen) == frozen
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(frozen, protocol=protocol))
        assert back == frozen
        # pickling gives frozen types back, at every depth
        kinds = [type(c) for c in containers_in(back)]
        assert all(k in (FrozenDict, FrozenList) for k in kinds), kinds
        assert hash(back) == hash(frozen)


@given(containers)
def test_frozen_containers_are_dicts_and_lists(original: Any) -> None:
    frozen = freeze(original)
    for c in containers_in(frozen):
        assert isinstance(c, (dict, list))
        assert type(c) in (FrozenDict, FrozenList)


@settings(max_examples=60)
@given(containers)
def test_every_mutation_at_every_depth_raises(original: Any) -> None:
    frozen = freeze(original)
    snapshot = thaw(frozen)
    for c in containers_in(frozen):
        mutations = DICT_MUTATIONS if isinstance(c, dict) else LIST_MUTATIONS
        for mutate in mutations:
            with pytest.raises(TypeError):
                mutate(c)
    assert thaw(frozen) == snapshot


@given(containers)
def test_thaw_of_freeze_is_the_normalised_original(original: Any) -> None:
    thawed = thaw(freeze(original))
    assert thawed == normalise(original)
    for c in containers_in(thawed):
        assert type(c) in (dict, list)
    # and the thawed copy is mutable again
    for c in containers_in(thawed):
        if isinstance(c, dict):
            c["new"] = 1
        else:
            c.append(1)


@given(containers)
def test_hash_works_and_equal_values_hash_equal(original: Any) -> None:
    a = freeze(original)
    b = freeze(copy.deepcopy(original))
    assert a == b
    assert hash(a) == hash(b)
    assert hash(a) == hash(a)  # cached hash stays stable


def test_freeze_returns_already_frozen_values_without_copying() -> None:
    f = freeze({"a": [1]})
    assert freeze(f) is f
    assert freeze(f["a"]) is f["a"]


def test_key_order_does_not_change_equality_or_hash() -> None:
    a = freeze({"x": 1, "y": [1, 2]})
    b = freeze({"y": [1, 2], "x": 1})
    assert a == b and hash(a) == hash(b)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({1: "a"}, "str keys"),
        ({"a": {2: "b"}}, "str keys"),
        ({1, 2}, "sets"),
        ({"a": [{"s": frozenset({1})}]}, "sets"),
        (bytearray(b"x"), "cannot freeze"),
    ],
)
def test_freeze_refuses_what_it_cannot_freeze(value: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        freeze(value)


def test_or_builds_a_new_frozen_dict() -> None:
    a = freeze({"a": 1})
    b = a | {"b": [2]}
    assert b == {"a": 1, "b": [2]}
    assert type(b) is FrozenDict and type(b["b"]) is FrozenList
    assert a == {"a": 1}


def test_slices_of_a_frozen_list_are_frozen() -> None:
    lst = freeze([1, 2, 3])
    part = lst[1:]
    assert part == [2, 3]
    assert type(part) is FrozenList
    with pytest.raises(TypeError):
        part.append(4)


def test_repr_names_the_frozen_types() -> None:
    assert repr(freeze({"a": [1]})) == "FrozenDict({'a': FrozenList([1])})"
