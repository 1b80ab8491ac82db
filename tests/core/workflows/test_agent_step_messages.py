"""An agent step's input as messages: a mapping with ``"messages"`` (what a compose step puts
together) reaches the agent as those messages, after its own prompt; a bad list is refused."""

from __future__ import annotations

import pytest
from seamkit._agent.agent import Agent
from seamkit.testing._models import ScriptedModel
from seamkit.values import Message
from seamkit.workflows import StepError, Workflow, WorkflowFailed, agent_step, run_workflow


def _workflow(agent: Agent) -> Workflow:
    return Workflow("w", (agent_step("answer", agent, emits="answer"),), outcomes=("answer",))


async def test_messages_reach_the_agent_after_its_prompt_and_other_mappings_stay_json() -> None:
    model = ScriptedModel(["ok"], repeat=True)
    agent = Agent(model, name="answer", prompt="Be brief.")
    r = await run_workflow(_workflow(agent), {"messages": [
        {"role": "system", "text": "Context: [s1] the sky scatters blue light."},
        {"role": "user", "text": "Why is the sky blue?"}, {"role": "assistant", "text": "Scattering."},
        Message.user("more?")]})
    assert r.output == "ok"
    assert [(m.role, m.text) for m in model.requests[0].messages] == [
        ("system", "Be brief."), ("system", "Context: [s1] the sky scatters blue light."),
        ("user", "Why is the sky blue?"), ("assistant", "Scattering."), ("user", "more?")]
    await run_workflow(_workflow(agent), {"question": "why?"})
    assert [(m.role, m.text) for m in model.requests[1].messages][1:] == [("user", '{"question": "why?"}')]


@pytest.mark.parametrize("messages, why", [
    ([], "'messages' must be a non-empty list of messages"),
    ("hello", "'messages' must be a non-empty list of messages"),
    ([{"role": "tool", "text": "x"}], "messages[0] must be a Message or {'role': 'system' | 'user' | 'assistant'"),
    ([{"role": "user", "content": "x"}], "messages[0] must be a Message"),
])
async def test_a_bad_messages_list_fails_the_step_naming_it(messages: object, why: str) -> None:
    model = ScriptedModel(["ok"])
    with pytest.raises(WorkflowFailed, match="INVALID_STEP_INPUT") as info:
        await run_workflow(_workflow(Agent(model, name="answer")), {"messages": messages})
    assert isinstance(info.value.__cause__, StepError) and why in str(info.value.__cause__)
    assert model.calls == 0
