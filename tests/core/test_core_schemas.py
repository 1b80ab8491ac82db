"""seamkit._schemas: the SchemaAdapter contract, adapt() flavour selection, and the shared strict /
partial JSON helpers (pydantic-core's partial parser plus the trailing-number rule)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit._hookspecs import hookimpl
from seamkit._plugins.registry import Registry
from seamkit._schemas import (
    BaseSchemaAdapter,
    PartialJSONStream,
    SchemaAdapter,
    SchemaFlavour,
    UnsupportedSchemaType,
    adapt,
    parse_json,
    partial_json,
)
from seamkit.errors import OutputValidationError

# -- consistency of a partial value with the complete document ------------------------------------


def consistent(partial: Any, final: Any) -> bool:
    """``partial`` could be what a prefix of ``final``'s JSON text says: containers hold a prefix
    of ``final``'s members in order, all of them equal to the final ones except possibly the last,
    which is itself consistent; a string is a prefix of the final string; other scalars are equal
    (same JSON type)."""
    if partial is None and final is not None:
        return True  # nothing known yet (top level only: a member is never reported as None early)
    if isinstance(partial, dict):
        if not isinstance(final, dict):
            return False
        keys = list(partial)
        if keys != list(final)[: len(keys)]:
            return False
        if any(partial[k] != final[k] for k in keys[:-1]):
            return False
        return not keys or consistent(partial[keys[-1]], final[keys[-1]])
    if isinstance(partial, list):
        if not isinstance(final, list) or len(partial) > len(final):
            return False
        if any(a != b for a, b in zip(partial[:-1], final, strict=False)):
            return False
        return not partial or consistent(partial[-1], final[len(partial) - 1])
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    return type(partial) is type(final) and partial == final


def check_every_prefix(text: str, final: Any) -> None:
    previous: Any = None
    for i in range(len(text) + 1):
        got = partial_json(text[:i])  # never raises: an exception fails the test here
        assert consistent(got, final), (text[:i], got, final)
        assert consistent(previous, got) or got is None, (text[:i], previous, got)
        if got is not None:
            previous = got
    assert parse_json(text) == final


def test_consistent_rejects_what_it_should() -> None:
    # the checker itself can fail
    assert not consistent({"a": 12}, {"a": 123})
    assert not consistent({"b": 1}, {"a": 1, "b": 1})
    assert not consistent(["ab", "c"], ["abc", "c"])
    assert not consistent("abd", "abc")
    assert not consistent(1, True)
    assert consistent({"a": [1, {"b": "x"}]}, {"a": [1, {"b": "xyz", "c": 2}], "d": None})


# -- partial_json edges -----------------------------------------------------------------------------

EDGES: list[tuple[str, Any]] = [
    ("", None),
    ("   ", None),
    ("{", {}),
    ('{"na', {}),                                   # inside a key
    ('{"name"', {}),                                # a key without its colon
    ('{"name":', {}),                               # after a key with no value
    ('{"name": ', {}),
    ('{"name": "Ad', {"name": "Ad"}),               # inside a string: the prefix so far
    ('{"name": "a\\', {"name": "a"}),               # inside an escape sequence
    ('{"name": "a\\"', {"name": 'a"'}),
    ('{"name": "a\\n', {"name": "a\n"}),
    ('{"name": "a\\u', {"name": "a"}),              # inside a \u escape
    ('{"name": "a\\u00', {"name": "a"}),
    ('{"name": "a\\u00e', {"name": "a"}),
    ('{"name": "a\\u00e9', {"name": "a\u00e9"}),
    ('{"name": "\\ud83d', {"name": ""}),            # half a surrogate pair
    ('{"name": "\\ud83d\\ude0', {"name": ""}),
    ('{"name": "\\ud83d\\ude00', {"name": "\U0001f600"}),
    ('{"n": 1', {}),                                # inside a number: may still grow
    ('{"n": 12', {}),
    ('{"n": -', {}),
    ('{"n": 1.', {}),
    ('{"n": 1.5e', {}),
    ('{"n": 1.5e+', {}),
    ('{"n": 1.5e+1', {}),
    ('{"n": 12,', {"n": 12}),                       # after a comma
    ('{"n": 12, ', {"n": 12}),
    ('{"n": 12 ', {"n": 12}),                       # whitespace ends a number
    ('{"n": 12}', {"n": 12}),
    ('{"s": "x12', {"s": "x12"}),                   # digits inside a string are text
    ('{"b": t', {}),                                # inside true / false / null
    ('{"b": tru', {}),
    ('{"b": true', {"b": True}),
    ('{"b": f', {}),
    ('{"b": fals', {}),
    ('{"b": nul', {}),
    ('{"b": null', {"b": None}),
    ("[1, 2", [1]),
    ("[1, 2,", [1, 2]),
    ("[tr", []),
    ('[{"a": [1, {"b": "c', [{"a": [1, {"b": "c"}]}]),
    ('"ab', "ab"),                                  # top-level string
    ("12", None),                                   # top-level number: may still grow
    ("tru", None),
    ("true", True),
    ("```json", None),                              # a code fence without its newline yet
    ('```json\n{"a": [1, 2', {"a": [1]}),
    ('```\n{"a": 1}\n```', {"a": 1}),
    ('{"a": 1} and then prose', {"a": 1}),          # text after a complete document is ignored
    ("Sure! Here it is:", None),                    # not JSON
    ("NaN", None),
    ('{"a": 1e999}', None),                         # not representable
    ("[" * 5000, None),                             # deeper than the parser allows
]


@pytest.mark.parametrize(("buffer", "expected"), EDGES)
def test_partial_json_edges(buffer: str, expected: Any) -> None:
    assert partial_json(buffer) == expected


def test_partial_json_never_raises_on_odd_input() -> None:
    assert partial_json(b'{"a": 1,' ) == {"a": 1}  # type: ignore[arg-type]
    assert partial_json(None) is None  # type: ignore[arg-type]
    assert partial_json("\x00\ud800{") is None


FIXED_DOCS: list[Any] = [
    {"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry"], "alive": False, "spouse": None},
    {"title": "Caf\u00e9 \"quoted\" \\ back\\slash\n\ttab \U0001f600 \u2028", "n": -0.0012e-5, "big": 10**30},
    [{"id": 1, "scores": [1.5, -2.25e10, 0, 3]}, {"id": 2, "scores": []}, {}],
    {"nested": {"deeper": {"deepest": [[[]], [{}], [1, [2, [3]]]]}}, "": ""},
    "just a string with \\u escapes: \u00e9\u4e2d",
    [True, False, None, 0, 1e-300, 123456789],
]


@pytest.mark.parametrize("doc", FIXED_DOCS)
@pytest.mark.parametrize("style", ["compact", "spaced", "indented", "ascii"])
def test_every_prefix_of_fixed_documents(doc: Any, style: str) -> None:
    text = {
        "compact": lambda d: json.dumps(d, separators=(",", ":"), ensure_ascii=False),
        "spaced": lambda d: json.dumps(d, ensure_ascii=False),
        "indented": lambda d: json.dumps(d, indent=2, ensure_ascii=False),
        "ascii": lambda d: json.dumps(d, ensure_ascii=True),
    }[style](doc)
    check_every_prefix(text, doc)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=json_values, indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans())
def test_every_prefix_of_generated_documents(doc: Any, indent: int | None, ascii_only: bool) -> None:
    check_every_prefix(json.dumps(doc, indent=indent, ensure_ascii=ascii_only), doc)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_partial_json_never_raises_on_any_text(text: str) -> None:
    got = partial_json(text)
    assert got is None or isinstance(got, (dict, list, str, int, float, bool))


# -- PartialJSONStream ---------------------------------------------------------------------------


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=json_values, cuts=st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=60),
       min_growth=st.sampled_from([0, 1, 16, 256]))
def test_stream_emits_consistent_changed_values(doc: Any, cuts: list[int], min_growth: int) -> None:
    text = json.dumps(doc)
    stream = PartialJSONStream(min_growth=min_growth)
    emitted: list[Any] = []
    pos = 0
    i = 0
    while pos < len(text):
        step = cuts[i % len(cuts)]
        i += 1
        got = stream.feed(text[pos:pos + step])
        pos += step
        if got is not None:
            emitted.append(got)
    got = stream.flush()
    if got is not None:
        emitted.append(got)
    assert stream.buffer == text
    for before, after in itertools.pairwise(emitted):
        assert before != after  # only changes are emitted
        assert consistent(before, after)
    for value in emitted:
        assert consistent(value, doc)
    if text[-1] in "}]\"":
        assert stream.value == doc
    assert stream.flush() is None  # nothing new


def test_stream_bounds_the_parse_count() -> None:
    doc = {"rows": [{"id": i, "text": "x" * 40} for i in range(600)]}
    text = json.dumps(doc)
    assert len(text) > 35_000
    stream = PartialJSONStream()  # 256 characters or 5% growth between parses
    step = len(text) // 2000 + 1
    emitted = [v for k in range(0, len(text), step) if (v := stream.feed(text[k:k + step])) is not None]
    stream.flush()
    assert stream.value == doc
    assert 20 < stream.parses < 120  # not one parse per delta (~2,000)
    assert len(emitted) >= 20
    every = PartialJSONStream(min_growth=0, growth_ratio=0)
    for k in range(0, 500, 5):
        every.feed(text[k:k + 5])
    assert every.parses == 100


def test_stream_rejects_negative_settings() -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        PartialJSONStream(min_growth=-1)


# -- parse_json ---------------------------------------------------------------------------------


def test_parse_json_accepts_json_bytes_and_fences() -> None:
    assert parse_json('{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
    assert parse_json(b'{"a": "\xc3\xa9"}') == {"a": "\u00e9"}
    assert parse_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert parse_json("  [true, null]  ") == [True, None]


@pytest.mark.parametrize(("text", "fragment"), [
    ('{"a": 1', "not valid JSON"),
    ('{"a": 1} trailing', "trailing characters"),
    ("NaN", "not valid JSON"),
    ("[1e999]", "too large"),
    ('"\\ud800"', "not valid JSON"),
    (b"\xff\xfe", "not UTF-8"),
    ("", "not valid JSON"),
])
def test_parse_json_refuses_with_raw_text(text: str | bytes, fragment: str) -> None:
    with pytest.raises(OutputValidationError) as info:
        parse_json(text)
    assert fragment in str(info.value)
    assert isinstance(info.value.raw, str)
    if isinstance(text, str):
        assert info.value.raw == text


# -- adapt() ------------------------------------------------------------------------------------


class _Adapter(BaseSchemaAdapter):
    def __init__(self, flavour: str, tp: Any) -> None:
        self.name = flavour
        self.python_type = tp

    def json_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"n": {"type": "integer"}, "opt": {"type": "string"}},
                "required": ["n"]}

    def validate(self, value: Any) -> Any:
        if not isinstance(value, dict) or not isinstance(value.get("n"), int):
            raise OutputValidationError(["n: not an integer"], json.dumps(value))
        return ("typed", value["n"], value.get("opt"))

    def serialize(self, value: Any) -> Any:
        return {"n": value[1]}


class _Flavour:
    def __init__(self, name: str, priority: int, accepts: set[Any]) -> None:
        self.name = name
        self.priority = priority
        self.accepts = accepts

    def supports(self, tp: Any) -> bool:
        return tp in self.accepts

    def adapter(self, tp: Any) -> _Adapter:
        return _Adapter(self.name, tp)


class Shared:
    """Accepted by two fake flavours: the lower priority must win."""


class OnlyLow:
    pass


class StructLike:
    """Looks like a msgspec Struct (which has ``__struct_fields__``)."""

    __struct_fields__ = ("a",)


def _registry(*flavours: _Flavour, broken: bool = False) -> Registry:
    reg = Registry()

    class Plugin:
        @staticmethod
        @hookimpl
        def seamkit_register_schema_adapters(register: Any) -> None:
            for f in flavours:
                register(f.name, (lambda f=f: f), description=f"fake {f.name}")
            if broken:
                register("broken", "no_such_module_for_seamkit:build", description="cannot import")

    report = reg.register_plugin(Plugin, "fake-schemas", distribution="fake-dist", version="1")
    assert report.status == "ok", report.error
    return reg


def test_adapt_picks_the_first_flavour_by_priority() -> None:
    reg = _registry(_Flavour("dataclass", 30, {Shared, OnlyLow}), _Flavour("pydantic", 10, {Shared}))
    assert adapt(Shared, registry=reg).name == "pydantic"
    assert adapt(OnlyLow, registry=reg).name == "dataclass"
    adapter = adapt(Shared, registry=reg)
    assert isinstance(adapter, SchemaAdapter)
    assert adapter.python_type is Shared


def test_adapt_returns_an_adapter_unchanged() -> None:
    reg = _registry(_Flavour("pydantic", 10, {Shared}))
    adapter = adapt(Shared, registry=reg)
    assert adapt(adapter, registry=reg) is adapter


def test_adapt_unsupported_type_names_it_and_the_flavours() -> None:
    reg = _registry(_Flavour("pydantic", 10, {Shared}), _Flavour("attrs", 20, set()), broken=True)
    with pytest.raises(UnsupportedSchemaType) as info:
        adapt(StructLike, registry=reg)
    msg = str(info.value)
    assert "test_core_schemas.StructLike" in msg
    assert "msgspec Struct" in msg
    assert "installed: attrs, pydantic" in msg
    assert "broken (fake-dist) failed to load" in msg
    assert isinstance(info.value, TypeError)
    assert info.value.python_type is StructLike
    with pytest.raises(UnsupportedSchemaType, match=r"none installed"):
        adapt(int, registry=Registry())


def test_fake_flavour_is_a_schema_flavour() -> None:
    assert isinstance(_Flavour("x", 1, set()), SchemaFlavour)


def test_base_adapter_parse_drops_absent_nulls_and_keeps_raw_text() -> None:
    adapter = _Adapter("fake", Shared)
    assert adapter.parse('{"n": 3, "opt": null}') == ("typed", 3, None)
    assert adapter.parse(b'```json\n{"n": 4, "opt": "x"}\n```') == ("typed", 4, "x")
    with pytest.raises(OutputValidationError) as info:
        adapter.parse('{"n": "three"}')
    assert info.value.raw == '{"n": "three"}'
    assert info.value.problems == ("n: not an integer",)
    assert adapter.partial_parse('{"n": 3, "opt": "ab') == {"n": 3, "opt": "ab"}
    assert "fake" in repr(adapter)


def test_seamkit_exports_adapt_lazily() -> None:
    code = (
        "import sys, seamkit\n"
        "assert 'seamkit._schemas' not in sys.modules\n"
        "from seamkit import SchemaAdapter, adapt\n"
        "import seamkit._schemas as s\n"
        "assert adapt is s.adapt and SchemaAdapter is s.SchemaAdapter\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_schemas_module_imports_light() -> None:
    code = (
        "import sys, seamkit._schemas\n"
        "heavy = [m for m in ('pydantic', 'pydantic_core', 'jsonschema', 'seamkit._plugins.registry') "
        "if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("value", ["hello", b"x", 3, [int], lambda: 1, None])
def test_values_that_are_not_types_are_refused(value: object) -> None:
    """Regression (newcomer): adapt("hello") and adapt(lambda: 1) were accepted by the pydantic flavour."""
    from seamkit._schemas import UnsupportedSchemaType, adapt

    with pytest.raises(UnsupportedSchemaType, match="not a type"):
        adapt(value)
