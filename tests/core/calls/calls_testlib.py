"""Helpers of the ``seamkit.ask`` tests (imported by conftest and the tests): ``fakeprov``, a
provider component. Its config model has ``model``, ``api_key`` (``SecretStr``), ``base_url`` and
``reasoning_effort``; every instance it builds plays the turns of one shared script and records
each request and each config it was built with."""

from __future__ import annotations

import asyncio
import types
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, SecretStr
from seamkit._accumulate import collect_result
from seamkit._hookspecs import hookimpl
from seamkit._pricing import Price
from seamkit.values import ChatRequest, Delta, FinishReason, LLMResult, Usage, freeze

SECRET = "sk-test-SUPERSECRET-0123456789"


class FakeCapabilities(BaseModel):
    model_config = ConfigDict(extra="forbid")
    temperature: bool = True
    json_schema: bool = True


class FakeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = "fake-1"
    api_key: SecretStr | None = None
    base_url: str = "http://127.0.0.1:9/v1"
    reasoning_effort: str | None = None
    capabilities: FakeCapabilities | None = None


@dataclass
class Turn:
    """``text`` streamed in two pieces after ``delay`` seconds; ``warning`` first when set;
    ``error``: raised instead (a callable gets the config and returns the exception);
    ``error_after_text``: raised after the text, instead of the final delta; ``finish``: the
    finish reason."""

    text: str = ""
    delay: float = 0.0
    warning: str | None = None
    error: BaseException | Callable[[FakeConfig], BaseException] | None = None
    error_after_text: BaseException | None = None
    finish: FinishReason = "stop"


@dataclass
class FakeState:
    turns: list[Turn | str] = field(default_factory=list)
    requests: list[ChatRequest] = field(default_factory=list)
    configs: list[FakeConfig] = field(default_factory=list)
    closed: int = 0
    price: Price | None = field(default_factory=lambda: Price(Decimal("2.50"), Decimal("10.00")))

    def script(self, *turns: Turn | str) -> FakeState:
        self.turns = list(turns)
        return self


class FakeLLM:
    provider = "fakeprov"

    def __init__(self, cfg: FakeConfig, state: FakeState) -> None:
        self.cfg = cfg
        self.model = cfg.model
        self.state = state
        self.price = state.price

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        st = self.state
        st.requests.append(request)
        if not st.turns:
            raise AssertionError("the fake provider's script is exhausted")
        turn = st.turns.pop(0)
        if isinstance(turn, str):
            turn = Turn(turn)
        if turn.delay:
            await asyncio.sleep(turn.delay)
        if turn.error is not None:
            err = turn.error
            raise err if isinstance(err, BaseException) else err(self.cfg)
        if turn.warning:
            yield Delta(warning=turn.warning)
        half = len(turn.text) // 2
        for piece in (turn.text[:half], turn.text[half:]):
            if piece:
                yield Delta(text=piece)
        if turn.error_after_text is not None:
            raise turn.error_after_text
        yield Delta(
            usage=Usage(input_tokens=10, output_tokens=5, requests=1, cost=Decimal("0.000075"),
                        cost_source="estimated"),
            raw_usage=freeze({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}),
            finish_reason=turn.finish,
            model=f"{self.model}-2026-01-01",
        )

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)

    async def aclose(self) -> None:
        self.state.closed += 1


def make_plugin(state: FakeState) -> types.SimpleNamespace:
    def build(cfg: FakeConfig) -> FakeLLM:
        state.configs.append(cfg)
        return FakeLLM(cfg, state)

    @hookimpl
    def seamkit_register_providers(register: Any) -> None:
        register("fakeprov", build, config=FakeConfig, description="test provider")

    return types.SimpleNamespace(seamkit_register_providers=seamkit_register_providers)
