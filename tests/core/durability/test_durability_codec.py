"""The typed checkpoint codec: exact round trips (value AND type), errors with paths, determinism."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import os
import subprocess
import sys
import uuid
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._durability import codec
from seamkit._durability.codec import CODEC_VERSION, decode, dumps, encode, loads
from seamkit.errors import CodecError
from seamkit.values import (
    FrozenDict,
    FrozenList,
    ImageBlock,
    LLMResult,
    Message,
    ReasoningBlock,
    Scope,
    TextBlock,
    ToolCall,
    ToolResult,
    Usage,
)

# --- classes the codec meets (module level: the codec names them module:qualname) -----------


class Color(enum.Enum):
    RED = 1
    GREEN = "green"
    BLUE = (1, 2)


class Prio(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mode(enum.StrEnum):
    FAST = "fast"
    SAFE = "safe"


class Perm(enum.Flag):
    R = 1
    W = 2
    X = 4


@dataclasses.dataclass
class Box:
    label: str
    items: Any = None


@dataclasses.dataclass(frozen=True, slots=True)
class Pair:
    a: Any
    b: Any = 0


@dataclasses.dataclass
class WithDerived:
    x: int
    doubled: int = dataclasses.field(init=False)
    tags: list[str] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        self.doubled = self.x * 2


class Holder(pydantic.BaseModel):
    value: Any = None
    name: str = "x"


class Loose(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
    n: int = 0


class Aliased(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True)
    total: Decimal = pydantic.Field(alias="Total")
    when: datetime | None = None


class Ids(pydantic.RootModel[list[int]]):
    pass


class WithSecret(pydantic.BaseModel):
    user: str
    token: pydantic.SecretStr


# --- exact comparison -----------------------------------------------------------------------


def _same_tz(a: tzinfo | None, b: tzinfo | None) -> bool:
    if a is None or b is None:
        return a is b
    if type(a) is not type(b):
        return False
    if isinstance(a, ZoneInfo):
        return a.key == b.key  # type: ignore[attr-defined]
    return bool(a == b and a.tzname(None) == b.tzname(None))


def same(a: Any, b: Any) -> bool:
    """Equal value and same type at every depth; nan equals nan; Decimals compare digit by digit."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, Decimal):
        return str(a) == str(b)
    if isinstance(a, datetime | time):
        return a.replace(tzinfo=None) == b.replace(tzinfo=None) and a.fold == b.fold and _same_tz(a.tzinfo, b.tzinfo)
    if isinstance(a, dict):  # dict, FrozenDict: same keys in the same order
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, set | frozenset):
        return a == b and all(any(same(x, y) for y in b) for x in a)
    if isinstance(a, pydantic.BaseModel):
        return (
            same(dict(a), dict(b))
            and a.model_fields_set == b.model_fields_set
            and same(a.model_extra or {}, b.model_extra or {})
        )
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return bool(a == b)


def roundtrip(value: Any) -> Any:
    text = dumps(value)
    json.loads(text)  # always valid JSON
    assert text.isascii()
    back = loads(text)
    assert same(back, value), (value, back)
    assert dumps(back) == text  # and it encodes to the very same text again
    return back


# --- strategies -----------------------------------------------------------------------------

fixed_tz = st.builds(
    timezone, st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59))
)
named_tz = st.builds(
    lambda off, name: timezone(timedelta(minutes=off), name), st.integers(-600, 600), st.text(max_size=5)
)
tzs = st.one_of(st.none(), st.just(UTC), fixed_tz, named_tz, st.timezones())

text_any = st.one_of(
    st.text(),
    st.lists(st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr))).map("".join),  # lone surrogates
)

hashable_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**1200), max_value=2**1200),
    st.floats(allow_nan=False),
    text_any,
    st.binary(max_size=20),
    st.decimals(allow_nan=False),
    st.uuids(),
    st.dates(),
    st.timedeltas(),
    st.sampled_from([*Color, *Prio, *Mode, *Perm, Perm.R | Perm.W]),
)

json_leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=10))
json_values = st.recursive(
    json_leaves,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=8,
)

blocks = st.one_of(
    st.builds(TextBlock, text_any),
    st.builds(ToolCall, st.text(max_size=8), st.text(max_size=8), st.dictionaries(st.text(max_size=5), json_values)),
    st.builds(ToolResult, st.text(max_size=8), st.text(max_size=8), text_any, st.booleans()),
    st.builds(ReasoningBlock, st.text(), st.none() | st.text(max_size=10)),
    st.builds(ImageBlock, st.just("image/png"), st.none(), st.binary(max_size=10)),
)
usages = st.builds(
    lambda i, o, cost: Usage(i, o, requests=1, cost=cost, cost_source="unpriced" if cost is None else "reported"),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.none() | st.decimals(min_value=0, max_value=100, places=6),
)
messages = st.builds(
    Message, st.sampled_from(["system", "user", "assistant", "tool"]), st.lists(blocks, max_size=3).map(tuple)
)

leaves = st.one_of(
    hashable_leaves,
    st.floats(),  # nan, inf, -0.0
    st.decimals(allow_nan=True, allow_infinity=True),  # NaN, sNaN, Infinity
    st.datetimes(timezones=tzs, allow_imaginary=True),
    st.times(timezones=tzs),
    usages,
    messages,
    st.builds(Scope, st.text(max_size=5), st.none() | st.text(max_size=5)),
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.lists(children, max_size=4).map(FrozenList),
        st.dictionaries(st.text(max_size=6), children, max_size=4),
        st.dictionaries(st.sampled_from(["$t", "v", "p", "f", "data"]) | st.text(max_size=3), children, max_size=4),
        st.dictionaries(st.integers(), children, max_size=4),
        st.dictionaries(hashable_leaves, children, max_size=4),
        st.dictionaries(st.text(max_size=6), children, max_size=4).map(FrozenDict),
        st.dictionaries(st.sampled_from(["$t", "x"]), children, max_size=2).map(FrozenDict),
        st.sets(hashable_leaves, max_size=4),
        st.frozensets(hashable_leaves, max_size=4),
        st.builds(Box, st.text(max_size=5), children),
        st.builds(Pair, children, children),
        st.builds(Holder, value=children, name=st.text(max_size=5)),
        st.builds(lambda v: Holder(value=v), children),  # `name` left unset
        st.builds(lambda m: LLMResult(m, Usage(1, 2, requests=1)), messages),
    )


values = st.recursive(leaves, _containers, max_leaves=25)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_every_supported_value_round_trips_exactly(value: Any) -> None:
    roundtrip(value)


@settings(max_examples=100, deadline=None)
@given(values)
def test_encode_decode_round_trip_without_text(value: Any) -> None:
    obj = encode(value)
    assert json.loads(json.dumps(obj)) == obj  # plain JSON data
    assert same(decode(obj), value)


# --- examples -------------------------------------------------------------------------------


def test_format_is_versioned_compact_json() -> None:
    assert dumps(Decimal("1.10")) == '{"v":1,"data":{"$t":"dec","v":"1.10"}}'
    assert dumps({"a": [1, "b", None, True, 1.5]}) == '{"v":1,"data":{"a":[1,"b",null,true,1.5]}}'
    assert json.loads(dumps(None)) == {"v": CODEC_VERSION, "data": None}


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        float("inf"),
        float("-inf"),
        -0.0,
        5e-324,
        2**64,
        -(2**5000),
        "\ud800x\udfff",
        "\ud83d\ude00",  # a surrogate *pair* of code points: JSON would merge it into one character
        {"\ud800\udc00": 1, "\U0001f600": 2},
        "\x00 é 漢 🙂",
        b"\x00\xff",
        Decimal("-0E-7"),
        Decimal("sNaN12"),
        Decimal("-Infinity"),
        Decimal("123.4500"),
        uuid.UUID(int=7),
        datetime(2024, 10, 27, 2, 30, fold=1, tzinfo=ZoneInfo("Europe/Paris")),
        datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=30, microseconds=7), "IST?")),
        datetime(1, 1, 1),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        time(23, 59, 59, 1, tzinfo=timezone(-timedelta(hours=3))),
        date(2000, 2, 29),
        timedelta(days=-3, microseconds=1),
        Color.BLUE,
        Prio.HIGH,
        Mode.SAFE,
        Perm.R | Perm.X,
        {Mode.FAST: 1, Prio.LOW: 2, (1, "a"): 3, None: 4, b"k": 5, Decimal("1.0"): 6},
        {"$t": "dec", "v": "1"},
        FrozenDict({"$t": "x", "y": FrozenList([1, (2,)])}),
        {frozenset({1, 2}), (3, "x"), Decimal("2.50")},
        WithDerived(3, tags=["a"]),
        Loose(n=1, extra_key={"$t": 1}, other=Decimal("1.5")),
        Aliased(Total=Decimal("9.90")),
        Ids([1, 2, 3]),
        Usage(10, 5, requests=1, cost=Decimal("0.001230"), cost_source="estimated"),
    ],
    ids=repr,
)
def test_examples_round_trip_exactly(value: Any) -> None:
    back = roundtrip(value)  # asserts equality with types at every depth, and identical re-encoding
    assert type(back) is type(value)


def test_seamkit_transcript_round_trips() -> None:
    transcript = (
        Message.system("be brief"),
        Message.user("add 2 and 3"),
        Message("assistant", (ReasoningBlock("think", signature="sig"), ToolCall("c1", "add", {"a": 2, "b": [3]}))),
        Message("tool", (ToolResult("c1", "add", "5"),)),
        Message("user", (ImageBlock(data=b"\x89PNG"),)),
    )
    back = roundtrip(
        {
            "transcript": transcript,
            "usage": Usage(3, 4, requests=2, cost=Decimal("0.5"), cost_source="reported"),
            "scope": Scope("t", "u"),
        }
    )
    assert type(back["transcript"][2].content[1].arguments) is FrozenDict
    assert type(back["transcript"][2].content[1].arguments["b"]) is FrozenList
    assert back["transcript"] == transcript


def test_agent_result_round_trips() -> None:
    from seamkit._agent.result import AgentResult

    result = AgentResult(
        output={"answer": Decimal("5")},
        transcript=(Message.user("q"), Message.assistant("a")),
        usage=Usage(1, 1, requests=1),
        stop_reason="completed",
        run_id="r1",
        steps=1,
    )
    back = roundtrip(result)
    assert type(back) is AgentResult and back.output["answer"] == Decimal("5") and back.transcript == result.transcript


def test_pydantic_fields_set_and_extras_survive() -> None:
    h = Holder(value=[1, (2, 3)])
    back = roundtrip(h)
    assert back.model_fields_set == {"value"}
    assert back.model_dump(exclude_unset=True) == {"value": [1, (2, 3)]}
    loose = roundtrip(Loose(n=2, color=Color.RED))
    assert loose.model_extra == {"color": Color.RED}


def test_dollar_t_keys_are_escaped() -> None:
    tricky = {"$t": "dec", "v": "1.5"}
    back = loads(dumps(tricky))
    assert type(back) is dict and back == tricky
    assert type(loads(dumps(FrozenDict(tricky)))) is FrozenDict
    assert loads(dumps([{"$t": "tuple", "v": [1]}])) == [{"$t": "tuple", "v": [1]}]


def test_output_is_deterministic() -> None:
    value = {"s": {"b", "a", "c", 3, 1.5, None}, "f": frozenset({(1, 2), (0, 1)}), "m": Message.user("x")}
    assert dumps(value) == dumps(loads(dumps(value)))
    assert dumps({"x", "y", "z"}) == dumps({"z", "y", "x"})


def test_sets_are_sorted_the_same_under_any_hash_seed() -> None:
    script = "from seamkit._durability.codec import dumps; print(dumps({'alpha', 'beta', 'gamma', 'delta', b'x', 7}))"
    outs = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outs) == 1


class OddTz(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=2, minutes=15)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def tzname(self, dt: datetime | None) -> str:
        return "ODD"


def test_another_tzinfo_is_kept_as_its_exact_offset() -> None:
    dt = datetime(2024, 5, 1, 12, 30, tzinfo=OddTz())
    back = loads(dumps(dt))
    assert back == dt
    assert type(back.tzinfo) is timezone and back.utcoffset() == timedelta(hours=2, minutes=15)


def test_zoneinfo_and_fold_are_kept() -> None:
    dt = datetime(2024, 11, 3, 1, 30, fold=1, tzinfo=ZoneInfo("America/New_York"))
    back = loads(dumps(dt))
    assert back.tzinfo is ZoneInfo("America/New_York") and back.fold == 1 and back.utcoffset() == dt.utcoffset()


# --- encode errors --------------------------------------------------------------------------


def _encode_error(value: Any) -> CodecError:
    with pytest.raises(CodecError) as info:
        dumps(value)
    with pytest.raises(CodecError) as info2:
        encode(value)
    assert (info.value.path, info.value.reason) == (info2.value.path, info2.value.reason)
    return info.value


def test_unsupported_value_deep_inside_is_named_by_path() -> None:
    state = {
        "transcript": [
            Message.user("hi"),
            Message.assistant("ok"),
            Message("assistant", (TextBlock("x"),)),
            Message("assistant", (ToolCall("c1", "t", {"x": object()}),)),
        ]
    }
    err = _encode_error(state)
    assert err.path == "$.transcript[3].content[0].arguments.x"
    assert "object" in err.reason
    assert str(err).startswith("$.transcript[3].content[0].arguments.x: ")


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (lambda: 1, "$"),
        ({"a b": [1, 2, (x for x in [])]}, "$['a b'][2]"),
        ({1: {"ok": [print]}}, "$[1].ok[0]"),
        (Box("b", items=[Pair(1, b=Holder(value={"k": {7: object()}}))]), "$.items[0].b.value.k[7]"),
        ({"a": {object(): 1}}, "$.a"),
        ({"s": {1, 2, object()}}, "$.s"),
        ({"f": FrozenList([0, 1j])}, "$.f[1]"),
        ([bytearray(b"x")], "$[0]"),
    ],
)
def test_encode_errors_name_the_path(value: Any, path: str) -> None:
    assert _encode_error(value).path == path


def test_open_file_is_refused(tmp_path: Any) -> None:
    with open(tmp_path / "f.txt", "w") as fh:
        err = _encode_error({"state": {"fh": fh}})
    assert err.path == "$.state.fh"
    assert "TextIOWrapper" in err.reason


def test_secrets_are_refused_and_never_shown() -> None:
    err = _encode_error({"creds": WithSecret(user="u", token=pydantic.SecretStr("hunter2"))})
    assert err.path == "$.creds.token"
    assert err.reason == "secret values are not persisted"
    assert "hunter2" not in str(err)
    assert _encode_error([pydantic.SecretBytes(b"k")]).reason == "secret values are not persisted"


def test_class_defined_in_a_function_is_refused_at_encode_time() -> None:
    @dataclasses.dataclass
    class Local:
        x: int

    err = _encode_error({"v": Local(1)})
    assert err.path == "$.v"
    assert "not importable" in err.reason


def test_reference_cycle_is_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert _encode_error(loop).path == "$"


# --- decode errors --------------------------------------------------------------------------


def _decode_error(text: Any) -> CodecError:
    with pytest.raises(CodecError) as info:
        loads(text)
    return info.value


def _payload(data: Any) -> str:
    return json.dumps({"v": 1, "data": data})


@pytest.mark.parametrize(
    ("text", "path", "reason"),
    [
        ("{not json", "$", "invalid JSON"),
        (dumps([1, 2, 3])[:-3], "$", "invalid JSON"),
        ("", "$", "invalid JSON"),
        ('{"v":2,"data":1}', "$", "unsupported codec version 2"),
        ('{"v":true,"data":1}', "$", "unsupported codec version"),
        ('{"data":1}', "$", "not a codec payload"),
        ("[1]", "$", "not a codec payload"),
        ('{"v":1,"data":NaN}', "$", "NaN"),
        (_payload({"a": [1, {"$t": "pickle", "v": "x"}]}), "$.a[1]", "unknown tag 'pickle'"),
        (_payload({"$t": ["x"]}), "$", "unknown tag"),
        (_payload({"x": {"$t": "dec", "v": "1.x"}}), "$.x", "malformed 'dec'"),
        (_payload({"x": {"$t": "dec", "v": 5}}), "$.x", "malformed 'dec'"),
        (_payload([{"$t": "bytes", "v": "@@"}]), "$[0]", "base64"),
        (_payload([{"$t": "uuid", "v": "nope"}]), "$[0]", "uuid"),
        (_payload([{"$t": "str", "v": "@@"}]), "$[0]", "malformed 'str'"),
        (_payload([{"$t": "dt", "v": "2020-13-01T00:00:00"}]), "$[0]", "malformed 'dt'"),
        (_payload([{"$t": "dt", "v": "2020-01-01T00:00:00", "z": ["zone", "No/Such_Zone"]}]), "$[0]", "time zone"),
        (_payload([{"$t": "time", "v": "10:00", "z": ["fixed", 10**12, None]}]), "$[0]", "time zone"),
        (_payload([{"$t": "td", "v": [1, 2]}]), "$[0]", "malformed 'td'"),
        (_payload([{"$t": "float", "v": "1.5"}]), "$[0]", "malformed 'float'"),
        (_payload({"k": {"$t": "set", "v": [[1]]}}), "$.k", "unhashable"),
        (_payload({"k": {"$t": "dict", "p": [[[1], 2]]}}), "$.k", "unhashable"),
        (_payload({"k": {"$t": "dict", "p": [[1, 2, 3]]}}), "$.k", "pairs"),
        (_payload({"k": {"$t": "tuple", "v": {"a": 1}}}), "$.k", "must be a list"),
        (_payload({"k": {"$t": "fdict", "v": [1]}}), "$.k", "must be an object"),
        (_payload({"$t": "enum", "c": "test_durability_codec:Color", "n": "PURPLE"}), "$", "no member 'PURPLE'"),
        (_payload({"$t": "enum", "c": "seamkit.values:Message", "n": "x"}), "$", "is not an Enum"),
        (_payload({"$t": "dc", "c": "subprocess:Popen", "f": {"args": ["true"]}}), "$", "is not a dataclass"),
        (_payload({"$t": "dc", "c": "os:system", "f": {}}), "$", "is not a class"),
        (_payload({"$t": "pyd", "c": "test_durability_codec:Box", "f": {}}), "$", "is not a pydantic model"),
        (_payload({"$t": "dc", "c": "seamkit_no_such_module:X", "f": {}}), "$", "cannot import module"),
        (_payload({"$t": "dc", "c": "seamkit.values:Nope", "f": {}}), "$", "not found"),
        (_payload({"$t": "dc", "c": "seamkit.values:f.<locals>.X", "f": {}}), "$", "not importable"),
        (_payload({"$t": "dc", "c": "no colon", "f": {}}), "$", "malformed class name"),
        (_payload({"$t": "dc", "c": "seamkit.values:Scope", "f": [1]}), "$", "'f' must be an object"),
        (_payload({"$t": "dc", "c": "seamkit.values:Scope", "f": {"tenant": "t", "zone": 1}}), "$", "no field(s)"),
        (_payload({"$t": "dc", "c": "seamkit.values:TextBlock", "f": {}}), "$", "needs field(s) ['text']"),
        (_payload({"$t": "dc", "c": "seamkit.values:Message", "f": {"role": "robot"}}), "$", "unknown role"),
        (_payload({"$t": "pyd", "c": "test_durability_codec:Holder", "f": {"name": [1]}}), "$", "ValidationError"),
    ],
)
def test_decode_errors_name_the_path(text: str, path: str, reason: str) -> None:
    err = _decode_error(text)
    assert err.path == path
    assert reason in err.reason


def test_decode_error_inside_a_seamkit_value_names_the_field() -> None:
    text = dumps({"transcript": [Message.user("a"), Message("assistant", (ToolCall("c", "t", {"n": Decimal(1)}),))]})
    bad = text.replace('"v":"1"', '"v":"one"')
    err = _decode_error(bad)
    assert err.path == "$.transcript[1].content[0].arguments.n"


def test_non_text_input_is_refused() -> None:
    assert _decode_error(None).path == "$"
    assert loads(dumps([1]).encode()) == [1]
    assert "UTF-8" in _decode_error(b'{"v":1,"data":"\xff"}').reason


def test_decode_rejects_non_json_data() -> None:
    with pytest.raises(CodecError) as info:
        decode({"a": [1, (2,)]})
    assert info.value.path == "$.a[1]"


def test_class_that_is_no_longer_a_dataclass(monkeypatch: pytest.MonkeyPatch) -> None:
    text = dumps({"boxes": [Box("a"), Box("b", items=Pair(1, 2))]})

    class NotADataclass:
        def __init__(self, **kwargs: Any) -> None:
            raise AssertionError("must not be called")

    monkeypatch.setattr(sys.modules[__name__], "Pair", NotADataclass)
    err = _decode_error(text)
    assert err.path == "$.boxes[1].items"
    assert "is not a dataclass" in err.reason


def test_class_whose_fields_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    text = dumps([Pair(1, 2)])

    @dataclasses.dataclass(frozen=True)
    class Pair2:
        a: Any
        c: Any

    monkeypatch.setattr(sys.modules[__name__], "Pair", Pair2)
    err = _decode_error(text)
    assert err.path == "$[0]"
    assert "no field(s) ['b']" in err.reason


def test_enum_that_is_no_longer_an_enum(monkeypatch: pytest.MonkeyPatch) -> None:
    text = dumps({"c": Color.RED})
    monkeypatch.setattr(sys.modules[__name__], "Color", Box)
    err = _decode_error(text)
    assert (err.path, "is not an Enum" in err.reason) == ("$.c", True)


def test_missing_module_is_a_codec_error() -> None:
    text = dumps({"p": Pair(1)}).replace("test_durability_codec:Pair", "seamkit_gone_module:Pair")
    err = _decode_error(text)
    assert err.path == "$.p"
    assert "cannot import module 'seamkit_gone_module'" in err.reason


def test_a_field_added_with_a_default_still_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    text = dumps(Pair(1, 2))

    @dataclasses.dataclass(frozen=True, slots=True)
    class PairV2:
        a: Any
        b: Any = 0
        c: Any = "new"

    monkeypatch.setattr(sys.modules[__name__], "Pair", PairV2)
    back = loads(text)
    assert (type(back), back.a, back.b, back.c) == (PairV2, 1, 2, "new")


def test_module_exports() -> None:
    assert set(codec.__all__) == {"CODEC_VERSION", "MapEncoder", "dumps", "loads", "loads_frozen", "encode", "decode"}


def test_loads_frozen_returns_the_value_decoded_before_for_the_same_text() -> None:
    m = Message.user("a message decoded once")
    text = codec.dumps(m)
    first = codec.loads_frozen(text)
    assert first == m and codec.loads_frozen(text) is first  # shared, not decoded again
    assert codec.loads_frozen(codec.dumps(Message.user("another"))) == Message.user("another")
    with pytest.raises(CodecError):
        codec.loads_frozen("not json")


def test_the_frozen_text_cache_is_bounded_by_characters() -> None:
    cache = codec._FrozenTexts(2000)
    texts = [codec.dumps(Message.user(f"message {i:03d}")) for i in range(40)]
    for t in texts:
        cache.put(t, codec.loads(t))
    assert cache.chars <= 2000 and cache.chars == sum(len(t) for t in cache.values)
    assert cache.get(texts[-1]) == codec.loads(texts[-1])  # the most recent stay
    assert cache.get(texts[0]) is codec._MISSING  # the oldest went first
    cache.put("x" * 300, "too big")  # more than an eighth of the bound: not kept
    assert cache.get("x" * 300) is codec._MISSING


# --- renamed modules: data stored before a host module became private stays readable -------


def test_a_class_stored_under_a_moved_module_name_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    from seamkit import _moved

    monkeypatch.setitem(_moved.MOVED, "seamkit.old_home", "seamkit.values")
    stored = '{"v":1,"data":{"$t":"dc","c":"seamkit.old_home:Scope","f":{"tenant":"t","user":null,"thread":null}}}'
    assert loads(stored) == Scope(tenant="t")
    assert dumps(Scope(tenant="t")) == stored.replace("seamkit.old_home", "seamkit.values")


def test_every_moved_module_name_is_importable_now() -> None:
    """Each entry of the map names a module that exists, and an old submodule follows its package."""
    import importlib

    from seamkit import _moved

    for old, new in _moved.MOVED.items():
        assert importlib.import_module(new).__name__ == new, old
        assert _moved.current(old + ".x") == new + ".x"
    assert _moved.current("seamkit.values") == "seamkit.values"
