"""Capability compiler cost: ``seamkit.capabilities.compile_agent`` on an agent of 200 capabilities.

Run: ``bash benchmarks/run.sh capabilities``. Options: ``--rounds 30``, ``--capabilities 200``,
``--json`` (one JSON line).

The agent is a layered DAG (seeded, the same every run): 10 layers of 20 capabilities; each
provides one or two fact types of its own and requires two or three fact types provided by earlier
layers (about 500 requires edges). Every capability has its own input type, so no schema is shared
between capabilities:

- ``pydantic``: a pydantic model per capability (three fields), adapted by the pydantic flavour;
- ``jsonschema``: the same inputs as JSON Schema mappings, adapted by the jsonschema flavour.

Per variant, over ``--rounds`` runs after one warm-up: the median and best time of
``compile_agent(capabilities)`` in milliseconds, and the median of adapting the 200 input types
alone (``seamkit._schemas.adapt(tp).json_schema()``, the part of compiling that is the schema
flavours' work rather than the graph checks). The capabilities are built once, outside the timing;
the compiler adapts each input type and checks the graph on every run. Numbers only, no thresholds.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import pydantic
from seamkit._schemas import adapt
from seamkit.capabilities import Capability, Completed, FactType, compile_agent


async def _execute(ctx: Any, input: Any) -> Completed:
    return Completed()


def _fields(i: int) -> dict[str, Any]:
    return {f"query_{i}": (str, ...), "limit": (int, 10), "include_archived": (bool, False)}


def _json_schema(i: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {f"query_{i}": {"type": "string"}, "limit": {"type": "integer", "default": 10},
                       "include_archived": {"type": "boolean", "default": False}},
        "required": [f"query_{i}"],
        "additionalProperties": False,
    }


def build_agent(n: int, flavour: str, seed: int = 12) -> tuple[list[Capability], int]:
    """``n`` capabilities in layers of 20 (see the module doc) and the number of requires edges."""
    rng = random.Random(seed)
    layers = max(1, n // 20)
    provided: list[FactType] = []
    caps: list[Capability] = []
    edges = 0
    for i in range(n):
        layer = i * layers // n
        earlier = [f for f in provided if int(f.name.split("_")[1]) < layer]
        requires = rng.sample(earlier, min(len(earlier), rng.randint(2, 3))) if earlier else []
        provides = [FactType(f"l_{layer}_c{i}_f{k}", 1) for k in range(rng.randint(1, 2))]
        provided += provides
        edges += len(requires)
        tp: Any = (pydantic.create_model(f"Input{i}", **_fields(i)) if flavour == "pydantic"  # type: ignore[call-overload]
                   else _json_schema(i))
        caps.append(Capability(f"cap_{i:03d}", 1, f"capability {i} of layer {layer}", _execute, input=tp,
                               requires=tuple(requires), provides=tuple(provides),
                               effect="read" if i % 3 else "none"))
    rng.shuffle(caps)  # registration order is not the topological order
    return caps, edges


def _time(fn: Callable[[], object], rounds: int) -> dict[str, float]:
    fn()  # warm up
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median_ms": statistics.median(times) * 1e3, "best_ms": min(times) * 1e3}


def measure(rounds: int, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {"capabilities": n, "rounds": rounds}
    for flavour in ("pydantic", "jsonschema"):
        caps, edges = build_agent(n, flavour)
        agent = compile_agent(caps)
        assert len(agent.order) == n
        inputs = [dict(c.input) if isinstance(c.input, dict) else c.input for c in caps]
        schemas = _time(lambda inputs=inputs: [adapt(tp).json_schema() for tp in inputs], rounds)
        out[flavour] = {"requires_edges": edges, "fact_types": len(agent.providers),
                        **_time(lambda caps=caps: compile_agent(caps), rounds),
                        "schemas_median_ms": schemas["median_ms"]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--capabilities", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()
    result = measure(args.rounds, args.capabilities)
    if args.json:
        print(json.dumps(result))
        return
    print(f"compile_agent, {result['capabilities']} capabilities, median/best over {result['rounds']} runs")
    for flavour in ("pydantic", "jsonschema"):
        r = result[flavour]
        print(f"  {flavour:<11} inputs: {r['median_ms']:8.2f} ms median  {r['best_ms']:8.2f} ms best  "
              f"(adapting the inputs alone: {r['schemas_median_ms']:.2f} ms; {r['requires_edges']} requires edges, "
              f"{r['fact_types']} fact types)")


if __name__ == "__main__":
    main()
