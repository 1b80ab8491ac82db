"""SSE throughput: seamkit-http vs the official OpenAI Python SDK's parser, on the same bytes.

Run: ``bash benchmarks/run.sh sse`` (installs benchmarks/requirements-sse.txt into .venv first).
Options: ``--mb 5`` (stream size), ``--rounds 5``, ``--seed 7``, ``--json`` (one JSON line).

The input is a generated OpenAI Chat Completions stream (chunk objects as in the API reference
"The chat completion chunk object", with ``stream_options.include_usage``): a sequence of complete
responses, each ~300 text deltas then two parallel tool calls whose arguments arrive in fragments,
a ``finish_reason`` chunk, the usage chunk with empty ``choices`` and ``data: [DONE]``; responses
are repeated (with varying text) until the total reaches ``--mb`` megabytes. The bytes are cut into
network-read-sized chunks (16..2048 bytes, seeded) and fed through an async iterator, as
``httpx.Response.aiter_bytes()`` would.

Measured per path, best of ``--rounds`` (MB = 10^6 bytes; deltas = text and tool-argument fragments):

- ``parse``: events + ``json.loads`` only.
  ours: ``seamkit_http.aiter_sse``; openai: ``openai._streaming.SSEDecoder().aiter_bytes``.
- ``full``: parse + assembly of each response into a final result.
  ours: chunk JSON -> ``seamkit.values.Delta`` -> ``seamkit._accumulate.collect_result`` (an LLMResult);
  openai: chunk JSON -> ``ChatCompletionChunk`` (built as the SDK builds it, ``construct_type``) ->
  ``openai.lib.streaming.chat.ChatCompletionStreamState.handle_chunk`` -> ``get_final_completion()``.

Both paths produce the same text and tool calls (checked before timing).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from seamkit._accumulate import collect_result
from seamkit.values import Delta, LLMResult, ToolCallDelta, Usage
from seamkit_http import aiter_sse, is_done

WORDS = ("the model streams tokens quickly while parsers keep up with every delta of text and "
         "tool call fragments in a realistic response café naïve 東京 ✓").split()


def make_response(rng: random.Random, n: int) -> tuple[bytes, int]:
    """One complete streamed chat completion; returns (bytes, number of fragments)."""
    cid = f"chatcmpl-{rng.getrandbits(64):016x}"
    base = {"id": cid, "object": "chat.completion.chunk", "created": 1764525600 + n, "model": "gpt-4o-2024-08-06",
            "service_tier": "default", "system_fingerprint": "fp_f33640a400", "usage": None}
    out: list[str] = []
    fragments = 0

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> None:
        obj = dict(base, choices=choices, **extra)
        obj["obfuscation"] = "".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(2, 10)))
        out.append("data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n\n")

    chunk([{"index": 0, "delta": {"role": "assistant", "content": "", "refusal": None}, "logprobs": None,
            "finish_reason": None}])
    for _ in range(300):
        piece = (" " if rng.random() < 0.8 else "") + rng.choice(WORDS)
        chunk([{"index": 0, "delta": {"content": piece}, "logprobs": None, "finish_reason": None}])
        fragments += 1
    for index, city in enumerate(("Paris", "Tokyo")):
        call_id = f"call_{rng.getrandbits(64):016x}"
        chunk([{"index": 0, "delta": {"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                                       "function": {"name": "get_weather", "arguments": ""}}]},
                "logprobs": None, "finish_reason": None}])
        args = json.dumps({"city": city, "unit": "celsius", "days": rng.randint(1, 7),
                           "note": " ".join(rng.choice(WORDS) for _ in range(12))}, ensure_ascii=False)
        pos = 0
        while pos < len(args):
            step = rng.randint(2, 6)
            fragment = {"index": index, "function": {"arguments": args[pos:pos + step]}}
            chunk([{"index": 0, "delta": {"tool_calls": [fragment]}, "logprobs": None, "finish_reason": None}])
            pos += step
            fragments += 1
    chunk([{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}])
    usage = {"prompt_tokens": 812, "completion_tokens": 377, "total_tokens": 1189,
             "prompt_tokens_details": {"cached_tokens": 512, "audio_tokens": 0},
             "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                           "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
    chunk([], usage=usage)
    out.append("data: [DONE]\n\n")
    return "".join(out).encode(), fragments


def make_corpus(mb: float, seed: int) -> tuple[list[list[bytes]], int, int]:
    """(responses, each as network chunks; total bytes; total fragments)."""
    rng = random.Random(seed)
    responses: list[list[bytes]] = []
    total = fragments = 0
    while total < mb * 1_000_000:
        raw, frags = make_response(rng, len(responses))
        cuts: list[bytes] = []
        pos = 0
        while pos < len(raw):
            size = rng.randint(16, 2048)
            cuts.append(raw[pos:pos + size])
            pos += size
        responses.append(cuts)
        total += len(raw)
        fragments += frags
    return responses, total, fragments


async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


# -------------------------------------------------------------------------------------------- ours


async def ours_parse(parts: list[bytes]) -> int:
    n = 0
    async for event in aiter_sse(_chunks(parts)):
        if is_done(event):
            break
        json.loads(event.data)
        n += 1
    return n


async def _deltas(parts: list[bytes]) -> AsyncIterator[Delta]:
    """The provider hot path: chunk JSON -> Delta (what seamkit-openai's chat stream does)."""
    finish: str | None = None
    async for event in aiter_sse(_chunks(parts)):
        if is_done(event):
            break
        obj = json.loads(event.data)
        if "error" in obj:
            raise RuntimeError(obj["error"])
        for choice in obj["choices"]:
            delta = choice["delta"]
            content = delta.get("content")
            if content:
                yield Delta(text=content)
            for tc in delta.get("tool_calls") or ():
                fn = tc.get("function") or {}
                yield Delta(tool_call=ToolCallDelta(index=tc["index"], id=tc.get("id"), name=fn.get("name"),
                                                    arguments=fn.get("arguments") or ""))
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
        usage = obj.get("usage")
        if usage:
            details = usage.get("prompt_tokens_details") or {}
            out_details = usage.get("completion_tokens_details") or {}
            yield Delta(finish_reason=finish or "stop", model=obj.get("model"), usage=Usage(
                input_tokens=usage["prompt_tokens"], output_tokens=usage["completion_tokens"],
                cache_read_tokens=details.get("cached_tokens") or 0,
                reasoning_tokens=out_details.get("reasoning_tokens") or 0, requests=1))


async def ours_full(parts: list[bytes]) -> LLMResult:
    return await collect_result(_deltas(parts), provider="openai_chat", model="gpt-4o")


# ------------------------------------------------------------------------------------------ openai


def _openai() -> tuple[Any, Any, Any]:
    try:
        from openai._models import construct_type
        from openai._streaming import SSEDecoder
        from openai.lib.streaming.chat import ChatCompletionStreamState
        from openai.types.chat import ChatCompletionChunk
    except ImportError as exc:  # pragma: no cover - depends on the environment
        sys.exit(f"sse_bench: the openai package is missing ({exc}); run: bash benchmarks/run.sh sse")
    return SSEDecoder, ChatCompletionStreamState, (construct_type, ChatCompletionChunk)


async def openai_parse(parts: list[bytes]) -> int:
    decoder_cls, _, _ = _openai()
    n = 0
    async for sse in decoder_cls().aiter_bytes(_chunks(parts)):
        if sse.data.startswith("[DONE]"):
            break
        sse.json()
        n += 1
    return n


async def openai_full(parts: list[bytes]) -> Any:
    decoder_cls, state_cls, (construct_type, chunk_type) = _openai()
    state = state_cls()
    async for sse in decoder_cls().aiter_bytes(_chunks(parts)):
        if sse.data.startswith("[DONE]"):
            break
        data = sse.json()
        if isinstance(data, dict) and data.get("error"):
            raise RuntimeError(data["error"])
        for _ in state.handle_chunk(construct_type(type_=chunk_type, value=data)):
            pass
    return state.get_final_completion()


# ------------------------------------------------------------------------------------------- timing


async def _time(fn: Callable[[list[bytes]], Coroutine[Any, Any, Any]], corpus: list[list[bytes]], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        for parts in corpus:
            await fn(parts)
        best = min(best, time.perf_counter() - start)
    return best


async def _check(corpus: list[list[bytes]]) -> None:
    """Both paths must agree on content before their speed means anything."""
    for parts in corpus[:3]:
        mine = await ours_full(parts)
        theirs = await openai_full(parts)
        message = theirs.choices[0].message
        assert mine.text == (message.content or ""), "text differs"
        assert [(c.id, c.name, json.loads(c.arguments) if isinstance(c.arguments, str) else c.arguments)
                for c in mine.tool_calls] == \
               [(c.id, c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls], "tools differ"
        assert mine.usage.input_tokens == theirs.usage.prompt_tokens
        assert await ours_parse(parts) == await openai_parse(parts)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    corpus, total, fragments = make_corpus(args.mb, args.seed)
    await _check(corpus)
    results: dict[str, Any] = {"bytes": total, "responses": len(corpus), "deltas": fragments, "rounds": args.rounds}
    import openai

    results["openai_version"] = openai.__version__
    for name, fn in (("ours_parse", ours_parse), ("openai_parse", openai_parse),
                     ("ours_full", ours_full), ("openai_full", openai_full)):
        seconds = await _time(fn, corpus, args.rounds)
        results[name] = {"seconds": round(seconds, 4), "MB_per_s": round(total / seconds / 1e6, 2),
                         "deltas_per_s": round(fragments / seconds)}
    for kind in ("parse", "full"):
        results[f"speedup_{kind}"] = round(results[f"openai_{kind}"]["seconds"] / results[f"ours_{kind}"]["seconds"], 2)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=5.0, help="stream size in MB (default 5)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per path; the best is kept (default 5)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args(argv)
    if args.mb <= 0 or args.rounds < 1:
        parser.error("--mb must be positive and --rounds at least 1")
    results = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(results))
        return 0
    print(f"SSE benchmark: {results['bytes'] / 1e6:.2f} MB, {results['responses']} responses, "
          f"{results['deltas']} deltas, openai {results['openai_version']}, best of {results['rounds']}")
    print(f"{'path':<14}{'seconds':>10}{'MB/s':>10}{'deltas/s':>12}")
    for name in ("ours_parse", "openai_parse", "ours_full", "openai_full"):
        r = results[name]
        print(f"{name:<14}{r['seconds']:>10.3f}{r['MB_per_s']:>10.2f}{r['deltas_per_s']:>12,}")
    print(f"ours vs openai: parse x{results['speedup_parse']}, full x{results['speedup_full']} (higher = ours faster)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
