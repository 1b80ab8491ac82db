"""The resilience middlewares composed from YAML: they build, run, and bad parameters are located."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from resilience_fakes import FakeModel
from seamkit.composition import build_agent, composition_json_schema, load_composition
from seamkit.errors import ConfigError
from seamkit.testing import FakeClock, make_test_ctx
from seamkit_resilience.breaker import CircuitBreaker
from seamkit_resilience.fallback import Fallback
from seamkit_resilience.retry import Retry


def write(tmp_path: Path, middlewares: str, model: str = "{use: flaky, model: main}") -> Path:
    p = tmp_path / "agent.yaml"
    p.write_text(textwrap.dedent(f"""\
        seamkit: 1
        agent:
          model: {model}
          prompt: You are terse.
          checkpoints: null
          middlewares: {middlewares}
        """))
    return p


async def test_retry_composes_builds_and_retries(tmp_path: Path, flaky: list[FakeModel]) -> None:
    path = write(tmp_path, "[{use: retry, max_attempts: 4}]",
                 "{use: flaky, model: main, script: [rate_limited_ra2, ok]}")
    agent = build_agent(load_composition(path))
    (mw,) = agent.middlewares
    assert isinstance(mw, Retry) and mw.config.max_attempts == 4
    clock = FakeClock()
    result = await agent.run("hello", ctx=make_test_ctx(clock=clock))
    assert result.output == "answer from flaky:main"
    assert clock.sleeps == [2.0]
    assert flaky[0].calls == 2


async def test_all_three_compose(tmp_path: Path, flaky: list[FakeModel]) -> None:
    path = write(tmp_path, """
            - {use: fallback, to: [{use: flaky, model: backup}], on: [overloaded, server_error]}
            - {use: retry, max_attempts: 2, base_delay_s: 0.25, seed: 1}
            - {use: circuit_breaker, failure_threshold: 3, reset_after_s: 10}
        """, "{use: flaky, model: main, script: [overloaded]}")
    agent = build_agent(load_composition(path))
    fb, rt, cb = agent.middlewares
    assert isinstance(fb, Fallback) and isinstance(rt, Retry) and isinstance(cb, CircuitBreaker)
    clock = FakeClock()
    result = await agent.run("hello", ctx=make_test_ctx(clock=clock))
    assert result.output == "answer from flaky:backup"
    assert "fallback: flaky:main failed (overloaded); answered by flaky:backup" in result.warnings
    main, backup = flaky
    assert (main.calls, backup.calls) == (2, 1) and len(clock.sleeps) == 1 and 0 <= clock.sleeps[0] <= 0.25
    assert cb.failures("flaky:main") == 2


@pytest.mark.parametrize("middlewares,path,fragment", [
    ("[{use: retry, max_attempts: 0}]", "agent.middlewares[0].max_attempts", "greater than or equal to 1"),
    ("[{use: retry, retry_on: [quota]}]", "agent.middlewares[0].retry_on", "quota is permanent"),
    ("[{use: retry, jitter: full}]", "agent.middlewares[0].jitter", "unknown key 'jitter'"),
    ("[{use: circuit_breaker, reset_after_s: -1}]", "agent.middlewares[0].reset_after_s", "greater than 0"),
    ("[{use: circuit_breaker, on: [sometimes]}]", "agent.middlewares[0].on[0]", "rate_limited"),
    ("[{use: fallback}]", "agent.middlewares[0]", "to"),
    ("[{use: fallback, to: []}]", "agent.middlewares[0].to", "at least 1"),
])
def test_bad_parameters_are_located_at_load(tmp_path: Path, flaky: list[FakeModel], middlewares: str,
                                            path: str, fragment: str) -> None:
    file = write(tmp_path, middlewares)
    with pytest.raises(ConfigError) as info:
        load_composition(file)
    (issue,) = info.value.issues
    assert issue.file == str(file) and issue.line == 6
    assert issue.path.startswith(path), issue
    assert fragment in issue.message, issue


@pytest.mark.parametrize("slot,path,column,fragment", [
    ("{use: flakey, model: x}", "agent.middlewares[0].to[0].use", 44,
     "unknown provider 'flakey'; did you mean 'flaky'?"),
    ("{use: flaky}", "agent.middlewares[0].to[0].model", 38, "missing required key 'model' for provider 'flaky'"),
    ("{use: flaky, model: x, scirpt: [ok]}", "agent.middlewares[0].to[0].scirpt", 61,
     "unknown key 'scirpt' for provider 'flaky'; did you mean 'script'?"),
    ("fallback", "agent.middlewares[0].to[0]", 38, "unknown provider 'fallback'; 'fallback' is a middleware, "
     "not a provider"),
])
def test_bad_fallback_slots_are_located_at_load(tmp_path: Path, flaky: list[FakeModel], slot: str, path: str,
                                                column: int, fragment: str) -> None:
    # `seamkit validate` (load_composition) must refuse what `seamkit run` (build_agent) refuses
    file = write(tmp_path, f"[{{use: fallback, to: [{slot}]}}]")
    with pytest.raises(ConfigError) as info:
        load_composition(file)
    (issue,) = info.value.issues
    assert (issue.file, issue.line, issue.path) == (str(file), 6, path), issue
    assert issue.column == column, issue
    assert fragment in issue.message, issue
    assert flaky == []  # nothing was built


def test_every_bad_fallback_slot_is_reported_once(tmp_path: Path, flaky: list[FakeModel]) -> None:
    file = write(tmp_path, "[{use: fallback, to: [{use: flaky, model: b}, nope, {use: flaky, modle: c}]}]")
    with pytest.raises(ConfigError) as info:
        load_composition(file)
    assert sorted(i.path for i in info.value.issues) == [
        "agent.middlewares[0].to[1]", "agent.middlewares[0].to[2].model", "agent.middlewares[0].to[2].modle"]


def test_good_fallback_slots_load_and_build(tmp_path: Path, flaky: list[FakeModel]) -> None:
    comp = load_composition(write(tmp_path, "[{use: fallback, to: [{use: flaky, model: b}]}]"))
    (fb,) = build_agent(comp).middlewares
    assert isinstance(fb, Fallback)


def test_the_composition_schema_describes_them() -> None:
    schema = composition_json_schema()
    text = str(schema)
    for name in ("retry", "circuit_breaker", "fallback"):
        assert repr(name) in text
    assert "max_retry_after_s" in text and "failure_threshold" in text
