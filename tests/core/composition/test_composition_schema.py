"""``composition_json_schema``: a valid draft 2020-12 schema that accepts good files and refuses bad ones."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from composition_plugins import LocalTools
from pydantic import BaseModel, ConfigDict
from seamkit._hookspecs import hookimpl
from seamkit._plugins.registry import Registry
from seamkit.composition import composition_json_schema
from seamkit.composition._yaml import parse_yaml


class TagInner(BaseModel):  # same name as composition_plugins.TagInner, another shape
    model_config = ConfigDict(extra="forbid")
    other: int


class _OtherConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    inner: TagInner


GOOD = """\
seamkit: 1
agent:
  name: demo
  model: {use: scripted, turns: ["hi", {text: done, delay: 0}]}
  prompt: {id: p, version: 1.0.0, template: "You help."}
  tools: [calculator, {use: echo, prefix: "> ", version: 3.10}, {use: search, from: seamkit-search-a}]
  output: {json_schema: {type: object}}
  tool_choice: auto
  settings: {temperature: 0.5, seed: 3}
  middlewares: [{use: tag, label: x, inner: {key: k}}]
"""


def data(text: str) -> Any:
    doc = parse_yaml(text, env={})
    assert doc.problems == []
    return doc.data


@pytest.fixture
def validator(registry: Registry) -> jsonschema.Draft202012Validator:
    schema = composition_json_schema(registry)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_is_draft_2020_12_with_descriptions(registry: Registry) -> None:
    schema = composition_json_schema(registry)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    tools = schema["$defs"]["ToolRef"]["oneOf"]
    echo = next(o for o in tools if o.get("properties", {}).get("use", {}).get("const") == "echo")
    assert echo["properties"]["prefix"]["description"] == "Text put before the echo"
    assert echo["description"] == "Echoes text" and echo["additionalProperties"] is False
    bare = next(o for o in tools if o.get("type") == "string")
    assert "calculator" in bare["enum"] and "echo" in bare["enum"]
    assert "read_file" not in bare["enum"], "needs its root parameter"
    assert "search" not in bare["enum"], "ambiguous without from:"
    assert schema["properties"]["seamkit"]["const"] == 1


def test_good_file_validates(validator: jsonschema.Draft202012Validator) -> None:
    assert list(validator.iter_errors(data(GOOD))) == []


@pytest.mark.parametrize("bad", [
    GOOD.replace("seamkit: 1", "seamkit: 2"),
    GOOD.replace("prefix:", "prefx:"),
    GOOD.replace("use: scripted", "use: nosuch"),
    GOOD.replace("{use: search, from: seamkit-search-a}", "{use: search}"),
    GOOD.replace("label: x, ", ""),
    GOOD.replace("key: k", "kee: k"),
    GOOD.replace("name: demo", "nme: demo"),
])
def test_bad_files_are_refused(validator: jsonschema.Draft202012Validator, bad: str) -> None:
    assert list(validator.iter_errors(data(bad)))


def test_defs_of_components_are_namespaced(registry: Registry) -> None:
    class Other:
        @hookimpl
        def seamkit_register_middlewares(self, register: Any) -> None:
            register("tag2", lambda cfg: None, config=_OtherConfig, description="another TagInner")

    registry.register_plugin(Other(), "other", distribution="seamkit-other")
    schema = composition_json_schema(registry)
    inner = [k for k in schema["$defs"] if k.endswith("TagInner")]
    assert len(inner) == 2, inner
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    good = data(GOOD.replace("[{use: tag, label: x, inner: {key: k}}]", "[{use: tag2, inner: {other: 1}}]"))
    assert list(v.iter_errors(good)) == []


def test_broken_component_is_skipped_not_fatal(registry: Registry) -> None:
    schema = composition_json_schema(registry)
    uses = [o.get("properties", {}).get("use", {}).get("const") for o in schema["$defs"]["ToolRef"]["oneOf"]]
    assert "broken" not in uses and "echo" in uses


def test_default_registry_and_kinds_without_components(register_plugin: Any) -> None:
    register_plugin(LocalTools(), "schema-local", distribution="seamkit-local-tools")
    schema = composition_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    empty = composition_json_schema(Registry())
    jsonschema.Draft202012Validator.check_schema(empty)
    assert "none is installed" in empty["$defs"]["ProviderRef"]["description"]
