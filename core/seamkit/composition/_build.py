"""Wiring a validated :class:`~seamkit.composition._models.Composition` into an
:class:`~seamkit._agent.agent.Agent`."""

from __future__ import annotations

import logging
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seamkit._agent.agent import Agent
from seamkit._agent.prompt import Prompt
from seamkit._plugins.redact import mask_message
from seamkit._plugins.registry import Registry, get_registry
from seamkit.composition._check import Context, component_label, resolve_slot, slot_name, validate_params
from seamkit.composition._models import (
    AgentConfig,
    AgentToolRef,
    ComponentRef,
    Composition,
    ContextConfig,
    GuardrailRef,
    StoreRef,
    is_secret_name,
)
from seamkit.composition._yaml import KeyPath, format_path
from seamkit.errors import ComponentBuildError, ConfigError, ConfigIssue, ToolDefinitionError

if TYPE_CHECKING:
    from seamkit.workflows import Workflow

__all__ = ["DEFAULT_RUN_QUEUE", "DEFAULT_STORE", "ComponentBuildError", "build_agent", "build_agents", "build_store",
           "capability_issues", "child_queue_issues",
           "middleware_order_issues", "tool_description_issues"]

log = logging.getLogger("seamkit.composition")

#: The store used for checkpoints when a composition does not say (``checkpoints:`` absent).
DEFAULT_STORE = "sqlite"


def build_agent(composition: Composition, *, registry: Registry | None = None) -> Agent:
    """Build the components of ``composition`` (calling their factories, in file order: model,
    tools, middlewares, guardrails, capabilities, checkpoints) and return the wired entry
    :class:`~seamkit._agent.agent.Agent` (``agent:``); the agents of ``agents:`` it names (as
    tools or handoff targets, transitively) are built first, see :func:`build_agents`.
    Without a ``checkpoints:`` key the agent checkpoints into :data:`DEFAULT_STORE` with its
    default configuration when that store is registered; ``checkpoints: null`` turns them off.

    ``registry`` defaults to :func:`~seamkit._plugins.registry.get_registry`. Factories run with
    the current working directory unchanged; relative path parameters were already resolved
    against the YAML file's directory by :func:`~seamkit.composition.load_composition`.

    The prompt is always a :class:`~seamkit._agent.prompt.Prompt` (``id`` defaults to the agent's
    name, ``version`` to ``"1"``), so ``{{variables}}`` work whichever way it was written.

    The capabilities (``agent.capabilities``) are compiled together for ``agent.version``
    (:func:`~seamkit.capabilities.compile_agent`) and kept as ``Agent.capabilities`` (``None``
    when there are none); each compile problem is a located issue (see :func:`capability_issues`).

    Raises :class:`~seamkit.errors.ConfigError` (located at the slot) when a component is no
    longer registered, its parameters no longer validate, or its factory raises ``ConfigError``
    (a configuration problem found only when building, e.g. a missing directory);
    :class:`ComponentBuildError` (a ``ConfigError`` subclass) when every problem is a failure to
    build instead (a module that fails to import, a factory raising anything else). Environment
    values are scrubbed from the messages.
    """
    entry = composition.agent.name or "agent"
    return _build_agents(composition, registry, entry)[entry]


def build_agents(composition: Composition, *, registry: Registry | None = None) -> Mapping[str, Agent]:
    """Every agent of ``composition`` by name: the entry agent (``agent:``) first, then those of
    ``agents:`` in file order. An agent is built after the agents it names (agent tools,
    handoffs), which it holds as values (one value per name: an agent named by two others is the
    same object in both). Middleware and store components written with the same configuration
    (``use``, ``from`` and parameters) in several agents are built once and shared, so that a
    ``budget`` middleware charges the spend of an agent run as a tool (a child run) to its
    caller's ceiling, and the agents checkpoint into one store. Raises what :func:`build_agent`
    raises, with every agent's problems."""
    return _build_agents(composition, registry, None)


def _build_agents(composition: Composition, registry: Registry | None, root: str | None) -> dict[str, Agent]:
    reg = registry if registry is not None else get_registry()
    c = composition
    ctx = _context(c)
    configs = c.all_agents()
    order: list[str] = []

    def needs(a: AgentConfig) -> list[str]:
        return [*(t.agent for t in a.tools if isinstance(t, AgentToolRef)), *(h.agent for h in a.handoffs)]

    def visit(name: str, seen: set[str]) -> None:  # the file was validated: no cycles, no unknown names
        if name in order or name in seen or name not in configs:
            return
        seen.add(name)
        for dep in needs(configs[name][1]):
            visit(dep, seen)
        order.append(name)

    for name in ([root] if root is not None else list(configs)):
        visit(name, set())
    failures: list[int] = []  # indices in ctx.issues of failures that are not configuration problems
    shared: dict[str, Any] = {}
    built: dict[str, Agent] = {}
    secrets = _component_secrets(c)
    for name in order:
        path, a = configs[name]
        agent = _build_one(ctx, reg, a, path, built, failures, shared, secrets)
        if agent is not None:
            built[name] = agent
    if ctx.issues:
        if len(failures) == len(ctx.issues):
            raise ComponentBuildError(ctx.issues)
        raise ConfigError(ctx.issues)
    return {name: built[name] for name in configs if name in built}


def _build_shared(ctx: Context, reg: Registry, ref: ComponentRef, path: KeyPath, failures: list[int],
                  shared: dict[str, Any]) -> Any:
    """:func:`_build`, once per configuration: the same middleware or store written alike in several
    agents is one object."""
    import json

    key = json.dumps([ref.kind, ref.use, ref.distribution, ref.params], sort_keys=True, default=repr)
    if key in shared:
        return shared[key]
    built = _build(ctx, reg, ref, path, failures)
    if built is not None:
        shared[key] = built
    return built


def _build_one(ctx: Context, reg: Registry, a: AgentConfig, base: KeyPath, agents: Mapping[str, Agent],
               failures: list[int], shared: dict[str, Any], secrets: frozenset[str]) -> Agent | None:
    """The agent of ``a`` (written at ``base``), its agent tools and handoff targets taken from
    ``agents``; ``None`` after adding located issues (also when an agent it names was not built)."""
    from seamkit._agent.as_tool import agent_tool
    from seamkit._agent.handoff import Handoff

    first = len(ctx.issues)
    model = _build(ctx, reg, a.model, (*base, "model"), failures)
    tools: list[Any] = []
    for i, t in enumerate(a.tools):
        tpath: KeyPath = (*base, "tools", i)
        if isinstance(t, AgentToolRef):
            tools.append(_agent_tool(ctx, reg, t, tpath, agents, failures, shared, agent_tool))
            continue
        for one in _tools_of(_build(ctx, reg, t, tpath, failures)):
            tools.append(one)
            _check_description(ctx, one, tpath, None)
    middlewares = [_build_shared(ctx, reg, m, (*base, "middlewares", i), failures, shared)
                   for i, m in enumerate(a.middlewares)]
    for issue in _order_issues(ctx, base, a.middlewares, middlewares):
        log.warning("%s", issue)
    context = a.context
    grounding: Any = None
    compactor: Any = None
    if context is not None:
        if context.grounding is not None:
            grounding = _build(ctx, reg, context.grounding, (*base, "context", "grounding"), failures)
        if context.compactor is not None:
            compactor = _build(ctx, reg, context.compactor, (*base, "context", "compactor"), failures)
    guardrails = _guards(ctx, reg, a.guardrails, failures, base)
    capabilities = _capabilities(ctx, reg, a, failures, base)
    store: Any = None
    if a.checkpoints is not None:
        store = _build_shared(ctx, reg, a.checkpoints, (*base, "checkpoints"), failures, shared)
    elif "checkpoints" not in a.model_fields_set and DEFAULT_STORE in reg.names("store"):
        store = _build_shared(ctx, reg, StoreRef(use=DEFAULT_STORE), base, failures, shared)
    builder = _request_builder(ctx, context, grounding, compactor, store, base) if context is not None else None
    handoffs: list[Handoff] = []
    for i, h in enumerate(a.handoffs):
        target = agents.get(h.agent)
        if target is None:  # it was not built: its own issues say why
            continue
        try:
            handoffs.append(Handoff(target, filter=h.filter, description=h.description))
        except (TypeError, ValueError) as exc:
            ctx.add(f"cannot hand off to {h.agent!r}: {exc}", (*base, "handoffs", i))
    if len(ctx.issues) > first or len(handoffs) < len(a.handoffs):
        return None
    name = a.name or "agent"
    prompt: Prompt | None = None
    if a.prompt is not None:
        p = a.prompt
        prompt = Prompt(p.template, id=p.id or name, version=p.version or "1")
    output = dict(a.output.json_schema) if a.output is not None else None
    checkpointer = None
    if store is not None:
        from seamkit._durability.checkpointer import Checkpointer

        try:
            checkpointer = Checkpointer(store, secrets=secrets)
        except TypeError as exc:
            ctx.add(str(exc), (*base, "checkpoints"))
            return None
    try:
        return Agent(
            model=model,
            name=name,
            prompt=prompt,
            tools=tuple(tools),
            output=output,
            middlewares=tuple(middlewares),
            tool_choice=a.tool_choice,
            reset_tool_choice=a.reset_tool_choice,
            max_steps=a.max_steps,
            max_parallel_tools=a.max_parallel_tools,
            parallel_side_effects=a.parallel_side_effects,
            temperature=a.settings.temperature,
            max_tokens=a.settings.max_tokens,
            seed=a.settings.seed,
            checkpointer=checkpointer,
            approvals=dict(a.approvals),
            request_builder=builder,
            guardrails=tuple(guardrails),
            capabilities=capabilities,
            handoffs=tuple(handoffs),
            max_tool_calls=a.max_tool_calls,
            max_tool_rounds=a.max_tool_rounds,
            disabled_tools=frozenset(a.disabled_tools),
            mode=a.mode,
        )
    except (ValueError, TypeError) as exc:
        ctx.add(f"cannot build the agent: {exc}", base)
        return None


def _agent_tool(ctx: Context, reg: Registry, t: AgentToolRef, path: KeyPath, agents: Mapping[str, Agent],
                failures: list[int], shared: dict[str, Any], make: Any) -> Any:
    """The agent tool of an ``{agent: NAME, ...}`` entry; ``None`` after adding issues (or when the
    agent it names was not built: its own issues say why)."""
    middlewares = [_build_shared(ctx, reg, m, (*path, "middlewares", i), failures, shared)
                   for i, m in enumerate(t.middlewares)]
    target = agents.get(t.agent)
    if target is None or any(m is None for m in middlewares):
        return None
    try:
        return make(target, name=t.name, description=t.description, input=t.input, max_depth=t.max_depth,
                    max_steps=t.max_steps, middlewares=middlewares, queue=t.queue_name())
    except (TypeError, ValueError) as exc:
        ctx.add(f"cannot offer agent {t.agent!r} as a tool: {exc}", path)
        return None


def _guards(ctx: Context, reg: Registry, refs: list[GuardrailRef], failures: list[int],
            base: KeyPath = ("agent",)) -> list[Any]:
    """The :class:`~seamkit._guardrails.Guard` of each ``agent.guardrails`` entry (issues located at
    the entry: a component that cannot act at a point of its ``at``, or is no guardrail)."""
    from seamkit._guardrails import Guard

    guards: list[Any] = []
    for i, ref in enumerate(refs):
        path: KeyPath = (*base, "guardrails", i)
        built = _build(ctx, reg, ref, path, failures)
        if built is None:
            continue
        try:
            guards.append(Guard(built, at=ref.at, name=ref.use, advisory=ref.advisory,
                                parallel=ref.parallel))
        except (TypeError, ValueError) as exc:
            at = (*path, "at") if ref.at is not None and isinstance(exc, ValueError) else path
            ctx.add(f"guardrail {ref.use!r}: {exc}", at)
    return guards


def _capabilities(ctx: Context, reg: Registry, a: AgentConfig, failures: list[int],
                  base: KeyPath = ("agent",)) -> Any:
    """Build each ``agent.capabilities`` entry and compile them for ``agent.version``: the
    :class:`~seamkit.capabilities.CompiledAgent`, or ``None`` when there are no capabilities or
    after adding located issues. An entry that does not build is reported by :func:`_build` and
    nothing is compiled (the missing capability would show up as false problems). The version is
    checked even without capabilities when the file sets it."""
    if a.capabilities:
        # the kernel plans and writes each request itself: what a tool-calling agent has does not fit
        for key in ("tools", "output", "guardrails", "context", "approvals", "handoffs"):
            if getattr(a, key, None):
                ctx.add(f"an agent with capabilities has no {key} (the kernel plans and writes each request "
                        "itself; a capability reaches the world through ports, not tools): remove one of the two",
                        (*base, key))
    built: list[Any] = []
    for i, ref in enumerate(a.capabilities):
        built.append(_build(ctx, reg, ref, (*base, "capabilities", i), failures))
    if any(b is None for b in built) or not (built or "version" in a.model_fields_set):
        return None
    from seamkit.capabilities import CompileError, compile_agent

    try:
        compiled = compile_agent(built, version=a.version)
    except CompileError as exc:
        _locate_problems(ctx, exc, built, base)
        return None
    return compiled if built else None


def _locate_problems(ctx: Context, error: Any, built: list[Any], base: KeyPath = ("agent",)) -> None:
    """One issue per compile problem, ``CODE: message`` (the code first: stable, greppable),
    located at the first ``agent.capabilities`` entry (in file order) whose capability the
    problem names (``id@version``); the other entries it names are listed in the message with
    their lines. A problem naming no entry (``INVALID_AGENT_VERSION``) is located at
    ``agent.version``."""
    entries: dict[str, list[int]] = {}
    for i, cap in enumerate(built):
        entries.setdefault(cap.ref, []).append(i)
    for problem in error.problems:
        named = sorted({i for ref in problem.ids for i in entries.get(ref, ())})
        message = f"{problem.code}: {problem.message}"
        if not named:
            ctx.add(message, (*base, "version") if problem.code == "INVALID_AGENT_VERSION" else
                    (*base, "capabilities"))
            continue
        others = []
        for i in named[1:]:
            at = ctx.value_position((*base, "capabilities", i))
            others.append(f"{format_path((*base, 'capabilities', i))}" + (f" (line {at.line})" if at else ""))
        if others:
            message += f" (also {', '.join(others)})"
        ctx.add(message, (*base, "capabilities", named[0]))


def capability_issues(composition: Composition, *, registry: Registry | None = None) -> list[ConfigIssue]:
    """The problems of ``composition``'s capabilities, located (``agent.capabilities[i]`` or
    ``agent.version``): builds the capabilities (only them; they are values, cheap to build) and
    compiles them for ``agent.version`` (:func:`~seamkit.capabilities.compile_agent`). Each
    compile problem is an issue ``CODE: message`` at the first entry it names, the other entries
    listed in the message. A capability that fails to build (its factory raises, or returns
    something that is not a :class:`~seamkit.capabilities.Capability`) is an issue too: the
    compiler cannot check an agent without it. ``[]`` when they compile."""
    reg = registry if registry is not None else get_registry()
    ctx = _context(composition)
    for base, a in composition.all_agents().values():
        _capabilities(ctx, reg, a, [], base)
    return ctx.issues


def _request_builder(ctx: Context, context: ContextConfig, grounding: Any, compactor: Any, store: Any,
                     base: KeyPath = ("agent",)) -> Any:
    """The :class:`~seamkit._request.RequestBuilder` of ``agent.context`` (``None`` after adding
    located issues: a memory component that is no grounding source, a component that is no
    compactor, ``record_grounding`` without a store)."""
    from seamkit._grounding import not_inferred
    from seamkit._request.builder import RequestBuilder

    ok = True
    g, c = context.grounding, context.compactor
    # built components were checked against their ports (_conforming); None here means a failure
    if (g is not None and grounding is None) or (c is not None and compactor is None):
        ok = False
    if context.record_grounding and store is None:
        ctx.add("record_grounding needs a store to record into: set checkpoints",
                (*base, "context", "record_grounding"))
        ok = False
    if not ok:
        return None
    return RequestBuilder(
        grounding=grounding,
        k=context.k,
        admit=not_inferred if context.admit == "recorded" else _admit_all,
        reground_every_turn=context.reground_every_turn,
        include_schema=context.include_schema,
        compactor=compactor,
        budget_tokens=context.budget_tokens,
        record_to=store if context.record_grounding else None,
    )


def _admit_all(item: Any) -> bool:
    return True


def output_secrets(c: Composition) -> frozenset[str]:
    """The environment values to mask in what is shown: :func:`_component_secrets` and the values
    of variables named like a secret (``${API_TOKEN}`` in a prompt or a path), each of
    :data:`MIN_SECRET_LENGTH` characters or more. A shorter one (a one-letter password) is masked
    only inside the longer value it was put into: that composed value and its URL user-info
    (``postgresql://user:g@host/db``, ``user:g@``: :func:`seamkit._plugins.redact.secret_contexts`),
    never on its own, which would garble every word holding that letter and show the secret by
    where the masks fall."""
    from seamkit._plugins.redact import MIN_SECRET_LENGTH, secret_contexts

    named = frozenset(s for s in c._named_secrets if len(s) >= MIN_SECRET_LENGTH and s.strip())
    out = set(_component_secrets(c) | named)
    short = {s for s in c._secrets | c._named_secrets if s.strip() and len(s) < MIN_SECRET_LENGTH}
    if short:
        in_secrets = [t for t in secret_texts(c) if t in c._env_texts]  # composed secret parameters
        for s in short:
            # a component's secret: inside the secret parameters it went into; a variable named
            # like a secret: inside any value it went into
            for value in (c._env_texts if s in c._named_secrets else in_secrets):
                out.update(secret_contexts(value, s))
    return frozenset(out)


def _component_secrets(c: Composition, candidates: frozenset[str] | None = None) -> frozenset[str]:
    """The environment values that are secrets of the components: those in a parameter whose name
    (at any depth: ``api_key``, ``headers.Authorization``, ``password``...) looks secret, or in a
    config field the component declares secret (pydantic ``SecretStr``/``SecretBytes`` at any
    depth: a DSN, a URL with a password, an MCP server's ``env``). A checkpoint must never hold
    them. Other environment values (a folder name, a limit, a team name in the prompt) are
    ordinary configuration and may be persisted. ``candidates``: the environment values to
    look for (default :meth:`Composition.env_values`)."""
    secrets = c.env_values() if candidates is None else candidates
    if not secrets:
        return secrets
    texts = secret_texts(c)
    return frozenset(sec for sec in secrets if any(sec in text for text in texts))


def secret_texts(c: Composition) -> list[str]:
    """Every text value of the components that is a secret, as composed (``${NAME}`` references
    substituted): a value under a parameter whose name looks secret (at any depth:
    ``api_key``, ``headers.Authorization``...) and a ``SecretStr``/``SecretBytes`` value of a
    component's config (at any depth), the rule that keeps values out of checkpoints."""
    refs: list[ComponentRef] = []
    for _, a in c.all_agents().values():
        refs.extend((a.model, *a.middlewares, *a.guardrails, *a.capabilities))
        for t in a.tools:
            refs.extend(t.middlewares if isinstance(t, AgentToolRef) else (t,))
        if a.checkpoints is not None:
            refs.append(a.checkpoints)
        if a.context is not None:
            refs.extend(r for r in (a.context.grounding, a.context.compactor) if r is not None)
    if c.workflow is not None:  # the components of workflow steps and its memory
        from seamkit.composition._models import CapabilityStepConfig, StepRef, ToolStepConfig

        for s in c.workflow.steps.values():
            if isinstance(s, ToolStepConfig):
                refs.append(s.tool)
            elif isinstance(s, CapabilityStepConfig):
                refs.append(s.capability)
            elif isinstance(s, StepRef):
                refs.append(s)
        if c.workflow.memory is not None:
            refs.append(c.workflow.memory)
    found: list[str] = []

    def walk(value: Any, secret: bool, depth: int = 0) -> None:
        if depth > 200:
            return
        if isinstance(value, str):
            if secret:
                found.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, secret or (isinstance(k, str) and is_secret_name(k)), depth + 1)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v, secret, depth + 1)

    def declared(value: Any, depth: int = 0) -> None:
        """The ``SecretStr``/``SecretBytes`` values of a config, at any depth (an MCP server's
        ``env``: a dict of them in a nested model)."""
        if depth > 8:
            return
        if hasattr(value, "get_secret_value"):
            raw = value.get_secret_value()
            found.append(raw if isinstance(raw, str) else raw.decode("utf-8", "replace"))
        elif isinstance(value, dict):
            for v in value.values():
                declared(v, depth + 1)
        elif isinstance(value, list | tuple):
            for v in value:
                declared(v, depth + 1)
        elif hasattr(type(value), "model_fields"):
            for name in type(value).model_fields:
                declared(getattr(value, name, None), depth + 1)

    for ref in refs:
        walk(dict(ref.params), False)
        declared(ref.config)
    return found


def build_store(composition: Composition | None, *, registry: Registry | None = None) -> Any:
    """Build only the checkpoint store of ``composition`` (``None``: the embedded default), for
    commands that inspect runs without building the agent. Returns ``None`` when checkpoints are
    off (``checkpoints: null``) or no store is configured and :data:`DEFAULT_STORE` is not
    installed. Raises :class:`~seamkit.errors.ConfigError` like :func:`build_agent`."""
    reg = registry if registry is not None else get_registry()
    if composition is None:
        if DEFAULT_STORE not in reg.names("store"):
            return None
        ctx = Context(None, {}, {}, frozenset(), frozenset(), set(), Path.cwd())
        ref: ComponentRef = StoreRef(use=DEFAULT_STORE)
        path: KeyPath = ("checkpoints",)
    else:
        a = composition.agent
        ctx = _context(composition)
        if a.checkpoints is not None:
            ref, path = a.checkpoints, ("agent", "checkpoints")
        elif "checkpoints" not in a.model_fields_set and DEFAULT_STORE in reg.names("store"):
            ref, path = StoreRef(use=DEFAULT_STORE), ("agent",)
        else:
            return None
    failures: list[int] = []
    store = _build(ctx, reg, ref, path, failures)
    if ctx.issues:
        if len(failures) == len(ctx.issues):
            raise ComponentBuildError(ctx.issues)
        raise ConfigError(ctx.issues)
    return store


def _context(c: Composition) -> Context:
    return Context(str(c.file) if c.file is not None else None, c._values, c._keys, c._secret_paths,
                   c._secrets, set(), c.base_dir)


def _order_issues(ctx: Context, base: KeyPath, refs: Sequence[Any], found: Sequence[Any]) -> list[ConfigIssue]:
    """A warning per middleware that declares ``sees_every_call`` listed after one that declares
    ``answers_without_next`` (:func:`~seamkit._middleware.hidden_calls`); ``found``: the built
    middlewares of ``refs`` (``agent.middlewares``), or their classes."""
    from seamkit._middleware import hidden_calls

    out: list[ConfigIssue] = []
    for i, j in hidden_calls(found):
        outer, inner = refs[i].use, refs[j].use
        path: KeyPath = (*base, "middlewares", j)
        at = ctx.value_position(path)
        out.append(ConfigIssue(
            f"middleware {inner!r} is listed after {outer!r} ({format_path((*base, 'middlewares', i))}), which "
            f"answers some calls itself (e.g. cached answers): those calls never reach {inner!r}; list {inner!r} "
            f"before {outer!r} for it to see every call", format_path(path), ctx.file, at.line if at else None,
            at.column if at else None))
    return out


def _declared_class(reg: Registry, ref: Any) -> Any:
    """What a middleware component declares about itself, without building it: the class its
    factory is annotated to return (else the factory); ``None`` when it cannot be loaded."""
    try:
        factory = reg.resolve("middleware", ref.use, ref.distribution).factory_callable()
        returned = typing.get_type_hints(factory).get("return")
    except Exception:  # not loadable or not annotated: building the agent reports the former
        return None
    return returned if isinstance(returned, type) else factory


def middleware_order_issues(composition: Composition, *, registry: Registry | None = None) -> list[ConfigIssue]:
    """Warnings about the order of each agent's ``middlewares``: a middleware meant to see every
    call (``audit``) listed after one that answers calls itself (``memoize``) misses those calls.
    Reads what each component's class declares (see :mod:`seamkit._middleware`); builds nothing."""
    reg = registry if registry is not None else get_registry()
    ctx = _context(composition)
    out: list[ConfigIssue] = []
    for base, a in composition.all_agents().values():
        out.extend(_order_issues(ctx, base, a.middlewares, [_declared_class(reg, m) for m in a.middlewares]))
    return out


#: The queue ``seamkit submit`` sends runs to and ``seamkit worker`` consumes unless told otherwise
#: (the seamkit-celery plugin's default; named here so that ``seamkit validate`` can warn about it).
DEFAULT_RUN_QUEUE = "seamkit"


def child_queue_issues(composition: Composition, caller_queue: str = DEFAULT_RUN_QUEUE) -> list[ConfigIssue]:
    """Warnings (located at the tool's ``queue:``) for agent tools that send their child runs to the
    queue their caller's runs are consumed from: ``caller_queue`` for every agent, and the tool's
    own queue for an agent that is itself a queued child there. A caller waiting for its child
    holds a worker process, so once every process of that queue holds a waiting caller, no child
    can run: a deadlock. Builds nothing."""
    from seamkit.composition._models import AgentToolRef

    ctx = _context(composition)
    agents = composition.all_agents()
    queued_on: dict[str, set[str]] = {}  # agent -> the queues its runs arrive on as a child
    for _, config in agents.values():
        for t in config.tools:
            if isinstance(t, AgentToolRef) and t.queue_name() is not None:
                queued_on.setdefault(t.agent, set()).add(str(t.queue_name()))
    out: list[ConfigIssue] = []
    for caller, (base, config) in agents.items():
        for i, t in enumerate(config.tools):
            if not isinstance(t, AgentToolRef) or (queue := t.queue_name()) is None:
                continue
            if queue == caller_queue:
                why = f"the queue {queue!r} is where its caller's runs are consumed too"
            elif queue in queued_on.get(caller, set()):
                why = f"agent {caller!r} itself runs as a child on the queue {queue!r}"
            else:
                continue
            path = (*base, "tools", i, "queue")
            at = ctx.value_position(path)
            out.append(ConfigIssue(
                f"agent {caller!r} sends its {t.agent!r} child runs to the queue {queue!r}, but {why}: a caller "
                "waiting for its child holds a worker process, so once every process there holds a waiting caller "
                "no child can run (a deadlock); give the children a queue of their own (queue: {name: children}) "
                "with its own workers", format_path(path), ctx.file, at.line if at else None,
                at.column if at else None))
    return out


def _check_description(ctx: Context, tool: Any, path: KeyPath, warnings: list[ConfigIssue] | None) -> None:
    """An empty description is an issue in ``ctx`` (the agent would refuse the tool); with
    ``warnings``, a very short one is added there."""
    from seamkit._tools.registry import missing_description, short_description
    from seamkit.values import ToolSchema

    schema = getattr(tool, "schema", None)
    if not isinstance(schema, ToolSchema):
        return  # not a tool at all: the agent says so
    if not schema.description.strip():
        ctx.add(missing_description(schema.name), path)
    elif warnings is not None:
        why = short_description(schema)
        if why is not None:
            at = ctx.value_position(path)
            warnings.append(ConfigIssue(why, format_path(path), ctx.file, at.line if at else None,
                                        at.column if at else None))


def tool_description_issues(
    composition: Composition, *, registry: Registry | None = None
) -> tuple[list[ConfigIssue], list[ConfigIssue]]:
    """``(errors, warnings)`` about what the model will be told about each tool of
    ``composition``: an error for a tool with an empty description (the agent refuses it), a
    warning for one shorter than :data:`~seamkit._tools.registry.MIN_DESCRIPTION_CHARS`
    characters. Builds the tools (only them) to read their descriptions. A tool whose factory
    refuses its configuration or whose definition cannot be described to a model
    (:class:`~seamkit.errors.ToolDefinitionError`, e.g. no docstring) is an error here too, as
    building the agent would refuse it (exit 2); a tool that fails to build for another reason
    (a run-time failure, exit 1 at run time) is skipped."""
    reg = registry if registry is not None else get_registry()
    ctx = _context(composition)
    errors = Context(ctx.file, ctx.values, ctx.keys, ctx.secret_paths, ctx.secrets, set(), ctx.base_dir)
    warnings: list[ConfigIssue] = []
    entries = [((*base, "tools", i), ref) for base, a in composition.all_agents().values()
               for i, ref in enumerate(a.tools)]
    for path, ref in entries:
        if isinstance(ref, AgentToolRef):
            if ref.description is not None and not ref.description.strip():
                errors.add(f"the description of agent tool {ref.agent!r} is empty: say what the agent does and "
                           "returns, or leave it out for the default", (*path, "description"))
            continue
        failures: list[int] = []
        first = len(ctx.issues)
        tools = [t for t in _tools_of(_build(ctx, reg, ref, path, failures)) if t is not None]
        found: list[ConfigIssue] = []
        for tool in tools:
            _check_description(errors, tool, path, found)
        if len(tools) > 1 and len(found) > 1:
            # a toolset (an MCP server's tools): one warning for the slot, not one per tool of a
            # server the user may not control
            names = [str(getattr(t.schema, "name", "?")) for t in tools
                     if any(f"tool {t.schema.name!r} has" in w.message for w in found)]
            shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
            first_issue = found[0]
            found = [ConfigIssue(
                f"{len(names)} tools of this toolset have very short descriptions ({shown}): a model cannot tell "
                "well when to call them; improve them at their source (the server) if you can",
                first_issue.path, first_issue.file, first_issue.line, first_issue.column)]
        warnings.extend(found)
        # what building the agent reports as a configuration problem (not a failure) is one here
        errors.issues.extend(issue for n, issue in enumerate(ctx.issues[first:], first) if n not in failures)
    return errors.issues, warnings


def _build(ctx: Context, reg: Registry, ref: ComponentRef, path: KeyPath, failures: list[int]) -> Any:
    raw: Any = {"use": ref.use, **ref.params}
    if ref.distribution is not None:
        raw["from"] = ref.distribution
    elif not ref.params and (*path, "use") not in ctx.values:
        raw = ref.use  # written as a bare name: report at the name
    spec, params = resolve_slot(ctx, reg, ref.kind, raw, path)
    if spec is None:
        return None
    config = ref.config
    try:
        model = spec.config_model()
    except Exception as exc:
        failures.append(len(ctx.issues))
        ctx.add(f"{component_label(spec)} cannot be loaded: its config model {spec.config!r} does not import: "
                f"{type(exc).__name__}: {mask_message(str(exc))}", path)
        return None
    if model is not None and not isinstance(config, model):
        ok, config = validate_params(ctx, spec, params, path)
        if not ok:
            return None
    try:
        factory = spec.factory_callable()
    except Exception as exc:
        failures.append(len(ctx.issues))
        ctx.add(f"{component_label(spec)} cannot be loaded: its factory {spec.factory!r} does not import: "
                f"{type(exc).__name__}: {mask_message(str(exc))}", path)
        return None
    try:
        built = factory(config) if model is not None else factory()
        if spec.kind == "tool":
            # a @tool builds its schema on first use: what cannot be described to a model shows here
            getattr(built, "schema", None)
    except ToolDefinitionError as exc:  # the plugin's tool cannot be described to a model: fix its definition
        ctx.add(f"{component_label(spec)}: {exc}", path)
        return None
    except ConfigError as exc:  # the component found a problem in its configuration
        for issue in exc.issues or (ConfigIssue(str(exc)),):
            at = (*path, issue.path) if issue.path in ref.params else path
            key = f"{issue.path}: " if issue.path and at == path else ""
            ctx.add(f"{spec.kind} {spec.name!r}: {key}{issue.message}", at)
        return None
    except (Exception, SystemExit) as exc:  # sys.exit in a factory is its failure, not the end of the command
        failures.append(len(ctx.issues))
        ctx.add(f"building {spec.kind} {spec.name!r} failed: {type(exc).__name__}: {mask_message(str(exc))}",
                path)
        return None
    return _conforming(ctx, spec, built, path)


def _tools_of(built: Any) -> list[Any]:
    """The tools a tool slot's component stands for: each tool of a toolset
    (:class:`~seamkit._ports.ToolsetPort`), else the component itself (``None`` when it was not
    built: the agent is not built either)."""
    from seamkit._ports import ToolsetPort

    if built is not None and not hasattr(built, "schema") and isinstance(built, ToolsetPort):
        return list(built.tools)
    return [built]


def _conforming(ctx: Context, spec: Any, built: Any, path: KeyPath) -> Any:
    """``built`` when it satisfies the port of its slot (``agent.model``: the model port,
    ``agent.checkpoints``: the checkpoint port...); else ``None``, with an issue at the slot naming
    each missing or wrong member. In a tool slot a toolset (:class:`~seamkit._ports.ToolsetPort`)
    conforms when each of its tools does."""
    from seamkit._plugins.ports_check import _a, port_problems, slot_port

    port = slot_port(spec.kind, slot_name(path) if path != ("agent",) else "checkpoints")
    inner = _tools_of(built) if spec.kind == "tool" else [built]
    if port is not None and inner != [built]:
        problems = [f"tool {i}: {p}" for i, t in enumerate(inner) for p in port_problems(t, port)]
        if not problems:
            return built
        ctx.add(f"{component_label(spec)} built a toolset whose tools do not satisfy {port.label}: "
                f"{'; '.join(problems)}", path)
        return None
    problems = port_problems(built, port) if port is not None else []
    if port is None or not problems:
        return built
    ctx.add(f"{component_label(spec)} built {_a(type(built).__name__)}, which does not satisfy {port.label}: "
            f"{'; '.join(problems)}", path)
    return None



def build_workflow(composition: Composition, *, registry: Registry | None = None) -> Workflow:
    """The :class:`~seamkit.workflows.Workflow` of ``composition.workflow`` (its steps built in
    file order: agents from :func:`build_agents`, tool, capability and step components by their
    factories, gates), checkpointing into the entry agent's checkpoint store, with these services
    for step components: ``model`` (the entry agent's model), ``agents`` (name -> agent),
    ``store`` (the checkpoint store, when there is one) and, with ``workflow.memory``,
    ``embeddings`` and ``vectors`` (its embedding model and vector store).

    Raises ``ValueError`` when the composition has no ``workflow:``; what :func:`build_agents`
    raises; then, with every step's (and the memory's) problems at once,
    :class:`ComponentBuildError` when each is a component failing to build, a plain
    :class:`~seamkit.errors.ConfigError` otherwise."""
    from seamkit.composition._models import (
        AgentStepConfig,
        CapabilityStepConfig,
        GateStepConfig,
        StepRef,
        ToolStepConfig,
    )
    from seamkit.workflows import Step, Workflow, agent_step, capability_step, function_step, gate, tool_step

    c = composition
    w = c.workflow
    if w is None:
        raise ValueError("the composition has no workflow")
    reg = registry if registry is not None else get_registry()
    agents = build_agents(c, registry=reg)
    ctx = _context(c)
    failures: list[int] = []
    steps: list[Step] = []
    for name, s in w.steps.items():
        path: KeyPath = ("workflow", "steps", name)
        pos = c.position(path)
        origin = f"{c.file.name if c.file else '<text>'}:{pos.line}" if pos is not None else None
        common: dict[str, Any] = {"consumes": tuple(s.consumes), "emits": tuple(s.emits), "join": s.join,
                                  "origin": origin}
        if isinstance(s, AgentStepConfig):
            steps.append(agent_step(name, agents[s.agent], pick=s.pick, queue=s.queue_name(), **common))
        elif isinstance(s, GateStepConfig):
            steps.append(gate(name, s.gate, on_yes=s.on_yes, on_no=s.on_no, **common))
        elif isinstance(s, ToolStepConfig):
            built = _build(ctx, reg, s.tool, (*path, "tool"), failures)
            if built is not None:
                steps.append(tool_step(name, built, **common))
        elif isinstance(s, CapabilityStepConfig):
            built = _build(ctx, reg, s.capability, (*path, "capability"), failures)
            if built is not None:
                steps.append(capability_step(name, built, **common))
        else:
            assert isinstance(s, StepRef)
            built = _build(ctx, reg, s, path, failures)
            if built is not None:
                steps.append(function_step(built, name=name, **common))
    memory = None
    if w.memory is not None:
        memory = _build(ctx, reg, w.memory, ("workflow", "memory"), failures)
        if memory is not None and not (hasattr(memory, "embedder") and hasattr(memory, "vectors")):
            ctx.add(f"workflow.memory: {w.memory.use!r} has no embedding model and vector store (embedder, "
                    "vectors): use a memory component such as vector_memory", ("workflow", "memory"))
    if ctx.issues:
        if len(failures) == len(ctx.issues):
            raise ComponentBuildError(ctx.issues)
        raise ConfigError(ctx.issues)
    entry = agents[c.agent.name or "agent"] if (c.agent.name or "agent") in agents else next(iter(agents.values()))
    cp = entry.checkpointer
    services: dict[str, Any] = {"model": entry.model, "agents": dict(agents)}
    if cp is not None and cp.store is not None:
        services["store"] = cp.store
    if memory is not None:
        services["embeddings"], services["vectors"] = memory.embedder, memory.vectors
    stem = c.file.stem if c.file is not None else "workflow"
    return Workflow(w.name or stem, tuple(steps), tuple(w.outcomes), tuple(w.external), w.max_concurrency,
                    max_activations=w.max_activations, checkpointer=cp, services=services)
