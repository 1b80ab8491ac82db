"""Test components for the ``seamkit eval`` tests, registered as a plugin (in process with the
``register_plugin`` fixture, or as a fake installed distribution for a subprocess):

- evaluators ``has_text`` (the answer contains ``text``), ``explode`` (always raises) and
  ``stub_judge`` (asks its ``model`` through ``EvalContext.chat``: passes when it says PASS);
- provider ``priced``: answers ``text`` at ``cost`` USD per call (reported usage), or fails with
  the ``error`` failure class;
- tool ``probe``: records how many of its calls run at once, holding each until ``hold_until``
  are in flight (or ``hold_s`` seconds passed); with ``mark``, creates that file when a call starts;
- middleware ``recorder``: records each chat call (run id, ancestors) it sees.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict
from seamkit._evals import Attempt, EvalContext, Score
from seamkit._hookspecs import hookimpl
from seamkit._slots import ComponentSlot, NestedSlot, build_nested
from seamkit._tools import tool
from seamkit.errors import FailureClass, ProviderError
from seamkit.testing import ScriptedModel, ScriptedTurn
from seamkit.values import ChatRequest, Message, Usage

__test__ = False

#: what the probe tool and the recorder middleware saw (reset by the tests' fixture)
STATE: dict[str, Any] = {}


def reset() -> None:
    STATE.clear()
    STATE.update(in_flight=0, max_in_flight=0, probe_calls=0, chat_calls=[])


reset()


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HasTextConfig(_Cfg):
    text: str
    name: str | None = None


class HasText:
    def __init__(self, cfg: HasTextConfig) -> None:
        self.name = cfg.name or "has_text"
        self.text = cfg.text

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        ok = self.text in attempt.text
        return Score(self.name, "pass" if ok else "fail", reason=f"{self.text!r} {'in' if ok else 'not in'} the answer")


class ExplodeConfig(_Cfg):
    name: str | None = None


class Explode:
    def __init__(self, cfg: ExplodeConfig) -> None:
        self.name = cfg.name or "explode"

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        raise RuntimeError("the evaluator blew up")


class StubJudgeConfig(_Cfg):
    model: Annotated[NestedSlot, ComponentSlot("provider")]
    name: str | None = None


class StubJudge:
    def __init__(self, cfg: StubJudgeConfig) -> None:
        self.name = cfg.name or "stub_judge"
        self.model = build_nested("provider", cfg.model, at="model")

    async def evaluate(self, attempt: Attempt, ctx: EvalContext) -> Score:
        result = await ctx.chat(self.model, ChatRequest(messages=(Message.user(f"judge: {attempt.text}"),)))
        ok = "PASS" in result.text
        return Score(self.name, "pass" if ok else "fail", reason=result.text, usage=result.usage)


class PricedConfig(_Cfg):
    text: str = "ok"
    cost: str = "0.01"
    error: str | None = None


def build_priced(cfg: PricedConfig) -> ScriptedModel:
    if cfg.error is not None:
        turn = ScriptedTurn(error=ProviderError("the provider is down", FailureClass(cfg.error), provider="priced"))
    else:
        turn = ScriptedTurn(text=cfg.text, usage=Usage(input_tokens=10, output_tokens=5, requests=1,
                                                       cost=Decimal(cfg.cost), cost_source="reported"))
    return ScriptedModel([turn], repeat=True, record=False)


class ProbeConfig(_Cfg):
    hold_until: int = 1
    hold_s: float = 5.0
    mark: str | None = None  # a file created when a call starts (for a test in another process)


def build_probe(cfg: ProbeConfig) -> Any:
    @tool(side_effecting=False)
    async def probe(api_key: str = "") -> str:
        """Record how many probe calls run at once.

        Args:
            api_key: a secret the call carries (reports must mask it)
        """
        STATE["probe_calls"] += 1
        if cfg.mark is not None:
            await asyncio.to_thread(Path(cfg.mark).touch)
        STATE["in_flight"] += 1
        STATE["max_in_flight"] = max(STATE["max_in_flight"], STATE["in_flight"])
        event = STATE.setdefault("release", asyncio.Event())
        if STATE["in_flight"] >= cfg.hold_until:
            event.set()
        try:
            await asyncio.wait_for(event.wait(), cfg.hold_s)
        except TimeoutError:
            pass
        finally:
            STATE["in_flight"] -= 1
        return "probed"

    return probe


def build_recorder() -> Any:
    async def recorder(call: Any, next: Any) -> Any:
        if call.kind == "chat":
            STATE["chat_calls"].append((call.ctx.run_id, call.ctx.ancestors))
        async for item in next(call):
            yield item

    return recorder


@hookimpl
def seamkit_register_evaluators(register: Any) -> None:
    register("has_text", HasText, config=HasTextConfig, description="the answer contains a text")
    register("explode", Explode, config=ExplodeConfig, description="always raises")
    register("stub_judge", StubJudge, config=StubJudgeConfig, description="asks a model; PASS passes")


@hookimpl
def seamkit_register_providers(register: Any) -> None:
    register("priced", build_priced, config=PricedConfig, description="a scripted answer at a price")


@hookimpl
def seamkit_register_tools(register: Any) -> None:
    register("probe", build_probe, config=ProbeConfig, description="records calls in flight")


@hookimpl
def seamkit_register_middlewares(register: Any) -> None:
    register("recorder", build_recorder, description="records chat calls")
