"""W2 to 2,000 turns: does a turn cost the same late in a long run as early on?

One agent run of ``--turns`` model turns (default 2,000): every turn but the last the scripted
model streams a call ``add(a=2, b=3)`` as seamkit ``Delta`` objects, built per call (as the peer
harness in ``../shared/bench`` does: no prebuilt replies), the ``async def`` tool runs, and the
last turn answers ``"5"``. No checkpointer. Each model call is time-stamped on entry, so turn k
costs ``stamp[k] - stamp[k-1]`` (the loop's work between two model calls: the tool batch, the
request, the stream). Reported: the median over ``--repeats`` runs of the mean per turn over
turns 1-20 and over the last 20 turns, and their ratio (issue 19's target: at most 1.1; before
requests shared the transcript, each copied it and the ratio rose with the run's length).

Like the harness's W2 (same model, tool and windows; its default run is 200 turns), except the
length. ``--builder``: the agent has a request builder (its prompt, and a budget the run never
reaches), which estimates every request's tokens: each message is counted once per run, so its
turns stay flat too (before, each request counted the whole transcript again: about 15 ms a turn
by turn 1,000). Garbage collection stays on, as in the harness. Run: ``python benchmarks/long_run_bench.py``
(``--turns 200`` for the harness's length). Prints one line per figure with its target.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys

from _scripted import Runner

WINDOW = 20
TARGET = 1.1


async def measure(turns: int, repeats: int, builder: bool = False) -> tuple[float, float]:
    """Median µs per turn over turns 1-20 and over the last 20 turns (``builder``: the agent
    builds its requests with a :class:`~seamkit.plugin.RequestBuilder`)."""
    if builder:
        from seamkit.plugin import RequestBuilder

        r = Runner(max_steps=turns + 5,
                   request_builder=RequestBuilder(prompt="Use the add tool.", budget_tokens=10_000_000))
    else:
        r = Runner(max_steps=turns + 5)
    for _ in range(20):  # warm the code paths
        await r.one(1)
    await r.one(turns)
    early, late = [], []
    for _ in range(repeats):
        st = (await r.one(turns))[1].stamps
        early.append((st[WINDOW] - st[0]) / WINDOW / 1e3)
        late.append((st[turns] - st[turns - WINDOW]) / WINDOW / 1e3)
    return statistics.median(early), statistics.median(late)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=2000, help="model turns of the run (default 2000)")
    ap.add_argument("--repeats", type=int, default=5, help="runs measured; medians reported (default 5)")
    ap.add_argument("--builder", action="store_true", help="the agent has a request builder (estimates each request)")
    a = ap.parse_args()
    if a.turns < 2 * WINDOW:
        ap.error(f"--turns must be at least {2 * WINDOW}")
    early, late = asyncio.run(measure(a.turns, a.repeats, a.builder))
    last = f"{a.turns - WINDOW + 1}-{a.turns}"
    w2 = "W2 with a request builder" if a.builder else "W2"
    print(f"{w2} turns 1-{WINDOW}: {early:.1f} µs/turn  (target: the baseline of late/early)")
    print(f"{w2} turns {last}: {late:.1f} µs/turn  (target: <= {TARGET} x turns 1-{WINDOW})")
    print(f"{w2} late/early: {late / early:.2f}  (target: <= {TARGET})")
    print(f"load average {os.getloadavg()[0]:.2f} (absolute times drift on a busy machine; the ratio less so)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
