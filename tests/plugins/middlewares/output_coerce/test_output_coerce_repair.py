"""output_coerce at the end of the stream: validation, parse-and-repair, exhaustion (raw kept)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from coerce_fakes import BAD, GOOD, SCHEMA, partials, run, text, turn, warnings
from seamkit._accumulate import collect_result
from seamkit._agent.agent import Agent
from seamkit.errors import FailureClass, OutputValidationError, ProviderError
from seamkit.testing import ScriptedModel, ScriptedTurn
from seamkit.values import TextBlock, Usage
from seamkit_output_coerce import OutputCoerceMiddleware

PAID = Usage(input_tokens=10, output_tokens=5, requests=1, cost=Decimal("0.001"), cost_source="reported")


async def test_a_valid_answer_is_not_repaired() -> None:
    deltas, model, _ = await run(OutputCoerceMiddleware(max_repairs=3), [turn(GOOD)])
    assert model.calls == 1 and not warnings(deltas) and text(deltas) == json.dumps(GOOD)


async def test_repair_success_replaces_the_answer_and_counts_every_request() -> None:
    bad = ScriptedTurn(text=json.dumps(BAD), usage=PAID)
    good = ScriptedTurn(text=json.dumps(GOOD), usage=PAID, chunk_size=3)
    deltas, model, seen = await run(OutputCoerceMiddleware(max_repairs=1), [bad, good])
    assert model.calls == 2
    # the corrective call: the reply and the problems appended, marked in meta
    fix = model.requests[1]
    assert fix.messages[:-2] == model.requests[0].messages
    assistant, user = fix.messages[-2:]
    assert assistant.role == "assistant" and assistant.text == json.dumps(BAD)
    assert user.role == "user" and "n: 'eighteen fifteen' is not of type 'integer'" in user.text
    assert isinstance(user.content[0], TextBlock)
    assert seen[1].meta["output_repair"] == 1 and "output_repair" not in seen[0].meta
    # what the caller sees: warning, then the repaired text alone, then the summed usage
    (w,) = warnings(deltas)
    assert "did not match the output schema" in w and "corrective call 1 of 1 repaired it" in w
    assert [d.text for d in deltas if d.text] == [json.dumps(GOOD)]
    assert partials(deltas)[-1] == GOOD
    result = await collect_result(iter(deltas))
    assert result.text == json.dumps(GOOD)
    assert result.usage.requests == 2 and result.usage.input_tokens == 20 and result.usage.cost == Decimal("0.002")
    assert result.warnings == (w,)


async def test_each_corrective_call_sees_every_earlier_reply() -> None:
    still_bad = {"name": 3, "n": 1}
    deltas, model, _ = await run(OutputCoerceMiddleware(max_repairs=2), [turn(BAD), turn(still_bad), turn(GOOD)])
    assert model.calls == 3
    last = model.requests[2].messages
    assert [m.role for m in last[-4:]] == ["assistant", "user", "assistant", "user"]
    assert last[-2].text == json.dumps(still_bad) and "name: 3 is not of type 'string'" in last[-1].text
    assert "corrective call 2 of 2 repaired it" in warnings(deltas)[0]
    assert text(deltas) == json.dumps(GOOD)


async def test_exhausted_repairs_keep_the_original_raw_text() -> None:
    deltas, model, _ = await run(OutputCoerceMiddleware(max_repairs=2), [turn(BAD), turn("sorry, no"), turn(BAD)])
    assert model.calls == 3
    assert text(deltas) == json.dumps(BAD)  # the model's original answer, unchanged
    (w,) = warnings(deltas)
    assert "still does not match" in w and "after 2 corrective calls" in w and "original text is kept" in w
    assert partials(deltas)[-1] == BAD
    result = await collect_result(iter(deltas))
    assert result.text == json.dumps(BAD) and result.usage.requests == 3


async def test_a_corrective_reply_with_a_tool_call_is_discarded() -> None:
    tool_reply = ScriptedTurn(text="", tool_calls=({"name": "lookup", "arguments": {}},))
    deltas, model, _ = await run(OutputCoerceMiddleware(max_repairs=3), [turn(BAD), tool_reply])
    assert model.calls == 2
    result = await collect_result(iter(deltas))
    assert result.text == json.dumps(BAD) and not result.tool_calls and result.usage.requests == 2
    assert "called a tool instead of answering" in warnings(deltas)[0]


async def test_a_failing_corrective_call_ends_the_repairs() -> None:
    boom = ProviderError("overloaded", FailureClass.RATE_LIMITED, provider="scripted")
    deltas, model, _ = await run(OutputCoerceMiddleware(max_repairs=3), [turn(BAD), boom])
    assert model.calls == 2 and text(deltas) == json.dumps(BAD)
    assert "corrective call 1 failed" in warnings(deltas)[0]


async def test_an_error_of_the_first_call_propagates() -> None:
    boom = ProviderError("down", FailureClass.SERVER_ERROR, provider="scripted")
    with pytest.raises(ProviderError, match="down"):
        await run(OutputCoerceMiddleware(), [boom])


async def test_agent_run_is_repaired_inside_one_step() -> None:
    model = ScriptedModel([turn(BAD), turn(GOOD)])
    agent = Agent(model, output=SCHEMA, middlewares=[OutputCoerceMiddleware(max_repairs=1)])
    result = await agent.run("who?")
    assert result.output == GOOD and result.steps == 1 and model.calls == 2
    assert result.usage.requests == 2 and any("repaired it" in w for w in result.warnings)
    assert result.transcript[-1].text == json.dumps(GOOD)


async def test_agent_reports_the_raw_text_when_everything_fails() -> None:
    # 1 repair in the middleware, then the loop's own corrective turn (with its repair): all bad
    model = ScriptedModel([turn(BAD)], repeat=True)
    agent = Agent(model, output=SCHEMA, middlewares=[OutputCoerceMiddleware(max_repairs=1)])
    with pytest.raises(OutputValidationError) as info:
        await agent.run("who?")
    assert info.value.raw == json.dumps(BAD)
    assert model.calls == 4
