"""Schemas whose llama.cpp grammar used to crash the process (SIGSEGV, exit 139).

llama-cpp-python's converter turned regex ``pattern`` escapes (``\\d``, ``\\w``, ``\\.``) and
property names with quotes into GBNF that llama.cpp cannot parse, and llama.cpp then used the
NULL grammar sampler. Now: patterns are left out of the grammar (with a warning), literals are
escaped correctly, and any grammar llama.cpp still rejects is a ``ProviderError``
(``invalid_request``) before generation. Runs against the real bundled model.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Annotated, Any

import pytest
from pydantic import Field, ValidationError
from seamkit import tool
from seamkit.errors import FailureClass, ProviderError
from seamkit.values import ChatRequest, Message
from seamkit_llamacpp import provider as provider_module
from seamkit_llamacpp.config import LlamaCppConfig
from seamkit_llamacpp.grammar import Plan, plan, relax, to_gbnf
from seamkit_llamacpp.provider import LlamaCppProvider, _grammar_problem, _load, resolve_model_path

pytestmark = pytest.mark.slow

PATTERNS = [r"^[a-c]{3}\d+$", r"^a\.b$", r"^\w$"]
ODD_NAME = 'naïve "q"'


@pytest.fixture(scope="module")
def model() -> LlamaCppProvider:
    return LlamaCppProvider(LlamaCppConfig(threads=2, max_tokens=16))


@tool(side_effecting=False)
def area(code: Annotated[str, Field(pattern=r"^\d{3}$")]) -> str:
    """Look up a three-digit area code."""
    return code


def ask(**kwargs: Any) -> ChatRequest:
    return ChatRequest((Message.user("Answer briefly."),), **kwargs)


def test_relax_drops_patterns_only_where_they_are_keywords() -> None:
    schema = {
        "type": "object",
        "properties": {"pattern": {"type": "string", "pattern": "^x$"}, "b": {"const": {"pattern": "keep"}}},
        "$defs": {"D": {"type": "string", "pattern": "y"}},
    }
    relaxed, dropped = relax(schema)
    assert relaxed["properties"]["pattern"] == {"type": "string"}
    assert relaxed["properties"]["b"] == {"const": {"pattern": "keep"}}
    assert relaxed["$defs"]["D"] == {"type": "string"}
    assert sorted(dropped) == ["#/$defs/D", "#/properties/pattern"]
    assert relax({"type": "string"}) == ({"type": "string"}, [])


@pytest.mark.parametrize("pattern", PATTERNS)
async def test_pattern_output_schema_completes_with_warning(model: LlamaCppProvider, pattern: str) -> None:
    result = await model.chat(ask(output_schema={"type": "string", "pattern": pattern}, max_tokens=8))
    assert any("'pattern' at #" in w and "not enforced" in w for w in result.warnings)
    assert result.text.startswith('"')


async def test_odd_property_names_and_enum_literals_are_escaped(model: LlamaCppProvider) -> None:
    schema = {
        "type": "object",
        "properties": {ODD_NAME: {"enum": ['x"y', "z\\w"]}, "back\\slash": {"const": 1}},
        "required": [ODD_NAME, "back\\slash"],
    }
    result = await model.chat(ask(output_schema=schema, max_tokens=40))
    assert result.finish_reason == "stop"
    value = json.loads(result.text)
    assert value[ODD_NAME] in ('x"y', "z\\w")
    assert value["back\\slash"] == 1


async def test_pattern_in_forced_tool_parameters(model: LlamaCppProvider) -> None:
    result = await model.chat(
        ChatRequest((Message.user("Area code 212"),), tools=(area.schema,), tool_choice="required", max_tokens=64)
    )
    # located in the tool's own parameters (not in the decoding schema, which changes per turn)
    assert any("'pattern' at #/properties/code in area's parameters" in w for w in result.warnings), result.warnings
    (call,) = result.tool_calls
    assert call.name == "area"
    assert isinstance(call.arguments["code"], str)


def test_unparsable_grammar_is_detected_without_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    llm = _load(resolve_model_path(None), LlamaCppConfig(threads=2)).llm
    problem = _grammar_problem(llm, 'root ::= "a\\.b"', verbose=False)
    assert problem is not None and "unknown escape" in problem
    assert _grammar_problem(llm, 'root ::= "ab"', verbose=False) is None
    assert "error parsing grammar" not in capfd.readouterr().err


async def test_unparsable_grammar_is_an_invalid_request(
    model: LlamaCppProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provider_module, "to_gbnf", lambda p: None if p.schema is None else 'root ::= "\\d"+')
    with pytest.raises(ProviderError, match=r"llama\.cpp cannot parse the grammar") as info:
        await model.chat(ask(output_schema={"type": "string"}))
    assert info.value.failure_class is FailureClass.INVALID_REQUEST


def test_upstream_converter_escapes_are_fixed() -> None:
    gbnf = to_gbnf(Plan("json", {"type": "object", "properties": {'a"b\\': {"type": "integer"}}}))
    assert gbnf is not None and '"\\"a\\\\\\"b\\\\\\\\\\""' in gbnf
    assert to_gbnf(plan((), "none", {"type": "string", "pattern": r"\d"})) == to_gbnf(
        plan((), "none", {"type": "string"})
    )


CRASH_DRIVER = textwrap.dedent(
    """\
    import asyncio, json, sys
    from typing import Annotated
    from pydantic import Field
    from seamkit import tool
    from seamkit.errors import ProviderError
    from seamkit.values import ChatRequest, Message
    from seamkit_llamacpp.config import LlamaCppConfig
    from seamkit_llamacpp.provider import LlamaCppProvider

    @tool(side_effecting=False)
    def area(code: Annotated[str, Field(pattern=r"^\\d{3}$")]) -> str:
        "Look up an area code."
        return code

    m = LlamaCppProvider(LlamaCppConfig(threads=2, max_tokens=8))
    user = (Message.user("Answer."),)
    requests = [ChatRequest(user, output_schema=json.loads(s)) for s in sys.argv[1:]]
    requests.append(ChatRequest(user, tools=(area.schema,), tool_choice="required"))

    async def main() -> None:
        for r in requests:
            try:
                await m.chat(r)
                print("OK", flush=True)
            except ProviderError as exc:
                print("ERROR", exc.failure_class.value, flush=True)

    asyncio.run(main())
    """
)


def test_repros_do_not_crash_the_process() -> None:
    schemas = [{"type": "string", "pattern": p} for p in PATTERNS]
    schemas.append({"type": "object", "properties": {ODD_NAME: {"type": "string"}}, "required": [ODD_NAME]})
    proc = subprocess.run(
        [sys.executable, "-c", CRASH_DRIVER, *(json.dumps(s) for s in schemas)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(proc.stdout.split()) >= len(schemas) + 1
    assert "error parsing grammar" not in proc.stderr


def test_empty_model_path_is_named() -> None:
    with pytest.raises(ValidationError, match="model_path is empty"):
        LlamaCppConfig.model_validate({"model_path": ""})
    with pytest.raises(ProviderError, match="model_path is empty"):
        resolve_model_path("")


async def test_context_error_names_configured_and_actual_n_ctx() -> None:
    small = LlamaCppProvider(LlamaCppConfig(threads=2, n_ctx=64))
    with pytest.raises(ProviderError) as info:
        await small.chat(ChatRequest((Message.user("word " * 400),), max_tokens=4))
    assert info.value.failure_class is FailureClass.CONTEXT_LENGTH
    # llama.cpp raises a 64-token context to its 256-token minimum, but llama-cpp-python keeps only
    # 64 token slots, so 64 is the window that can be used (and the one the message names)
    assert "the context window is 64 tokens (n_ctx)" in str(info.value)


def test_grammar_strings_exclude_raw_control_characters() -> None:
    from seamkit_llamacpp.grammar import Plan, to_gbnf

    gbnf = to_gbnf(Plan("json", {"type": "array", "items": {"type": "string"}}))
    assert gbnf is not None
    char_rules = [line for line in gbnf.splitlines() if line.startswith("char ::=")]
    assert char_rules and all("\\x00-\\x1F" in line for line in char_rules)


async def test_string_array_output_is_valid_json(model: LlamaCppProvider) -> None:
    # regression: the upstream string rule let the model put a raw newline inside a string
    import json

    schema = {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3}
    request = ChatRequest((Message.user("List three colours."),), output_schema=schema, max_tokens=64)
    result = await model.chat(request)
    value = json.loads(result.text)
    assert isinstance(value, list) and len(value) == 3


def test_unenforced_keywords_are_listed_with_their_locations() -> None:
    from seamkit_llamacpp.grammar import unenforced

    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 10, "maximum": 12}, "minimum": {"type": "string"}},
        "required": ["n"],
    }
    assert unenforced(schema) == ["'minimum' at #/properties/n", "'maximum' at #/properties/n"]
    assert unenforced({"type": "string", "enum": ["minimum"]}) == []


async def test_bounds_the_grammar_ignores_are_reported_as_warnings(model: LlamaCppProvider) -> None:
    # regression: minimum/maximum were silently not enforced while decoding
    result = await model.chat(ask(output_schema={"type": "integer", "minimum": 10, "maximum": 12}, max_tokens=6))
    assert any("'minimum' at #" in w and "not enforced" in w for w in result.warnings)


async def test_context_check_uses_the_buffer_llama_cpp_python_keeps() -> None:
    # regression: llama.cpp rounds n_ctx 384 up to 512, llama-cpp-python keeps 384 token slots;
    # a ~450-token prompt passed the check and failed with "could not broadcast input array"
    from seamkit.errors import FailureClass, ProviderError

    small = LlamaCppProvider(LlamaCppConfig(threads=2, n_ctx=384, max_tokens=8))
    request = ChatRequest((Message.user("word " * 440),), max_tokens=8)
    with pytest.raises(ProviderError) as info:
        await small.chat(request)
    assert info.value.failure_class is FailureClass.CONTEXT_LENGTH
    assert "384" in str(info.value)
