"""``openai_chat`` against the provider conformance suite, replaying ``fixtures/chat`` through the
suite's recording transport (so the suite also checks what the provider sends)."""

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
from seamkit_openai.chat import build
from seamkit_openai.config import OpenAIChatConfig

FIX = Path(__file__).parent / "fixtures" / "chat"
# the suite's scenario -> this fixture set's name for it
_NAMES = {"truncated": "dropped"}


def reply(scenario: str) -> WireReply:
    """The recorded answer of ``fixtures/chat`` for the suite's ``scenario``."""
    name = _NAMES.get(scenario, scenario)
    if (FIX / f"{name}.reply.json").exists():
        spec = json.loads((FIX / f"{name}.reply.json").read_text())
        return WireReply.json(spec["status"], spec["body"], spec["headers"])
    return WireReply.sse((FIX / f"{name}.sse").read_bytes(), chunk_size=61)


class TestOpenAIChatConformance(ProviderConformance):
    declared_features = PROVIDER_FEATURES - {"reasoning"}  # the checks of other features are left out
    # Chat Completions API reference (POST /v1/chat/completions): max_completion_tokens (max_tokens is
    # deprecated and refused by o-series models), temperature, tool_choice
    sent_fields: ClassVar[dict[str, str | None]] = {
        "max_tokens": "max_completion_tokens",
        "temperature": "temperature",
        "tool_choice": "tool_choice",
        "seed": "seed",
        "stop": "stop",
    }
    # function.arguments is a JSON string; a result is a {"role": "tool", "tool_call_id"} message with no
    # error field (the provider says "error" in its content)
    tool_fields: ClassVar[dict[str, object]] = {"arguments": "string", "result_role": ("role", "tool"),
                                                "is_error": None}
    auth_header = "authorization"  # Authorization: Bearer <key>
    filter_finish = "content_filter"  # finish_reason "content_filter"
    parallel_call_ids: ClassVar[dict[str, str]] = {"Paris": "call_P4ris0aaaaaa", "Tokyo": "call_T0ky0bbbbbbb"}

    @pytest.fixture
    def make_provider(self, recorder: Recorder) -> Callable[[str], LLMPort]:
        def make(scenario: str) -> LLMPort:
            model = "o4-mini" if scenario == "reasoning" else "gpt-4.1-mini"
            config = OpenAIChatConfig(model=model, api_key=CONFORMANCE_SECRET)
            return build(config, client=make_client(transport=recorder.transport(reply(scenario))), environ={})

        return make
