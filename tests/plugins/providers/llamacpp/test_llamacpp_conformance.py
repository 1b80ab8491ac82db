"""``llamacpp`` against the provider conformance suite, on a test double of ``llama_cpp.Llama``.

The provider runs as in production (prompt rendering, grammar plan, worker thread, queue, tool-call
parsing, usage); only the engine is replaced: :class:`FakeLlama` tokenizes bytes one-to-one,
records each ``create_completion`` (the prompt text and the sampling settings) with the suite's
recorder, and streams the scenario's scripted reply in llama-cpp-python's chunk shape. No model
loads, so the suite takes well under a second. Scenarios of features the provider does not declare
(parallel tool calls, reasoning, images, credential, HTTP errors) are skipped by the suite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import seamkit_llamacpp.provider as provider_module
from pytest_seamkit.conformance import ProviderConformance, Recorder, SentRequest
from seamkit._ports import LLMPort
from seamkit_llamacpp.config import LlamaCppConfig
from seamkit_llamacpp.provider import LlamaCppProvider

# scenario -> (text pieces, finish reason or None: the stream ends without its final chunk,
# or an exception raised after the pieces: llama.cpp failing mid-decode)
_REPLIES: dict[str, tuple[list[str], str | Exception | None]] = {
    "text": (["Hello", ", world"], "stop"),
    "tool_call": (['{"name": "get_weather", ', '"arguments": {"city": "Paris"}}'], "stop"),
    "structured_output": (['{"answer"', ": 42}"], "stop"),
    "error_midstream": (["Hel"], RuntimeError("llama_decode returned -1")),
    "truncated": (["Hel"], None),
    "length": (["Once upon", " a time"], "length"),
}


class _Vocab:
    def add_bos_token(self) -> bool:
        return False


class FakeLlama:
    """What :class:`~seamkit_llamacpp.provider.LlamaCppProvider` calls on a ``Llama``: one token
    per byte; ``create_completion`` records the request and streams ``reply``."""

    def __init__(self, reply: tuple[list[str], str | Exception | None], recorder: Recorder) -> None:
        self.reply = reply
        self.recorder = recorder
        self._model = _Vocab()
        self.input_ids = [0] * 4096

    def n_ctx(self) -> int:
        return 4096

    def token_bos(self) -> int:
        return -1

    def tokenize(self, text: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
        return list(text)

    def create_completion(self, tokens: list[int], *, stream: bool, stopping_criteria: Any, grammar: Any = None,
                          **settings: Any) -> Iterator[dict[str, Any]]:
        assert stream
        self.recorder.record(SentRequest({"prompt": bytes(tokens).decode("utf-8"), **settings,
                                          "grammar": getattr(grammar, "_grammar", None)}))
        pieces, end = self.reply

        def chunks() -> Iterator[dict[str, Any]]:
            ids = list(tokens)
            for piece in pieces:
                ids.append(1)
                stopping_criteria(ids, None)  # llama-cpp-python calls it once per sampled token
                yield {"choices": [{"text": piece, "finish_reason": None}]}
            if isinstance(end, Exception):
                raise end
            if end is not None:
                yield {"choices": [{"text": "", "finish_reason": end}]}

        return chunks()


class TestLlamaCppConformance(ProviderConformance):
    # the checks of the features it does not declare are left out at collection
    declared_features = frozenset({"structured_output", "system_prompt", "temperature", "tools"})
    # FakeLlama records llama-cpp-python's Llama.create_completion keyword arguments (max_tokens,
    # temperature); a tool_choice has no argument of its own: it changes the GBNF grammar decoding
    # is constrained by (grammar.py: text / tool / auto_text), recorded as "grammar"
    sent_fields: ClassVar[dict[str, str | None]] = {
        "max_tokens": "max_tokens",
        "temperature": "temperature",
        "tool_choice": "grammar",
        "seed": "seed",
        "stop": "stop",  # the request's sequences, then the chat template's own
        "extra": "",  # create_completion's keyword arguments: extra settings are passed as is
    }
    # one rendered prompt: a call is JSON text in it, a result a "Tool result" / "Tool error" line
    filter_finish = None  # a local engine has no safety system's finish
    tool_fields: ClassVar[dict[str, object]] = {"arguments": None, "result_role": None, "is_error": None}

    @pytest.fixture
    def make_provider(self, recorder: Recorder, tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch) -> Callable[[str], LLMPort]:
        gguf = tmp_path / "fake.gguf"
        gguf.write_bytes(b"GGUF" + bytes(60))
        # the grammar check asks llama.cpp itself; the double has no vocabulary to parse it with
        monkeypatch.setattr(provider_module, "_grammar_problem", lambda llm, gbnf, verbose: None)

        def make(scenario: str) -> LLMPort:
            fake = FakeLlama(_REPLIES.get(scenario, _REPLIES["text"]), recorder)
            provider = LlamaCppProvider(LlamaCppConfig(model_path=gguf))
            # _load is called from the provider's worker thread; each provider gets its own double
            monkeypatch.setattr(provider_module, "_load", lambda path, cfg: provider_module._Loaded(fake))
            return provider

        return make
