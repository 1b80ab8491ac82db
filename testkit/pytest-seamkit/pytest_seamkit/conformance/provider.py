"""The conformance suite for model providers (:class:`~seamkit.ports.LLMPort`).

A provider plugin subclasses :class:`ProviderConformance` and provides a fixture ``make_provider``
returning ``make(scenario) -> LLMPort``: a fresh provider built with the credential
:data:`CONFORMANCE_SECRET` whose transport replays the plugin's own recorded wire exchange for
``scenario`` (see :data:`SCENARIOS`). The suite sends :meth:`ProviderConformance.request_for`
and checks the behaviour every provider owes its callers: the stream contract, tool calls,
parallel tool calls, structured output, reasoning, usage invariants, classified errors before and
in the middle of a stream, and credentials kept out of reprs and errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from seamkit.accumulate import collect_result
from seamkit.errors import FailureClass, ProviderError
from seamkit.ports import LLMPort
from seamkit.values import ChatRequest, Delta, FrozenDict, LLMResult, Message, ReasoningBlock, ToolSchema, freeze

__all__ = ["CONFORMANCE_SECRET", "SCENARIOS", "ProviderConformance"]

CONFORMANCE_SECRET = "sk-conformance-7f3a9c1e5b2d4086"
"""The credential ``make_provider`` must build providers with; it must never show up in a repr or
an error."""

SCENARIOS = (
    "text",
    "tool_call",
    "parallel_tool_calls",
    "structured_output",
    "reasoning",
    "error_auth",
    "error_quota",
    "error_rate_limited",
    "error_server",
    "error_midstream",
)
"""What each scenario's replayed exchange must contain:

- ``text``: some text, finish ``stop``, usage with input and output tokens.
- ``tool_call``: one call ``get_weather`` with ``{"city": "Paris"}``.
- ``parallel_tool_calls``: ``get_weather`` for Paris and for Tokyo, with distinct ids.
- ``structured_output``: the text is the JSON document ``{"answer": 42}``.
- ``reasoning``: reasoning text, or ``reasoning_tokens > 0`` in the usage.
- ``error_auth``: HTTP 401. ``error_quota``: the provider's out-of-credit answer.
  ``error_rate_limited``: HTTP 429 with a retry-after of 2 seconds. ``error_server``: HTTP 500.
- ``error_midstream``: at least one text delta, then the provider's in-stream error event.
"""

WEATHER = ToolSchema(
    "get_weather",
    "Current weather for a city.",
    freeze({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
            "additionalProperties": False}),
    False,
)
ANSWER_SCHEMA: FrozenDict = freeze({
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
})

_ERRORS: dict[str, tuple[FailureClass, int | None]] = {
    "error_auth": (FailureClass.AUTHENTICATION, 401),
    "error_quota": (FailureClass.QUOTA, None),
    "error_rate_limited": (FailureClass.RATE_LIMITED, 429),
    "error_server": (FailureClass.SERVER_ERROR, 500),
}

Make = Callable[[str], LLMPort]


async def _deltas(model: LLMPort, request: ChatRequest) -> list[Delta]:
    return [d async for d in model.stream(request)]


def _no_secret(*texts: str) -> None:
    for t in texts:
        assert CONFORMANCE_SECRET not in t, "the credential leaked"


class ProviderConformance:
    """Tests every model provider must pass. Subclass it and provide the fixture ``make_provider``
    (``make(scenario) -> LLMPort``, see the module docstring)."""

    pytestmark = pytest.mark.asyncio

    @staticmethod
    def request_for(scenario: str) -> ChatRequest:
        """The request the suite sends for ``scenario`` (a provider's fixtures may assert it)."""
        system = Message.system("You are a terse assistant.")
        if scenario == "tool_call":
            return ChatRequest((system, Message.user("What is the weather in Paris?")), tools=(WEATHER,),
                               tool_choice="required", max_tokens=256)
        if scenario == "parallel_tool_calls":
            return ChatRequest((system, Message.user("What is the weather in Paris and in Tokyo?")), tools=(WEATHER,),
                               max_tokens=256)
        if scenario == "structured_output":
            return ChatRequest((system, Message.user("What is six times seven?")), output_schema=ANSWER_SCHEMA,
                               max_tokens=256)
        if scenario == "reasoning":
            return ChatRequest((Message.user("Is 1001 prime? Think it through."),), max_tokens=4096)
        return ChatRequest((system, Message.user("Say hello.")), max_tokens=256)

    # --- the port and the stream contract ---------------------------------------------------

    async def test_is_an_llm_port(self, make_provider: Make) -> None:
        p = make_provider("text")
        assert isinstance(p, LLMPort)
        assert isinstance(p.provider, str) and p.provider
        assert isinstance(p.model, str) and p.model

    async def test_text_stream_ends_with_one_finish(self, make_provider: Make) -> None:
        deltas = await _deltas(make_provider("text"), self.request_for("text"))
        finishes = [d for d in deltas if d.finish_reason is not None]
        assert len(finishes) == 1 and deltas[-1] is finishes[0], "exactly one finish_reason, on the last delta"
        assert finishes[0].finish_reason == "stop"
        assert "".join(d.text or "" for d in deltas).strip(), "no text streamed"
        usage = [d.usage for d in deltas if d.usage is not None]
        assert usage, "no usage reported"
        u = usage[-1]
        assert u.input_tokens > 0 and u.output_tokens > 0 and u.requests == 1

    async def test_chat_equals_the_collected_stream(self, make_provider: Make) -> None:
        req = self.request_for("text")
        streamed = await collect_result(make_provider("text").stream(req))
        chatted = await make_provider("text").chat(req)
        assert isinstance(chatted, LLMResult)
        assert chatted.text == streamed.text
        assert chatted.finish_reason == streamed.finish_reason
        assert chatted.usage == streamed.usage

    async def test_usage_is_consistent(self, make_provider: Make) -> None:
        for scenario in ("text", "tool_call", "reasoning"):
            r = await make_provider(scenario).chat(self.request_for(scenario))
            u = r.usage
            assert u.input_tokens >= u.cache_read_tokens + u.cache_write_tokens, scenario
            assert u.output_tokens >= u.reasoning_tokens, scenario
            assert (u.cost is None) == (u.cost_source == "unpriced"), scenario
            if u.cost is not None:
                assert u.cost >= 0

    async def test_closing_the_stream_early_is_clean(self, make_provider: Make) -> None:
        stream = make_provider("text").stream(self.request_for("text"))
        first = await stream.__anext__()
        assert isinstance(first, Delta)
        await stream.aclose()  # type: ignore[attr-defined,unused-ignore]

    # --- tool calls, structured output, reasoning -------------------------------------------

    async def test_tool_call(self, make_provider: Make) -> None:
        r = await make_provider("tool_call").chat(self.request_for("tool_call"))
        assert r.finish_reason == "tool_calls"
        (call,) = r.tool_calls
        assert call.name == "get_weather" and dict(call.arguments) == {"city": "Paris"}
        assert call.id

    async def test_parallel_tool_calls_are_kept_apart(self, make_provider: Make) -> None:
        r = await make_provider("parallel_tool_calls").chat(self.request_for("parallel_tool_calls"))
        calls = r.tool_calls
        assert len(calls) == 2
        assert len({c.id for c in calls}) == 2, "parallel calls share an id"
        assert sorted(c.arguments["city"] for c in calls) == ["Paris", "Tokyo"]
        assert {c.name for c in calls} == {"get_weather"}

    async def test_structured_output(self, make_provider: Make) -> None:
        r = await make_provider("structured_output").chat(self.request_for("structured_output"))
        assert json.loads(r.text) == {"answer": 42}

    async def test_reasoning_is_reported(self, make_provider: Make) -> None:
        r = await make_provider("reasoning").chat(self.request_for("reasoning"))
        blocks = [b for b in r.message.content if isinstance(b, ReasoningBlock)]
        assert (blocks and (blocks[0].text or blocks[0].signature)) or r.usage.reasoning_tokens > 0
        if blocks:
            assert blocks[0].provider and blocks[0].model, "a reasoning block must say which model wrote it"

    # --- failures ---------------------------------------------------------------------------

    @pytest.mark.parametrize("scenario", sorted(_ERRORS))
    async def test_errors_are_classified(self, make_provider: Make, scenario: str) -> None:
        expected, status = _ERRORS[scenario]
        p = make_provider(scenario)
        with pytest.raises(ProviderError) as info:
            await _deltas(p, self.request_for("text"))
        err = info.value
        assert err.failure_class is expected, f"{scenario}: got {err.failure_class}"
        assert err.failure_class.transient == expected.transient
        if status is not None:
            assert err.status == status
        assert err.provider
        if scenario == "error_rate_limited":
            assert err.retry_after == 2.0
        _no_secret(str(err), repr(err), repr(err.args))

    async def test_an_error_mid_stream_is_raised_not_swallowed(self, make_provider: Make) -> None:
        seen: list[Delta] = []
        with pytest.raises(ProviderError) as info:
            async for d in make_provider("error_midstream").stream(self.request_for("text")):
                seen.append(d)
        assert any(d.text for d in seen), "the scenario must stream text before its error event"
        assert not any(d.finish_reason for d in seen), "a failed stream must not finish"
        assert info.value.failure_class is not FailureClass.UNKNOWN or info.value.code
        _no_secret(str(info.value))

    async def test_the_credential_never_shows(self, make_provider: Make) -> None:
        p = make_provider("text")
        _no_secret(repr(p), str(p))
        config: Any = getattr(p, "config", None)
        if config is not None:
            _no_secret(repr(config), str(config))
