"""Regression tests for problems a newcomer found (one test per problem)."""

from __future__ import annotations

import pytest
from seamkit import Agent, Prompt
from seamkit.agent.output import OutputSpec
from seamkit.testing import ScriptedModel


async def test_plain_string_prompt_with_variables_is_a_template() -> None:
    model = ScriptedModel(["ok"])
    agent = Agent(model, prompt="Hi {{who}}, you handle {{what}}.")
    assert isinstance(agent.prompt, Prompt)
    await agent.run("task", variables={"who": "Ada", "what": "sums"})
    assert model.requests[0].messages[0].text == "Hi Ada, you handle sums."


async def test_plain_string_prompt_template_missing_variable_is_an_error() -> None:
    agent = Agent(ScriptedModel(["ok"]), prompt="Hi {{who}}")
    with pytest.raises(KeyError, match="who"):
        await agent.run("task")


async def test_variables_for_a_prompt_without_any_are_refused() -> None:
    agent = Agent(ScriptedModel(["ok"]), prompt="No variables here {not_one}")
    with pytest.raises(ValueError, match="no variables zz"):
        await agent.run("task", variables={"zz": 1})
    model = ScriptedModel(["ok"])
    await Agent(model, prompt="literal {braces} stay").run("task")
    assert model.requests[0].messages[0].text == "literal {braces} stay"


@pytest.mark.parametrize("ref", ["#/nope", "#/$defs/missing", "http://127.0.0.1:9/x.json", "other.json"])
def test_unresolvable_or_remote_ref_in_output_schema_is_refused_up_front(ref: str) -> None:
    with pytest.raises(ValueError, match="cannot be resolved"):
        OutputSpec.from_json_schema({"type": "object", "properties": {"x": {"$ref": ref}}})


def test_local_refs_in_output_schema_resolve_and_validate() -> None:
    spec = OutputSpec.from_json_schema(
        {"$defs": {"n": {"type": "integer"}}, "type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}}
    )
    assert spec.parse('{"x": 3}') == {"x": 3}
    with pytest.raises(Exception, match="is not of type 'integer'"):
        spec.parse('{"x": "three"}')
