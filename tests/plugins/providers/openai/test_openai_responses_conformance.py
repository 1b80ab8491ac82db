"""``openai`` (Responses API) against the provider conformance suite, replaying ``fixtures/responses``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pytest_seamkit.conformance import CONFORMANCE_SECRET, ProviderConformance
from seamkit.ports import LLMPort
from seamkit_http import ReplayTransport, Reply, make_client
from seamkit_openai.config import OpenAIResponsesConfig
from seamkit_openai.responses import build

FIX = Path(__file__).parent / "fixtures" / "responses"
ERRORS = json.loads((FIX / "errors.json").read_text())


def _reply(scenario: str) -> Reply:
    if scenario in ERRORS:
        spec = ERRORS[scenario]
        return Reply(spec["status"], spec["headers"], body=json.dumps(spec["body"]).encode())
    data = (FIX / f"{scenario}.sse").read_bytes()
    # 53-byte reads: events, lines and multi-byte characters split across network reads
    return Reply(200, {"content-type": "text/event-stream"}, chunks=[data[i:i + 53] for i in range(0, len(data), 53)])


class TestOpenAIResponsesConformance(ProviderConformance):
    @pytest.fixture
    def make_provider(self) -> Callable[[str], LLMPort]:
        def make(scenario: str) -> LLMPort:
            model = "o4-mini" if scenario == "reasoning" else "gpt-4.1"
            transport = ReplayTransport(_reply(scenario))
            config = OpenAIResponsesConfig(model=model, api_key=CONFORMANCE_SECRET)
            return build(config, client=make_client(transport=transport), environ={})

        return make
