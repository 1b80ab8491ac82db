"""``seamkit.ask``: one model-neutral call (a prompt in, an :class:`~seamkit._calls.answer.Answer`
out) on any installed provider, through the agent loop (typed output with one corrective turn,
middlewares, usage and cost accounting)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from seamkit._agent.agent import Agent
from seamkit._agent.output import OutputSpec, output_spec
from seamkit._calls.answer import Answer, Outcome, Session
from seamkit._calls.binding import Binding, CallLimits, is_secret_key, masked_options
from seamkit._middleware import Middleware
from seamkit._ports import LLMPort
from seamkit._runtime.concurrency import run_sync
from seamkit._runtime.context import RunContext
from seamkit.errors import (
    BudgetExceeded,
    ComponentNotFound,
    ConfigError,
    ConfigIssue,
    Failure,
    OutputValidationError,
    PluginError,
    ProviderError,
    UnsupportedFeature,
)
from seamkit.values import FrozenDict, LLMResult, Message, StreamEvent, Usage, freeze, thaw

if TYPE_CHECKING:
    from seamkit._plugins.registry import Registry

__all__ = ["ask", "ask_sync", "new_call_id", "scrub", "secret_option_values"]

log = logging.getLogger("seamkit.calls")

BUDGET_DISTRIBUTION = "seamkit-budget"
MAX_STEPS = 3  # the answer, one corrective turn, and one turn spare for a call to a tool nobody offered
MASK = "***"

MiddlewareSpec = Middleware | str | Mapping[str, Any]
"""A middleware callable, a registered middleware name, or ``{"use": name, **params}``."""


def new_call_id() -> str:
    """A fresh call id: ``call_`` + 32 random hex digits."""
    return "call_" + os.urandom(16).hex()


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with each of ``secrets`` (as is, JSON-escaped and ``repr``-escaped) replaced by
    ``***``; a short one (under 4 characters) only inside a longer one holding it, never on its own
    (:func:`seamkit._plugins.redact.mask_secrets`)."""
    from seamkit._plugins.redact import mask_secrets

    forms = {form for s in secrets if s
             for form in (s, json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1], repr(s)[1:-1]) if form}
    return mask_secrets(text, forms)


def _scrubbed_failure(exc: BaseException, secrets: Sequence[str]) -> Failure:
    f = Failure.of(exc)
    if not secrets:
        return f
    return Failure(f.type, scrub(f.message, secrets), f.failure_class, scrub(f.traceback, secrets))


def _registry(registry: Registry | None) -> Registry:
    if registry is not None:
        return registry
    from seamkit._plugins.registry import get_registry

    return get_registry()


def _middleware(reg: Registry, item: MiddlewareSpec, index: int) -> Middleware:
    if isinstance(item, str):
        built: Middleware = reg.build("middleware", item)
        return built
    if isinstance(item, Mapping):
        params = dict(item)
        name = params.pop("use", None)
        if not isinstance(name, str):
            raise ConfigError([ConfigIssue("a middleware mapping needs 'use: <name>'", f"middlewares[{index}]")])
        built = reg.build("middleware", name, params)
        return built
    if callable(item):
        return item
    raise TypeError(f"middlewares[{index}] must be a middleware, a name or {{'use': name, ...}}, got {item!r:.60}")


def _budget(reg: Registry, ceiling: Decimal) -> Middleware:
    try:
        spec = reg.resolve("middleware", "budget")
    except ComponentNotFound:
        raise ConfigError([ConfigIssue(
            f"a USD ceiling needs the 'budget' middleware, which is not installed: pip install {BUDGET_DISTRIBUTION}",
            "limits.max_cost_usd",
        )]) from None
    built: Middleware = spec.build({"max_cost_usd": str(ceiling)})
    return built


def secret_option_values(options: Mapping[str, Any]) -> list[str]:
    """The strings under secret-looking option keys (``api_key``, ``headers``...), to be masked in
    errors like a resolved credential."""
    found: list[str] = []

    def walk(v: Any) -> None:
        get = getattr(v, "get_secret_value", None)
        if callable(get):
            v = get()
        if isinstance(v, str):
            if len(v) >= 4:
                found.append(v)
        elif isinstance(v, Mapping):
            for x in v.values():
                walk(x)
        elif isinstance(v, list | tuple):
            for x in v:
                walk(x)

    for k, v in options.items():
        if is_secret_key(k):
            walk(v)
    return found


async def _build_provider(
    reg: Registry, binding: Binding, secrets: list[str], notes: list[str]
) -> LLMPort:
    """Resolve the binding's component, resolve its credential (now: this is dispatch), validate
    the parameters with the component's config model and build it."""
    spec = reg.resolve("provider", binding.provider)  # ComponentNotFound (with did-you-mean)
    try:
        cfg_model = spec.config_model()
    except Exception as exc:
        raise PluginError(
            f"provider {binding.provider!r} from {spec.distribution} {spec.version} cannot be loaded: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    fields: Mapping[str, Any] = getattr(cfg_model, "model_fields", None) or {}
    params: dict[str, Any] = dict(thaw(binding.options))
    secrets.extend(secret_option_values(params))
    if binding.model is not None:
        if "model" in fields:
            params["model"] = binding.model
        else:
            notes.append(f"provider {binding.provider!r} has no model setting; model {binding.model!r} was not sent")
    cred = binding.credential
    if cred is not None:
        if cred.field not in fields:
            raise ConfigError([ConfigIssue(
                f"provider {binding.provider!r} has no config field {cred.field!r} for credential {cred.label}",
                f"{binding.provider}.{cred.field}",
            )])
        value = await cred.resolve()
        secrets.append(value)
        from pydantic import SecretStr

        params[cred.field] = SecretStr(value)
    _check_options(binding.provider, cfg_model, params, secrets)
    try:
        port = spec.build(params)
    except ConfigError as exc:
        raise ConfigError([
            ConfigIssue(scrub(i.message, secrets), f"{binding.provider}.{i.path}" if i.path else binding.provider)
            for i in exc.issues
        ]) from None
    except PluginError as exc:
        raise PluginError(scrub(str(exc), secrets)) from None
    if not isinstance(port, LLMPort):
        raise PluginError(
            f"provider {binding.provider!r} built a {type(port).__name__}, which is not an LLMPort"
        )
    return port


def _check_options(provider: str, cfg_model: Any, params: Mapping[str, Any], secrets: Sequence[str]) -> None:
    """Validate ``params`` with the provider's config model, reporting problems as the YAML loader
    does: an unknown key is named with a close name and the allowed keys. Raises
    :class:`~seamkit.errors.ConfigError` (paths ``PROVIDER.key...``)."""
    import pydantic

    if not (isinstance(cfg_model, type) and issubclass(cfg_model, pydantic.BaseModel)):
        return  # no config model: the registry reports parameters it does not take
    try:
        cfg_model.model_validate(dict(params))
    except pydantic.ValidationError as exc:
        from seamkit.composition._check import Context, pydantic_issues

        ctx = Context(None, {}, {}, frozenset(), frozenset())
        pydantic_issues(ctx, exc, dict(params), (provider,), cfg_model, what=f" for provider {provider!r}")
        raise ConfigError([
            ConfigIssue(scrub(i.message, secrets), i.path) for i in ctx.issues
        ]) from None


async def _close(port: object) -> None:
    close = getattr(port, "aclose", None)
    if callable(close):
        try:
            await close()
        except Exception:  # the call's own outcome is what the caller must see
            log.debug("closing provider %s failed", type(port).__name__, exc_info=False)


def _history(resume: Session | None, system: str | None) -> list[Message]:
    history = list(resume.transcript) if resume is not None else []
    if system is not None:
        while history and history[0].role == "system":
            history.pop(0)
        history.insert(0, Message.system(system))
    return history


def _settings(
    binding: Binding, port: LLMPort, spec: OutputSpec | None, limits: CallLimits,
    temperature: float | None, seed: int | None, results: Sequence[LLMResult],
) -> FrozenDict:
    options = {k: v for k, v in masked_options(thaw(binding.options)).items()}
    s: dict[str, Any] = {
        "provider": binding.provider,
        "model": getattr(port, "model", binding.model),
        "max_tokens": limits.max_tokens,
        "temperature": temperature,
        "seed": seed,
        "output": "json_schema" if spec is not None else "text",
        "options": options,
        "limits": {
            "max_cost_usd": None if limits.max_cost_usd is None else str(limits.max_cost_usd),
            "wall_clock_s": limits.wall_clock_s,
            "max_tokens": limits.max_tokens,
        },
    }
    answered = [r.model for r in results if r.model]
    if answered:
        s["answered_by"] = answered[-1]
    frozen: FrozenDict = freeze(s)
    return frozen


async def ask(
    binding: Binding | str | None,
    prompt: str | Message,
    *,
    output: Any = None,
    limits: CallLimits | None = None,
    call_id: str | None = None,
    resume: Session | None = None,
    system: str | None = None,
    middlewares: Sequence[MiddlewareSpec] = (),
    registry: Registry | None = None,
    temperature: float | None = None,
    seed: int | None = None,
    on_text: Callable[[str], None] | None = None,
) -> Answer:
    """Ask ``binding``'s model ``prompt`` and return an :class:`~seamkit._calls.answer.Answer`.

    ``binding``: a :class:`~seamkit._calls.binding.Binding`, a ``"PROVIDER:MODEL"`` string, or
    ``None`` to reuse ``resume.binding``. The provider is built through the plugin registry for
    this call only, right before dispatch; its :class:`~seamkit._calls.binding.CredentialRef` is
    resolved then, into the config field it names, as a ``SecretStr``. ``output``: ``None`` for
    text; a JSON Schema mapping, a Python type pydantic can describe, or an
    :class:`~seamkit._agent.output.OutputSpec`: the reply is validated against the canonical schema,
    with one corrective turn. ``limits``: :class:`~seamkit._calls.binding.CallLimits`
    (``max_cost_usd`` needs the ``budget`` middleware from ``seamkit-budget``). ``call_id``: the
    id of this call (default a fresh ``call_...``; also the run id middlewares see).
    ``resume``: continue the conversation of an earlier ``answer.session``. ``system``: a system
    prompt (replaces the resumed one). ``middlewares``: callables, registered names or
    ``{"use": name, **params}``, outermost first; the budget middleware goes innermost, so every
    dispatch (each retry included) is charged. ``temperature``, ``seed``: sampling settings
    (``None``: the provider's default). ``on_text``: called with each piece of model text as it
    streams.

    Failures of the call itself are returned, not raised: outcome ``failed`` (a
    :class:`~seamkit.errors.ProviderError` keeps its failure class in ``answer.failure``),
    ``budget_exceeded``, ``timeout`` or ``invalid_output``; :meth:`Answer.raise_for_outcome`
    turns them into :class:`~seamkit._calls.answer.AskFailed`. When the failing request had been
    sent (the server answered with an error status, or text streamed before the failure), it
    counts as one request in ``answer.usage.requests`` and ``answer.unmetered_requests`` (its
    tokens unknown, so ``usage.cost`` is ``None``). A final answer stopped by the token limit
    (finish reason ``length``) is ``ok`` with the degradation "the answer was cut off at
    max_tokens (finish_reason length)" (typed output that does not parse is ``invalid_output``).

    Raises, before anything is sent: :class:`~seamkit.errors.ComponentNotFound` (unknown provider
    or middleware, with close names), :class:`~seamkit.errors.ConfigError` (options the provider's
    config model refuses, a missing credential, ``max_cost_usd`` without the budget middleware),
    :class:`~seamkit.errors.PluginError` (a provider that cannot be imported or built),
    :class:`~seamkit.errors.UnsupportedFeature` (a request the model cannot take, found by the
    provider before the first request is sent: e.g. a temperature for a reasoning model, a schema
    construct its structured-output dialect cannot express; a ``ValueError``),
    ``ValueError`` (an empty prompt, an invalid output schema), ``TypeError`` (bad argument types).
    No resolved credential appears in any of these messages. ``asyncio.CancelledError``
    propagates.
    """
    if binding is None:
        if resume is None:
            raise TypeError("binding is required unless resume= gives a session to continue")
        binding = resume.binding
    elif isinstance(binding, str):
        binding = Binding.parse(binding)
    elif not isinstance(binding, Binding):
        raise TypeError(f"binding must be a Binding or a 'PROVIDER:MODEL' string, got {type(binding).__name__}")
    if resume is not None and not isinstance(resume, Session):
        raise TypeError(f"resume must be an answer's session, got {type(resume).__name__}")
    if isinstance(prompt, str):
        if not prompt.strip():
            raise ValueError("the prompt is empty")
    elif not isinstance(prompt, Message):
        raise TypeError(f"prompt must be a str or a Message, got {type(prompt).__name__}")
    limits = limits if limits is not None else CallLimits()
    call_id = call_id or new_call_id()
    spec = output_spec(output)  # ValueError for an invalid JSON Schema
    reg = _registry(registry)
    mws = [_middleware(reg, m, i) for i, m in enumerate(middlewares)]
    if limits.max_cost_usd is not None:
        mws.append(_budget(reg, limits.max_cost_usd))
    history = _history(resume, system)

    secrets: list[str] = []
    notes: list[str] = []
    port = await _build_provider(reg, binding, secrets, notes)
    try:
        return await _run(binding, port, prompt, spec, limits, call_id, history, tuple(mws),
                          temperature, seed, on_text, secrets, notes)
    finally:
        await _close(port)


async def _run(
    binding: Binding, port: LLMPort, prompt: str | Message, spec: OutputSpec | None, limits: CallLimits,
    call_id: str, history: list[Message], mws: tuple[Middleware, ...], temperature: float | None,
    seed: int | None, on_text: Callable[[str], None] | None, secrets: list[str], notes: list[str],
) -> Answer:
    agent = Agent(port, name="ask", output=spec, middlewares=mws, max_steps=MAX_STEPS,
                  temperature=temperature, max_tokens=limits.max_tokens, seed=seed)
    ctx = RunContext(run_id=call_id)
    run = agent._start(prompt, ctx, history, None)
    results: list[LLMResult] = []
    callback_error: list[BaseException] = []
    turn_streamed = [False]  # whether the model turn in progress has streamed text or reasoning

    def emit(event: StreamEvent) -> None:
        if event.kind == "model_result" and event.result is not None:
            results.append(event.result)
            turn_streamed[0] = False
        elif event.kind in ("text", "reasoning") and event.text:
            turn_streamed[0] = True
        if event.kind == "text" and on_text is not None and event.text:
            try:
                on_text(event.text)
            except BaseException as exc:  # the caller's own callback: re-raised as it is below
                callback_error.append(exc)
                raise

    run.emit = emit
    outcome: Outcome = "ok"
    failure: Failure | None = None
    value: Any = None
    text = ""
    unmetered = 0
    deadline = asyncio.timeout(limits.wall_clock_s)
    try:
        async with deadline:
            result = await run.drive()
        if result.stop_reason == "completed":
            value = result.output
        else:  # max_steps: the model kept calling tools it was not offered
            outcome = "failed"
            failure = Failure("StepLimitReached", f"no answer after {MAX_STEPS} model turns "
                              "(the model kept calling tools it was not offered)")
    except Exception as exc:
        if callback_error and exc is callback_error[0]:
            raise
        if isinstance(exc, UnsupportedFeature) and not results and not turn_streamed[0]:
            raise  # the request cannot be made at all, and nothing was sent: a usage error
        if turn_streamed[0] or (isinstance(exc, ProviderError) and exc.status is not None):
            unmetered = 1  # the failing request was sent (the server answered or streamed); its usage is unknown
        if isinstance(exc, TimeoutError) and deadline.expired():
            outcome = "timeout"
            failure = Failure("Timeout", f"the call did not finish within wall_clock_s={limits.wall_clock_s}")
        elif isinstance(exc, BudgetExceeded):
            outcome = "budget_exceeded"
            failure = _scrubbed_failure(exc, secrets)
        elif isinstance(exc, OutputValidationError):
            outcome = "invalid_output"
            failure = _scrubbed_failure(exc, secrets)
            text = exc.raw
        else:
            outcome = "failed"
            failure = _scrubbed_failure(exc, secrets)
    transcript = tuple(run.transcript)
    if not text:
        for m in reversed(transcript):
            if m.role == "assistant":
                text = m.text
                break
    if outcome == "ok" and spec is None:
        value = text
    degradations = tuple(dict.fromkeys([*notes, *run.warnings]))
    session = Session(binding, transcript if outcome == "ok" else tuple(history))
    usage = run.usage + Usage(requests=unmetered) if unmetered else run.usage  # cost: unknown
    answer = Answer(
        call_id=call_id,
        outcome=outcome,
        value=value,
        text=text,
        transcript=transcript,
        usage=usage,
        unmetered_requests=unmetered,
        session=session,
        failure=failure,
        raw_usage=tuple(r.raw_usage for r in results),
        settings=_settings(binding, port, spec, limits, temperature, seed, results),
        degradations=degradations,
    )
    if failure is not None:
        log.info("ask %s (%s): %s: %s: %s", call_id, binding.label, outcome, failure.type, failure.message)
    else:
        log.debug("ask %s (%s): ok, %d requests", call_id, binding.label, usage.requests)
    return answer


def ask_sync(
    binding: Binding | str | None,
    prompt: str | Message,
    *,
    output: Any = None,
    limits: CallLimits | None = None,
    call_id: str | None = None,
    resume: Session | None = None,
    system: str | None = None,
    middlewares: Sequence[MiddlewareSpec] = (),
    registry: Registry | None = None,
    temperature: float | None = None,
    seed: int | None = None,
    on_text: Callable[[str], None] | None = None,
) -> Answer:
    """:func:`ask` from synchronous code (works inside a running event loop too, on a worker
    thread). Same arguments, result and errors."""
    return run_sync(ask(
        binding, prompt, output=output, limits=limits, call_id=call_id, resume=resume, system=system,
        middlewares=middlewares, registry=registry, temperature=temperature, seed=seed, on_text=on_text,
    ))

