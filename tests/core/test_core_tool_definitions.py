"""Malformed ``@tool`` definitions: each is refused with a ``ToolDefinitionError`` naming the tool
(and the parameter), at decoration when the signature or a type hint is wrong, when the schema is
first built (an agent with the tool) when the docstring or a type is something a model cannot be
told about. Found after issue 19 made the schema build on first use.

No ``from __future__ import annotations`` here: the annotations below are the objects written."""

import functools
import socket
from typing import Any

import pydantic
import pytest
from seamkit import Agent, tool
from seamkit.errors import ToolDefinitionError
from seamkit.testing import ScriptedModel


def _fn(annotation: Any, doc: str = "Echo x back (a tool for definition tests).") -> Any:
    def f(x):  # type: ignore[no-untyped-def]
        return x

    f.__annotations__ = {"x": annotation}
    f.__doc__ = doc
    return f


# -- the docstring ---------------------------------------------------------------------------------


def sections_on_the_first_line(x: int) -> int:
    """Args:
        x: a number.
    """
    return x


def sections_on_the_next_line(x: int) -> int:
    """
    Args:
        x: a number.
    """
    return x


def returns_on_the_first_line(x: int) -> int:
    """Returns:
        x unchanged.
    """
    return x


def numpy_sections_first(x: int) -> int:
    """Parameters
    ----------
    x : int
        a number.
    """
    return x


@pytest.mark.parametrize("fn", [sections_on_the_first_line, sections_on_the_next_line, returns_on_the_first_line,
                                numpy_sections_first])
def test_a_docstring_of_sections_only_is_refused_wherever_its_first_section_starts(fn: Any) -> None:
    t = tool(side_effecting=False)(fn)
    message = (f"tool '{fn.__name__}' has no description.*add a docstring to .*"
               r"\(its docstring has sections such as Args: but no summary before them\)")
    with pytest.raises(ToolDefinitionError, match=message):
        Agent(ScriptedModel([]), tools=[t])
    with pytest.raises(ToolDefinitionError, match=message):
        t.schema  # noqa: B018 - the property builds the schema


def test_a_summary_that_begins_like_a_section_title_is_a_summary() -> None:
    @tool(side_effecting=False)
    def f(x: int) -> int:
        """Arguments are echoed back unchanged.

        Args:
            x: a number.
        """
        return x

    assert f.schema.description == "Arguments are echoed back unchanged."
    assert f.schema.parameters["properties"]["x"]["description"] == "a number."


# -- type hints that are not types ---------------------------------------------------------------------


@pytest.mark.parametrize(("annotation", "kind"), [
    (lambda: int, "function"),
    (list[lambda: int], "function"),  # type: ignore[misc]
    (dict[str, len], "builtin_function_or_method"),  # type: ignore[valid-type]
    (functools.partial(int), "partial"),
    ("lambda: int", "function"),  # a string annotation (from __future__ import annotations)
])
def test_a_function_written_as_a_type_hint_is_refused_at_decoration(annotation: Any, kind: str) -> None:
    # pydantic took a function for a validator: the tool was advertised as taking an empty object
    # and every call failed with "Arguments must be a tuple, list or a dictionary"
    with pytest.raises(ToolDefinitionError, match=rf"tool 'f': parameter 'x' is annotated with .*a {kind} and "
                                                  r"not a type: annotate it with a type \(int, str, a pydantic model"):
        tool(side_effecting=False)(_fn(annotation))


def test_annotated_metadata_may_be_a_function() -> None:
    from typing import Annotated

    t = tool(side_effecting=False)(_fn(Annotated[int, pydantic.AfterValidator(lambda v: v)]))
    assert t.schema.parameters["properties"]["x"] == {"type": "integer"}


@pytest.mark.parametrize(("annotation", "cause"), [
    ("Nope", "'Nope' is not defined where the function is"),
    ("list[Nope]", "'Nope' is not defined where the function is"),
    ("x y", "Forward reference must be an expression -- got 'x y'"),
])
def test_a_type_hint_that_does_not_resolve_is_refused_at_decoration_naming_the_parameter(
        annotation: str, cause: str) -> None:
    with pytest.raises(ToolDefinitionError, match="tool 'f': the type hint of parameter 'x' cannot be resolved: "
                                                  f"{cause}") as info:
        tool(side_effecting=False)(_fn(annotation))
    assert isinstance(info.value.__cause__, (NameError, SyntaxError))


def test_an_unresolvable_return_annotation_is_named_as_such() -> None:
    f = _fn(int)
    f.__annotations__["return"] = "Missing"
    with pytest.raises(ToolDefinitionError, match="the type hint of the return annotation cannot be resolved: "
                                                  "'Missing' is not defined"):
        tool(side_effecting=False)(f)


# -- signatures ------------------------------------------------------------------------------------------


def test_positional_only_parameters_are_refused_at_decoration() -> None:
    def f(x: int, /) -> int:
        """Echo x back (a tool for definition tests)."""
        return x

    with pytest.raises(ToolDefinitionError, match="tool 'f': parameter 'x' is positional-only"):
        tool(side_effecting=False)(f)


def test_a_callable_without_a_signature_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="its signature cannot be read"):
        tool(side_effecting=False, description="Build a dict from keyword arguments.")(dict)


def test_a_description_that_is_not_text_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="tool 'f': description must be a str, got int"):
        tool(side_effecting=False, description=3)(_fn(int))  # type: ignore[arg-type]


# -- types JSON Schema cannot describe: what to do instead -------------------------------------------------


class Undefined(pydantic.BaseModel):
    ref: "NotDefinedAnywhere"  # type: ignore[name-defined]  # noqa: F821


@pytest.mark.parametrize(("annotation", "reason"), [
    (socket.socket, r"parameter 'x' \(socket\) cannot be described to a model: Unable to generate pydantic-core "
                    r"schema for <class 'socket.socket'>\. Use a type"),
    (3, r"parameter 'x' \(3\) cannot be described to a model: Unable to generate pydantic-core schema for 3\. "),
    (Undefined, r"parameter 'x' \(Undefined\) cannot be described to a model: it refers to 'NotDefinedAnywhere', "
                r"which is not defined where its class is"),
    ({"a": int}, r"parameter 'x' \(\{'a': <class 'int'>\}\) cannot be described to a model: KeyError: 'type'"),
])
def test_a_type_json_schema_cannot_describe_is_refused_saying_what_to_use_instead(annotation: Any, reason: str) -> None:
    t = tool(side_effecting=False)(_fn(annotation))
    with pytest.raises(ToolDefinitionError, match=rf"tool 'f': {reason}") as info:
        Agent(ScriptedModel([]), tools=[t])
    message = str(info.value)
    assert "arbitrary_types_allowed" not in message and "model_rebuild" not in message, message
    assert message.endswith("Use a type JSON Schema can describe: str, int, float, bool, None, Literal[...], an Enum, "
                            "datetime, list/dict/tuple of those, a pydantic model, a dataclass or a TypedDict"), message


def test_the_parameter_named_is_the_one_whose_type_is_wrong() -> None:
    def f(a: int, conn: socket.socket, b: str) -> None:
        """Use a socket (a type no JSON Schema describes)."""

    with pytest.raises(ToolDefinitionError, match=r"tool 'f': parameter 'conn' \(socket\) cannot be described"):
        tool(side_effecting=False)(f).schema  # noqa: B018 - the property builds the schema


def test_a_parameter_named_like_pydantic_configuration_is_refused_not_left_out() -> None:
    # pydantic took `model_config` for the argument model's configuration: the tool was advertised
    # without the parameter and every call failed
    def f(model_config: int) -> int:
        """Echo model_config back (a tool for definition tests)."""
        return model_config

    t = tool(side_effecting=False)(f)
    with pytest.raises(ToolDefinitionError, match="tool 'f': parameter 'model_config' has a name pydantic reserves"):
        t.schema  # noqa: B018 - the property builds the schema


def test_a_parameter_starting_with_an_underscore_is_refused_at_decoration() -> None:
    def f(_x: int) -> int:
        """Echo x back (a tool for definition tests)."""
        return _x

    with pytest.raises(ToolDefinitionError, match="tool 'f': parameter '_x' starts with '_'"):
        tool(side_effecting=False)(f)


def test_a_generator_function_is_refused_at_decoration() -> None:
    def numbers(n: int) -> Any:
        """Yield 0..n-1 (a tool for definition tests)."""
        yield from range(n)

    async def anumbers(n: int) -> Any:
        """Yield 0..n-1 (a tool for definition tests)."""
        yield n

    for fn in (numbers, anumbers):
        with pytest.raises(ToolDefinitionError, match=f"tool '{fn.__name__}': a generator function cannot be a tool"):
            tool(side_effecting=False)(fn)


@pytest.mark.parametrize(("options", "message"), [
    ({"name": "my tool"}, "tool name 'my tool' is not one a model provider accepts: 1 to 64 letters"),
    ({"name": "x" * 65}, "is not one a model provider accepts"),
    ({"name": 3}, "@tool name must be a str, got int"),
    ({"blocking": "no"}, "tool 'f': blocking must be True or False, got 'no'"),
    ({"idempotent": 1}, "tool 'f': idempotent must be True or False, got 1"),
])
def test_options_a_provider_or_the_loop_could_not_use_are_refused_at_decoration(
        options: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        tool(side_effecting=False, **options)(_fn(int))


def test_a_function_without_a_name_needs_name() -> None:
    with pytest.raises(ToolDefinitionError, match=r"tool name 'functools.partial.*pass name=\.\.\. to @tool"):
        tool(side_effecting=False, description="Echo x back.")(functools.partial(_fn(int)))
    t = tool(side_effecting=False, name="echo", description="Echo x back.")(functools.partial(_fn(int)))
    assert t.name == "echo"


def test_a_callable_object_is_described_by_its_call_method() -> None:
    class Echo:
        def __call__(self, x: int) -> int:
            return x

    t = tool(side_effecting=False, name="echo", description="Echo x back.")(Echo())
    assert t.schema.parameters["required"] == ["x"] and t.validate({"x": "2"}) == {"x": 2}
