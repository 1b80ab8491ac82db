"""Cost of the guardrails on the tool-call path: the egress URL check per call, and the egress
middleware on W1.

Run: ``bash benchmarks/run.sh guardrails``. Options: ``--calls 200`` (calls per timed batch),
``--batches 200`` (batches; the median batch is reported), ``--only check_url`` (one measurement;
default: all), ``--json`` (one JSON line per row).

Measurements (one function each, listed in ``MEASUREMENTS``):

- ``check_url``: ``seamkit_guardrails_web.urls.check_url(url)`` under the default policy and
  under an ``egress_allow`` policy, in microseconds per call (median over ``--batches`` batches
  of ``--calls`` calls; also the best batch: the uncontended cost on a shared machine), for a
  handful of representative URLs: plain public names, a long query, an IDN host, IPv4 and IPv6
  literals, and refused ones (a decimal-spelled loopback, a metadata
  name, userinfo). Next to it: ``httpx.URL(url)`` alone (the parse ``check_url`` is built on, so
  its floor) and ``check_url`` given an already parsed ``httpx.URL`` (the checks alone).
  Target (issue 11): a few microseconds per call on a plain public URL beyond the parse.
- ``egress_middleware``: W1 of ``benchmarks/run.py`` (an agent run with a scripted model and one
  tool call), median microseconds per run, interleaved run by run: without middleware, with a
  pass-through tool middleware (the cost of any tool chain), and with the ``egress`` middleware;
  for W1's ``add`` (no URL argument: the cost of looking) and for ``page_title(url)`` called with
  ``https://example.com/`` (``check_url``, one resolution through a stub resolver answering at
  once, ``check_address``). ``--calls * --batches / 20`` runs each, at least 500.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Annotated, Any

import httpx
from pydantic import Field
from seamkit import tool
from seamkit._middleware import Call, Next, middleware
from seamkit_guardrails_web.config import EgressConfig
from seamkit_guardrails_web.errors import EgressRefused
from seamkit_guardrails_web.urls import EgressPolicy, check_url, policy_from

URLS: list[tuple[str, str]] = [
    ("public name", "https://example.com/"),
    ("public name, path", "https://en.wikipedia.org/wiki/Server-side_request_forgery"),
    ("long query", "https://api.github.com/repos/encode/httpx/issues?state=open&per_page=50&page=3&sort=updated"),
    ("IDN host", "https://bücher.de/katalog?q=ssrf"),
    ("IPv4 literal", "http://93.184.216.34/index.html"),
    ("IPv6 literal", "https://[2606:4700:4700::1111]/dns-query"),
    ("refused: decimal loopback", "http://2130706433/admin"),
    ("refused: metadata name", "http://metadata.google.internal/computeMetadata/v1/"),
    ("refused: userinfo", "https://user:pw@example.com/"),
]


def _per_call_us(fn: Callable[[], object], calls: int, batches: int) -> tuple[float, float]:
    """The median and the minimum over ``batches`` of the mean time of one call of ``fn`` in a
    batch of ``calls``; the minimum is the uncontended cost on a busy machine."""
    fn()
    samples = []
    gc.disable()
    try:
        for _ in range(batches):
            start = time.perf_counter_ns()
            for _ in range(calls):
                fn()
            samples.append((time.perf_counter_ns() - start) / calls / 1000)
    finally:
        gc.enable()
    return statistics.median(samples), min(samples)


def _checked(url: str | httpx.URL, policy: EgressPolicy) -> Callable[[], object]:
    def call() -> object:
        try:
            return check_url(url, policy)
        except EgressRefused as refusal:
            return refusal

    return call


def _parse_or_none(url: str) -> httpx.URL | None:
    try:
        return httpx.URL(url)
    except httpx.InvalidURL:
        return None


def bench_check_url(calls: int, batches: int) -> list[dict[str, Any]]:
    """``check_url`` per call (µs) for each URL of ``URLS``: default policy, an allow-list policy,
    ``httpx.URL`` alone, and the checks alone on a parsed URL."""
    default = EgressPolicy()
    allow = policy_from(EgressConfig(egress_allow=["example.com", "wikipedia.org", "github.com", "bücher.de",
                                                   "93.184.216.34", "2606:4700:4700::1111"]))
    rows = []
    for label, url in URLS:
        parsed = _parse_or_none(url)
        decision = _checked(url, default)()
        median, best = _per_call_us(_checked(url, default), calls, batches)
        rows.append({
            "measurement": "check_url",
            "url": label,
            "decision": decision.category if isinstance(decision, EgressRefused) else "allowed",
            "check_url_us": round(median, 2),
            "check_url_best_us": round(best, 2),
            "check_url_allow_list_us": round(_per_call_us(_checked(url, allow), calls, batches)[0], 2),
            "httpx_url_us": round(_per_call_us(partial(_parse_or_none, url), calls, batches)[0], 2),
            "checks_only_us": (round(_per_call_us(_checked(parsed, default), calls, batches)[0], 2)
                               if parsed is not None else None),
        })
    return rows


def _print_check_url(rows: list[dict[str, Any]]) -> None:
    print("check_url: microseconds per call (median batch); httpx.URL = the parse it is built on; "
          "checks only = check_url on an already parsed httpx.URL")
    print(f"{'url':<27} {'decision':<10} {'check_url':>10} {'(best)':>8} {'allow-list':>11} {'httpx.URL':>10} "
          f"{'checks only':>12}")
    for r in rows:
        checks = "-" if r["checks_only_us"] is None else f"{r['checks_only_us']:.2f}"
        print(f"{r['url']:<27} {r['decision']:<10} {r['check_url_us']:>10.2f} {r['check_url_best_us']:>8.2f} "
              f"{r['check_url_allow_list_us']:>11.2f} {r['httpx_url_us']:>10.2f} {checks:>12}")
    plain = rows[0]  # a plain public name: the case the target is stated for
    print(f"check_url beyond the parse ({plain['url']}): {plain['check_url_us'] - plain['httpx_url_us']:.2f} µs  "
          "(target: a few µs)")


# -- the egress middleware on W1 ------------------------------------------------------------------------


class _PublicResolver:
    """Answers one public address at once: the middleware's own cost, not the network's."""

    def __init__(self) -> None:
        import ipaddress

        self.answer = [ipaddress.ip_address("93.184.216.34")]

    async def resolve(self, host: str) -> list[Any]:
        return list(self.answer)


@tool(side_effecting=False, blocking=False)
def page_title(url: Annotated[str, Field(json_schema_extra={"format": "uri"})]) -> str:
    """The title of a page.

    Args:
        url: the page
    """
    return "Example Domain"


@middleware(kinds=("tool",))
async def _pass_through(call: Call, nxt: Next) -> AsyncIterator[Any]:
    async for item in nxt(call):
        yield item


def _w1_agents(with_url: bool) -> tuple[Any, Any, Any]:
    """Three agents running W1 (benchmarks/run.py: one scripted tool call, then the answer): no
    middleware, a pass-through tool middleware, the egress middleware. ``with_url``: the tool is
    ``page_title(url)`` (``format: uri``) called with ``https://example.com/`` (checked and resolved
    through a stub resolver), else W1's ``add``."""
    from _prebuilt import W1Model, add
    from seamkit import Agent
    from seamkit.values import Delta, ToolCallDelta
    from seamkit_guardrails_web.middleware import EgressMiddleware

    if with_url:
        class Model(W1Model):
            def __init__(self) -> None:
                super().__init__("page_title")
                call = Delta(tool_call=ToolCallDelta(0, "call_1", "page_title", '{"url": "https://example.com/"}'))
                self.turns = ((call, self.turns[0][1]), self.turns[1])

        tools, make = [page_title], Model
    else:
        tools, make = [add], W1Model
    mw = EgressMiddleware(policy_from(EgressConfig()), resolver=_PublicResolver())
    plain = Agent(make(), tools=tools, prompt="You add numbers.")
    chained = Agent(make(), tools=tools, prompt="You add numbers.", middlewares=[_pass_through])
    guarded = Agent(make(), tools=tools, prompt="You add numbers.", middlewares=[mw])
    return plain, chained, guarded


def bench_egress_middleware(calls: int, batches: int) -> list[dict[str, Any]]:
    """W1 (median µs per agent run) without middleware, with a pass-through tool middleware (the
    cost of having a tool chain at all: the invoker leaves its direct path) and with the ``egress``
    middleware, interleaved run by run, for a tool without URL arguments (W1's ``add``: the cost
    of looking) and one with a URL argument (``page_title(url)``: check_url, one stub resolution,
    check_address). ``calls * batches / 20`` runs each (at least 500)."""
    import asyncio

    runs = max(500, calls * batches // 20)
    rows = []
    for with_url in (False, True):
        agents = _w1_agents(with_url)

        async def measure(agents: tuple[Any, Any, Any] = agents) -> list[float]:
            for _ in range(100):
                for agent in agents:
                    r = await agent.run("What is 2 + 3?")
                    assert r.output == "5", r.output
            times: list[list[float]] = [[], [], []]
            pc = time.perf_counter
            for i in range(runs):
                for k in (range(3) if i & 1 else range(2, -1, -1)):
                    t0 = pc()
                    await agents[k].run("What is 2 + 3?")
                    times[k].append(pc() - t0)
            return [statistics.median(t) * 1e6 for t in times]

        base, chain, with_mw = asyncio.run(measure())
        rows.append({
            "measurement": "egress_middleware",
            "tool": "page_title(url) with a URL argument" if with_url else "add(a, b): no URL argument",
            "runs": runs,
            "w1_us": round(base, 1),
            "w1_pass_through_us": round(chain, 1),
            "w1_with_egress_us": round(with_mw, 1),
            "overhead_us": round(with_mw - base, 1),
            "egress_own_us": round(with_mw - chain, 1),
        })
    return rows


def _print_egress_middleware(rows: list[dict[str, Any]]) -> None:
    print("egress middleware on W1 (benchmarks/run.py): median microseconds per agent run, interleaved")
    print("(pass-through: any tool middleware; egress own = with egress - pass-through)")
    print(f"{'tool':<38} {'W1':>8} {'pass-through':>13} {'with egress':>12} {'overhead':>9} {'egress own':>11}")
    for r in rows:
        print(f"{r['tool']:<38} {r['w1_us']:>8.1f} {r['w1_pass_through_us']:>13.1f} {r['w1_with_egress_us']:>12.1f} "
              f"{r['overhead_us']:>9.1f} {r['egress_own_us']:>11.1f}")


#: name -> (measure(calls, batches) -> rows, print(rows)); one entry per measurement.
MEASUREMENTS: dict[str, tuple[Callable[[int, int], list[dict[str, Any]]], Callable[[list[dict[str, Any]]], None]]] = {
    "check_url": (bench_check_url, _print_check_url),
    "egress_middleware": (bench_egress_middleware, _print_egress_middleware),
}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--only", choices=sorted(MEASUREMENTS), action="append")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    for name in args.only or list(MEASUREMENTS):
        measure, show = MEASUREMENTS[name]
        rows = measure(args.calls, args.batches)
        if args.json:
            for row in rows:
                print(json.dumps(row, ensure_ascii=False))
        else:
            show(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
