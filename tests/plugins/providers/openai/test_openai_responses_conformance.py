"""``openai`` (Responses API) against the provider conformance suite, replaying
``fixtures/responses`` through the suite's recording transport."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest
from pytest_seamkit.conformance import CONFORMANCE_SECRET, ProviderConformance, Recorder, WireReply
from seamkit._ports import LLMPort
from seamkit.plugin import PROVIDER_FEATURES
from seamkit_http import make_client
from seamkit_openai.config import OpenAIResponsesConfig
from seamkit_openai.responses import build

FIX = Path(__file__).parent / "fixtures" / "responses"
ERRORS = json.loads((FIX / "errors.json").read_text())


def _reply(scenario: str) -> WireReply:
    if scenario in ERRORS:
        spec = ERRORS[scenario]
        return WireReply.json(spec["status"], spec["body"], spec["headers"])
    # 53-byte reads: events, lines and multi-byte characters split across network reads
    name = {"length": "incomplete_max_tokens", "content_filter": "incomplete_content_filter"}.get(scenario, scenario)
    return WireReply.sse((FIX / f"{name}.sse").read_bytes(), chunk_size=53)


class TestOpenAIResponsesConformance(ProviderConformance):
    declared_features = PROVIDER_FEATURES - {"reasoning"}  # the checks of other features are left out
    # Responses API reference (POST /v1/responses): max_output_tokens, temperature, tool_choice
    sent_fields: ClassVar[dict[str, str | None]] = {
        "max_tokens": "max_output_tokens",
        "temperature": "temperature",
        "tool_choice": "tool_choice",
        "seed": None,  # not in the Responses API (the provider warns)
        "stop": None,  # not in the Responses API (the provider refuses)
    }
    # function_call.arguments is a JSON string; a result is a function_call_output item (call_id, output),
    # with no error field
    tool_fields: ClassVar[dict[str, object]] = {"arguments": "string", "result_role": ("type", "function_call_output"),
                                                "is_error": None}
    auth_header = "authorization"
    filter_finish = "content_filter"  # response.incomplete, incomplete_details.reason "content_filter"
    parallel_call_ids: ClassVar[dict[str, str]] = {"Paris": "call_4hB8wUq1ZrT6yN0pKs2LmX9d",
                                                   "Tokyo": "call_Ve5nJ3cQ7tR2oW8xA1sG6kHf"}
    reasoning_text = "Checking divisibility"  # the reasoning summary of fixtures/responses/reasoning.sse

    @pytest.fixture
    def make_provider(self, recorder: Recorder) -> Callable[[str], LLMPort]:
        def make(scenario: str) -> LLMPort:
            model = "o4-mini" if scenario == "reasoning" else "gpt-4.1"
            config = OpenAIResponsesConfig(model=model, api_key=CONFORMANCE_SECRET)
            return build(config, client=make_client(transport=recorder.transport(_reply(scenario))), environ={})

        return make
