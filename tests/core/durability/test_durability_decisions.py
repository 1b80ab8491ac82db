"""Decisions as plain data: ``parse_decision_flags`` (the ``--approve`` / ``--reject`` / ``--edit``
flags of ``seamkit resume`` and ``seamkit submit --resume``), ``decisions_from_data`` and
``Agent.check_decisions``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit import tool
from seamkit._agent.agent import Agent
from seamkit._durability.approvals import Decision, decision_data, decisions_from_data, parse_decision_flags
from seamkit.errors import ToolArgumentError
from seamkit.testing import ScriptedModel
from seamkit.testing._memory_store import MemoryStore


def test_flags_become_plain_json_data_keyed_by_call_id() -> None:
    data = parse_decision_flags(["a"], ["b=not today", "c"], ['d={"amount": 3}'])
    assert data == {
        "a": {"approved": True, "arguments": None, "reason": None},
        "b": {"approved": False, "arguments": None, "reason": "not today"},
        "c": {"approved": False, "arguments": None, "reason": None},
        "d": {"approved": True, "arguments": {"amount": 3}, "reason": None},
    }
    assert json.loads(json.dumps(data)) == data
    assert parse_decision_flags() == {}
    assert decisions_from_data(data) == {"a": Decision(True), "b": Decision(False, None, "not today"),
                                         "c": Decision(False), "d": Decision(True, {"amount": 3})}  # type: ignore[arg-type]


@pytest.mark.parametrize(("flags", "message"), [
    ({"approvals": [""]}, "--approve needs a tool call id"),
    ({"rejections": ["=why"]}, "--reject needs a tool call id"),
    ({"approvals": ["a"], "rejections": ["a"]}, "call a has more than one decision"),
    ({"edits": ["a"]}, "--edit a: write CALL_ID='{...json arguments...}'"),
    ({"edits": ["a={x"]}, "--edit a: the arguments are not JSON (Expecting property name enclosed in double "
                          "quotes, column 2)"),
    ({"edits": ["a=[1]"]}, "--edit a: the arguments must be a JSON object"),
])
def test_bad_flags_are_refused_with_the_flag_named(flags: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_decision_flags(**flags)
    assert str(info.value) == message


async def test_check_decisions_refuses_what_resume_would_before_anything_changes() -> None:
    @tool(side_effecting=True)
    def pay(amount: int) -> str:
        """Pay.

        Args:
            amount: in cents
        """
        return "paid"

    store = MemoryStore()
    agent = Agent(ScriptedModel([{"tool_calls": [{"name": "pay", "arguments": {"amount": 5}}]}, "ok"]),
                  tools=[pay], approvals={"pay": "every_call"}, checkpointer=store)
    result = await agent.run("pay")
    assert agent.checkpointer is not None
    snap = await agent.checkpointer.latest(result.run_id)
    assert snap is not None and snap.status == "suspended"
    (call_id,) = [p.call_id for p in snap.state["pending_approvals"]]
    agent.check_decisions(result.run_id, snap.state, decisions_from_data(
        parse_decision_flags(edits=[f'{call_id}={{"amount": 7}}'])))
    with pytest.raises(ToolArgumentError, match="amount"):
        agent.check_decisions(result.run_id, snap.state, decisions_from_data(
            parse_decision_flags(edits=[f'{call_id}={{"amount": "lots"}}'])))
    with pytest.raises(ValueError, match="no pending tool call 'nope'"):
        agent.check_decisions(result.run_id, snap.state, decisions_from_data(parse_decision_flags(["nope"])))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8)


@given(st.dictionaries(
    st.text(min_size=1, max_size=10),
    st.one_of(
        st.builds(lambda a: {"approved": True, "arguments": a, "reason": None},
                  st.none() | st.dictionaries(st.text(max_size=5), _JSON, max_size=3)),
        st.builds(lambda r: {"approved": False, "arguments": None, "reason": r}, st.none() | st.text(max_size=20)),
    ),
    max_size=4,
))
def test_decision_data_round_trips_through_decisions(data: dict[str, dict[str, object]]) -> None:
    back = decision_data(decisions_from_data(data))
    assert back == data
    assert json.loads(json.dumps(back)) == back  # plain data: what crosses a queue
