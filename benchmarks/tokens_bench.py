"""Token estimator cost: ``seamkit._tokens.estimate_tokens`` on the issue's oversized transcript.

Run: ``bash benchmarks/run.sh tokens``. Options: ``--rounds 50``, ``--gemma`` (also time the
exact count through the ``llamacpp`` provider's Gemma tokenizer, loading the bundled model's
vocabulary), ``--json`` (one JSON line).

Transcripts (tests/core/data/tokens/transcripts.py, the ones the accuracy tests use):

- ``big_tool_args``: a ``write_file`` call whose ``content`` argument is 324,000 characters of
  source code (338,169 characters as JSON). Target: under 2 ms per estimate.
- ``big_blob_args``: a call whose argument is ``"x" * 324000``.
- ``agent_transcript``: a realistic 13-message coding-agent run with 3 tools (6,277 characters).

Per transcript, over ``--rounds`` runs: the median and best time of ``estimate_tokens(request)``,
with its two parts for the big ones: ``json.dumps`` of the arguments and ``count_text_tokens``
of that JSON (a text over 16,384 characters is estimated from 32 slices of 256 characters).
The previous estimator (UTF-8 bytes / 4) is timed on the same request for comparison.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from seamkit._tokens import count_text_tokens, estimate_tokens
from seamkit.values import ChatRequest, ToolCall

DATA = Path(__file__).resolve().parents[1] / "tests" / "core" / "data" / "tokens"


def _transcripts() -> ModuleType:
    spec = importlib.util.spec_from_file_location("seamkit_token_transcripts", DATA / "transcripts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _bytes_over_4(text: str) -> int:
    return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4 if text else 0


def _chars(req: ChatRequest) -> int:
    """Characters of all the text the estimator counts (JSON for arguments and schemas)."""
    seen: list[int] = []

    def record(text: str) -> int:
        seen.append(len(text))
        return 0

    estimate_tokens(req, record)
    return sum(seen)


def _time(fn: Callable[[], object], rounds: int) -> dict[str, float]:
    fn()  # warm up
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median_ms": statistics.median(times) * 1e3, "best_ms": min(times) * 1e3}


def measure(rounds: int, gemma: bool) -> dict[str, Any]:
    tt = _transcripts()
    counts = tt.gemma_counts()
    exact: Callable[[str], int] | None = None
    if gemma:
        from seamkit_llamacpp.provider import LlamaCppProvider

        exact = LlamaCppProvider().count_tokens
    out: dict[str, Any] = {}
    for name in ("big_tool_args", "big_blob_args", "agent_transcript"):
        req: ChatRequest = tt.load(name)
        row: dict[str, Any] = {
            "chars": _chars(req),
            "estimate": estimate_tokens(req),
            "gemma": counts[name],
            "estimate_tokens": _time(partial(estimate_tokens, req), rounds),
            "bytes_over_4": _time(partial(estimate_tokens, req, _bytes_over_4), rounds),
        }
        row["error_pct"] = 100 * (row["estimate"] - row["gemma"]) / row["gemma"]
        calls = [b for m in req.messages for b in m.content if isinstance(b, ToolCall)]
        if name.startswith("big"):
            args = calls[0].arguments
            dumped = json.dumps(args, ensure_ascii=False)
            row["args_json_chars"] = len(dumped)
            row["json_dumps"] = _time(partial(json.dumps, args, ensure_ascii=False), rounds)
            row["count_text_tokens"] = _time(partial(count_text_tokens, dumped), rounds)
        if exact is not None:
            row["gemma_exact"] = _time(partial(estimate_tokens, req, exact), max(1, rounds // 10))
        out[name] = row
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50, help="timed runs per measurement (default 50)")
    parser.add_argument("--gemma", action="store_true", help="also time the exact Gemma tokenizer count")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    result = measure(args.rounds, args.gemma)
    if args.json:
        print(json.dumps(result))
        return 0
    for name, row in result.items():
        print(
            f"{name} ({row['chars']} characters): estimate {row['estimate']} tokens, "
            f"Gemma {row['gemma']} ({row['error_pct']:+.1f}%)"
        )
        for part in ("estimate_tokens", "json_dumps", "count_text_tokens", "bytes_over_4", "gemma_exact"):
            if part in row:
                t = row[part]
                print(f"  {part:18s} median {t['median_ms']:8.3f} ms   best {t['best_ms']:8.3f} ms")
    big = result["big_tool_args"]["estimate_tokens"]["median_ms"]
    verdict = "met" if big < 2 else "MISSED"
    print(f"token estimate of the 324k-character transcript: {big:.3f} ms  (target: under 2 ms; {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
