"""Overrides from the command line (``-m PROVIDER[:MODEL]``, ``-o KEY=VALUE``), applied to a
composition's parsed document *before* it is validated, so a bad override is reported like a bad
line of the file, labelled with the override instead of a file position
(``-o model.n_ctx: agent.model.n_ctx: Input should be a valid integer...``).

Addressing of ``-o KEY=VALUE``:

- a bare key (no dot) is a setting of the entry agent: ``temperature``, ``max_tokens`` and ``seed``
  go to ``agent.settings`` (they apply with any provider, and win over the model's own defaults);
  any other bare key is a parameter of the entry agent's model component (``-o n_ctx=4096``,
  ``-o base_url=http://...``), as ``seamkit ask -o`` takes provider parameters;
- a dotted path whose first part is a top-level key of the format (``agent``, ``agents``,
  ``workflow``...) is a path from the top (``agent.max_steps``, ``agents.billing.model.model``);
  any other dotted path is relative to the entry agent (``model.n_ctx`` is ``agent.model.n_ctx``,
  ``settings.seed`` is ``agent.settings.seed``); a part made of digits indexes a list
  (``tools.0.root``).

Values are read as YAML plain scalars with the composition's rules (``3`` is an int, ``0.2`` a
float, ``true`` a bool, ``null`` None, anything else text); a value starting with ``[`` or ``{`` is
read as a YAML flow list or mapping. ``-m PROVIDER[:MODEL]`` replaces the entry agent's model
component with ``{use: PROVIDER, model: MODEL}`` (``model`` left out when not given, for providers
with a default model or none, such as ``llamacpp``); the ``-o`` overrides apply after it.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seamkit.errors import ConfigIssue

if TYPE_CHECKING:
    from seamkit._plugins.registry import Registry

__all__ = ["SETTINGS_KEYS", "Override", "apply_overrides", "model_override", "option_override", "recorded_overrides",
           "may_hold_secret", "parse_value", "record_overrides", "relabel"]

#: bare ``-o`` keys that are the entry agent's ``settings:`` rather than model parameters
SETTINGS_KEYS = frozenset({"temperature", "max_tokens", "seed"})
#: how deep an override's value may nest lists and mappings (as a composition file's YAML)
MAX_VALUE_DEPTH = 100
_COMPONENT = re.compile(r"[a-z0-9][a-z0-9_-]*")
_PART = re.compile(r"[^.\s]+")

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Override:
    """One change to a composition. ``label``: how it is named in errors, without its value (a
    value may be a secret): ``-o model.n_ctx``, ``-m openai:gpt-4.1-mini``. ``key``: the ``-o``
    key as written (``""`` for ``-m``); ``value``: the value read (``-o``); ``provider`` and
    ``model``: for ``-m``."""

    label: str
    key: str = ""
    value: Any = None
    provider: str | None = None
    model: str | None = None
    #: the text after the flag, as given (``openai:gpt-4.1-mini``, ``model.n_ctx=4096``)
    spec: str = ""

    def __repr__(self) -> str:  # the value may be a secret: never shown
        return f"Override({self.label!r})"


def model_override(spec: str) -> Override:
    """``-m PROVIDER[:MODEL]`` (split on the first colon). Raises ``ValueError`` with the reason."""
    provider, sep, model = spec.partition(":")
    provider, model = provider.strip(), model.strip()
    if not provider:
        raise ValueError(f"expected PROVIDER or PROVIDER:MODEL (e.g. openai:gpt-4.1-mini or llamacpp), got {spec!r}")
    if not _COMPONENT.fullmatch(provider):
        raise ValueError(f"the provider must be a component name (lower-case letters, digits, '_' and '-'), "
                         f"got {provider!r}")
    if sep and not model:
        raise ValueError(f"the model after '{provider}:' is empty; write -m {provider} for its default model")
    return Override(f"-m {spec.strip()}", provider=provider, model=model or None, spec=spec)


def option_override(text: str) -> Override:
    """``-o KEY=VALUE``. Raises ``ValueError`` for a missing ``=``, an empty key or an empty part
    of a dotted key."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep:
        raise ValueError(f"expected KEY=VALUE (e.g. temperature=0.2 or model.n_ctx=4096), got {_shown_key(text)!r}")
    if not key:
        raise ValueError("the key before '=' is empty (expected KEY=VALUE, e.g. temperature=0.2)")
    parts = key.split(".")
    if not all(_PART.fullmatch(p) for p in parts):
        raise ValueError(f"{key!r} is not a key path: parts are separated by single dots, e.g. model.n_ctx")
    return Override(f"-o {key}", key=key, value=parse_value(raw), spec=text)


def _shown_key(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def parse_value(raw: str) -> Any:
    """An override's value (``-o KEY=VALUE`` of ``run``, ``chat`` and ``ask``): a YAML plain scalar
    with the composition's rules, or a YAML flow list or mapping when it starts with ``[`` or ``{``,
    a quoted text when it starts with a quote (JSON values are all of these); text that is no valid
    flow value is kept as written. Raises ``ValueError``
    when a flow value nests more than :data:`MAX_VALUE_DEPTH` levels (as a composition file)."""
    from seamkit.composition._yaml import resolve_plain

    text = raw.strip()
    if text[:1] in ("[", "{", '"', "'"):  # a flow list or mapping, a quoted text (JSON's too)
        import yaml

        try:
            return yaml.load(text, Loader=_flow_loader())  # a SafeLoader
        except yaml.YAMLError:
            return raw
        except (_TooDeep, RecursionError):
            raise ValueError(f"the value is nested more than {MAX_VALUE_DEPTH} levels deep; "
                             "an override nests only a few levels") from None
    return resolve_plain(text) if text == raw else raw  # spaces around the value: the text as given


class _TooDeep(Exception):
    pass


@functools.cache
def _flow_loader() -> type[Any]:
    import yaml

    class Loader(yaml.SafeLoader):
        """A SafeLoader that refuses deep nesting before Python's recursion limit does."""

        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()  # type: ignore[no-untyped-call]
            nests = isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent)
            self.depth += nests
            try:
                if self.depth > MAX_VALUE_DEPTH:
                    raise _TooDeep
                return super().compose_node(parent, index)
            finally:
                self.depth -= nests

    return Loader


def apply_overrides(
    data: Any, overrides: Sequence[Override], reg: Registry, top_keys: frozenset[str]
) -> tuple[Any, list[tuple[KeyPath, str]], list[ConfigIssue]]:
    """``data`` (the parsed document, not changed) with ``overrides`` applied, in order. Returns
    the new data, each override's absolute key path with its label (to relabel the issues found
    there, see :func:`relabel`), and the issues found while applying (a path through a value that
    is not a mapping or list, a list index out of range, a model name for a provider without one)."""
    if not overrides or not isinstance(data, Mapping):
        return data, [], []
    out: dict[str, Any] = copy.deepcopy(dict(data))
    placed: list[tuple[KeyPath, str]] = []
    issues: list[ConfigIssue] = []
    for o in overrides:
        if o.provider is not None:
            agent = out.get("agent")
            if not isinstance(agent, dict):
                issues.append(ConfigIssue("the file has no 'agent:' mapping whose model to replace", "agent", o.label))
                continue
            model: dict[str, Any] = {"use": o.provider}
            if o.model is not None:
                problem = _model_name_problem(reg, o.provider)
                if problem is not None:
                    issues.append(ConfigIssue(problem, "agent.model", o.label))
                    continue
                model["model"] = o.model
            agent["model"] = model
            placed.append((("agent", "model"), o.label))
            continue
        path = _absolute(o.key, top_keys)
        misplaced = _agent_key_problem(reg, out, o)
        if misplaced is not None:
            issues.append(ConfigIssue(misplaced, _fmt(path), o.label))
            continue
        problem, created = _set(out, path, o.value)
        if problem is not None:
            issues.append(ConfigIssue(problem, _fmt(path), o.label))
        else:  # from the first key the override added: an unknown key is reported there
            placed.append((created or path, o.label))
    return out, placed, issues


def _agent_key_problem(reg: Registry, data: Mapping[str, Any], o: Override) -> str | None:
    """For a bare key that is the agent's own (``-o max_steps=3``), not a parameter of its model:
    the working form, ``-o agent.max_steps=3``. ``None`` for any other key."""
    from seamkit.composition._models import AgentConfig

    key = o.key
    if "." in key or key in SETTINGS_KEYS or key not in AgentConfig.model_fields or key == "model":
        return None
    agent = data.get("agent")
    model = agent.get("model") if isinstance(agent, Mapping) else None
    use = model.get("use") if isinstance(model, Mapping) else None
    if isinstance(use, str):
        try:
            fields = getattr(reg.resolve("provider", use).config_model(), "model_fields", None)
        except Exception:  # unknown or broken: the validation of agent.model.use reports it
            fields = None
        if fields is not None and key in fields:  # the provider takes it too: its parameter, as documented
            return None
    value = o.spec.partition("=")[2]
    return (f"{key!r} is a key of the agent, not a parameter of its model (where a bare key goes): "
            f"write -o agent.{key}={value}")


def _model_name_problem(reg: Registry, provider: str) -> str | None:
    try:
        cfg = reg.resolve("provider", provider).config_model()
    except Exception:  # unknown or broken: the validation of agent.model.use reports it
        return None
    fields = getattr(cfg, "model_fields", None)
    if fields is None or "model" in fields:
        return None
    return (f"provider {provider!r} takes no model name (it has no 'model' parameter): write -m {provider}"
            + (" (and -o model_path=FILE for another GGUF file)" if "model_path" in fields else ""))


def _absolute(key: str, top_keys: frozenset[str]) -> KeyPath:
    parts: list[str | int] = [int(p) if p.isdigit() else p for p in key.split(".")]
    if len(parts) == 1:
        if parts[0] in SETTINGS_KEYS:
            return ("agent", "settings", *parts)
        return ("agent", "model", *parts)
    if parts[0] in top_keys:
        return tuple(parts)
    return ("agent", *parts)


def _set(data: dict[str, Any], path: KeyPath, value: Any) -> tuple[str | None, KeyPath | None]:
    """Set ``value`` at ``path``, creating missing mappings on the way. Returns the problem (or
    ``None``) and the path of the first key that did not exist before (or ``None``)."""
    node: Any = data
    created: KeyPath | None = None
    for i, part in enumerate(path):
        last = i == len(path) - 1
        here = _fmt(path[:i]) or "the top level"
        if isinstance(node, dict):
            if isinstance(part, int):
                part = str(part)
            if created is None and part not in node:
                created = path[: i + 1]
            if last:
                node[part] = value
                return None, created
            if node.get(part) is None:
                if isinstance(path[i + 1], int):  # tools.0.root where there are no tools
                    return (f"{_fmt(path[: i + 1])} is not set (no items): there is no item {path[i + 1]} to "
                            "change; write the whole list instead (e.g. "
                            f"-o {_fmt(path[: i + 1])}=[...])"), None
                node[part] = {}
            node = node[part]
        elif isinstance(node, list):
            if not isinstance(part, int):
                return f"{here} is a list: index it with a number (e.g. {_fmt(path[:i])}.0), not {part!r}", None
            if part >= len(node):
                if not node:
                    return f"{here} is empty (no items): there is no item {part} to change", None
                return f"{here} has {len(node)} item{'s' if len(node) != 1 else ''}: there is no item {part}", None
            if last:
                node[part] = value
                return None, created
            node = node[part]
        else:
            return f"{here} is {_kind(node)}, not a mapping: it has no key {part!r}", None
    return None, created


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"


def _fmt(path: KeyPath) -> str:
    from seamkit.composition._yaml import format_path

    return format_path(path)


_FROM_ENV = "not shown, it comes from an environment variable"  # (seamkit.composition._check)


def relabel(issues: Sequence[ConfigIssue], placed: Sequence[tuple[KeyPath, str]]) -> list[ConfigIssue]:
    """``issues`` with those at or under an override's path labelled with that override (the
    latest one that set it) instead of a file position: the file does not hold that value."""
    if not placed:
        return list(issues)
    spans = [(_fmt(path), label) for path, label in placed]
    out: list[ConfigIssue] = []
    for issue in issues:
        label = None
        for prefix, lab in spans:
            p = issue.path
            if p == prefix or p.startswith(prefix + ".") or p.startswith(prefix + "["):
                label = lab
        if label is not None and issue.file != label:
            message = issue.message.replace(_FROM_ENV, f"not shown, it was given with {label}")
            issue = ConfigIssue(message, issue.path, label)
        out.append(issue)
    return out


def _texts(value: Any, depth: int = 0) -> list[str]:
    """The text leaves of an override's value (numbers and booleans are no secrets)."""
    if isinstance(value, str):
        return [value]
    if depth > MAX_VALUE_DEPTH:
        return []
    if isinstance(value, Mapping):
        return [t for k, v in value.items() for t in (*_texts(k, depth + 1), *_texts(v, depth + 1))]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _texts(v, depth + 1)]
    return []


def _has_secret_key(value: Any, depth: int = 0) -> bool:
    from seamkit._plugins.redact import is_secret_name

    if depth > MAX_VALUE_DEPTH:
        return True  # not looked into: in doubt, a secret
    if isinstance(value, Mapping):
        return any((isinstance(k, str) and is_secret_name(k)) or _has_secret_key(v, depth + 1)
                   for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_secret_key(v, depth + 1) for v in value)
    return False


def may_hold_secret(o: Override, secret_texts: Collection[str] = ()) -> bool:
    """Whether ``o`` may give the composition a secret, so it must not be stored: a part of its
    key path named like a secret (``-o api_key=...``, ``-o headers.Authorization=...``), a key
    named like a secret at any depth of a mapping value (``-o 'model={use: openai, api_key: ...}'``),
    a text of its value that looks like a secret (a URL with a password, ``Bearer ...``, a
    provider's key shape, ``token=...``: :func:`seamkit._plugins.redact.mask_message`), or a
    text of its value among ``secret_texts``, the secret values of the composition it was
    applied to (a ``SecretStr`` parameter of a component, see
    :func:`seamkit.composition._build.secret_texts`). ``-m`` holds none."""
    from seamkit._plugins.redact import is_secret_name, mask_message

    if o.provider is not None:
        return False
    if any(is_secret_name(p) for p in o.key.split(".")) or _has_secret_key(o.value):
        return True
    texts = _texts(o.value)
    if any(mask_message(t) != t for t in texts):
        return True
    secrets = set(secret_texts)
    return any(t in secrets for t in texts if t)


def record_overrides(
    overrides: Sequence[Override], secret_texts: Collection[str] = ()
) -> tuple[str | None, list[str]]:
    """What a run's metadata keeps of ``overrides``, so that ``seamkit resume`` rebuilds the agent
    as it ran: a JSON list of ``["-m", spec]`` / ``["-o", spec]`` (``None`` when there is none),
    and the labels of those left out because they may give the agent a secret
    (:func:`may_hold_secret`; ``secret_texts``: the composition's secret values, as composed)."""
    import json

    kept: list[list[str]] = []
    left: list[str] = []
    for o in overrides:
        if may_hold_secret(o, secret_texts):
            left.append(o.label)
        else:
            kept.append(["-m" if o.provider is not None else "-o", o.spec])
    return (json.dumps(kept) if kept else None), left


def recorded_overrides(metadata: Mapping[str, Any]) -> tuple[Override, ...]:
    """The overrides a run's metadata recorded (see :func:`record_overrides`); ``()`` when none
    (or unreadable: the file as written is used)."""
    import json

    raw = metadata.get("overrides")
    if not isinstance(raw, str):
        return ()
    try:
        items = json.loads(raw)
        return tuple(model_override(spec) if flag == "-m" else option_override(spec) for flag, spec in items)
    except (ValueError, TypeError):
        return ()
