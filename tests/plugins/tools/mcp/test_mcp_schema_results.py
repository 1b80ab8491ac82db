"""Input schemas made usable by every provider, argument checks, and MCP results as tool outputs
(no server needed: the SDK's own result types)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    PromptMessage,
    ReadResourceResult,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from seamkit.errors import ConfigError, ToolArgumentError
from seamkit.values import ImageBlock
from seamkit_mcp.results import call_output, prompt_output, resource_output
from seamkit_mcp.schema import ArgumentValidator, normalise_schema

EMPTY = {"type": "object", "properties": {}}
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452")


@pytest.mark.parametrize("raw", [None, {}, [], "x", 3, {"type": "object"}, {"properties": {}},
                                 {"type": "string"}, {"$schema": "https://json-schema.org/draft/2020-12/schema"}])
def test_schemas_of_tools_without_arguments_become_the_empty_object_schema(raw: Any) -> None:
    assert normalise_schema(raw) == EMPTY


def test_a_schema_keeps_what_is_valid_and_mends_the_rest() -> None:
    raw = {"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"type": "integer"}, "b": 5},
           "required": ["a", "zz", "a"], "additionalProperties": False, "minProperties": "two"}
    assert normalise_schema(raw) == {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}},
                                     "required": ["a"], "additionalProperties": False}
    assert normalise_schema({"type": ["object", "null"], "properties": {"q": {"type": "string"}}}) == {
        "type": "object", "properties": {"q": {"type": "string"}}}


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12)
_keys = st.sampled_from(["type", "properties", "required", "$schema", "additionalProperties", "items", "$defs",
                         "$ref", "enum", "anyOf", "minProperties", "title", "description", "not"])
_schemas = st.dictionaries(_keys, _json | st.dictionaries(st.text(max_size=4), _json, max_size=3), max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_json, _schemas))
def test_the_normalised_schema_is_always_a_valid_object_schema(raw: Any) -> None:
    out = normalise_schema(raw)
    Draft202012Validator.check_schema(out)
    assert out["type"] == "object" and isinstance(out["properties"], dict) and "$schema" not in out


def test_arguments_are_checked_with_paths() -> None:
    v = ArgumentValidator("t", {"type": "object", "properties": {"n": {"type": "integer"},
                                                                  "o": {"type": "object", "properties": {
                                                                      "x": {"type": "string"}}}},
                                "required": ["n"]})
    assert v.validate({"n": 2}) == {"n": 2}
    with pytest.raises(ToolArgumentError) as err:
        v.validate({"o": {"x": 1}})
    assert err.value.problems == ("(arguments): 'n' is a required property", "o.x: 1 is not of type 'string'")


def test_text_is_joined_and_an_error_result_stays_an_error() -> None:
    out = call_output(CallToolResult(content=[TextContent(text="a"), TextContent(text="b")]))
    assert (out.value, out.is_error, out.images) == ("a\nb", False, ())
    err = call_output(CallToolResult(content=[TextContent(text="no such file")], is_error=True))
    assert (err.value, err.is_error) == ("no such file", True)


def test_structured_content_is_the_value_and_text_goes_with_it_only_when_it_adds_something() -> None:
    same = call_output(CallToolResult(content=[TextContent(text='{"a": 1}')], structured_content={"a": 1}))
    assert same.value == {"a": 1}
    wrapped = call_output(CallToolResult(content=[TextContent(text="pong")], structured_content={"result": "pong"}))
    assert wrapped.value == {"result": "pong"}
    number = call_output(CallToolResult(content=[TextContent(text="4")], structured_content={"result": "4"}))
    assert number.value == {"result": "4"}
    more = call_output(CallToolResult(content=[TextContent(text="it is warm")], structured_content={"c": 21}))
    assert more.value == {"structured": {"c": 21}, "text": "it is warm"}


def test_images_are_decoded_and_nothing_else_is_dropped_silently() -> None:
    b64 = base64.b64encode(PNG).decode()
    out = call_output(CallToolResult(content=[
        ImageContent(data=b64, mime_type="image/png"),
        AudioContent(data=base64.b64encode(b"RIFF").decode(), mime_type="audio/wav"),
        EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", text="hello", mime_type="text/plain")),
        EmbeddedResource(resource=BlobResourceContents(uri="file:///a.bin", blob=base64.b64encode(b"xy").decode(),
                                                       mime_type="application/octet-stream")),
        ResourceLink(uri="file:///big.csv", name="big", description="all the data", mime_type="text/csv"),
    ]))
    assert out.images == (ImageBlock("image/png", data=PNG),)
    assert out.value.splitlines() == [
        "[audio (audio/wav, 4 bytes) left out: audio is not passed on to the model]",
        "[resource file:///a.txt (text/plain)]", "hello",
        "[resource file:///a.bin: binary (application/octet-stream, 2 bytes) left out: only text and images are "
        "passed on]",
        "[resource link big <file:///big.csv> (text/csv): all the data]"]
    only_image = call_output(CallToolResult(content=[ImageContent(data=b64, mime_type="image/png")]))
    assert only_image.value == "[1 image(s) attached]" and len(only_image.images) == 1


def test_resources_and_prompts_as_text() -> None:
    b64 = base64.b64encode(PNG).decode()
    res = resource_output(ReadResourceResult(contents=[
        TextResourceContents(uri="note://a", text="read me", mime_type="text/plain"),
        BlobResourceContents(uri="note://logo", blob=b64, mime_type="image/png")]))
    assert res.value == ("[resource note://a (text/plain)]\nread me\n\n"
                         f"[resource note://logo: image (image/png, {len(PNG)} bytes), attached]")
    assert res.images == (ImageBlock("image/png", data=PNG),)
    prompt = prompt_output(GetPromptResult(description="Greets", messages=[
        PromptMessage(role="user", content=TextContent(text="Say hi")),
        PromptMessage(role="assistant", content=TextContent(text="Hi!"))]))
    assert prompt.value == "Greets\n\n[user] Say hi\n\n[assistant] Hi!"


def _toolset_of(*tools: Any, **cfg: Any) -> Any:
    from seamkit_mcp.config import McpConfig
    from seamkit_mcp.connection import Listing, ServerSpec
    from seamkit_mcp.toolset import toolset_from

    spec = ServerSpec.of(McpConfig(server={"command": "srv"}, **cfg))
    return toolset_from(spec, Listing(tuple(tools), None, None, None))


def test_tool_names_descriptions_and_side_effects_from_the_servers_definitions() -> None:
    from mcp.types import Tool, ToolAnnotations

    long = "x" * 80
    ts = _toolset_of(
        Tool(name="files.read", description="Read a file.", input_schema={"type": "object"},
             annotations=ToolAnnotations(read_only_hint=True)),
        Tool(name=long, input_schema={}, annotations=ToolAnnotations(read_only_hint=False)),
        Tool(name="delete", description="  ", input_schema={"type": "object"},
             annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True)),
        prefix="fs_")
    names = [t.schema.name for t in ts.tools]
    assert names == ["fs_files_read", ("fs_" + long)[:64], "fs_delete"]
    assert [t.server_name for t in ts.tools] == ["files.read", long, "delete"]  # called by the server's names
    assert [t.schema.side_effecting for t in ts.tools] == [False, True, True]  # only readOnlyHint: true is read-only
    assert ts.tools[2].schema.description == (
        "Calls the tool 'delete' of the MCP server 'srv' (the server gives no description).")
    with pytest.raises(ConfigError, match=r"the tools 'a\.b' and 'a_b' .* all become the tool name 'a_b'"):
        _toolset_of(Tool(name="a.b", input_schema={}), Tool(name="a_b", input_schema={}))


def test_refs_the_schema_cannot_resolve_by_itself_are_dropped_never_fetched() -> None:
    raw = {"properties": {"a": {"$ref": "#/$defs/missing"}, "b": {"$ref": "#/$defs/x"}, "c": {"$ref": "#here"},
                          "d": {"$ref": "https://example.invalid/d.json", "description": "kept"}},
           "$defs": {"x": {"type": "string", "$anchor": "here"}}}
    out = normalise_schema(raw)
    assert out["properties"] == {"a": {}, "b": {"$ref": "#/$defs/x"}, "c": {"$ref": "#here"},
                                 "d": {"description": "kept"}}
    v = ArgumentValidator("t", out)
    assert v.validate({"a": 1, "d": [2]}) == {"a": 1, "d": [2]}
    with pytest.raises(ToolArgumentError, match="c: 3 is not of type 'string'"):
        v.validate({"c": 3})


def test_a_validator_given_an_unresolvable_ref_says_so_plainly() -> None:
    v = ArgumentValidator("t", {"type": "object", "properties": {"a": {"$ref": "https://example.invalid/x.json"}}})
    with pytest.raises(ToolArgumentError) as err:
        v.validate({"a": 1})
    assert err.value.problems == ("(arguments): the tool's input schema refers to 'https://example.invalid/x.json', "
                                  "which seamkit does not fetch",)


def test_limits_cut_the_json_of_a_structured_value_and_leave_small_outputs_alone() -> None:
    from seamkit.values import ToolOutput
    from seamkit_mcp.results import Limits, limited

    small = ToolOutput({"a": 1}, images=(ImageBlock("image/png", data=PNG),))
    assert limited(small, Limits()) is small
    out = limited(ToolOutput({"a": "x" * 50}, is_error=True), Limits(chars=20))
    assert out.value == '{"a":"xxxxxxxxxxxxxx\n[38 more characters left out: the result has 58, more than ' \
                        'max_result_chars (20)]' and out.is_error
