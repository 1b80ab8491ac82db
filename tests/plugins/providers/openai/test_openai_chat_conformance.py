"""``openai_chat`` against the provider conformance suite, replaying ``fixtures/chat``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pytest_seamkit.conformance import CONFORMANCE_SECRET, ProviderConformance
from seamkit.ports import LLMPort
from seamkit_http import ReplayTransport, Reply, make_client
from seamkit_openai.chat import build
from seamkit_openai.config import OpenAIChatConfig

FIX = Path(__file__).parent / "fixtures" / "chat"


def _reply(scenario: str) -> Reply:
    if (FIX / f"{scenario}.reply.json").exists():
        spec = json.loads((FIX / f"{scenario}.reply.json").read_text())
        return Reply(spec["status"], spec["headers"], body=json.dumps(spec["body"]).encode())
    data = (FIX / f"{scenario}.sse").read_bytes()
    return Reply(200, {"content-type": "text/event-stream"}, chunks=[data[i:i + 61] for i in range(0, len(data), 61)])


class TestOpenAIChatConformance(ProviderConformance):
    @pytest.fixture
    def make_provider(self) -> Callable[[str], LLMPort]:
        def make(scenario: str) -> LLMPort:
            model = "o4-mini" if scenario == "reasoning" else "gpt-4.1-mini"
            transport = ReplayTransport(_reply(scenario))
            config = OpenAIChatConfig(model=model, api_key=CONFORMANCE_SECRET)
            return build(config, client=make_client(transport=transport), environ={})

        return make
