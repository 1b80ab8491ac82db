"""The messages of the agent loop's requests: an immutable snapshot per request, sharing the run's
request log instead of copying the transcript on every turn (issue 19: flat cost to thousands of
turns)."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from seamkit._agent.agent import Agent
from seamkit._guardrails import Guard, rewrite
from seamkit._tools import tool
from seamkit.testing import ScriptedModel
from seamkit.values import ChatRequest, Message, MessageLog, MessageSnapshot, ToolCall, ToolResult


@tool(side_effecting=False)
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _turns(n: int) -> list[Any]:
    return [{"tool_calls": [{"name": "add", "arguments": {"a": i, "b": 1}}]} for i in range(n)] + ["done"]


async def test_a_request_keeps_the_messages_it_was_sent_with_while_the_run_goes_on() -> None:
    model = ScriptedModel(_turns(6))
    result = await Agent(model, prompt="Use add.", tools=[add], max_steps=20).run("go")
    kept = [r.messages for r in model.requests]
    assert result.output == "done"
    # turn k's request holds the system prompt, the task and k - 1 tool turns, now as then
    assert [len(m) for m in kept] == [2 + 2 * k for k in range(7)]
    first = kept[0]
    assert first == (Message.system("Use add."), Message.user("go"))
    assert first[-1] == Message.user("go") and len(first[5:]) == 0
    with pytest.raises(IndexError):
        first[2]
    # every request equals what it was when it was sent; the transcript went on past all of them
    assert len(result.transcript) == len(kept[-1]) + 1
    assert tuple(result.transcript[: len(kept[-1])]) == kept[-1]


async def test_each_request_is_a_snapshot_seen_during_the_call() -> None:
    """What the provider saw during its call is what the request object holds after the run."""
    seen: list[tuple[Any, tuple[Message, ...]]] = []

    def record(request: ChatRequest) -> Any:
        seen.append((request.messages, tuple(request.messages)))
        return _turns(3)[len(seen) - 1]

    result = await Agent(ScriptedModel([record] * 4), tools=[add]).run("go")
    assert result.output == "done"
    assert len(seen) == 4
    for messages, at_call in seen:
        assert messages == at_call and tuple(messages) == at_call and hash(messages) == hash(at_call)


async def test_building_a_turn_s_request_does_not_copy_the_transcript() -> None:
    """Every request of a run shares one storage: a turn appends its new messages to the run's
    request log and hands out a snapshot of it (no copy of the transcript per turn)."""
    model = ScriptedModel(_turns(30))
    result = await Agent(model, tools=[add], max_steps=40).run("go")
    assert result.output == "done"
    snapshots = [r.messages for r in model.requests]
    assert all(type(m) is MessageSnapshot for m in snapshots)
    storages = {id(m._items) for m in snapshots}
    assert len(storages) == 1  # one log for the whole run
    log = snapshots[0]._items
    # the log holds each message once: exactly what the last request sent, nothing copied twice
    assert len(log) == len(snapshots[-1]) == 61
    assert all(a is b for a, b in zip(log, result.transcript, strict=False))


async def test_a_task_rewritten_in_place_starts_a_new_log_and_the_old_request_keeps_its_task() -> None:
    model = ScriptedModel(["first", "second"])
    g = Guard(_Rewriter(), parallel=True)
    result = await Agent(model, guardrails=[g]).run("dirty task")
    assert result.output == "second"
    first, second = (r.messages for r in model.requests)
    assert first == (Message.user("dirty task"),)
    assert second == (Message.user("clean task"),)


class _Rewriter:
    async def check_input(self, text: str, guard: Any) -> Any:
        return rewrite("clean task", "cleaned")


async def test_unanswered_calls_of_the_history_are_answered_in_every_shared_request() -> None:
    """A history with a tool call that has no result: each request carries the answered head, and
    the turns after it are appended as they are."""
    history = [Message.user("earlier"), Message("assistant", (ToolCall("old", "add", {"a": 1, "b": 1}),)),
               Message.user("and now?")]
    model = ScriptedModel(_turns(2))
    result = await Agent(model, tools=[add]).run("go", history=history)
    assert result.output == "done"
    for r in model.requests:
        results = [b for m in r.messages for b in m.content if isinstance(b, ToolResult)]
        assert results[0].call_id == "old" and results[0].is_error
        assert r.messages[2].role == "tool"
    assert [len(r.messages) for r in model.requests] == [5, 7, 9]
    assert len({id(r.messages._items) for r in model.requests}) == 1


# -- the snapshot as a value ---------------------------------------------------------------------


def _msgs(n: int) -> list[Message]:
    return [Message.user(str(i)) for i in range(n)]


def test_a_snapshot_behaves_as_a_tuple_of_its_messages() -> None:
    ms = _msgs(5)
    log = MessageLog(ms)
    s = log.snapshot()
    t = tuple(ms)
    assert len(s) == 5 and list(s) == ms and list(reversed(s)) == ms[::-1]
    assert s[0] is ms[0] and s[-1] is ms[-1] and s[-5] is ms[0]
    for i in (5, -6):
        with pytest.raises(IndexError):
            s[i]
    assert s[1:3] == t[1:3] and type(s[1:3]) is tuple and s[::-2] == t[::-2] and s[10:] == ()
    assert s == t and t == s and s != t[:4] and s != list(ms) and not (s != t)
    assert hash(s) == hash(t) and {s: 1}[t] == 1
    assert ms[2] in s and Message.user("x") not in s and s.index(ms[3]) == 3 and s.count(ms[1]) == 1
    # ``+`` itself is what is tested (middlewares and the request builder concatenate)
    assert s + () is s and () + s is s  # noqa: RUF005
    assert s + (ms[0],) == (*t, ms[0]) and (ms[0],) + s == (ms[0], *t) and s + s == t + t  # noqa: RUF005
    assert repr(s) == repr(t)
    assert pickle.loads(pickle.dumps(s)) == t and copy.deepcopy(s) == t and copy.copy(s) is s
    assert MessageSnapshot(ms) == s and MessageSnapshot() == ()


def test_a_snapshot_never_sees_messages_appended_after_it() -> None:
    log = MessageLog(_msgs(2))
    before = log.snapshot()
    assert log.snapshot() == before and len(log) == 2
    log.append(Message.user("later"))
    log.extend(_msgs(3))
    after = log.snapshot()
    assert len(before) == 2 and list(before) == _msgs(2) and before[-1] == Message.user("1")
    assert len(after) == 6 and after[2] == Message.user("later") and before != after
    assert after._items is before._items  # shared, not copied


def test_a_chat_request_takes_a_snapshot_as_it_is() -> None:
    s = MessageLog(_msgs(3)).snapshot()
    r = ChatRequest(s)
    assert r.messages is s
    assert r == ChatRequest(tuple(_msgs(3))) and hash(r) == hash(ChatRequest(tuple(_msgs(3))))
    assert type(ChatRequest(_msgs(3)).messages) is tuple  # any other sequence is still made a tuple


# -- per-run bookkeeping the loop does once, not per turn -----------------------------------------


async def test_a_caller_s_cancellation_token_keeps_nothing_of_a_finished_run() -> None:
    """The loop listens to the token from its first tool batch until the run returns (once per
    run, not per batch): a token shared by many runs is left as it was, also after a failure."""
    from seamkit._runtime.context import CancellationToken, RunContext

    token = CancellationToken()
    agent = Agent(ScriptedModel(_turns(3), repeat=True), tools=[add])
    for _ in range(3):
        assert (await agent.run("go", ctx=RunContext(cancellation=token))).output == "done"
        assert not token._callbacks

    class Broken:
        provider = model = "broken"
        calls = 0

        async def stream(self, request: ChatRequest) -> Any:
            self.calls += 1
            if self.calls > 1:
                raise RuntimeError("the provider broke")
            yield _tool_delta()

        async def chat(self, request: ChatRequest) -> Any:
            raise NotImplementedError

    with pytest.raises(Exception, match="the provider broke"):
        await Agent(Broken(), tools=[add]).run("go", ctx=RunContext(cancellation=token))
    assert not token._callbacks
    assert not token.cancelled


def _tool_delta() -> Any:
    from seamkit.values import Delta, ToolCallDelta

    return Delta(tool_call=ToolCallDelta(0, "c1", "add", '{"a": 1, "b": 2}'), finish_reason="tool_calls")


@pytest.mark.parametrize("rule", ["all", "no_tools", "user_only", "last_user"])
async def test_after_a_handoff_each_request_is_the_filtered_view_built_once_then_appended(rule: str) -> None:
    """The holder's view of the transcript before the handoff is built at its first request; its
    later requests append the turns since, and equal the view built from scratch on every turn."""
    from seamkit._agent.handoff import Handoff, handoff_view
    from seamkit._agent.loop import answer_unanswered_calls

    target_model = ScriptedModel(_turns(3))
    target = Agent(target_model, name="billing", prompt="You bill.", tools=[add])
    triage = Agent(ScriptedModel([{"text": "over to billing", "tool_calls": [{"name": "transfer_to_billing"}]}]),
                   name="triage", prompt="You route.", handoffs=[Handoff(target, filter=rule)])  # type: ignore[arg-type]
    result = await triage.run("bill me")
    assert result.output == "done" and result.answered_by == "billing"
    at = 4  # system, task, the transfer call, its result
    records = [{"from": "triage", "to": "billing", "at": at, "filter": rule}]

    def system_of(name: str) -> Message | None:
        return Message.system("You bill.") if name == "billing" else None

    for k, request in enumerate(target_model.requests):
        seen = list(result.transcript[: at + 2 * k])  # what had happened when that request was sent
        from_scratch = answer_unanswered_calls(handoff_view(seen, records, system_of))[0]
        assert request.messages == tuple(from_scratch)
    assert len({id(r.messages._items) for r in target_model.requests}) == 1
