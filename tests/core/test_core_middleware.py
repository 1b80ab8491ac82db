"""The middleware contract (``seamkit._middleware``), through ``chain()`` and through an Agent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from seamkit._agent.agent import Agent
from seamkit._middleware import Call, Next, chain, collect, collect_one, hidden_calls, middleware
from seamkit._tools import tool
from seamkit.errors import FailureClass, ProviderError, SeamkitError
from seamkit.testing import ScriptedModel, make_test_ctx
from seamkit.values import ChatRequest, Delta, Message, RunRequest, ToolCall, ToolRequest, ToolResult


def chat_call(text: str = "hi") -> Call:
    return Call("chat", ChatRequest((Message.user(text),)), make_test_ctx())


async def echo_terminal(call: Call) -> AsyncIterator[Delta]:
    req = call.request
    assert isinstance(req, ChatRequest)
    for word in req.messages[-1].text.split():
        yield Delta(text=word)
    yield Delta(finish_reason="stop")


# --- the four ways to act -------------------------------------------------------------------


async def before(call: Call, nxt: Next) -> AsyncIterator[Any]:
    req = call.request
    assert isinstance(req, ChatRequest)
    rewritten = req.replace(messages=(*req.messages[:-1], Message.user(req.messages[-1].text.upper())))
    async for item in nxt(call.replace(request=rewritten)):
        yield item


async def after(call: Call, nxt: Next) -> AsyncIterator[Any]:
    async for item in nxt(call):
        if item.text:
            item = Delta(text=f"<{item.text}>")
        yield item


def make_retry(attempts: list[int]) -> Any:
    async def retry(call: Call, nxt: Next) -> AsyncIterator[Any]:
        for attempt in range(3):
            attempts.append(attempt)
            try:
                items = [i async for i in nxt(call)]
            except ProviderError as exc:
                if not exc.failure_class.transient:
                    raise
                continue
            for i in items:
                yield i
            return
        raise ProviderError("gave up", FailureClass.OVERLOADED)

    return retry


def make_cache(store: dict[str, list[Any]]) -> Any:
    async def cache(call: Call, nxt: Next) -> AsyncIterator[Any]:
        req = call.request
        assert isinstance(req, ChatRequest)
        key = req.messages[-1].text
        if key in store:
            for item in store[key]:
                yield item
            return
        items = []
        async for item in nxt(call):
            items.append(item)
            yield item
        store[key] = items

    return cache


async def test_before_rewrites_the_request() -> None:
    items = await collect(chain([before], echo_terminal)(chat_call("a b")))
    assert [d.text for d in items if d.text] == ["A", "B"]


async def test_after_transforms_deltas() -> None:
    items = await collect(chain([after], echo_terminal)(chat_call("a b")))
    assert [d.text for d in items if d.text] == ["<a>", "<b>"]


async def test_around_retries_by_calling_next_again() -> None:
    calls = 0

    async def flaky(call: Call) -> AsyncIterator[Delta]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ProviderError("busy", FailureClass.OVERLOADED)
        yield Delta(text="ok")

    attempts: list[int] = []
    items = await collect(chain([make_retry(attempts)], flaky)(chat_call()))
    assert [d.text for d in items] == ["ok"]
    assert calls == 2 and attempts == [0, 1]


async def test_instead_a_cache_yields_without_calling_next() -> None:
    terminal_calls = 0

    async def counting(call: Call) -> AsyncIterator[Delta]:
        nonlocal terminal_calls
        terminal_calls += 1
        async for d in echo_terminal(call):
            yield d

    store: dict[str, list[Any]] = {}
    mw = chain([make_cache(store)], counting)
    first = await collect(mw(chat_call("x y")))
    second = await collect(mw(chat_call("x y")))
    assert first == second and terminal_calls == 1


async def test_chain_order_first_is_outermost() -> None:
    log: list[str] = []

    def tracer(label: str) -> Any:
        async def mw(call: Call, nxt: Next) -> AsyncIterator[Any]:
            log.append(f"{label}>")
            async for item in nxt(call):
                yield item
            log.append(f"<{label}")

        return mw

    async def terminal(call: Call) -> AsyncIterator[Delta]:
        log.append("terminal")
        yield Delta(text="t")

    await collect(chain([tracer("a"), tracer("b"), tracer("c")], terminal)(chat_call()))
    assert log == ["a>", "b>", "c>", "terminal", "<c", "<b", "<a"]


async def test_before_and_after_compose_in_order() -> None:
    # before is outer: upper-casing happens before the terminal, wrapping after it.
    items = await collect(chain([after, before], echo_terminal)(chat_call("q")))
    assert [d.text for d in items if d.text] == ["<Q>"]


# --- kinds filtering ------------------------------------------------------------------------


def test_chain_without_middlewares_is_the_terminal() -> None:
    assert chain([], echo_terminal) is echo_terminal


def test_kinds_filter_leaves_middlewares_out() -> None:
    chat_only = middleware(kinds=["chat"])(after)
    assert chain([chat_only], echo_terminal, kind="tool") is echo_terminal
    assert chain([chat_only], echo_terminal, kind="chat") is not echo_terminal
    with pytest.raises(ValueError, match="unknown call kinds"):
        middleware(kinds=["chat", "embed"])  # type: ignore[list-item]


def test_hidden_calls_pairs_a_cache_with_an_observer_inside_it() -> None:
    class Cache:
        answers_without_next = True
        kinds = frozenset({"chat"})

    class Observer:
        sees_every_call = True

    class ToolObserver(Observer):
        kinds = frozenset({"tool"})

    plain = after
    assert hidden_calls([Cache(), plain, Observer(), Observer]) == [(0, 2), (0, 3)]
    assert hidden_calls([Observer(), Cache(), plain]) == []  # the observer is outside: it sees every call
    assert hidden_calls([Cache(), ToolObserver()]) == []  # no call kind in common
    assert hidden_calls([]) == []


async def test_kinds_filter_in_an_agent() -> None:
    seen: list[str] = []

    @middleware(kinds=["tool"])
    async def tool_only(call: Call, nxt: Next) -> AsyncIterator[Any]:
        seen.append(call.kind)
        async for item in nxt(call):
            yield item

    async def both(call: Call, nxt: Next) -> AsyncIterator[Any]:
        seen.append("both:" + call.kind)
        async for item in nxt(call):
            yield item

    @tool(side_effecting=False)
    def ping() -> str:
        """Answer pong; checks that the service is alive."""
        return "pong"

    model = ScriptedModel([{"tool_calls": [{"name": "ping", "arguments": {}}]}, "done"])
    result = await Agent(model, tools=[ping], middlewares=[tool_only, both]).run("go")
    assert result.output == "done"
    assert seen == ["both:chat", "tool", "both:tool", "both:chat"]


# --- reducers -------------------------------------------------------------------------------


async def _items(*xs: Any) -> AsyncIterator[Any]:
    for x in xs:
        yield x


async def test_collect_and_collect_one() -> None:
    assert await collect(_items(1, 2, 3)) == [1, 2, 3]
    assert await collect_one(_items("only")) == "only"
    with pytest.raises(SeamkitError, match="got 0"):
        await collect_one(_items())
    with pytest.raises(SeamkitError, match="got 2"):
        await collect_one(_items(1, 2))


async def test_collect_one_of_a_type_names_what_the_chain_yielded_instead() -> None:
    assert await collect_one(_items("only"), of=str) == "only"
    with pytest.raises(SeamkitError, match=r"exactly one str, yielded int$"):
        await collect_one(_items(1), of=str)
    with pytest.raises(SeamkitError, match=r"exactly one str, yielded str, str$"):
        await collect_one(_items("a", "b"), of=str)
    with pytest.raises(SeamkitError, match=r"exactly one str, yielded nothing$"):
        await collect_one(_items(), of=str)


# --- through a real agent -------------------------------------------------------------------


async def test_middlewares_through_an_agent() -> None:
    model = ScriptedModel([ProviderError("busy", FailureClass.RATE_LIMITED), "a b"])
    attempts: list[int] = []
    agent = Agent(model, middlewares=[after, make_retry(attempts), before])
    result = await agent.run("hello there")
    # retry called next twice; before rewrote what the model received; after wrapped the text
    assert attempts == [0, 1] and model.calls == 2
    assert model.requests[-1].messages[-1].text == "HELLO THERE"
    assert result.output == "<a b>"


async def test_cache_instead_of_the_model_in_an_agent() -> None:
    store: dict[str, list[Any]] = {}
    model = ScriptedModel(["first answer"])  # a second model call would fail: the script is over
    agent = Agent(model, middlewares=[make_cache(store)])
    assert (await agent.run("q")).output == "first answer"
    assert (await agent.run("q")).output == "first answer"
    assert model.calls == 1


async def test_tool_middleware_can_answer_instead_of_the_tool() -> None:
    @middleware(kinds=["tool"])
    async def deny(call: Call, nxt: Next) -> AsyncIterator[Any]:
        req = call.request
        assert isinstance(req, ToolRequest)
        if req.schema is not None and req.schema.side_effecting:
            yield ToolResult(req.call.id, req.call.name, "denied", is_error=True)
            return
        async for item in nxt(call):
            yield item

    ran: list[str] = []

    @tool(side_effecting=True)
    def delete(path: str) -> str:
        """Delete the file at path; returns deleted."""
        ran.append(path)
        return "deleted"

    model = ScriptedModel([{"tool_calls": [{"name": "delete", "arguments": {"path": "/x"}}]}, "ok"])
    result = await Agent(model, tools=[delete], middlewares=[deny]).run("go")
    assert ran == []
    tool_msg = model.requests[1].messages[-1]
    assert tool_msg.tool_results[0].content == "denied" and tool_msg.tool_results[0].is_error
    assert result.output == "ok"
    assert isinstance(tool_msg.tool_results[0], ToolResult)
    assert isinstance(model.requests[1].messages[-2].content[0], ToolCall)


async def test_chat_calls_carry_the_model_they_end_at() -> None:
    from seamkit._middleware import middleware
    from seamkit._runtime.invoker import Invoker
    from seamkit._tools.registry import ToolRegistry
    from seamkit.testing import ScriptedModel, make_test_ctx
    from seamkit.values import ChatRequest, Message

    seen = []

    @middleware(kinds=("chat",))
    async def spy(call, nxt):  # type: ignore[no-untyped-def]
        seen.append(call.model)
        async for d in nxt(call):
            yield d

    model = ScriptedModel(["hi"])
    inv = Invoker(model, ToolRegistry(()), [spy])
    result = await inv.chat(ChatRequest((Message.user("q"),)), make_test_ctx())
    assert result.text == "hi" and seen == [model]


# --- middlewares wrapping whole runs (kind "run") -------------------------------------------


def run_recorder(log: list[Any]) -> Any:
    @middleware(kinds=["run", "chat", "tool"])
    async def record(call: Call, nxt: Next) -> AsyncIterator[Any]:
        req = call.request
        label = f"{call.kind}:{req.agent}" if isinstance(req, RunRequest) else call.kind
        log.append(("start", label, call.ctx.run_id, call.ctx.parent_run_id))
        try:
            async for item in nxt(call):
                if call.kind == "run":
                    log.append(("result", item))
                yield item
        except BaseException as exc:
            log.append(("error", label, type(exc).__name__))
            raise
        log.append(("end", label))

    return record


async def test_a_run_middleware_wraps_the_run_and_its_calls() -> None:
    log: list[Any] = []

    @tool(side_effecting=False)
    def ping() -> str:
        """Answer pong; checks that the service is alive."""
        return "pong"

    model = ScriptedModel([{"tool_calls": [{"name": "ping", "arguments": {}}]}, "done"])
    agent = Agent(model, name="pinger", tools=[ping], middlewares=[run_recorder(log)])
    result = await agent.run("go", ctx=make_test_ctx())
    labels = [(e[0], e[1]) for e in log if e[0] != "result"]
    assert labels == [("start", "run:pinger"), ("start", "chat"), ("end", "chat"), ("start", "tool"),
                      ("end", "tool"), ("start", "chat"), ("end", "chat"), ("end", "run:pinger")]
    assert {e[2] for e in log if e[0] == "start"} == {result.run_id}
    assert [e[1] for e in log if e[0] == "result"] == [result]


async def test_the_run_call_carries_the_request_and_the_agents_model() -> None:
    seen: list[Call] = []

    @middleware(kinds=["run"])
    async def look(call: Call, nxt: Next) -> AsyncIterator[Any]:
        seen.append(call)
        async for item in nxt(call):
            yield item

    model = ScriptedModel(["ok"])
    await Agent(model, name="a1", prompt="be brief", middlewares=[look]).run("the task")
    (call,) = seen
    assert call.kind == "run" and call.model is model and call.meta["agent"] == "a1"
    req = call.request
    assert isinstance(req, RunRequest) and req.agent == "a1" and not req.resumed
    assert [m.text for m in req.messages] == ["be brief", "the task"]


async def test_middlewares_without_the_run_kind_never_see_a_run() -> None:
    kinds: list[str] = []

    async def plain(call: Call, nxt: Next) -> AsyncIterator[Any]:
        kinds.append(call.kind)
        async for item in nxt(call):
            yield item

    await Agent(ScriptedModel(["ok"]), middlewares=[plain, middleware(kinds=["chat"])(plain)]).run("x")
    assert kinds == ["chat", "chat"]


async def test_a_failing_run_raises_through_the_run_middleware() -> None:
    log: list[Any] = []
    model = ScriptedModel([ProviderError("bad key", FailureClass.AUTHENTICATION)])
    with pytest.raises(ProviderError):
        await Agent(model, name="x", middlewares=[run_recorder(log)]).run("go")
    assert ("error", "run:x", "ProviderError") in log
    assert ("error", "chat", "ProviderError") in log


async def test_a_run_middleware_yielding_no_result_is_an_error() -> None:
    @middleware(kinds=["run"])
    async def swallow(call: Call, nxt: Next) -> AsyncIterator[Any]:
        async for _ in nxt(call):
            pass
        if False:  # pragma: no cover - an async generator that yields nothing
            yield None

    with pytest.raises(SeamkitError, match="exactly one AgentResult, yielded nothing"):
        await Agent(ScriptedModel(["ok"]), middlewares=[swallow]).run("x")


async def test_a_resumed_run_is_a_new_run_call_marked_resumed() -> None:
    from seamkit._durability.approvals import approve
    from seamkit.testing._memory_store import MemoryStore

    seen: list[RunRequest] = []

    @middleware(kinds=["run"])
    async def look(call: Call, nxt: Next) -> AsyncIterator[Any]:
        assert isinstance(call.request, RunRequest)
        seen.append(call.request)
        async for item in nxt(call):
            yield item

    @tool(side_effecting=True)
    def pay(amount: int) -> str:
        """Pay an amount in cents."""
        return f"paid {amount}"

    store = MemoryStore()
    turns: list[Any] = [{"tool_calls": [{"id": "c1", "name": "pay", "arguments": {"amount": 5}}]}, "done"]
    agent = Agent(ScriptedModel(turns), tools=[pay], checkpointer=store, approvals={"pay": "every_call"},
                  middlewares=[look])
    first = await agent.run("pay 5")
    assert first.stop_reason == "suspended"
    again = Agent(ScriptedModel(turns[1:]), tools=[pay], checkpointer=store, approvals={"pay": "every_call"},
                  middlewares=[look])
    final = await again.resume(first.run_id, decisions={"c1": approve()})
    assert final.output == "done"
    assert [r.resumed for r in seen] == [False, True]
    assert len(seen[1].messages) > len(seen[0].messages)  # the transcript so far


async def test_a_child_run_is_a_run_call_inside_its_parents_tool_call() -> None:
    from seamkit._agent.as_tool import agent_tool

    log: list[Any] = []
    child = Agent(ScriptedModel(["found it"]), name="researcher", middlewares=[run_recorder(log)])
    lead_model = ScriptedModel([{"tool_calls": [{"name": "researcher", "arguments": {"task": "look"}}]}, "ok"])
    lead = Agent(lead_model, name="lead", tools=[agent_tool(child)], middlewares=[run_recorder(log)])
    result = await lead.run("go")
    labels = [e[1] for e in log if e[0] in ("start", "end")]
    assert labels == ["run:lead", "chat", "chat", "tool", "run:researcher", "chat", "chat", "run:researcher",
                      "tool", "chat", "chat", "run:lead"]
    child_start = next(e for e in log if e[:2] == ("start", "run:researcher"))
    assert child_start[3] == result.run_id and child_start[2] != result.run_id
