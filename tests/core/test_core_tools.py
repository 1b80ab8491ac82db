"""``@tool`` (``seamkit._tools.decorator``) and ``ToolRegistry``."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import inspect
import socket
import subprocess
import sys
import threading
from typing import Annotated, Any, Literal, Optional

import jsonschema
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seamkit import Agent
from seamkit._ports import ToolPort
from seamkit._runtime.context import RunContext
from seamkit._tools import FunctionTool, ToolRegistry, tool
from seamkit.errors import ToolArgumentError, ToolDefinitionError
from seamkit.testing import ScriptedModel, example_for_schema, make_test_ctx
from seamkit.values import thaw


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Point(pydantic.BaseModel):
    x: int
    y: float = 0.0


@dataclasses.dataclass
class Box:
    width: int
    tags: list[str]


# (annotation, kind, a default to use when the parameter has one, or None for "never defaulted")
TYPES: dict[str, tuple[Any, Any]] = {
    "int": (int, 3),
    "float": (float, 1.5),
    "str": (str, "d"),
    "bool": (bool, False),
    "list_int": (list[int], [1]),
    "list_str": (list[str], []),
    "optional_int": (Optional[int], None),  # noqa: UP045 - the issue asks for Optional explicitly
    "literal": (Literal["a", "b", "c"], "b"),
    "enum": (Color, Color.GREEN),
    "model": (Point, None),
    "dataclass": (Box, None),
    "dict_str_int": (dict[str, int], {}),
}
NAMES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


@dataclasses.dataclass
class ParamSpec:
    name: str
    kind: str
    has_default: bool
    description: str | None


param_specs = st.lists(st.sampled_from(NAMES), min_size=0, max_size=6, unique=True).flatmap(
    lambda names: st.tuples(
        *[
            st.builds(
                ParamSpec,
                st.just(n),
                st.sampled_from(sorted(TYPES)),
                st.booleans(),
                st.none() | st.sampled_from(["the first thing", "how many times", "a nested value"]),
            )
            for n in names
        ]
    )
)


def build_function(specs: tuple[ParamSpec, ...], ctx_at: int | None) -> Any:
    """A function with keyword-only parameters per ``specs`` (and a ``RunContext`` parameter at
    position ``ctx_at``) and a Google-style docstring; it returns what it received."""
    params = []
    annotations: dict[str, Any] = {}
    for s in specs:
        ann, default = TYPES[s.kind]
        use_default = (s.has_default and default is not None) or (s.has_default and s.kind == "optional_int")
        params.append(
            inspect.Parameter(s.name, inspect.Parameter.KEYWORD_ONLY, annotation=ann,
                              default=default if use_default else inspect.Parameter.empty)
        )
        annotations[s.name] = ann
    if ctx_at is not None:
        params.insert(min(ctx_at, len(params)), inspect.Parameter("run_ctx", inspect.Parameter.KEYWORD_ONLY,
                                                                  annotation=RunContext))
        annotations["run_ctx"] = RunContext

    def fn(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    fn.__annotations__ = annotations
    doc_lines = ["Do the generated thing."]
    described = [s for s in specs if s.description]
    if described:
        doc_lines += ["", "Args:"] + [f"    {s.name}: {s.description}" for s in described]
    fn.__doc__ = "\n".join(doc_lines) + "\n"
    fn.__name__ = "generated"
    return fn


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    target: Any = schema
    for part in ref[2:].split("/"):
        target = target[part]
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(param_specs, st.none() | st.integers(0, 6))
def test_generated_tool_schemas(specs: tuple[ParamSpec, ...], ctx_at: int | None) -> None:
    fn = build_function(specs, ctx_at)
    t = tool(side_effecting=False)(fn)
    schema = thaw(t.schema.parameters)

    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert "run_ctx" not in schema["properties"]
    assert set(schema["properties"]) == {s.name for s in specs}
    assert t.schema.description == "Do the generated thing."
    assert t.schema.side_effecting is False

    sig = inspect.signature(fn)
    without_default = {n for n, p in sig.parameters.items() if p.default is p.empty and n != "run_ctx"}
    assert set(schema.get("required", [])) == without_default

    for s in specs:
        prop = schema["properties"][s.name]
        node = resolve(schema, prop)
        if s.description:
            assert prop["description"] == s.description
        else:
            assert "description" not in prop
        if s.kind.startswith("list_"):
            assert node["type"] == "array" and "items" in node
            assert node["items"]["type"] == ("integer" if s.kind == "list_int" else "string")
        elif s.kind == "literal":
            assert node["enum"] == ["a", "b", "c"]
        elif s.kind == "enum":
            assert node["enum"] == ["red", "green"]
        elif s.kind == "optional_int":
            assert {"type": "null"} in node["anyOf"] and {"type": "integer"} in node["anyOf"]
        elif s.kind in ("model", "dataclass"):
            assert node["type"] == "object" and node["properties"]
        elif s.kind == "dict_str_int":
            assert node["type"] == "object" and node["additionalProperties"] == {"type": "integer"}
        else:
            assert node["type"] == {"int": "integer", "float": "number", "str": "string", "bool": "boolean"}[s.kind]

    example = example_for_schema(schema)
    jsonschema.validate(example, schema, cls=jsonschema.Draft202012Validator)
    kwargs = t.validate(example)
    assert set(kwargs) == {s.name for s in specs}
    ctx = make_test_ctx()
    got = asyncio.run(t.invoke(kwargs, ctx))
    if ctx_at is not None:
        assert got.pop("run_ctx") is ctx
    assert got == kwargs
    for s in specs:
        if s.kind == "enum":
            assert isinstance(kwargs[s.name], Color)
        if s.kind == "model":
            assert isinstance(kwargs[s.name], Point)
        if s.kind == "dataclass":
            assert isinstance(kwargs[s.name], Box)


# --- decorator contract ---------------------------------------------------------------------


def test_tool_needs_side_effecting() -> None:
    def f(x: int) -> int:
        """Return x unchanged (a tool for registry tests)."""
        return x

    with pytest.raises(TypeError, match="side_effecting"):
        tool(f)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="side_effecting"):
        tool()(f)  # type: ignore[call-overload]


def test_missing_type_hint_raises() -> None:
    def f(x, y: int) -> int:  # type: ignore[no-untyped-def]
        return y

    with pytest.raises(TypeError, match="'x' needs a type hint"):
        tool(side_effecting=False)(f)


def test_var_args_are_refused() -> None:
    def f(*xs: int) -> int:
        return 0

    with pytest.raises(TypeError, match=r"\*args"):
        tool(side_effecting=False)(f)


class Inner(pydantic.BaseModel):
    x: int


def test_argument_errors_list_problems_with_paths() -> None:
    @tool(side_effecting=True)
    def place(point: Inner, count: int, tags: list[str]) -> str:
        """Place it."""
        return "ok"

    with pytest.raises(ToolArgumentError) as info:
        place.validate({"point": {"x": "nope"}, "tags": ["a", 3], "bogus": 1})
    err = info.value
    assert err.tool == "place"
    paths = {p.split(":")[0] for p in err.problems}
    assert paths == {"point.x", "count", "tags.1", "bogus"}
    assert "point.x" in str(err) and "place" in str(err)
    assert place.schema.side_effecting is True
    assert place.validate({"point": {"x": 1}, "count": "2", "tags": []})["count"] == 2


def test_overrides_and_direct_calls() -> None:
    @tool(side_effecting=False, name="adder", description="Adds.")
    def add(a: int, b: int = 1) -> int:
        """Ignored docstring."""
        return a + b

    assert isinstance(add, FunctionTool)
    assert add.name == "adder" and add.schema.description == "Adds."
    assert add(2, 3) == 5
    assert "adder" in repr(add)


async def test_sync_function_runs_in_a_worker_thread() -> None:
    seen: list[int] = []

    @tool(side_effecting=False)
    def where() -> str:
        """Record which thread runs the tool and return ok."""
        seen.append(threading.get_ident())
        return "ok"

    assert await where.invoke(where.validate({}), make_test_ctx()) == "ok"
    assert seen[0] != threading.get_ident()


async def test_non_blocking_sync_function_runs_on_the_loop_thread() -> None:
    seen: list[int] = []

    @tool(side_effecting=False, blocking=False)
    def where() -> str:
        """Record which thread runs the tool and return ok."""
        seen.append(threading.get_ident())
        return "ok"

    await where.invoke({}, make_test_ctx())
    assert seen == [threading.get_ident()]


async def test_async_function_is_awaited() -> None:
    @tool(side_effecting=False)
    async def later(n: int, ctx: RunContext) -> str:
        """Return n with the run id and the thread that ran it."""
        await asyncio.sleep(0)
        return f"{n}:{ctx.run_id}:{threading.get_ident()}"

    assert "run_ctx" not in later.schema.parameters["properties"]
    assert "ctx" not in later.schema.parameters["properties"]
    out = await later.invoke(later.validate({"n": 4}), make_test_ctx(run_id="run_x"))
    assert out == f"4:run_x:{threading.get_ident()}"


def test_function_tool_is_a_tool_port() -> None:
    @tool(side_effecting=False)
    def f(x: int) -> int:
        """Return x unchanged (a tool for registry tests)."""
        return x

    assert isinstance(f, ToolPort)


# --- registry -------------------------------------------------------------------------------


def _named(name: str) -> FunctionTool:
    def f(x: int) -> int:
        """Return x unchanged (a tool for registry tests)."""
        return x

    return tool(side_effecting=False, name=name)(f)


def test_registry_keeps_order_and_refuses_duplicates() -> None:
    a, b = _named("a"), _named("b")
    reg = ToolRegistry([a, b])
    assert reg.names == ("a", "b")
    assert [s.name for s in reg.schemas] == ["a", "b"]
    assert reg.get("a") is a and reg.get("zzz") is None
    assert "b" in reg and len(reg) == 2 and list(reg) == [a, b]
    with pytest.raises(ValueError, match="duplicate tool name 'a'"):
        reg.add(_named("a"))
    assert reg.names == ("a", "b")
    with pytest.raises(ValueError, match="not a tool"):
        reg.add(lambda x: x)  # type: ignore[arg-type]


def test_a_type_pydantic_cannot_describe_raises_type_error_when_the_agent_is_built() -> None:
    # issue 19: the schema is built on first use, so decorating such a function succeeds; the error
    # comes from building the agent (or from reading the schema, or validating arguments)
    def f(conn: socket.socket) -> None:
        """Use a socket (a type no JSON Schema describes)."""
        return None

    t = tool(side_effecting=False)(f)
    message = r"'f': parameter 'conn' \(socket\) cannot be described"
    with pytest.raises(ToolDefinitionError, match=message) as info:
        Agent(ScriptedModel([]), tools=[t])
    assert isinstance(info.value, TypeError)
    with pytest.raises(ToolDefinitionError, match=message):
        t.schema  # noqa: B018 - the property builds the schema
    with pytest.raises(ToolDefinitionError, match=message):
        t.validate({})


def test_the_schema_is_built_on_first_use_and_once() -> None:
    built: list[str] = []

    @tool(side_effecting=False)
    def f(x: int) -> int:
        """Return x unchanged (a tool for registry tests)."""
        return x

    real = f._build

    def counting() -> Any:
        built.append("schema")
        return real()

    f._build = counting  # type: ignore[method-assign]
    assert built == [] and f.name == "f" and "side_effecting=False" in repr(f)
    assert f.validate({"x": "3"}) == {"x": 3}
    assert f.schema is f.schema and f.validate({"x": 4}) == {"x": 4}
    assert built == ["schema"]


def test_a_docstring_with_only_sections_is_refused_when_the_schema_is_built() -> None:
    # a blank docstring is refused at decoration; telling a summary from sections takes the
    # docstring parser, which loads with the schema
    def lookup(city: str) -> str:
        """
        Args:
            city: the city's name
        """
        return city

    t = tool(side_effecting=False)(lookup)
    with pytest.raises(ToolDefinitionError, match="tool 'lookup' has no description"):
        t.schema  # noqa: B018 - the property builds the schema
    with pytest.raises(ToolDefinitionError, match="tool 'lookup' has no description"):
        Agent(ScriptedModel([]), tools=[t])


USABLE_AGENT = '''
import sys
from seamkit import Agent, tool

@tool(side_effecting=False)
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

@tool(side_effecting=False)
def double(n: int) -> int:
    """Double n."""
    return 2 * n

heavy = [m for m in ("pydantic", "pydantic_core", "docstring_parser", "asyncio", "logging") if m in sys.modules]
assert not heavy, heavy
assert add.schema.parameters["required"] == ["a", "b"]  # built on first use
assert "pydantic" in sys.modules

from seamkit.testing import ScriptedModel

model = ScriptedModel([{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}},
                                       {"name": "double", "arguments": {"n": 4}}]}, "done"])
result = Agent(model, tools=[add, double]).run_sync("go")
assert result.output == "done", result
tool_results = [b.content for m in result.transcript if m.role == "tool" for b in m.content]
assert tool_results == ["5", "8"], result.transcript
'''


def test_a_usable_agent_imports_neither_pydantic_nor_asyncio() -> None:
    # issue 19: `from seamkit import Agent, tool` and one @tool stay under 100 ms because the tool's
    # argument model is built on first use and asyncio, logging are imported on first use
    # (benchmarks/startup_tools_bench.py has the timing); the agent then runs as usual
    proc = subprocess.run([sys.executable, "-c", USABLE_AGENT], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_constraints_from_annotated_fields() -> None:
    @tool(side_effecting=False)
    def g(n: Annotated[int, pydantic.Field(ge=1)] = 2) -> int:
        """G.

        Args:
            n: how many
        """
        return n

    assert g.schema.parameters["properties"]["n"] == {"default": 2, "description": "how many", "minimum": 1,
                                                      "type": "integer"}
    with pytest.raises(ToolArgumentError, match="n: Input should be greater than or equal to 1"):
        g.validate({"n": 0})


def test_a_tool_without_a_description_is_refused_at_registration() -> None:
    # issue 10 item 17: a tool with no docstring reached the model with an empty description
    from seamkit.values import ToolSchema

    def lookup(city: str) -> str:
        return city

    with pytest.raises(TypeError, match=r"tool 'lookup' has no description.*add a docstring to .*lookup.*description="):
        tool(side_effecting=False)(lookup)
    with pytest.raises(TypeError, match="no description"):
        tool(side_effecting=False, description="   ")(lookup)
    assert tool(side_effecting=False, description="Look a city up by name.")(lookup).schema.description

    class Blank:
        schema = ToolSchema("blank", "", {"type": "object", "properties": {}}, False)

        def validate(self, arguments: Any) -> Any:
            return arguments

        async def invoke(self, arguments: Any, ctx: RunContext) -> Any:
            return "ok"

    with pytest.raises(ValueError, match="tool 'blank' has no description"):
        ToolRegistry([Blank()])  # type: ignore[list-item]


def test_short_descriptions_are_flagged() -> None:
    from seamkit._tools.registry import MIN_DESCRIPTION_CHARS, short_description
    from seamkit.values import ToolSchema

    def schema(text: str) -> ToolSchema:
        return ToolSchema("t", text, {"type": "object"}, False)

    assert short_description(schema("Gets the stock price for a ticker.")) is not None
    assert short_description(schema("x" * MIN_DESCRIPTION_CHARS)) is None
    assert short_description(schema("Retrieves the latest trade price in USD of a US-listed stock by ticker.")) is None
