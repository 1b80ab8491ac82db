"""Helpers of the ``seamkit batch`` tests: a light side-effecting tool whose executions are counted
in a table (Redis hashes) with their process id and start / end times, a priced scripted model
(for the shared budget), and the compositions using them.

The ``tick`` tool is side-effecting and idempotent. Its outside system (Redis) applies each
idempotency key once (``SET NX``) and then counts the application in the table
``<prefix>:applied`` (run id -> how many effects landed for that run): a call repeated under a
*new* key, or a completed call run again, would count 2. Every execution (applied or not) is
counted in ``<prefix>:executions`` (run id -> n) and logged as a span ``{run, pid, start, end}``
(``end`` is null for an execution its process died in) in ``<prefix>:spans``. With
``CTT_SLOW_EVERY=k`` in the workers' environment, the runs whose id ends in an index ``i`` with
``i % k == k - 1`` spend a second inside the tool (a kill can be aimed at one)."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from celery_testlib import make_dist

PLUGIN = '''
from seamkit._hookspecs import hookimpl


@hookimpl
def seamkit_register_tools(register):
    register("tick", "batch_test_impl:make_tick", description="Count an execution in Redis")


@hookimpl
def seamkit_register_providers(register):
    register("batch_priced", "batch_test_impl:make_priced", config="batch_test_impl:PricedConfig",
             description="A scripted model with a price (budget tests)")
'''

IMPL = '''
import json
import os
import time
from decimal import Decimal

import redis
from pydantic import BaseModel
from seamkit import tool
from seamkit._pricing import Price
from seamkit._runtime.context import RunContext
from seamkit.testing._models import ScriptedModel, ScriptedTurn
from seamkit.values import Usage

_client = {}
_APPLY = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
end
"""


def _redis():
    pid = os.getpid()
    if pid not in _client:  # one connection per process (a forked pool process opens its own)
        _client.clear()
        _client[pid] = redis.Redis.from_url(os.environ["CTT_REDIS_URL"])
    return _client[pid]


@tool(side_effecting=True, idempotent=True)
def tick(ctx: RunContext) -> str:
    """Apply this run's effect once."""
    prefix = os.environ["CTT_PREFIX"]
    r = _redis()
    pid = os.getpid()
    span = {"run": ctx.run_id, "pid": pid, "start": time.time(), "end": None}
    # one transaction: a process killed between the two writes left a span without its count
    pipe = r.pipeline(transaction=True)
    pipe.rpush(f"{prefix}:spans", json.dumps(span))
    pipe.hincrby(f"{prefix}:executions", ctx.run_id, 1)
    at = int(pipe.execute()[0]) - 1
    every = int(os.environ.get("CTT_SLOW_EVERY", "0"))
    index = ctx.run_id.rsplit("-", 1)[-1]
    if every and index.isdigit() and int(index) % every == every - 1:  # a slow run, for a kill to land in
        time.sleep(1.0)
    # the outside system applies a key once, atomically (a kill between the two writes must not
    # leave the key taken and the effect uncounted)
    r.eval(_APPLY, 2, f"{prefix}:key:{ctx.idempotency_key}", f"{prefix}:applied", pid, ctx.run_id)
    span["end"] = time.time()
    r.lset(f"{prefix}:spans", at, json.dumps(span))
    return "ticked"


def make_tick():
    return tick


class PricedConfig(BaseModel):
    cost: str = "0.0002"


class PricedScripted(ScriptedModel):
    """Priced at $1 / $2 per million tokens; records what the budget reserves for each request
    (its token estimate and max_tokens, in ``<prefix>:requests``) so the test knows a reservation."""

    price = Price(Decimal("1.00"), Decimal("2.00"))

    async def stream(self, request):
        from seamkit._tokens import estimate_tokens

        _redis().sadd(f"{os.environ['CTT_PREFIX']}:requests", f"{estimate_tokens(request)}:{request.max_tokens or 0}")
        async for d in super().stream(request):
            yield d


def make_priced(cfg):
    usage = Usage(input_tokens=100, output_tokens=10, requests=1, cost=Decimal(cfg.cost), cost_source="reported")
    turns = [ScriptedTurn(tool_calls=({"name": "tick", "arguments": {}},), usage=usage),
             ScriptedTurn(text="ticked", usage=usage)]
    return PricedScripted(turns, follow_transcript=True, record=False)
'''


def batch_plugin(root: Path) -> Path:
    return make_dist(root / "batch-tools", "batch-test-tools", "batch_test_tools", source=PLUGIN,
                     extra={"batch_test_impl": IMPL})


def composition(*, redis_url: str, prefix: str, budget: str | None = None, ledger: str | None = None,
                prompt: str | None = None) -> str:
    """A scripted agent that calls ``tick`` once and answers ``ticked``, checkpointed in Redis under
    ``prefix``. ``budget``: a shared ceiling (USD text) on ledger ``ledger`` in the same Redis; the
    model is then priced: each call reports $0.0002, under what the budget reserves for it (about
    $0.00026), so the admission bound holds for what is charged too."""
    if budget is None:
        model = ("  model:\n    use: scripted\n    follow_transcript: true\n    turns:\n"
                 "      - tool_calls: [{name: tick}]\n      - text: ticked\n")
        mws = ""
    else:
        model = "  model: {use: batch_priced, cost: \"0.0002\"}\n"
        mws = (f"  middlewares:\n    - use: budget\n      max_cost_usd: \"{budget}\"\n      default_max_tokens: 100\n"
               f"      store: {{use: redis, url: \"{redis_url}\", prefix: \"{prefix}-budget\"}}\n"
               f"      ledger: {ledger}\n")
    return ("seamkit: 1\nagent:\n  name: ticker\n" + model + "  tools: [tick]\n"
            f"  checkpoints: {{use: redis, url: \"{redis_url}\", prefix: \"{prefix}\"}}\n" + mws
            + (f"  prompt: {json.dumps(prompt)}\n" if prompt is not None else ""))


def table(redis_url: str, prefix: str, name: str) -> dict[str, int]:
    import redis

    r = redis.Redis.from_url(redis_url)
    try:
        return {k.decode(): int(v) for k, v in r.hgetall(f"{prefix}:{name}").items()}
    finally:
        r.close()


def spans(redis_url: str, prefix: str) -> list[dict[str, Any]]:
    import redis

    r = redis.Redis.from_url(redis_url)
    try:
        return [json.loads(x) for x in r.lrange(f"{prefix}:spans", 0, -1)]
    finally:
        r.close()


def overlapping(all_spans: list[dict[str, Any]], killed_at: float) -> list[tuple[str, int, int]]:
    """The (run, pid, pid) pairs whose executions of one run overlap in time; an execution whose
    process died (``end`` null) lasts until the kill (``killed_at``, unix seconds)."""
    by_run: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    for s in all_spans:
        end = s["end"] if s["end"] is not None else killed_at
        by_run[s["run"]].append((s["start"], end, s["pid"]))
    out = []
    for run, xs in by_run.items():
        xs.sort()
        for (_, e1, p1), (s2, _, p2) in itertools.pairwise(xs):
            if s2 < e1:
                out.append((run, p1, p2))
    return out


__all__ = ["batch_plugin", "composition", "overlapping", "spans", "table"]
