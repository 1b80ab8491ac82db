"""``memoize`` composed from YAML with a nested store slot, and a hit that survives the process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import seamkit_memoize.plugin
from seamkit.composition import build_agent, load_composition
from seamkit.errors import ConfigError
from seamkit_memoize.middleware import Memoize

_SCRIPT = textwrap.dedent("""
    import asyncio, json, sys
    from seamkit._accumulate import collect_result
    from seamkit._middleware import Call, chain
    from seamkit.testing import make_test_ctx
    from seamkit_memoize.middleware import Memoize
    from seamkit_sqlite.store import SqliteStore
    from memo_fakes import CountingModel, request

    async def main():
        store = SqliteStore(sys.argv[1])
        model = CountingModel(delay=0)
        async def terminal(call):
            async for d in model.stream(call.request):
                yield d
        nxt = chain([Memoize(store, ttl=3600)], terminal)
        r = await collect_result(nxt(Call("chat", request(), make_test_ctx(), model=model)))
        await store.aclose()
        print(json.dumps({"calls": model.calls, "source": r.usage.cost_source, "text": r.text,
                          "tokens": r.usage.total_tokens}))

    asyncio.run(main())
""")


def test_a_hit_survives_a_new_process(tmp_path: Path) -> None:
    db = tmp_path / "memo.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    outs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", _SCRIPT, str(db)], capture_output=True, text=True, env=env,
                           timeout=120, check=False)
        assert p.returncode == 0, p.stderr
        outs.append(json.loads(p.stdout))
    assert outs[0] == {"calls": 1, "source": "reported", "text": "4", "tokens": 150}
    assert outs[1] == {"calls": 0, "source": "cache", "text": "4", "tokens": 150}


def _write(tmp_path: Path, middlewares: str) -> Path:
    p = tmp_path / "agent.yaml"
    p.write_text(textwrap.dedent(f"""\
        seamkit: 1
        agent:
          model: {{use: scripted, turns: [the answer is 4], repeat: true}}
          checkpoints: {{use: sqlite, path: {tmp_path / 'runs.db'}}}
          middlewares: {middlewares}
        """))
    return p


async def test_composed_with_a_store_slot_and_with_the_checkpoint_store(
        tmp_path: Path, register_plugin: Callable[..., Any]) -> None:
    register_plugin(seamkit_memoize.plugin, "seamkit_memoize", distribution="seamkit-memoize")
    cache = tmp_path / "cache.db"
    for mws in (f"[{{use: memoize, store: {{use: sqlite, path: {cache}}}, ttl: 3600}}]", "[memoize]"):
        agent = build_agent(load_composition(_write(tmp_path, mws)))
        (mw,) = agent.middlewares
        assert isinstance(mw, Memoize)
        first = await agent.run("What is 2 + 2?")
        second = await agent.run("What is 2 + 2?")
        assert first.output == second.output == "the answer is 4"
        assert agent.model.calls == 1  # type: ignore[attr-defined]
        assert mw.hits == 1 and second.usage.cost_source == "cache"
        await mw.aclose()
        assert agent.checkpointer is not None
        await agent.checkpointer.aclose()
    assert cache.exists()


def test_a_bad_nested_store_is_located_at_load_time(tmp_path: Path, register_plugin: Callable[..., Any]) -> None:
    register_plugin(seamkit_memoize.plugin, "seamkit_memoize", distribution="seamkit-memoize")
    with pytest.raises(ConfigError) as info:
        load_composition(_write(tmp_path, "[{use: memoize, store: {use: sqlite, pathh: x}, ttl: 0}]"))
    text = str(info.value)
    assert "middlewares[0].store" in text and "pathh" in text and "ttl" in text


def test_a_ttl_finer_than_the_store_resolution_is_refused(tmp_path: Path) -> None:
    from seamkit_memoize.config import MemoizeConfig
    from seamkit_memoize.middleware import build

    cfg = MemoizeConfig.model_validate({"store": {"use": "sqlite", "path": str(tmp_path / "c.db")}, "ttl": 1e-9})
    with pytest.raises(ConfigError, match="finer than the store's resolution"):
        build(cfg)


@pytest.mark.parametrize("ttl", [True, False, "1h"])
def test_a_ttl_that_is_not_a_number_is_refused(ttl: Any) -> None:
    from pydantic import ValidationError
    from seamkit_memoize.config import MemoizeConfig

    # YAML 'ttl: yes' / 'ttl: true' is a bool, which pydantic would quietly read as 1 second
    with pytest.raises(ValidationError, match="ttl"):
        MemoizeConfig.model_validate({"ttl": ttl})
    assert MemoizeConfig.model_validate({"ttl": 60}).ttl == 60.0
    assert MemoizeConfig.model_validate({"ttl": 0.5}).ttl == 0.5
    assert MemoizeConfig.model_validate({"ttl": "60"}).ttl == 60.0  # ttl: ${CACHE_TTL} is a string
