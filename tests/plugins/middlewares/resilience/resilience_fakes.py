"""Fakes for the resilience middleware tests: a scripted LLMPort that fails on cue, a provider
component (``flaky``) building it from YAML, and helpers to run one chat call through a chain."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from seamkit._accumulate import collect_result
from seamkit._hookspecs import hookimpl
from seamkit._middleware import Call, Middleware, chain
from seamkit._runtime.context import RunContext
from seamkit.errors import FailureClass, ProviderError
from seamkit.values import ChatRequest, Delta, LLMResult, Message, TextBlock, Usage

REQUEST = ChatRequest((Message("user", (TextBlock("hi"),)),))

# A step of a script: "ok" (answer with text), a ProviderError (raised before any delta),
# ("token_then", ProviderError) (one text delta, then the error), or "hang" (wait forever).
Step = Any


def perr(cls: FailureClass | str, *, retry_after: float | None = None, code: str | None = None,
         status: int | None = None, provider: str = "fake") -> ProviderError:
    fc = FailureClass(cls)
    return ProviderError(f"simulated {fc.value}", fc, provider=provider, status=status,
                         retry_after=retry_after, code=code)


class FakeModel:
    """An LLMPort playing ``script`` one step per call (the last step repeats). Each call first
    yields a non-token ``Delta(warning=...)``; an answer is ``text`` then a finishing delta with
    ``usage`` (input 10 / output ``output_tokens``)."""

    def __init__(self, script: Sequence[Step], *, model: str = "m1", provider: str = "fake",
                 text: str | None = None, output_tokens: int = 5) -> None:
        self.provider = provider
        self.model = model
        self.script = list(script)
        self.text = text if text is not None else f"answer from {provider}:{model}"
        self.output_tokens = output_tokens
        self.calls = 0
        self.closed = 0
        self.release = asyncio.Event()
        self.hanging = asyncio.Event()

    def _step(self) -> Step:
        i = min(self.calls, len(self.script) - 1)
        self.calls += 1
        return self.script[i]

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        step = self._step()
        try:
            yield Delta(warning=f"note from {self.provider}:{self.model} call {self.calls}")
            if isinstance(step, BaseException):
                raise step
            if isinstance(step, tuple) and step[0] == "token_then":
                yield Delta(text="partial ")
                raise step[1]
            if step == "hang":
                self.hanging.set()
                await self.release.wait()
            yield Delta(text=self.text)
            yield Delta(finish_reason="stop", model=self.model,
                        usage=Usage(input_tokens=10, output_tokens=self.output_tokens, requests=1))
        finally:
            self.closed += 1

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)


def run_chain(middlewares: Sequence[Middleware], model: Any, ctx: RunContext,
              request: ChatRequest = REQUEST) -> AsyncIterator[Delta]:
    """The deltas of one chat call to ``model`` through ``middlewares`` (outermost first)."""

    def terminal(call: Call) -> AsyncIterator[Delta]:
        return call.model.stream(call.request)  # type: ignore[no-any-return]

    return chain(list(middlewares), terminal, kind="chat")(Call("chat", request, ctx, model=model))


async def collect_deltas(stream: AsyncIterator[Delta], into: list[Delta] | None = None) -> list[Delta]:
    out = into if into is not None else []
    async for d in stream:
        out.append(d)
    return out


async def run_result(middlewares: Sequence[Middleware], model: Any, ctx: RunContext) -> LLMResult:
    return await collect_result(run_chain(middlewares, model, ctx), provider=model.provider, model=model.model)


# -- a provider component for YAML and fallback tests -------------------------------------------

#: Every FakeModel built by the ``flaky`` component, in build order.
BUILT: list[FakeModel] = []

_STEPS: dict[str, Callable[[], Step]] = {
    "ok": lambda: "ok",
    "hang": lambda: "hang",
    "rate_limited": lambda: perr("rate_limited", status=429, code="rate_limit_exceeded"),
    "rate_limited_ra2": lambda: perr("rate_limited", status=429, code="rate_limit_exceeded", retry_after=2.0),
    "overloaded": lambda: perr("overloaded", status=529, code="overloaded_error"),
    "server_error": lambda: perr("server_error", status=500),
    "quota": lambda: perr("quota", status=429, code="insufficient_quota"),
    "token_then_server_error": lambda: ("token_then", perr("server_error")),
}


class FlakyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(..., description="model name")
    script: list[str] = Field(default_factory=lambda: ["ok"], description=f"steps: {sorted(_STEPS)}")
    output_tokens: int = Field(5, ge=0)


def build_flaky(config: FlakyConfig) -> FakeModel:
    unknown = [s for s in config.script if s not in _STEPS]
    if unknown:
        raise ValueError(f"unknown steps {unknown}")
    m = FakeModel([_STEPS[s]() for s in config.script], model=config.model, provider="flaky",
                  output_tokens=config.output_tokens)
    BUILT.append(m)
    return m


class FlakyPlugin:
    @hookimpl
    def seamkit_register_providers(self, register: Any) -> None:
        register("flaky", build_flaky, config=FlakyConfig, description="test: fails on cue")
