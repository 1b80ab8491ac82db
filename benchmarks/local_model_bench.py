"""The local model (``use: llamacpp``, bundled Gemma 3 270M Q4_K_M): generation speed through seamkit
next to raw llama-cpp-python, idle and with one busy core, the default thread count, and the time
to first token of a fresh ``seamkit ask`` next to a fresh raw llama-cpp-python script.

Run: ``.venv/bin/python benchmarks/local_model_bench.py`` (``bash benchmarks/run.sh all`` runs it too). Options:
``--reps 3`` (fresh processes per side and cell), ``--tokens 48`` (tokens generated per call),
``--ttft-reps 3``, ``--matrix`` (also every thread count 1..CPUs for raw and seamkit, idle and
busy: the measurements behind the default), ``--json``. Takes a few minutes.

How it measures (both sides the same model file, prompt tokens, greedy decoding, seed, ``n_ctx``
2048, ``max_tokens``, thread count, llama.cpp's extra CPU buffer types off as the provider's
default ``repack: false``, and OpenMP's wait policy PASSIVE as the provider imports llama_cpp):

- *raw*: ``llama_cpp.Llama(...).create_completion(prompt_tokens, stream=True)``, iterated to the end.
- *seamkit*: ``LlamaCppProvider.stream(ChatRequest)`` (worker thread, queue, deltas), iterated to
  the end.
- Each measurement is a fresh process (load, one warm-up call, 2 timed calls, their median), raw
  and seamkit alternating, ``--reps`` of each per cell: two models in one process would share
  OpenMP's thread accounting and change each other's speed. Every call must generate exactly
  ``--tokens`` tokens (the prompt asks for a long text; checked).
- tokens/s = tokens generated / wall time of the whole call (prompt evaluation included; the
  prompt is the same 30-odd tokens on both sides). Medians over the processes.
- *raw with llama-cpp-python's defaults*: threads = every CPU, OpenMP's default (spinning) wait
  policy: what a script that does not tune anything gets (reference only).
- *busy*: one extra process spinning on a core (``while True: pass``) for the whole cell.
- *default threads*: what ``LlamaCppConfig().threads`` chooses at the start of the cell (see
  ``seamkit_llamacpp.threads``); both sides run with it.
- *schema answer*: seconds for the whole answer to a fixed question with a JSON schema
  (``{"answer": number}``, about 9 tokens) in a fresh process after a warm-up answer, median of
  3 answers: raw llama-cpp-python given seamkit's prompt and grammar (``prompt.render``,
  ``grammar.to_gbnf``, ``LlamaGrammar.from_string`` per call as the provider does) vs seamkit,
  both with the default thread count, and seamkit with 1 thread (the default must not lose to it).
- *ttft*: wall time from spawning a fresh process to the first byte of the answer on its stdout:
  ``seamkit ask -m llamacpp PROMPT`` vs a Python script importing llama_cpp, loading the same GGUF
  (its path known) and streaming the same prompt, with the same thread count and wait policy.

The machine this runs on may be shared: every figure is printed with the 1-minute load average
measured at the time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROMPT = ("Write a long, detailed story about a lighthouse keeper who finds a message in a bottle. "
          "Describe the sea, the weather and every room of the lighthouse.")
N_CTX = 2048
SEED = 42
TARGET_RATIO = 0.97


def _load1() -> float:
    return os.getloadavg()[0]


@contextlib.contextmanager
def busy_core() -> Iterator[None]:
    """One extra process spinning on a CPU for the duration of the block."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # let it be scheduled before the cell starts
        yield
    finally:
        proc.kill()
        proc.wait()


# -- raw llama-cpp-python ------------------------------------------------------------------------

def _raw_model(path: Path, threads: int) -> Any:
    """A ``Llama`` with the provider's settings (``use_extra_bufts`` off, as ``repack: false``)."""
    from llama_cpp.llama import Llama

    lowlevel: Any = importlib.import_module("llama_cpp.llama_cpp")
    factory = lowlevel.llama_model_default_params

    def params() -> Any:
        p = factory()
        p.use_extra_bufts = False
        return p

    lowlevel.llama_model_default_params = params
    try:
        return Llama(model_path=str(path), n_ctx=N_CTX, n_threads=threads, n_threads_batch=threads,
                     seed=SEED, verbose=False)
    finally:
        lowlevel.llama_model_default_params = factory


def _prompt_text() -> str:
    from seamkit_llamacpp.prompt import END, START

    return f"{START}user\n{PROMPT}{END}\n{START}model\n"


def raw_call(llm: Any, tokens: int) -> tuple[int, float]:
    """``(tokens generated, seconds)`` of one streamed completion (``tokens`` when it stopped at
    ``max_tokens``; otherwise the tokens evaluated, which the child reports as a wrong prompt)."""
    from seamkit_llamacpp.prompt import END, START

    prompt = llm.tokenize(_prompt_text().encode(), add_bos=True, special=True)
    t0 = time.perf_counter()
    finish = None
    for chunk in llm.create_completion(prompt, max_tokens=tokens, temperature=0.0, seed=SEED,
                                       stop=[START, END], stream=True):
        finish = chunk["choices"][0]["finish_reason"] or finish
    dt = time.perf_counter() - t0
    return (tokens if finish == "length" else llm.n_tokens - len(prompt)), dt


# -- seamkit ---------------------------------------------------------------------------------------

def seamkit_provider(threads: int, tokens: int) -> Any:
    from seamkit_llamacpp.config import LlamaCppConfig
    from seamkit_llamacpp.provider import LlamaCppProvider

    return LlamaCppProvider(LlamaCppConfig(threads=threads, max_tokens=tokens, seed=SEED))


def seamkit_call(provider: Any, tokens: int) -> tuple[int, float]:
    from seamkit.values import ChatRequest, Message

    request = ChatRequest(messages=(Message.user(PROMPT),), max_tokens=tokens, temperature=0.0)

    async def go() -> int:
        usage = None
        async for delta in provider.stream(request):
            if delta.usage is not None:
                usage = delta.usage
        assert usage is not None
        return int(usage.output_tokens)

    t0 = time.perf_counter()
    n = asyncio.run(go())
    return n, time.perf_counter() - t0


# -- schema-constrained answers ------------------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"answer": {"type": "number"}}, "required": ["answer"]}
SCHEMA_PROMPT = "What is 17 times 23? Answer as JSON."
SCHEMA_MAX_TOKENS = 32


def _schema_request() -> Any:
    from seamkit.values import ChatRequest, Message

    return ChatRequest(messages=(Message.user(SCHEMA_PROMPT),), max_tokens=SCHEMA_MAX_TOKENS, temperature=0.0,
                       output_schema=SCHEMA)


def raw_schema_call(llm: Any) -> float:
    """Seconds of one streamed completion of seamkit's prompt for :data:`SCHEMA` with seamkit's grammar
    for it (``seamkit_llamacpp.prompt.render`` / ``grammar.to_gbnf``), built per call as the provider
    does."""
    from llama_cpp.llama_grammar import LlamaGrammar
    from seamkit_llamacpp.grammar import plan, to_gbnf
    from seamkit_llamacpp.prompt import END, START, as_text, render

    request = _schema_request()
    t0 = time.perf_counter()
    gbnf = to_gbnf(plan((), "none", SCHEMA))
    assert gbnf is not None
    prompt = llm.tokenize(as_text(render(request)).encode(), add_bos=True, special=True)
    for _chunk in llm.create_completion(prompt, max_tokens=SCHEMA_MAX_TOKENS, temperature=0.0, seed=SEED,
                                        stop=[START, END], grammar=LlamaGrammar.from_string(gbnf, verbose=False),
                                        stream=True):
        pass
    return time.perf_counter() - t0


def seamkit_schema_call(provider: Any) -> float:
    """Seconds of one ``LlamaCppProvider.stream`` of the :data:`SCHEMA` request, iterated to the end."""
    request = _schema_request()

    async def go() -> None:
        async for _delta in provider.stream(request):
            pass

    t0 = time.perf_counter()
    asyncio.run(go())
    return time.perf_counter() - t0


# -- cells -----------------------------------------------------------------------------------------

def child(mode: str, threads: int, tokens: int, calls: int) -> list[float]:
    """In a fresh process: load the model the ``mode`` way, warm up, time ``calls`` calls: tokens/s,
    or seconds per answer for the ``*-schema`` modes."""
    from seamkit_llamacpp.provider import resolve_model_path

    if mode in ("raw-schema", "seamkit-schema"):
        if mode == "raw-schema":
            llm = _raw_model(resolve_model_path(None), threads)

            def answer() -> float:
                return raw_schema_call(llm)
        else:
            provider = seamkit_provider(threads, SCHEMA_MAX_TOKENS)

            def answer() -> float:
                return seamkit_schema_call(provider)
        answer()  # warm up
        return [answer() for _ in range(calls)]
    if mode == "raw":
        llm = _raw_model(resolve_model_path(None), threads)

        def call() -> tuple[int, float]:
            return raw_call(llm, tokens)
    else:
        provider = seamkit_provider(threads, tokens)

        def call() -> tuple[int, float]:
            return seamkit_call(provider, tokens)
    call()  # warm up (the first call pays the page faults of the weights)
    out = []
    for _ in range(calls):
        n, dt = call()
        if n != tokens:
            raise SystemExit(f"{mode} generated {n} tokens, not {tokens}: pick another prompt")
        out.append(n / dt)
    return out


def _run_child(mode: str, threads: int, tokens: int, calls: int, env: dict[str, str] | None = None) -> float:
    out = subprocess.run([sys.executable, __file__, "--child", mode, str(threads), str(tokens), str(calls)],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{mode} child failed: {out.stderr.strip()[-500:]}")
    return statistics.median(json.loads(out.stdout.strip().splitlines()[-1]))


def raw_env() -> dict[str, str]:
    """The environment of a raw process with seamkit's settings: OpenMP's wait policy as the
    provider sets it for llama.cpp (PASSIVE unless the environment names one)."""
    env = dict(os.environ)
    from seamkit_llamacpp.threads import OMP_SETTINGS

    for key, value in OMP_SETTINGS.items():
        env.setdefault(key, value)
    return env


def cell(reps: int, tokens: int, busy: bool, calls: int = 2, threads: int | None = None,
         raw_defaults: bool = True) -> dict[str, Any]:
    """Fresh processes, alternating: raw llama-cpp-python and seamkit with the same settings (the
    thread count seamkit's default picks now, unless ``threads``), plus raw llama-cpp-python with
    its own defaults (every CPU, OpenMP's default wait policy). Medians of tokens/s."""
    ctx = busy_core() if busy else contextlib.nullcontext()
    raw: list[float] = []
    sk: list[float] = []
    plain: list[float] = []
    loads: list[float] = []
    with ctx:
        n = default_threads() if threads is None else threads
        for i in range(reps):
            order = ["raw", "seamkit", "plain"] if raw_defaults else ["raw", "seamkit"]
            for who in (order if i % 2 == 0 else order[::-1]):
                if who == "raw":
                    raw.append(_run_child("raw", n, tokens, calls, raw_env()))
                elif who == "seamkit":
                    sk.append(_run_child("seamkit", n, tokens, calls))
                else:
                    plain.append(_run_child("raw", os.cpu_count() or 1, tokens, calls))
            loads.append(_load1())
    r, s = statistics.median(raw), statistics.median(sk)
    return {"threads": n, "busy": busy, "raw": r, "seamkit": s, "ratio": s / r,
            "plain": statistics.median(plain) if plain else None, "raw_all": raw, "seamkit_all": sk,
            "plain_all": plain, "load1": statistics.median(loads)}


def schema_cell(reps: int, busy: bool, calls: int = 3) -> dict[str, Any]:
    """Seconds per schema-constrained answer (medians over fresh processes, alternating): raw
    llama-cpp-python with seamkit's prompt and grammar, and seamkit, both with the default thread
    count; seamkit with 1 thread as the reference the default must not lose to."""
    ctx = busy_core() if busy else contextlib.nullcontext()
    got: dict[str, list[float]] = {"raw": [], "seamkit": [], "seamkit1": []}
    loads: list[float] = []
    with ctx:
        n = default_threads()
        runs = [("raw", "raw-schema", n, raw_env()), ("seamkit", "seamkit-schema", n, None),
                ("seamkit1", "seamkit-schema", 1, None)]
        for i in range(reps):
            for key, mode, threads, env in (runs if i % 2 == 0 else runs[::-1]):
                got[key].append(_run_child(mode, threads, 0, calls, env))
            loads.append(_load1())
    return {"threads": n, "busy": busy, **{k: statistics.median(v) for k, v in got.items()},
            **{f"{k}_all": v for k, v in got.items()}, "load1": statistics.median(loads)}


def default_threads() -> int:
    from seamkit_llamacpp.config import LlamaCppConfig

    return LlamaCppConfig().threads


# -- time to first token -----------------------------------------------------------------------------

RAW_SCRIPT = """
import os, sys
from llama_cpp.llama import Llama
import llama_cpp.llama_cpp as low
factory = low.llama_model_default_params
def params():
    p = factory(); p.use_extra_bufts = False; return p
low.llama_model_default_params = params
path, threads, prompt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
llm = Llama(model_path=path, n_ctx=2048, n_threads=threads, n_threads_batch=threads, seed=42, verbose=False)
toks = llm.tokenize(("<start_of_turn>user\\n" + prompt + "<end_of_turn>\\n<start_of_turn>model\\n").encode(),
                    add_bos=True, special=True)
for chunk in llm.create_completion(toks, max_tokens=8, temperature=0.0, seed=42,
                                   stop=["<start_of_turn>", "<end_of_turn>"], stream=True):
    sys.stdout.write(chunk["choices"][0]["text"]); sys.stdout.flush()
"""


def _first_byte(cmd: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds from spawning ``cmd`` to the first byte on its stdout (then it runs to the end)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    dt = time.perf_counter() - t0
    proc.stdout.read()
    if proc.wait() != 0 or not first:
        raise RuntimeError(f"{cmd[:3]} failed (exit {proc.returncode})")
    return dt


def ttft(reps: int) -> dict[str, Any]:
    from seamkit_llamacpp.provider import resolve_model_path

    path = str(resolve_model_path(None))
    seamkit_bin = str(Path(sys.executable).with_name("seamkit"))
    ask = [sys.executable, seamkit_bin, "ask", "-m", "llamacpp", "--max-tokens", "8", PROMPT] \
        if Path(seamkit_bin).exists() else [sys.executable, "-m", "seamkit", "ask", "-m", "llamacpp",
                                            "--max-tokens", "8", PROMPT]
    sk: list[float] = []
    raw: list[float] = []
    loads: list[float] = []
    _first_byte(ask)  # warm the page cache for both (the same GGUF file)
    for i in range(reps):
        threads = default_threads()
        raw_cmd = [sys.executable, "-c", RAW_SCRIPT, path, str(threads), PROMPT]
        for who in (("ask", "raw") if i % 2 == 0 else ("raw", "ask")):
            if who == "ask":
                sk.append(_first_byte([*ask, "-o", f"threads={threads}"]))
            else:
                raw.append(_first_byte(raw_cmd, raw_env()))
        loads.append(_load1())
    s, r = statistics.median(sk), statistics.median(raw)
    return {"seamkit": s, "raw": r, "diff": s - r, "seamkit_all": sk, "raw_all": raw,
            "load1": statistics.median(loads)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="fresh processes per side and cell")
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--ttft-reps", type=int, default=3)
    ap.add_argument("--matrix", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", nargs=4, metavar=("MODE", "THREADS", "TOKENS", "CALLS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mode, threads, tokens, calls = args.child
        print(json.dumps(child(mode, int(threads), int(tokens), int(calls))))
        return
    out: dict[str, Any] = {"cpus": len(os.sched_getaffinity(0))}
    if args.matrix:
        out["matrix"] = [cell(args.reps, args.tokens, busy, threads=t, raw_defaults=False)
                         for busy in (False, True) for t in range(1, out["cpus"] + 1)]
        if not args.json:
            for c in out["matrix"]:
                print(f"matrix threads={c['threads']} {'busy' if c['busy'] else 'idle'}: raw {c['raw']:.1f} "
                      f"seamkit {c['seamkit']:.1f} tokens/s  (load1 {c['load1']:.2f}; raw "
                      f"{[round(x, 1) for x in c['raw_all']]} seamkit {[round(x, 1) for x in c['seamkit_all']]})",
                      flush=True)
    out["idle"] = cell(args.reps, args.tokens, busy=False)
    out["busy"] = cell(args.reps, args.tokens, busy=True)
    out["schema_idle"] = schema_cell(args.reps, busy=False)
    out["schema_busy"] = schema_cell(args.reps, busy=True)
    out["ttft"] = ttft(args.ttft_reps)
    if args.json:
        print(json.dumps(out))
        return
    for name in ("idle", "busy"):
        c = out[name]
        load = f"load1 {c['load1']:.2f}, threads {c['threads']}"
        print(f"tokens/s raw {name}: {c['raw']:.1f} tokens/s  (target: reference, same settings as seamkit; {load})")
        print(f"tokens/s seamkit {name}: {c['seamkit']:.1f} tokens/s  (target: >= {TARGET_RATIO} x raw; {load})")
        print(f"seamkit/raw {name}: {c['ratio']:.3f}  (target: >= {TARGET_RATIO})")
        print(f"tokens/s raw with llama-cpp-python's defaults {name}: {c['plain']:.1f} tokens/s  (target: reference; "
              f"threads {os.cpu_count()}, OpenMP's default wait policy)")
    print(f"default threads: {out['idle']['threads']} idle, {out['busy']['threads']} with one busy core, "
          f"of {out['cpus']} CPUs  (target: the faster count in each case; see --matrix)")
    for name in ("idle", "busy"):
        c = out[f"schema_{name}"]
        load = f"load1 {c['load1']:.2f}, threads {c['threads']}"
        print(f"schema answer raw {name}: {c['raw']:.3f} s  (target: reference, seamkit's prompt and grammar; {load})")
        print(f"schema answer seamkit {name}: {c['seamkit']:.3f} s  (target: <= raw / {TARGET_RATIO}; {load})")
        print(f"schema answer seamkit threads=1 {name}: {c['seamkit1']:.3f} s  (target: reference, the default "
              f"must not be slower; load1 {c['load1']:.2f}, threads 1)")
    t = out["ttft"]
    print(f"ttft seamkit ask: {t['seamkit']:.3f} s  (target: reference; load1 {t['load1']:.2f})")
    print(f"ttft raw: {t['raw']:.3f} s  (target: reference)")
    print(f"ttft difference: {t['diff']:+.3f} s  (target: as small as possible; +0.45 s before issue 19)")


if __name__ == "__main__":
    main()
