"""Regression tests for problems a newcomer found (one test per problem)."""

from __future__ import annotations

import pytest
from seamkit import Agent, Prompt
from seamkit._agent.output import OutputSpec
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


def test_agent_refuses_a_model_that_is_not_an_llm_port() -> None:
    with pytest.raises(TypeError, match="LLMPort"):
        Agent(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="LLMPort"):
        Agent("llamacpp")  # type: ignore[arg-type]


@pytest.mark.parametrize("task", [None, 3, [], ["not a message"]])
def test_run_refuses_a_task_of_the_wrong_type(task: object) -> None:
    agent = Agent(ScriptedModel(["ok"]))
    with pytest.raises(TypeError, match="task must be"):
        agent.run_sync(task)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [({"type": "nonsense"}, "at type"), ({"type": "string", "pattern": "(abc"}, "at pattern")],
)
def test_invalid_output_schema_is_a_short_value_error(schema: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValueError, match="invalid output JSON Schema") as info:
        Agent(ScriptedModel(["ok"]), output=schema)
    assert fragment in str(info.value) and "metaschema" not in str(info.value)


@pytest.mark.parametrize(
    "answer",
    ["[" * 5000 + "]" * 5000, '{"a": ' + "9" * 5000 + "}", '{"a": NaN}', '{"a": Infinity}', "[-Infinity]"],
)
async def test_unusable_json_answers_are_output_errors_with_a_corrective_turn(answer: str) -> None:
    from seamkit.errors import OutputValidationError

    model = ScriptedModel([answer, answer])
    agent = Agent(model, output={"type": ["array", "object"]})
    with pytest.raises(OutputValidationError) as info:
        await agent.run("task")
    assert info.value.raw == answer
    assert len(model.requests) == 2  # the corrective turn was taken


@pytest.mark.parametrize("args", ['{"a": NaN}', '{"a": ' + "[" * 5000 + "]" * 5000 + "}", '{"a": ' + "7" * 5000 + "}"])
async def test_unusable_tool_arguments_are_marked_on_the_call(args: str) -> None:
    from seamkit._accumulate import collect_result
    from seamkit.values import Delta, ToolCallDelta

    deltas = [Delta(tool_call=ToolCallDelta(0, "c1", "t", args)), Delta(finish_reason="tool_calls")]
    call = (await collect_result(deltas)).tool_calls[0]
    assert call.arguments == {} and "not usable JSON" in (call.arguments_error or "")


@pytest.mark.parametrize("template", ["Hi {{a.b}}", "Hi {{}}", "Hi {{ 1a }}", "{{a-b}} there"])
def test_prompt_refuses_markers_that_are_not_variable_names(template: str) -> None:
    with pytest.raises(ValueError, match="not a valid template variable"):
        Prompt(template)
    assert Prompt("Hi {{ name }} and {json: 1}").variables == {"name"}


def test_required_tool_choice_without_tools_is_refused() -> None:
    # regression: it was accepted and the run silently answered in free text
    with pytest.raises(ValueError, match="needs at least one tool"):
        Agent(ScriptedModel(["ok"]), tool_choice="required")
