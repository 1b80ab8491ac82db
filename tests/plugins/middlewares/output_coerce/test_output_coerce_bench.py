"""The output_coerce benchmark runs (a small size) and reports what it promises."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[4] / "benchmarks" / "output_coerce_bench.py"


def load() -> Any:
    spec = importlib.util.spec_from_file_location("output_coerce_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pieces_cut_exactly_n_deltas() -> None:
    bench = load()
    doc = bench.document(5)
    assert len(doc) >= 5000 and json.loads(doc)["items"]
    for n in (1, 7, 250, 2000):
        parts = bench.pieces(doc, n)
        assert len(parts) == n and "".join(parts) == doc


async def test_bench_reports_parses_bounded_by_growth(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load()
    assert await bench.main(["--kb", "4", "--deltas", "100,400", "--growth", "0,0.1", "--rounds", "1",
                              "--json"]) == 0
    header, *rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert header["validate_ms"] >= 0 and set(header["one_parse_ms"]) == {"adapter", "pydantic-core"}
    assert len(rows) == 8
    for r in rows:
        if r["growth"] == 0:
            assert r["parses"] == r["deltas"]  # every delta, and the end is not parsed twice
        else:
            assert r["parses"] < 60
        assert 1 <= r["partials"] <= r["parses"]
