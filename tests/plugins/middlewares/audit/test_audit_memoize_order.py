"""``audit`` with ``memoize``: listed first, a cached answer is recorded as a cache hit at cost 0;
listed after ``memoize`` (where hits never reach it), building the agent and ``seamkit validate``
warn."""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import seamkit_audit.plugin
import seamkit_memoize.plugin
from seamkit._middleware import Call, chain, collect, hidden_calls
from seamkit.composition import build_agent, load_composition
from seamkit.composition._build import middleware_order_issues
from seamkit.testing import make_test_ctx
from seamkit.testing._memory_store import MemoryStore
from seamkit.testing._models import ScriptedModel
from seamkit.values import ChatRequest, Message, Scope
from seamkit_audit.middleware import Audit, read_records
from seamkit_audit.show import format_record
from seamkit_memoize.middleware import Memoize


async def _ask(mws: list[Any], model: ScriptedModel) -> None:
    def terminal(call: Call) -> Any:
        return model.stream(call.request)  # type: ignore[arg-type]

    ctx = make_test_ctx(run_id="run_o", scope=Scope("acme"))
    await collect(chain(mws, terminal, kind="chat")(Call("chat", ChatRequest((Message.user("2+2?"),)), ctx,
                                                         model=model)))


async def test_audit_listed_first_records_a_hit_as_a_free_cache_hit() -> None:
    store = MemoryStore()
    model = ScriptedModel(["4"], repeat=True)
    mws: list[Any] = [Audit(store), Memoize(MemoryStore())]
    await _ask(mws, model)
    await _ask(mws, model)
    assert model.calls == 1
    first, hit = await read_records(store, "run_o", tenant="acme")
    assert (first["cache_hit"], first["cost_source"]) == (False, "local")
    assert (hit["cache_hit"], hit["cost_usd"], hit["cost_source"], hit["outcome"]) == (True, "0", "cache", "ok")
    assert "cache hit" in format_record(2, hit) and "cache hit" not in format_record(1, first)


def test_hidden_calls_finds_audit_inside_memoize() -> None:
    memo, audit = Memoize(MemoryStore()), Audit(MemoryStore())
    assert hidden_calls([memo, audit]) == [(0, 1)]
    assert hidden_calls([audit, memo]) == []
    assert hidden_calls([Memoize, Audit]) == [(0, 1)]  # the classes declare it too


def _write(tmp_path: Path, middlewares: str) -> Path:
    p = tmp_path / "agent.yaml"
    p.write_text("seamkit: 1\nagent:\n  model: {use: scripted, turns: [four], repeat: true}\n  checkpoints: null\n"
                 "  middlewares:\n" + textwrap.indent(middlewares, "    "))
    return p


MEMO = "- {use: memoize, store: {use: memory}}\n"
AUDIT = "- {use: audit, store: {use: memory}}\n"


@pytest.fixture
def registered(register_plugin: Callable[..., Any]) -> None:
    register_plugin(seamkit_memoize.plugin, "seamkit_memoize", distribution="seamkit-memoize")
    register_plugin(seamkit_audit.plugin, "seamkit_audit", distribution="seamkit-audit")


@pytest.mark.usefixtures("registered")
async def test_memoize_before_audit_warns_at_build_and_in_validate(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    bad = load_composition(_write(tmp_path, MEMO + AUDIT))
    (issue,) = middleware_order_issues(bad)
    assert issue.path == "agent.middlewares[1]" and issue.line == 7
    assert "'audit' is listed after 'memoize'" in issue.message
    with caplog.at_level(logging.WARNING, logger="seamkit.composition"):
        agent = build_agent(bad)
    assert "agent.middlewares[1]" in caplog.text and "never reach 'audit'" in caplog.text
    for mw in agent.middlewares:
        await mw.aclose()  # type: ignore[attr-defined]

    caplog.clear()
    good = load_composition(_write(tmp_path, AUDIT + MEMO))
    assert middleware_order_issues(good) == []
    with caplog.at_level(logging.WARNING, logger="seamkit.composition"):
        agent = build_agent(good)
    assert "never reach" not in caplog.text
    for mw in agent.middlewares:
        await mw.aclose()  # type: ignore[attr-defined]


def test_seamkit_validate_prints_the_order_warning(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAMKIT_")}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    for mws, warned in ((MEMO + AUDIT, True), (AUDIT + MEMO, False)):
        path = _write(tmp_path, mws)
        done = subprocess.run([sys.executable, "-m", "seamkit", "validate", str(path)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0 and done.stdout.startswith("ok: "), done.stderr
        assert ("agent.yaml:7:7: agent.middlewares[1]: middleware 'audit' is listed after 'memoize'"
                in done.stderr) is warned, done.stderr
