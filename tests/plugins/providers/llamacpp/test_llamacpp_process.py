"""Process-level behaviour of seamkit-llamacpp, in subprocesses with the real bundled model.

- Ctrl-C (SIGINT) during a generation ends the process normally (exit 130), never with a crash
  (SIGSEGV in libggml-cpu when the process exits, or the model is freed, while a worker thread is
  still inside llama.cpp). Each scenario is repeated to make the race likely.
- With ``verbose: false`` llama.cpp writes nothing on stderr (fd 2).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SEAMKIT = Path(sys.executable).with_name("seamkit")
THREADS = min(2, os.cpu_count() or 1)

# Streams a long free-text generation; prints STREAMING once the first text delta arrived.
# mode "runner": asyncio.run (as `seamkit run`): Ctrl-C cancels the task, the stream closes.
# mode "abandon": a bare loop; Ctrl-C raises KeyboardInterrupt out of run_until_complete and the
# stream, its task and the loop are left open while the interpreter exits.
DRIVER = textwrap.dedent(
    f"""\
    import asyncio, sys
    from seamkit.values import ChatRequest, Message
    from seamkit_llamacpp.config import LlamaCppConfig
    from seamkit_llamacpp.provider import LlamaCppProvider

    provider = LlamaCppProvider(LlamaCppConfig(threads={THREADS}))
    request = ChatRequest((Message.user("Tell me a very long story about the sea."),), max_tokens=1500)

    async def consume() -> None:
        announced = False
        async for delta in provider.stream(request):
            if delta.text and not announced:
                print("STREAMING", flush=True)
                announced = True
        print("FINISHED", flush=True)

    try:
        if sys.argv[1] == "runner":
            asyncio.run(consume())
        else:
            asyncio.new_event_loop().run_until_complete(consume())
    except KeyboardInterrupt:
        print("INTERRUPTED", flush=True)
        sys.exit(130)
    """
)

STORY_YAML = textwrap.dedent(
    f"""\
    seamkit: 1
    agent:
      name: story
      model: {{use: llamacpp, threads: {THREADS}}}
      prompt: You tell long stories.
      settings: {{temperature: 0, seed: 42, max_tokens: 1500}}
    """
)


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_while_streaming(
    cmd: list[str], pause: float, marker: bytes, cwd: Path | None = None
) -> tuple[int, str, float]:
    """Start ``cmd``, wait for ``marker`` (empty: any output) on its stdout, sleep ``pause`` seconds, send SIGINT.
    Returns ``(exit code, stderr, seconds from SIGINT to exit)``."""
    # A shell runs background jobs with SIGINT ignored, and children inherit that: restore it.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_sigint, cwd=cwd)
    assert proc.stdout is not None
    try:
        seen = b""
        while not seen or marker not in seen:
            chunk = proc.stdout.read1(256)
            assert chunk, f"exited before streaming: {proc.wait()}, {proc.stderr.read()!r}"  # type: ignore[union-attr]
            seen += chunk
        time.sleep(pause)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, err = proc.communicate(timeout=20)
        return proc.returncode, err.decode(errors="replace"), time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("mode", "pauses"),
    [
        ("runner", (0.0, 0.3)),
        # Before the fix this crashed every time (exit -11): the daemon worker kept generating
        # while the interpreter exited.
        ("abandon", (0.0, 0.2)),
    ],
)
def test_sigint_during_generation_exits_normally(tmp_path: Path, mode: str, pauses: tuple[float, ...]) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    results = [interrupt_while_streaming([sys.executable, str(driver), mode], p, b"STREAMING") for p in pauses]
    codes = [code for code, _, _ in results]
    assert codes == [130] * len(results), [(code, err[-500:]) for code, err, _ in results]
    for _, err, took in results:
        assert "Fatal Python error" not in err and "Segmentation" not in err
        assert took < 10  # the worker stops at its next token


def test_ctrl_c_in_seamkit_run_exits_130(tmp_path: Path) -> None:
    composition = tmp_path / "story.yaml"
    composition.write_text(STORY_YAML, encoding="utf-8")
    cmd = [str(SEAMKIT), "run", str(composition), "Tell me a very long story about the sea."]
    code, err, _ = interrupt_while_streaming(cmd, 0.1, b"", cwd=tmp_path)  # its checkpoints go to tmp_path
    assert code == 130, err[-500:]
    assert "interrupted" in err and "Traceback" not in err and "llama_" not in err
    listed = subprocess.run([str(SEAMKIT), "runs", "list", "--json"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert listed.returncode == 0, listed.stderr
    # interrupted, not failed: it stays running with its lease released, so `seamkit resume` continues it
    assert [r["status"] for r in json.loads(listed.stdout)] == ["running"]


LOAD = textwrap.dedent(
    f"""\
    import asyncio, sys
    from seamkit.values import ChatRequest, Message
    from seamkit_llamacpp.config import LlamaCppConfig
    from seamkit_llamacpp.provider import LlamaCppProvider

    provider = LlamaCppProvider(LlamaCppConfig(threads={THREADS}, verbose=sys.argv[1] == "verbose"))
    result = asyncio.run(provider.chat(ChatRequest((Message.user("Hi"),), max_tokens=2)))
    sys.stdout.write(str(result.usage.output_tokens))
    """
)


@pytest.mark.parametrize("verbose", [False, True])
def test_llama_cpp_writes_to_stderr_only_when_verbose(tmp_path: Path, verbose: bool) -> None:
    script = tmp_path / "load.py"
    script.write_text(LOAD, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), "verbose" if verbose else "quiet"], capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert done.stdout == b"2"
    if verbose:
        assert b"llama_context" in done.stderr
    else:
        assert done.stderr == b""


def test_native_logs_go_to_the_python_logger_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    import asyncio

    from seamkit.values import ChatRequest, Message
    from seamkit_llamacpp.config import LlamaCppConfig
    from seamkit_llamacpp.provider import LlamaCppProvider

    # n_ctx 320: a model of its own (models are cached per path, n_ctx, threads...), so it loads here.
    provider = LlamaCppProvider(LlamaCppConfig(threads=THREADS, n_ctx=320))
    with caplog.at_level("DEBUG", logger="seamkit_llamacpp.llama_cpp"):
        asyncio.run(provider.chat(ChatRequest((Message.user("Hi"),), max_tokens=1)))
    native = [r for r in caplog.records if r.name == "seamkit_llamacpp.llama_cpp"]
    assert native and all(r.levelname == "DEBUG" for r in native)
    assert any("using full-size SWA cache" in r.getMessage() for r in native)


ORPHAN = textwrap.dedent(
    f"""\
    import asyncio, threading
    from seamkit.errors import ProviderError
    from seamkit.values import ChatRequest, Message
    from seamkit_llamacpp.config import LlamaCppConfig
    from seamkit_llamacpp.provider import LlamaCppProvider

    provider = LlamaCppProvider(LlamaCppConfig(threads={THREADS}))
    streaming = threading.Event()

    async def consume() -> None:
        request = ChatRequest((Message.user("Tell me a very long story about the sea."),), max_tokens=1500)
        try:
            async for delta in provider.stream(request):
                streaming.set()
        except ProviderError as exc:
            print("ERROR", exc.failure_class.value, exc, flush=True)

    threading.Thread(target=lambda: asyncio.run(consume())).start()
    streaming.wait()
    print("MAIN DONE", flush=True)
    """
)


def test_a_stream_consumed_in_another_thread_ends_with_an_error_when_the_main_thread_exits(tmp_path: Path) -> None:
    script = tmp_path / "orphan.py"
    script.write_text(ORPHAN, encoding="utf-8")
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    main_done, error = done.stdout.splitlines()
    assert main_done == "MAIN DONE"
    assert error.startswith("ERROR unknown ") and "the interpreter is shutting down" in error
    assert time.monotonic() - started < 20  # not the 1500 tokens asked for
