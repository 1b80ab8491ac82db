"""``Delta.partial_output``: ignored by the Accumulator, turned into ``partial_output`` stream
events by the agent loop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from seamkit._accumulate import collect_result
from seamkit._agent.agent import Agent
from seamkit._middleware import Call, Next, middleware
from seamkit.testing import ScriptedModel
from seamkit.values import Delta, StreamEvent, Usage


def test_delta_partial_output_defaults_to_none() -> None:
    assert Delta().partial_output is None
    assert Delta(text="x").partial_output is None
    assert Delta(partial_output={"a": 1}).partial_output == {"a": 1}


async def test_accumulator_ignores_partial_output() -> None:
    plain = [Delta(text='{"a": '), Delta(text="1}"), Delta(usage=Usage(requests=1), finish_reason="stop")]
    noisy = [plain[0], Delta(partial_output={}), plain[1], Delta(partial_output={"a": 1}), plain[2]]
    assert await collect_result(iter(noisy)) == await collect_result(iter(plain))
    lone = await collect_result(iter([Delta(partial_output=[1, 2])]))
    assert lone.text == "" and lone.message.content == ()


@middleware(kinds=("chat",))
async def annotate(call: Call, nxt: Next) -> AsyncIterator[Any]:
    async for d in nxt(call):
        yield d
        if d.text:
            yield Delta(partial_output={"seen": d.text})


class Recorder:
    def __init__(self) -> None:
        self.events: list[StreamEvent] = []

    def on_event(self, event: StreamEvent) -> None:
        self.events.append(event)


async def test_loop_turns_partial_output_deltas_into_stream_events() -> None:
    rec = Recorder()
    agent = Agent(ScriptedModel(["ab"]), middlewares=[annotate], observers=[rec])
    events = [e async for e in agent.stream("go")]
    partial = [e for e in events if e.kind == "partial_output"]
    assert [e.partial_output for e in partial] == [{"seen": "ab"}]
    assert partial[0].step == 1 and partial[0].run_id == events[0].run_id
    assert [e.kind for e in rec.events] == [e.kind for e in events]
    result = events[-1].data["result"]
    assert result.output == "ab" and result.transcript[-1].text == "ab"
