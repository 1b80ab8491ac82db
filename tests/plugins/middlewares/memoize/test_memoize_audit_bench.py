"""The memoize/audit benchmark runs (a quick round) and prints every number it promises."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[4] / "benchmarks" / "memoize_audit_bench.py"


def load() -> Any:
    spec = importlib.util.spec_from_file_location("memoize_audit_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_bench_prints_its_numbers_per_store(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load()
    assert await bench.main(["--quick", "--calls", "3", "--concurrent", "5", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["store"] for r in rows] == ["memory", "sqlite"]
    for r in rows:
        for kind in bench.KINDS:
            assert r[kind]["median_us"] > 0 and r[kind]["p90_us"] >= r[kind]["median_us"]
        assert set(r["overhead_us"]) == set(bench.KINDS) - {"none"}
        assert r["counts_ok"], r["hits_misses"]  # the hit kinds really hit, the miss kind really missed
        assert set(r["audit_us_at_records"]) == {"0", "100"} and min(r["audit_us_at_records"].values()) > 0
        assert r["concurrent"] == {**r["concurrent"], "calls": 5, "provider_calls": 1, "hits": 4}


async def test_bench_text_output_names_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load()
    assert await bench.main(["--calls", "2", "--rounds", "1", "--stores", "memory", "--concurrent", "3"]) == 0
    out = capsys.readouterr().out
    for kind in bench.KINDS:
        assert f"  {kind} " in out
    assert "µs over none" in out and "µs with 1000 records" in out
    assert "3 concurrent identical calls: 1 provider call(s), 2 hits" in out
