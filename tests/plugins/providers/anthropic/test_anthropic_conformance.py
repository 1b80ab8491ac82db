"""The provider conformance suite, run against the anthropic provider on replayed wire fixtures."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import pytest
from anthropic_wire_helpers import error_reply, expected_body, sse_reply
from pytest_seamkit.conformance import CONFORMANCE_SECRET, ProviderConformance, Recorder
from seamkit._accumulate import collect_result
from seamkit._ports import LLMPort
from seamkit.plugin import PROVIDER_FEATURES
from seamkit_anthropic.config import AnthropicConfig
from seamkit_anthropic.provider import AnthropicProvider
from seamkit_http import ReplayTransport, make_client

_CONFIG: dict[str, dict[str, object]] = {
    "reasoning": {"thinking": {"type": "enabled", "budget_tokens": 2048}},
}


def _make(scenario: str, recorder: Recorder | None = None) -> tuple[AnthropicProvider, ReplayTransport]:
    reply = error_reply(scenario) if scenario.startswith("error_") and scenario != "error_midstream" \
        else sse_reply(scenario)
    replay = ReplayTransport(reply)
    # the suite's recorder wraps the replay, so the suite sees what the provider sent
    transport = recorder.transport(inner=replay) if recorder is not None else replay
    config = AnthropicConfig(model="claude-sonnet-4-5", api_key=CONFORMANCE_SECRET, **_CONFIG.get(scenario, {}))
    return AnthropicProvider(config, client=make_client(transport=transport), env={}), replay


class TestAnthropicConformance(ProviderConformance):
    declared_features = PROVIDER_FEATURES  # the checks of other features are left out
    # Messages API reference (POST /v1/messages): max_tokens, temperature, tool_choice ({type: any | tool | none})
    sent_fields: ClassVar[dict[str, str | None]] = {
        "max_tokens": "max_tokens",
        "temperature": "temperature",
        "tool_choice": "tool_choice",
        "seed": None,  # no seed in the Messages API (the provider warns)
        "stop": "stop_sequences",
    }
    # tool_use.input is an object; tool_result blocks sit in a user message and say is_error
    tool_fields: ClassVar[dict[str, object]] = {"arguments": "object", "result_role": ("role", "user"),
                                                "is_error": "is_error"}
    auth_header = "x-api-key"
    filter_finish = "refusal"  # stop_reason "refusal" (Claude's safety classifiers stopped the answer)
    parallel_call_ids: ClassVar[dict[str, str]] = {"Paris": "toolu_01A09q90qw90lq917835lq9",
                                                   "Tokyo": "toolu_01B5kD8cxj3ZfWoYq2JkQy7P"}
    reasoning_text = "1001 = 7 \u00d7 143"  # the thinking of fixtures/reasoning.sse

    @pytest.fixture
    def make_provider(self, recorder: Recorder) -> Callable[[str], LLMPort]:
        def make(scenario: str) -> LLMPort:
            return _make(scenario, recorder)[0]

        return make

    @pytest.mark.parametrize(
        "scenario", ["text", "tool_call", "parallel_tool_calls", "structured_output", "reasoning"]
    )
    async def test_the_suite_requests_match_the_wire_fixtures(self, scenario: str) -> None:
        provider, transport = _make(scenario)
        request = self.request_for(scenario)
        if scenario == "tool_call":  # the fixture is the reference's forced call (the suite leaves it auto)
            request = request.replace(tool_choice="required")
        await collect_result(provider.stream(request))
        assert transport.json_bodies == [expected_body(scenario)]
        assert transport.requests[0].headers["x-api-key"] == CONFORMANCE_SECRET
        assert transport.closed == 1
