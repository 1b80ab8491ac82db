"""The scripted work of the peer harness (``../shared/bench``), shared by ``run.py`` and
``long_run_bench.py``: a model that streams each reply as freshly built seamkit ``Delta`` objects
(``n_tools`` calls of ``add(a=2, b=3)``, then ``"5"``), the counted ``async def`` tool, and one
checked run (the output is ``"5"``, the tool ran ``n_tools`` times, the model was called
``n_tools + 1`` times)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

from seamkit import Agent, collect_result, tool
from seamkit.values import ChatRequest, Delta, LLMResult, ToolCallDelta, Usage

PROMPT, ANSWER = "What is 2 + 3?", "5"
FREE = Usage(requests=1, cost=Decimal(0), cost_source="local")

TOOL_RUNS = 0


class Script:
    """The model's replies for one run: ``n_tools`` calls of ``add(a=2, b=3)``, then ``"5"``; every
    call is time-stamped (``perf_counter_ns``) so that a long run can be split into turns."""

    def __init__(self, n_tools: int) -> None:
        self.n_tools = n_tools
        self.calls = 0
        self.stamps: list[int] = []

    def next(self) -> tuple[str, str, Any]:
        self.stamps.append(time.perf_counter_ns())
        self.calls += 1
        if self.calls <= self.n_tools:
            return "tool", f"call_{self.calls}", {"a": 2, "b": 3}
        if self.calls == self.n_tools + 1:
            return "text", "", ANSWER
        raise AssertionError(f"model called {self.calls} times, script has {self.n_tools + 1} replies")


class ScriptedLLM:
    """An LLMPort (the same as ``peer_seamkit.py``'s): each call takes the current script's reply
    and streams it as freshly built Deltas."""

    provider = "bench"
    model = "bench"

    def __init__(self) -> None:
        self.script = Script(0)

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        kind, call_id, value = self.script.next()
        if kind == "tool":
            yield Delta(tool_call=ToolCallDelta(0, call_id, "add", json.dumps(value)))
            yield Delta(usage=FREE, finish_reason="tool_calls")
        else:
            yield Delta(text=value)
            yield Delta(usage=FREE, finish_reason="stop")

    async def chat(self, request: ChatRequest) -> LLMResult:
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)


@tool(side_effecting=False)
async def add(a: int, b: int) -> int:
    """Add two integers."""
    global TOOL_RUNS
    TOOL_RUNS += 1
    return a + b


class Runner:
    """One agent, reused for every run (a fresh run context per ``agent.run``, as in the harness)."""

    def __init__(self, max_steps: int, request_builder: Any = None) -> None:
        self.llm = ScriptedLLM()
        if request_builder is None:
            self.agent = Agent(self.llm, prompt="Use the add tool.", tools=[add], max_steps=max_steps)
        else:  # the builder holds the prompt
            self.agent = Agent(self.llm, tools=[add], max_steps=max_steps, request_builder=request_builder)

    async def one(self, n_tools: int) -> tuple[int, Script]:
        """One checked run: (elapsed ns, its script)."""
        self.llm.script = script = Script(n_tools)
        before = TOOL_RUNS
        t0 = time.perf_counter_ns()
        result = await self.agent.run(PROMPT)
        elapsed = time.perf_counter_ns() - t0
        if (result.stop_reason != "completed" or str(result.output).strip() != ANSWER
                or TOOL_RUNS - before != n_tools or script.calls != n_tools + 1):
            raise AssertionError(f"dishonest run: stop={result.stop_reason} output={result.output!r} "
                                 f"tool_runs={TOOL_RUNS - before} model_calls={script.calls}")
        return elapsed, script
