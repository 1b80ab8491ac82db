"""The ``output_coerce`` component: registration, config, YAML composition, and partial_output
events in ``agent.stream()``."""

from __future__ import annotations

import json
import textwrap
from itertools import pairwise
from typing import Any

import pytest
from coerce_fakes import GOOD, SCHEMA, grows, turn
from pydantic import ValidationError
from seamkit._agent.agent import Agent
from seamkit._plugins.registry import get_registry
from seamkit.composition import build_agent, loads_composition
from seamkit.errors import ConfigError
from seamkit.testing import ScriptedModel
from seamkit_output_coerce import OutputCoerceConfig, OutputCoerceMiddleware


def yaml_with(middleware: str, answers: list[str]) -> str:
    return textwrap.dedent(f"""\
        seamkit: 1
        agent:
          name: typed
          model: {{use: scripted, turns: {json.dumps(answers)}}}
          prompt: Answer in JSON.
          checkpoints: null
          output: {{json_schema: {json.dumps(SCHEMA)}}}
          middlewares:
            - {middleware}
        """)


def test_registered_lazily_by_its_distribution() -> None:
    spec = get_registry().resolve("middleware", "output_coerce")
    assert spec.distribution == "seamkit-output-coerce"
    assert spec.factory == "seamkit_output_coerce.middleware:build"
    assert spec.config_model() is OutputCoerceConfig


def test_config_defaults_and_bounds() -> None:
    cfg = OutputCoerceConfig()
    assert (cfg.max_repairs, cfg.partial_min_growth) == (1, 0.1)
    for bad in ({"max_repairs": 4}, {"max_repairs": -1}, {"partial_min_growth": 1.5}, {"repairs": 1}):
        with pytest.raises(ValidationError):
            OutputCoerceConfig(**bad)
    with pytest.raises(ValueError, match="max_repairs"):
        OutputCoerceMiddleware(max_repairs=9)
    assert OutputCoerceMiddleware.kinds == frozenset({"chat"})


async def test_yaml_composition_builds_a_repairing_middleware() -> None:
    bad = json.dumps({"name": "Ada"})
    comp = loads_composition(yaml_with("{use: output_coerce, max_repairs: 2}", [bad, bad, json.dumps(GOOD)]))
    agent = build_agent(comp)
    (mw,) = agent.middlewares
    assert isinstance(mw, OutputCoerceMiddleware) and mw.max_repairs == 2
    result = await agent.run("who?")
    assert result.output == GOOD and result.steps == 1 and result.usage.requests == 3
    assert any("corrective call 2 of 2 repaired it" in w for w in result.warnings)


def test_yaml_bad_parameters_are_reported_at_load() -> None:
    with pytest.raises(ConfigError) as info:
        loads_composition(yaml_with("{use: output_coerce, max_repairs: 7}", ["{}"]))
    assert "max_repairs" in str(info.value)


async def test_agent_stream_shows_partial_output_events() -> None:
    model = ScriptedModel([turn(GOOD, chunk=4)])
    agent = Agent(model, output=SCHEMA, middlewares=[OutputCoerceMiddleware(partial_min_growth=0)])
    events: list[Any] = [e async for e in agent.stream("who?")]
    kinds = [e.kind for e in events]
    got = [e.partial_output for e in events if e.kind == "partial_output"]
    assert len(got) >= 3 and got[-1] == GOOD and all(e.step == 1 for e in events if e.kind == "partial_output")
    assert all(grows(a, b) and a != b for a, b in pairwise(got))
    # partials come before the model result and the final output
    assert kinds.index("model_result") > max(i for i, k in enumerate(kinds) if k == "partial_output")
    (output,) = [e.output for e in events if e.kind == "output"]
    assert output == GOOD


async def test_agent_without_output_schema_gets_no_partials() -> None:
    agent = Agent(ScriptedModel([turn("plain words")]), middlewares=[OutputCoerceMiddleware()])
    events = [e async for e in agent.stream("hi")]
    assert not [e for e in events if e.kind == "partial_output"]
    assert events[-1].data["result"].output == "plain words"
