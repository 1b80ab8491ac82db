"""Loading and validating a composition file."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import pydantic

from seamkit._plugins.registry import ComponentSpec, Registry, get_registry
from seamkit.composition._check import (
    Context,
    _value_at,
    check_slot,
    did_you_mean,
    is_bool_field,
    iter_slots,
    key_index,
    pydantic_issues,
)
from seamkit.composition._models import AgentConfig, ComponentRef, Composition, _Model, is_secret_name
from seamkit.composition._overrides import Override, apply_overrides, relabel
from seamkit.composition._yaml import Document, KeyPath, Position, clip, format_path, parse_yaml, shown
from seamkit.errors import ConfigError, ConfigIssue

__all__ = ["FORMAT_VERSION", "MAX_FILE_BYTES", "load_composition", "loads_composition"]

FORMAT_VERSION = 1
#: Largest composition file accepted, in bytes (a composition is a small hand-written file).
MAX_FILE_BYTES = 1024 * 1024
_TOOL_CHOICES = ("auto", "required", "none")


def load_composition(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str] | None = None,
    registry: Registry | None = None,
    overrides: Sequence[Override] = (),
) -> Composition:
    """Read and validate the composition at ``path`` (YAML, ``seamkit: 1``).

    Everything is checked without building any component: the YAML itself (syntax, duplicate
    keys, tags, YAML 1.1 boolean words such as ``NO``/``on``), ``${ENV}`` references, the format's
    keys and types, each component name against ``registry`` (default: the process-wide
    :func:`~seamkit._plugins.registry.get_registry`), each component's parameters against its
    config model, the output JSON Schema, ``tool_choice`` and tool-name uniqueness.

    Relative paths: a component parameter whose config field is annotated as a path
    (``pathlib.Path``, pydantic ``FilePath``/``DirectoryPath``/``NewPath``, also inside lists and
    nested models) is resolved relative to *the YAML file's directory*, so a composition behaves
    the same from any working directory. Parameters typed as plain ``str`` are passed as written.

    ``env`` replaces ``os.environ`` for ``${NAME}`` interpolation (tests). The agent's ``name``
    defaults to the file name without its extension.

    Files larger than :data:`MAX_FILE_BYTES` (1 MiB) and nesting deeper than
    :data:`~seamkit.composition._yaml.MAX_DEPTH` levels are refused. The output JSON Schema's
    ``$ref`` are resolved at load time, without fetching anything: a remote or unresolvable
    ``$ref`` is an error.

    Raises :class:`~seamkit.errors.ConfigError` listing *every* problem found, each with its key
    path, file, line and column; values from the environment never appear in messages.

    ``overrides`` (:mod:`seamkit.composition._overrides`: the command line's ``-m`` and ``-o``) are
    applied to the parsed document before it is validated; a problem in an overridden value is
    labelled with the override (``-o model.n_ctx``) instead of a file position.
    """
    p = Path(path)
    try:
        with p.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError([ConfigIssue(f"cannot read the file: {exc.strerror or exc}", "", str(p))]) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError([ConfigIssue(_too_big(), "", str(p))])
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise ConfigError([ConfigIssue("the file is not valid UTF-8 text", "", str(p), line, col)]) from None
    return loads_composition(text, file=p, env=env, registry=registry, overrides=overrides)


def loads_composition(
    text: str,
    *,
    file: str | os.PathLike[str] | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    registry: Registry | None = None,
    overrides: Sequence[Override] = (),
) -> Composition:
    """Like :func:`load_composition`, from YAML ``text``. ``file`` is used in messages and for the
    default agent name and ``base_dir`` (which defaults to the file's directory, else the current
    directory). Raises :class:`~seamkit.errors.ConfigError`."""
    reg = registry if registry is not None else get_registry()
    fpath = Path(file) if file is not None else None
    if len(text) > MAX_FILE_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise ConfigError([ConfigIssue(_too_big(), "", str(fpath) if fpath is not None else None)])
    try:
        return _loads(text, fpath, base_dir, env, reg, overrides)
    except RecursionError:  # a safety net: nesting is limited while reading the YAML
        raise ConfigError([ConfigIssue("the composition is nested too deeply", "",
                                       str(fpath) if fpath is not None else None)]) from None


def _too_big() -> str:
    return (f"the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; a composition is a small YAML "
            "file (is this the right file?)")


def _loads(text: str, fpath: Path | None, base_dir: str | os.PathLike[str] | None,
           env: Mapping[str, str] | None, reg: Registry, overrides: Sequence[Override] = ()) -> Composition:
    if not overrides:
        return _loads_doc(parse_yaml(text, env), fpath, base_dir, reg)
    doc = parse_yaml(text, env)
    if not doc.empty and isinstance(doc.data, Mapping) and not doc.problems:
        data, placed, problems = apply_overrides(doc.data, overrides, reg, frozenset(Composition.model_fields))
        if problems:
            raise ConfigError(problems)
        doc.data = data
        for path, _label in placed:  # the file no longer holds these values: forget where they were
            for where in (doc.values, doc.keys):
                for k in [k for k in where if k[: len(path)] == path and len(k) > len(path)]:
                    del where[k]
            _add_secrets(doc, path, _find_value(data, path),  # -o api_key=...: masked too
                         any(isinstance(p, str) and is_secret_name(p) for p in path))
    else:
        placed = []
    try:
        return _loads_doc(doc, fpath, base_dir, reg)
    except ConfigError as exc:
        if type(exc) is not ConfigError:
            raise
        raise ConfigError(relabel(exc.issues, placed)) from None


def _add_secrets(doc: Document, path: KeyPath, value: Any, secret: bool, depth: int = 0) -> None:
    """Mask, as the file's ``${...}`` secrets, the texts an override put in a secret place
    (under a key named like a secret, at any depth: ``-o 'model={use: x, api_key: ...}'``) or
    that look like a secret (a URL with a password, ``Bearer ...``)."""
    from seamkit._plugins.redact import mask_message

    if depth > 100:
        return
    if isinstance(value, str):
        if value and (secret or mask_message(value) != value):
            doc.secrets.add(value)
            doc.secret_paths.add(path)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _add_secrets(doc, (*path, k), v, secret or (isinstance(k, str) and is_secret_name(k)), depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _add_secrets(doc, (*path, i), v, secret, depth + 1)


def _find_value(data: Any, path: KeyPath) -> Any:
    for p in path:
        try:
            data = data[p]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _loads_doc(doc: Document, fpath: Path | None, base_dir: str | os.PathLike[str] | None,
               reg: Registry) -> Composition:
    base = Path(base_dir) if base_dir is not None else (fpath.parent if fpath is not None else Path.cwd())
    base = base.resolve()
    ctx = Context(str(fpath) if fpath is not None else None, doc.values, doc.keys, doc.secret_paths,
                  doc.secrets, set(doc.poisoned), base, flagged=set(doc.flagged), aliases=doc.aliases)
    for pr in doc.problems:
        message = pr.message
        if pr.path in doc.flagged and is_bool_field(reg, Composition, doc.data, pr.path):
            word = _value_at(doc.data, pr.path)
            message = (f"{shown(word)} is read as a boolean only by YAML 1.1 tools (others read text); this "
                       f"field takes true or false: write true or false")
        ctx.add(message, pr.path, pr.position)
    if doc.empty:
        ctx.add("the file is empty; a composition starts with 'seamkit: 1' and has an 'agent:' mapping",
                (), Position(1, 1))
    data = doc.data
    if doc.problems and data is None and not doc.values:
        raise ConfigError(ctx.issues)
    if not doc.empty and not isinstance(data, Mapping):
        if () not in ctx.poisoned:
            ctx.add(f"the top level must be a mapping with 'seamkit: 1' and 'agent:', not {_kind(data)}", ())
        raise ConfigError(ctx.issues)
    if doc.empty:
        raise ConfigError(ctx.issues)
    ctx.known_keys = key_index(reg, Composition, data)  # for "belongs under ..." hints on unknown keys
    _check_version(ctx, data)
    slots = _check_slots(ctx, reg, data)
    ctx.toolsets = {path for path, (spec, _) in slots.items() if spec.toolset}
    comp = _validate_structure(ctx, data)
    _cross_checks(ctx, data, fpath.stem if fpath is not None else "agent")
    if ctx.issues or comp is None:
        raise ConfigError(_sorted(ctx.issues))
    _attach(comp, slots, doc, ctx, fpath)
    return comp


def _kind(value: Any) -> str:
    if value is None:
        return "an empty value"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string"


def _as_written(value: Any) -> str:
    """A scalar shown the way YAML spells it (``true``, ``null``), not Python's ``True``/``None``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null (an empty value)"
    if isinstance(value, list | Mapping):
        return _kind(value)
    return shown(value)


def _sorted(issues: list[ConfigIssue]) -> list[ConfigIssue]:
    return sorted(issues, key=lambda i: (i.line or 0, i.column or 0))


def _check_version(ctx: Context, data: Mapping[str, Any]) -> None:
    if "seamkit" not in data:
        ctx.add(f"missing format version: add 'seamkit: {FORMAT_VERSION}' at the top of the file", (),
                ctx.value_position(()))
        ctx.poisoned.add(("seamkit",))
        return
    v = data["seamkit"]
    if ctx.is_poisoned(("seamkit",)):
        return
    if v != FORMAT_VERSION or isinstance(v, bool):
        if isinstance(v, str) and v.strip() == str(FORMAT_VERSION):
            ctx.add(f"the format version must be the number {FORMAT_VERSION}, unquoted: write "
                    f"'seamkit: {FORMAT_VERSION}'", ("seamkit",))
        else:
            shown = "(from the environment)" if ctx.from_env(("seamkit",)) else _as_written(v)
            ctx.add(f"unsupported format version {shown}; this seamkit reads 'seamkit: {FORMAT_VERSION}' "
                    f"(the number {FORMAT_VERSION}, unquoted)", ("seamkit",))
        ctx.poisoned.add(("seamkit",))


def _validate_structure(ctx: Context, data: Mapping[str, Any]) -> Composition | None:
    try:
        return Composition.model_validate(data)
    except pydantic.ValidationError as exc:
        pydantic_issues(ctx, exc, data, (), Composition)
        return None


def _check_slots(ctx: Context, reg: Registry, data: Mapping[str, Any]) -> dict[KeyPath, tuple[ComponentSpec, Any]]:
    out: dict[KeyPath, tuple[ComponentSpec, Any]] = {}
    for path, slot, raw in iter_slots(Composition, data):
        if ctx.is_poisoned(path) or path in ctx.flagged:
            continue
        spec, config, ok = check_slot(ctx, reg, slot, raw, path)
        if spec is not None and ok:
            out[path] = (spec, config)
    return out


def _tool_names(tools: Any) -> list[tuple[int, str, str | None]]:
    """``(index, tool name, agent)`` of each ``tools:`` entry: a component's name (``agent``
    ``None``), or the name the Agent gives an agent tool (its ``name``, default its agent's, made a
    tool name by :func:`~seamkit._agent.as_tool.agent_tool_name`) with the name as written."""
    from seamkit._agent.as_tool import agent_tool_name

    names: list[tuple[int, str, str | None]] = []
    if isinstance(tools, list):
        for i, t in enumerate(tools):
            if isinstance(t, Mapping) and "agent" in t and "use" not in t:
                written = t.get("name") or t.get("agent")
                if isinstance(written, str):
                    names.append((i, agent_tool_name(written), written))
            elif isinstance(name := t.get("use") if isinstance(t, Mapping) else t, str):
                names.append((i, name, None))
    return names


def _claim(ctx: Context, seen: dict[str, str], name: str, source: str, at: KeyPath) -> None:
    """Record the tool ``name`` made by ``source`` (e.g. ``agent.tools[1] (agent 'h 1')``); when an
    earlier entry made the same name, an issue at ``at`` naming both entries (the Agent would refuse
    the duplicate only when the file is run)."""
    if name not in seen:
        seen[name] = source
        return
    # an agent tool's or handoff's source says what its name was made from, in parentheses: then
    # say how names are made (a plain component entry is named as written)
    how = ("" if not (source.endswith(")") or seen[name].endswith(")")) else
           " (an agent tool is named after its 'name:' or agent with characters other than letters, digits, "
           "_ and - replaced by _, a handoff's tool is transfer_to_<agent> likewise)")
    ctx.add(f"duplicate tool {shown(name)}: made by {source} and by {seen[name]}; tool names must be unique{how}",
            at)


def _agents_of(ctx: Context, data: Mapping[str, Any], stem: str) -> list[tuple[str, KeyPath, Mapping[str, Any]]]:
    """Every agent mapping of ``data`` with its name and key path, the entry agent first; a name
    written under ``agents:`` that differs from its key, and a name used twice, are issues."""
    out: list[tuple[str, KeyPath, Mapping[str, Any]]] = []
    entry = data.get("agent")
    if isinstance(entry, Mapping):
        name = entry.get("name")
        out.append((name if isinstance(name, str) and name.strip() else stem, ("agent",), entry))
    agents = data.get("agents")
    if not isinstance(agents, Mapping):
        return out
    for key, body in agents.items():
        if not isinstance(key, str) or not isinstance(body, Mapping):
            continue  # the structure check reports it
        path: KeyPath = ("agents", key)
        if not key.strip():
            ctx.add("an agent name is empty: give each agent under 'agents:' a name as its key", path, at_key=True)
            continue
        written = body.get("name")
        if isinstance(written, str) and written != key:
            ctx.add(f"the name of this agent is its key {shown(key)}; remove 'name:' or make it {shown(key)}",
                    (*path, "name"))
        for other, other_path, _ in out:
            if other == key:
                at = ctx.values.get((*other_path, "name")) if other_path == ("agent",) else None
                where = (f"agent.name (line {at.line})" if at is not None else
                         f"the entry agent's default name, the file name {shown(stem)}"
                         if other_path == ("agent",) else format_path(other_path))
                ctx.add(f"duplicate agent name {shown(key)}: also {where}; agent names must be unique across "
                        "'agent:' and 'agents:'", path, at_key=True)
                break
        else:
            out.append((key, path, body))
    return out


def _cross_checks(ctx: Context, data: Mapping[str, Any], stem: str) -> None:
    agents = _agents_of(ctx, data, stem)
    known = {name: body for name, _, body in agents}
    for _, path, body in agents:
        _check_agent(ctx, body, path, known)
    _check_agent_graph(ctx, agents)
    workflow = data.get("workflow")
    if isinstance(workflow, Mapping):
        _check_workflow(ctx, workflow, known, stem)


def _check_workflow(ctx: Context, workflow: Mapping[str, Any], known: Mapping[str, Any], stem: str) -> None:
    """``workflow:``: the agents its steps name, then the graph rules of
    :func:`seamkit.workflows._validate.validate` (every problem, at the first step it names)."""
    from seamkit.workflows._model import START, Step, Workflow
    from seamkit.workflows._validate import validate

    steps = workflow.get("steps")
    if not isinstance(steps, Mapping):
        return  # the structure check reports it
    made: list[Step] = []
    for name, body in steps.items():
        if not isinstance(name, str) or not isinstance(body, Mapping):
            continue
        path: KeyPath = ("workflow", "steps", name)
        if "agent" in body and "use" not in body:
            _check_agent_ref(ctx, body.get("agent"), (*path, "agent"), known, tool=True, role="a workflow step")
        consumes, emits = _listed(body.get("consumes", [START])), _listed(body.get("emits", []))
        if not name.strip():
            ctx.add("a step name is empty: give each step under 'workflow.steps' a name as its key", path,
                    at_key=True)
            continue
        if not (_texts(consumes) and _texts(emits)):
            continue  # the structure check reports it
        gate = "gate" in body and "use" not in body
        on_yes, on_no = body.get("on_yes"), body.get("on_no")
        try:
            made.append(Step(name, None if gate else _no_run, tuple(consumes), tuple(emits), body.get("join") is True,
                             "gate" if gate else "function",
                             on_yes=on_yes if isinstance(on_yes, str) else None,
                             on_no=on_no if isinstance(on_no, str) else None))
        except ValueError as exc:
            ctx.add(str(exc), path)
    outcomes, external = _listed(workflow.get("outcomes", [])), _listed(workflow.get("external", []))
    if not (_texts(outcomes) and _texts(external)):
        return
    name = workflow.get("name")
    for problem in validate(Workflow(name if isinstance(name, str) else stem, tuple(made), tuple(outcomes),
                                     tuple(external))):
        if problem.steps and problem.steps[0] in steps:
            at: KeyPath = ("workflow", "steps", problem.steps[0])
        elif problem.code in ("NO_OUTCOME", "OUTCOME_NEVER_EMITTED"):
            at = ("workflow", "outcomes") if "outcomes" in workflow else ("workflow",)
        else:
            at = ("workflow", "steps")
        ctx.add(f"{problem.code}: {problem.message}", at, at_key=len(at) == 3)


def _listed(value: Any) -> Any:
    """An event-type list as the models read it: one type written as text is a list of one."""
    return [value] if isinstance(value, str) else value


def _texts(value: Any) -> bool:
    """Whether ``value`` is a list of strings (anything else the structure check reports)."""
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


async def _no_run(ctx: Any, data: Any) -> None:  # a stand-in: only the graph is checked here
    return None


def _handoff_target(entry: Any) -> Any:
    return entry if isinstance(entry, str) else entry.get("agent") if isinstance(entry, Mapping) else None


def _check_agent(ctx: Context, agent: Mapping[str, Any], base: KeyPath, known: Mapping[str, Any]) -> None:
    """The checks of one agent mapping at ``base`` (``agent`` or ``agents.NAME``); ``known``: every
    agent of the file by name, for the agents its tools and handoffs name."""
    from seamkit._agent.handoff import handoff_tool_name

    where = format_path(base)
    tools = agent.get("tools")
    tools = tools if isinstance(tools, list) else []
    first: dict[str, str] = {}  # each tool name -> the entry that makes it
    # a toolset's names are known once built: names that may be among them are checked then
    open_names = any((*base, "tools", i) in ctx.toolsets for i in range(len(tools)))
    for i, name, written in _tool_names(tools):
        if (*base, "tools", i) in ctx.toolsets:
            continue
        path: KeyPath = (*base, "tools", i)
        entry = tools[i]
        key = "use" if isinstance(entry, Mapping) and "use" in entry else (
            "name" if isinstance(entry, Mapping) and entry.get("name") else "agent")
        at = (*path, key) if isinstance(entry, Mapping) else path
        source = f"{where}.tools[{i}]" + ("" if written is None else
                                          f" (agent tool {shown(written)})" if key == "name" else
                                          f" (agent {shown(written)})")
        _claim(ctx, first, name, source, at)
    for i, entry in enumerate(tools):
        if not (isinstance(entry, Mapping) and "agent" in entry and "use" not in entry):
            continue
        _check_agent_ref(ctx, entry.get("agent"), (*base, "tools", i, "agent"), known, tool=True)
        schema = entry.get("input")
        if isinstance(schema, Mapping):
            ipath: KeyPath = (*base, "tools", i, "input")
            if schema.get("type") != "object":
                ctx.add("the input of an agent tool is a JSON Schema with type: object (tool arguments are named)",
                        ipath)
            else:
                _check_json_schema(ctx, schema, ipath)
    handoffs = agent.get("handoffs")
    if isinstance(handoffs, list):
        targets: dict[str, int] = {}
        for i, entry in enumerate(handoffs):
            target = _handoff_target(entry)
            hpath: KeyPath = (*base, "handoffs", i) if isinstance(entry, str) else (*base, "handoffs", i, "agent")
            if not isinstance(target, str):
                continue
            if target in targets:
                ctx.add(f"duplicate handoff to {shown(target)} (also {where}.handoffs[{targets[target]}])", hpath)
                continue
            targets[target] = i
            if _check_agent_ref(ctx, target, hpath, known, tool=False):
                _claim(ctx, first, handoff_tool_name(target), f"{where}.handoffs[{i}] (handoff to {shown(target)})",
                       hpath)
                prompt = known[target].get("prompt")
                template = prompt.get("template") if isinstance(prompt, Mapping) else prompt
                if isinstance(template, str) and _variables(template):
                    ctx.add(f"agent {shown(target)} has a prompt with variables "
                            f"({', '.join(sorted(_variables(template)))}), so it cannot take a conversation over "
                            "(a handoff target's prompt is used as written)", hpath)
    choice = agent.get("tool_choice")
    if isinstance(choice, (int, float)) and not isinstance(choice, bool):
        choice = str(choice)  # an unquoted number is still meant as a tool's name
    if choice == "required" and not first and not open_names:
        ctx.add(f"tool_choice 'required' needs at least one tool in {where}.tools", (*base, "tool_choice"))
    elif isinstance(choice, str) and choice not in _TOOL_CHOICES and choice not in first and not open_names:
        path = (*base, "tool_choice")
        if ctx.from_env(path):
            ctx.add("tool_choice (from the environment) names no configured tool", path)
        else:
            hint = did_you_mean(choice, [*first, *_TOOL_CHOICES])
            listed = ", ".join([*_TOOL_CHOICES, *(clip(name) for name in first)])
            ctx.add(f"tool_choice {shown(choice)} names no configured tool{hint} (use one of: {listed})", path)
    approvals = agent.get("approvals")
    if isinstance(approvals, Mapping):
        for tool_name in approvals:
            if isinstance(tool_name, str) and tool_name not in first and not open_names:
                hint = did_you_mean(tool_name, list(first))
                ctx.add(f"approvals name {shown(tool_name)}, which is not in {where}.tools{hint}",
                        (*base, "approvals", tool_name))
        if "checkpoints" in agent and agent["checkpoints"] is None and any(
            v != "never" for v in approvals.values()
        ):
            ctx.add("approvals need checkpoints: a run waiting for a person is suspended durably",
                    (*base, "approvals"))
    _check_loop_controls(ctx, agent, first, base, where, open_names)
    prompt = agent.get("prompt")
    if isinstance(prompt, str):
        _check_template(ctx, prompt, (*base, "prompt"))
    elif isinstance(prompt, Mapping) and isinstance(prompt.get("template"), str):
        _check_template(ctx, prompt["template"], (*base, "prompt", "template"))
    output = agent.get("output")
    if isinstance(output, Mapping) and isinstance(output.get("json_schema"), Mapping):
        _check_json_schema(ctx, output["json_schema"], (*base, "output", "json_schema"))


def _variables(template: str) -> frozenset[str]:
    from seamkit._agent.prompt import Prompt

    try:
        return Prompt(template).variables
    except ValueError:  # invalid markers: reported by _check_template
        return frozenset()


def _check_agent_ref(ctx: Context, name: Any, path: KeyPath, known: Mapping[str, Any], *, tool: bool,
                     role: str | None = None) -> bool:
    """Whether ``name`` (at ``path``) names an agent of the file (one with capabilities cannot be a
    tool); an issue with a did-you-mean otherwise."""
    if not isinstance(name, str) or ctx.is_poisoned(path):
        return False
    if name not in known:
        hint = did_you_mean(name, list(known))
        listed = ", ".join(clip(n) for n in known)
        ctx.add(f"no agent {shown(name)} in this file{hint} (agents: {listed}; add it under 'agents:')", path)
        return False
    caps = known[name].get("capabilities")
    if isinstance(caps, list) and caps:
        what = role or ("a tool" if tool else "a handoff target")
        ctx.add(f"agent {shown(name)} has capabilities: it runs conversation turns and cannot be {what}", path)
        return False
    return True


def _check_agent_graph(ctx: Context, agents: list[tuple[str, KeyPath, Mapping[str, Any]]]) -> None:
    """Agents naming each other (as tools or handoff targets) must not form a cycle: agents are
    built as values, each after those it names, so a cycle cannot be built. One issue per cycle, at
    the reference that closes it, naming the whole cycle."""
    edges: dict[str, list[tuple[str, KeyPath]]] = {}
    for name, base, body in agents:
        out: list[tuple[str, KeyPath]] = []
        tools = body.get("tools")
        if isinstance(tools, list):
            for i, entry in enumerate(tools):
                if isinstance(entry, Mapping) and "use" not in entry and isinstance(entry.get("agent"), str):
                    out.append((entry["agent"], (*base, "tools", i, "agent")))
        handoffs = body.get("handoffs")
        if isinstance(handoffs, list):
            for i, entry in enumerate(handoffs):
                target = _handoff_target(entry)
                if isinstance(target, str):
                    out.append((target, (*base, "handoffs", i) if isinstance(entry, str) else
                                (*base, "handoffs", i, "agent")))
        edges[name] = out
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(name: str) -> None:
        state[name] = 1
        stack.append(name)
        for target, path in edges.get(name, ()):
            if target not in edges:
                continue  # unknown: reported where it is named
            if state.get(target) == 1:
                cycle = [*stack[stack.index(target):], target]
                ctx.add(f"agents refer to each other in a cycle: {' -> '.join(cycle)} (as tools or handoff "
                        "targets); each agent is built before the agents that name it, so a cycle cannot be built: "
                        "remove one of the references", path)
            elif target not in state:
                visit(target)
        stack.pop()
        state[name] = 2

    for name in edges:
        if name not in state:
            visit(name)


def _check_loop_controls(ctx: Context, agent: Mapping[str, Any], tools: Mapping[str, str], base: KeyPath,
                         where: str, open_names: bool = False) -> None:
    """The tool-loop controls against the rest of the agent (at key path ``base``, shown as
    ``where``): ``disabled_tools`` naming tools of its ``tools`` (and not the ``tool_choice``),
    ``max_tool_rounds`` below ``max_steps``, gather mode without an output type. ``open_names``:
    the agent has a toolset, so a name not among ``tools`` may be one of its tools (checked when
    the agent is built)."""
    disabled = agent.get("disabled_tools")
    if isinstance(disabled, list):
        for i, name in enumerate(disabled):
            if not isinstance(name, str):
                continue
            if name not in tools and not open_names:
                hint = did_you_mean(name, list(tools))
                ctx.add(f"disabled_tools name {shown(name)}, which is not in {where}.tools{hint}",
                        (*base, "disabled_tools", i))
            elif agent.get("tool_choice") == name:
                ctx.add(f"tool_choice {shown(name)} names a tool that disabled_tools disables",
                        (*base, "tool_choice"))
    rounds, steps = agent.get("max_tool_rounds"), agent.get("max_steps", 10)
    if (type(rounds) is int and type(steps) is int and rounds >= 1 and steps >= 1 and rounds >= steps):
        ctx.add(f"max_tool_rounds ({rounds}) must be below max_steps ({steps}): the answer after the last tool "
                "round needs a step of its own (raise max_steps)", (*base, "max_tool_rounds"))
    if agent.get("mode") == "gather":
        for key in ("output", "capabilities"):
            if agent.get(key) and agent.get(key) != "text":
                ctx.add(f"gather mode returns a context block, not an answer: remove {key}, or use mode: answer",
                        (*base, "mode"))


def _check_template(ctx: Context, template: str, path: KeyPath) -> None:
    """Refuse ``{{...}}`` whose content is not a variable name (``{{a.b}}``, ``{{}}``): the prompt
    would keep them as written instead of filling them."""
    if ctx.is_poisoned(path):
        return
    from seamkit._agent.prompt import invalid_markers

    for marker in invalid_markers(template):
        named = "a '{{...}}'" if ctx.from_env(path) else shown(marker)
        ctx.add(f"{named} is not a valid template variable: a variable is a name such as {{{{topic}}}} "
                f"(letters, digits, _; no dots or expressions)", path)


def _check_json_schema(ctx: Context, schema: Mapping[str, Any], path: KeyPath) -> None:
    import jsonschema
    from jsonschema.exceptions import best_match

    # the format checker makes the metaschema check each "pattern" (format: regex) too
    meta = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA,
                                           format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = list(meta.iter_errors(dict(schema)))
    by_path: dict[KeyPath, list[Any]] = {}
    for e in errors:
        by_path.setdefault(tuple(e.absolute_path), []).append(e)
    for rel, group in sorted(by_path.items(), key=lambda kv: [str(x) for x in kv[0]]):
        err = best_match(group)
        full = (*path, *rel)
        if ctx.from_env(full):
            msg = "invalid value"
        elif err.validator == "format" and err.validator_value == "regex":
            msg = f"{shown(err.instance)} is not a valid regular expression"
        else:  # jsonschema's messages repeat the value whole
            msg = err.message
            whole = repr(err.instance)
            if len(whole) > 200:
                msg = msg.replace(whole, shown(err.instance))
        ctx.add(f"not a valid JSON Schema: {msg}", full)
    if not errors:
        _check_refs(ctx, schema, path)


#: Keywords whose values are data, not subschemas (a "$ref" key inside them is not a reference).
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


def _check_refs(ctx: Context, schema: Mapping[str, Any], path: KeyPath) -> None:
    """Resolve every ``$ref`` of ``schema`` against the schema itself only: a registry that
    retrieves nothing, so a remote reference is refused here instead of fetched at run time."""
    from referencing import Registry as RefRegistry
    from referencing import Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    try:
        root = Resource.from_contents(dict(schema), default_specification=DRAFT202012)
    except Exception:  # an unknown "$schema" dialect: read it as draft 2020-12
        root = DRAFT202012.create_resource(dict(schema))
    base = root.id() or ""
    try:
        registry: RefRegistry[Any] = RefRegistry().with_resource(base, root).crawl()
    except Exception:  # malformed "$id"/"$anchor": jsonschema reports what it can at run time
        return
    known = set(registry)

    def visit(node: Any, resolver: Any, base_uri: str, at: KeyPath) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                visit(item, resolver, base_uri, (*at, i))
            return
        if not isinstance(node, Mapping):
            return
        if at != path and isinstance(node.get("$id"), str):
            try:
                resolver = resolver.in_subresource(DRAFT202012.create_resource(dict(node)))
                base_uri = urljoin(base_uri, node["$id"])
            except Exception:
                pass
        ref = node.get("$ref")
        if isinstance(ref, str):
            _check_ref(ref, resolver, base_uri, (*at, "$ref"))
        for key, value in node.items():
            if key not in _DATA_KEYWORDS and key != "$ref":
                visit(value, resolver, base_uri, (*at, key))

    def _check_ref(ref: str, resolver: Any, base_uri: str, at: KeyPath) -> None:
        try:
            resolver.lookup(ref)
            return
        except Unresolvable:
            pass
        except Exception:  # a malformed reference (bad JSON pointer escapes, ...)
            pass
        named = "(from the environment)" if ctx.from_env(at) else shown(ref)
        target = urljoin(base_uri, ref)
        document = urldefrag(target).url
        if urlsplit(target).scheme and document not in known:
            ctx.add(f"remote $ref not allowed: {named}; a reference must point inside this schema "
                    f"(write the definition under $defs and use '#/$defs/NAME')", at)
        else:
            ctx.add(f"unresolvable $ref {named}: nothing in this schema has that location "
                    f"(references look like '#/$defs/NAME')", at)

    visit(schema, registry.resolver(base_uri=base), base, path)


def _attach(comp: Composition, slots: dict[KeyPath, tuple[ComponentSpec, Any]], doc: Document,
            ctx: Context, fpath: Path | None) -> None:
    comp._file = fpath
    comp._base_dir = ctx.base_dir
    comp._values = dict(doc.values)
    comp._keys = dict(doc.keys)
    comp._secret_paths = frozenset(doc.secret_paths)
    comp._secrets = frozenset(doc.secrets)
    comp._named_secrets = frozenset(doc.named_secrets)
    comp._env_texts = frozenset(doc.env_texts)
    for path, (_spec, config) in slots.items():
        ref = _find(comp, path)
        if isinstance(ref, ComponentRef):
            ref._config = config
    for secret in doc.secret_paths:
        _mask(comp, secret)
    agent: AgentConfig = comp.agent
    if agent.name is None:
        agent.name = fpath.stem if fpath is not None else "agent"
    for key, named in comp.agents.items():
        named.name = key


def _field_name(model: _Model, key: str | int) -> str | None:
    for name, f in type(model).model_fields.items():
        if key in (name, f.alias):
            return name
    return None


def _find(obj: Any, path: KeyPath) -> Any:
    cur = obj
    for el in path:
        if isinstance(cur, _Model):
            name = _field_name(cur, el)
            if name is None:
                return None
            cur = getattr(cur, name)
        elif isinstance(cur, list) and isinstance(el, int) and 0 <= el < len(cur):
            cur = cur[el]
        else:
            return None
    return cur


def _mask(comp: Composition, path: KeyPath) -> None:
    """Mask the value at ``path`` (from the environment) in reprs: the deepest model field holding
    it, or the component parameter."""
    cur: Any = comp
    owner: _Model | None = None
    owner_field = ""
    for i, el in enumerate(path):
        if isinstance(cur, ComponentRef) and el not in ("use", "from"):
            cur._secret_params.add(str(el))
            return
        if isinstance(cur, _Model):
            name = _field_name(cur, el)
            if name is None:
                break
            owner, owner_field = cur, name
            cur = getattr(cur, name)
        elif isinstance(cur, list) and isinstance(el, int) and 0 <= el < len(cur):
            cur = cur[el]
        else:
            break
        if i == len(path) - 1:
            break
    if owner is not None:
        owner._masked.add(owner_field)
