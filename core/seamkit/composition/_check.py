"""Turning validation failures into located :class:`~seamkit.errors.ConfigIssue` (internal)."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import pydantic
from pydantic import BaseModel

from seamkit._plugins.redact import mask_message
from seamkit._plugins.registry import ComponentSpec, Registry
from seamkit._slots import ComponentSlot
from seamkit.composition._models import SLOT_TYPES, ComponentRef, is_secret_name
from seamkit.composition._yaml import AliasUse, KeyPath, Position, clip, format_path, shown
from seamkit.errors import AmbiguousComponent, ComponentNotFound, ConfigIssue

__all__ = [
    "Context",
    "check_nested_slots",
    "check_slot",
    "did_you_mean",
    "iter_slots",
    "key_index",
    "pydantic_issues",
    "validate_params",
]

_MISSING = object()


@dataclass
class Context:
    """What issue builders need: the file, positions, secrets, and the issues found so far."""

    file: str | None
    values: Mapping[KeyPath, Position]
    keys: Mapping[KeyPath, Position]
    secret_paths: set[KeyPath] | frozenset[KeyPath]
    secrets: set[str] | frozenset[str]
    poisoned: set[KeyPath] = field(default_factory=set)
    base_dir: Path = field(default_factory=Path.cwd)
    issues: list[ConfigIssue] = field(default_factory=list)
    #: paths whose value was already reported: no type errors there, but unknown keys still count
    flagged: set[KeyPath] = field(default_factory=set)
    #: key -> the mappings (by path) where the composition takes it (see :func:`key_index`)
    known_keys: Mapping[str, tuple[KeyPath, ...]] = field(default_factory=dict)
    #: alias uses by key path (see :attr:`~seamkit.composition._yaml.Document.aliases`)
    aliases: Mapping[KeyPath, AliasUse] = field(default_factory=dict)
    #: ``tools:`` entries (by path) of toolset components: their tool names are known once built
    toolsets: set[KeyPath] = field(default_factory=set)

    def is_poisoned(self, path: KeyPath) -> bool:
        return any(path[: len(p)] == p for p in self.poisoned)

    def from_env(self, path: KeyPath) -> bool:
        """Whether the value at ``path`` (or inside or around it) came from the environment."""
        return any(p[: len(path)] == path or path[: len(p)] == p for p in self.secret_paths)

    def is_secret(self, path: KeyPath) -> bool:
        """Whether the value at ``path`` came from the environment or is named like a secret."""
        return self.from_env(path) or any(isinstance(el, str) and is_secret_name(el) for el in path)

    def scrub(self, text: str) -> str:
        for s in sorted(self.secrets, key=len, reverse=True):
            if len(s) >= 3:
                text = text.replace(s, "***")
        return text

    def add(self, message: str, path: KeyPath, position: Position | None = None, *, at_key: bool = False) -> None:
        """Record an issue at ``path``: at its key's position with ``at_key`` (unknown keys),
        otherwise at its value's (or the nearest ancestor's). Inside a value reached through an
        alias, that is the alias, and the message says where its anchor is. A message longer
        than :data:`_MAX_MESSAGE` characters (a value echoed whole) is cut in the middle."""
        if position is None:
            position = self.keys.get(path) if at_key else None
        if position is None:
            position = self.value_position(path)
        use = self.alias_use(path)
        note = use.note() if use is not None else ""
        self.issues.append(ConfigIssue(
            _cut_middle(self.scrub(message)) + note, format_path(path), self.file,
            position.line if position else None, position.column if position else None,
        ))

    def alias_use(self, path: KeyPath) -> AliasUse | None:
        """The alias through which the value at ``path`` is reached (the outermost), if any."""
        if not self.aliases:
            return None
        for i in range(len(path) + 1):
            use = self.aliases.get(path[:i])
            if use is not None:
                return use
        return None

    def value_position(self, path: KeyPath) -> Position | None:
        p = path
        while True:
            if p in self.values:
                return self.values[p]
            if not p:
                return None
            p = p[:-1]

    def parent_position(self, path: KeyPath) -> Position | None:
        """Where a missing key of the mapping at ``path`` is reported: the mapping's key when it
        has one (``model:``), else the mapping itself."""
        return self.keys.get(path) or self.value_position(path)


#: Longest message :meth:`Context.add` keeps whole, in characters; values it echoes are cut to
#: :data:`~seamkit.composition._yaml.MAX_SHOWN` where they are written into it, and this catches
#: the rest (a component's validator repeating its input, say).
_MAX_MESSAGE = 1_000


def _cut_middle(message: str) -> str:
    if len(message) <= _MAX_MESSAGE:
        return message
    head, tail = _MAX_MESSAGE * 2 // 3, _MAX_MESSAGE // 3
    cut = len(message) - head - tail
    return f"{message[:head]}… ({cut:,} characters cut) …{message[-tail:]}"


#: Longest word :func:`did_you_mean` compares (difflib is quadratic in the words' lengths).
_MAX_COMPARED = 200


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` or ``""``."""
    if len(word) > _MAX_COMPARED:
        return ""
    close = difflib.get_close_matches(word, [c for c in choices if len(c) <= _MAX_COMPARED], n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(shown(c) for c in close)}?" if close else ""


#: A key known in more places than this is too common to say where it belongs.
_MAX_PLACES = 3


def _queue_hint(key: str, path: KeyPath) -> str:
    """The hint for ``queue:`` written in a tool component's entry (``path`` ends ``tools, i, queue``)."""
    if key == "queue" and len(path) >= 3 and path[-3] == "tools":
        return ("; only an agent tool ({agent: NAME, queue: true}) sends its runs to a queue, a tool component "
                "runs in its caller's process")
    return ""


def belongs_elsewhere(ctx: Context, key: str, here: KeyPath) -> str:
    """For ``key`` unknown in the mapping at ``here``: ``"; it belongs under agent.settings, not
    here"`` when another mapping of the composition takes ``key`` (from
    :attr:`Context.known_keys`), else ``"; did you mean agent.settings.temperature?"`` for a close
    spelling of a key taken elsewhere, else ``""``."""
    places = [p for p in ctx.known_keys.get(key, ()) if p != here]
    if places and len(places) <= _MAX_PLACES:
        where = " or ".join(format_path(p) or "the top level" for p in places)
        return f"; it belongs under {where}, not here"
    if places:
        return ""
    close = difflib.get_close_matches(key, list(ctx.known_keys), n=1, cutoff=0.8)
    if close:
        spots = [p for p in ctx.known_keys[close[0]] if p != here]
        if 0 < len(spots) <= _MAX_PLACES:
            return f"; did you mean {' or '.join(format_path((*p, close[0])) for p in spots)}?"
    return ""


def key_index(registry: Registry, root: type[BaseModel], data: Any) -> dict[str, tuple[KeyPath, ...]]:
    """Every key the composition ``data`` (shaped by ``root``) takes, with the paths of the
    mappings that take it: the format's own sections (from the pydantic models, e.g.
    ``temperature`` -> ``agent.settings``) and each component slot written in ``data`` (from its
    component's config model, e.g. ``api_key`` -> ``agent.model`` for a provider that has one).
    Components that cannot be resolved or loaded add nothing."""
    index: dict[str, list[KeyPath]] = {}

    def add(key: str, path: KeyPath) -> None:
        paths = index.setdefault(key, [])
        if path not in paths:
            paths.append(path)

    def walk(model: type[BaseModel], path: KeyPath, seen: frozenset[type]) -> None:
        for name, f in model.model_fields.items():
            key = f.alias if isinstance(f.alias, str) else name
            add(key, path)
            for alt in _unwrap(_field_annotation(f)):
                if _is_model(alt) and not issubclass(alt, ComponentRef) and alt not in seen:
                    walk(alt, (*path, key), seen | {alt})

    walk(root, (), frozenset({root}))
    for path, slot, raw in iter_slots(root, data):
        name = raw if isinstance(raw, str) else raw.get("use") if isinstance(raw, Mapping) else None
        dist = raw.get("from") if isinstance(raw, Mapping) else None
        if not isinstance(name, str) or (dist is not None and not isinstance(dist, str)):
            continue
        try:
            model = registry.resolve(slot.kind, name, dist).config_model()
        except Exception:  # reported where the slot is checked
            continue
        if isinstance(model, type) and issubclass(model, BaseModel):
            for fname, f in model.model_fields.items():
                add(f.alias if isinstance(f.alias, str) else fname, path)
    return {k: tuple(v) for k, v in index.items()}


# -- annotations --------------------------------------------------------------------------------


def _unwrap(tp: Any) -> list[Any]:
    """The alternatives of ``tp`` without ``Annotated``/``Optional``/``Union`` wrappers."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin is typing.Union or origin is types.UnionType:
        return [alt for a in typing.get_args(tp) for alt in _unwrap(a)]
    return [tp]


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _field_annotation(f: Any) -> Any:
    """A field's annotation; a :class:`~seamkit._slots.ComponentSlot` that pydantic moved from a
    top-level ``Annotated[X, ComponentSlot(kind)]`` (or ``Annotated[A | B, Discriminator(fn)]``) into
    ``f.metadata`` is put back."""
    for meta in f.metadata:
        if isinstance(meta, ComponentSlot | pydantic.Discriminator):
            return typing.Annotated[f.annotation, meta]
    return f.annotation


def _field_by_key(model: type[BaseModel], key: str) -> Any:
    for name, f in model.model_fields.items():
        if key in (name, f.alias, f.validation_alias):
            return _field_annotation(f)
    return _MISSING


def _tagged(tp: Any, pick: Any) -> Any:
    """For ``tp`` a union with a callable pydantic ``Discriminator`` (``Annotated[A | B,
    Discriminator(fn)]``, members tagged ``Annotated[X, Tag(t)]``): the member whose tag is
    ``pick(fn)``; else ``None``."""
    if typing.get_origin(tp) is not typing.Annotated:
        return None
    for meta in tp.__metadata__:
        if isinstance(meta, pydantic.Discriminator) and callable(meta.discriminator):
            tag = pick(meta.discriminator)
            for member in typing.get_args(typing.get_args(tp)[0]):
                if typing.get_origin(member) is typing.Annotated and any(
                    isinstance(m, pydantic.Tag) and m.tag == tag for m in member.__metadata__
                ):
                    return typing.get_args(member)[0]
    return None


def _step(tp: Any, el: str | int) -> list[Any]:
    member = _tagged(tp, lambda fn: el)  # a pydantic error's loc names the tag of the member it is in
    if member is not None:
        return [member]
    alts = _unwrap(tp)
    if isinstance(el, str) and not any(_is_model(a) and _field_by_key(a, el) is not _MISSING for a in alts):
        # a union with a field discriminator (Field(discriminator="kind")): the loc names the tag
        # value, so only the members whose Literal field takes it (not every member's keys)
        tagged = [a for a in alts if _is_model(a) and any(
            typing.get_origin(f.annotation) is typing.Literal and el in typing.get_args(f.annotation)
            for f in a.model_fields.values())]
        if tagged:
            return tagged
    out: list[Any] = []
    for alt in alts:
        origin = typing.get_origin(alt)
        args = typing.get_args(alt)
        if _is_model(alt) and isinstance(el, str):
            ann = _field_by_key(alt, el)
            if ann is not _MISSING:
                out.append(ann)
        elif origin in (list, tuple, set, frozenset, Sequence) and isinstance(el, int) and args:
            out.append(args[0])
        elif origin in (dict, Mapping) and len(args) == 2:
            out.append(args[1])
    return out


def fields_at(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """Keys the mapping at ``loc`` inside ``model`` accepts (for did-you-mean)."""
    current: list[Any] = [model]
    for el in loc:
        nxt = [t for tp in current for t in _step(tp, el)]
        if nxt:
            current = nxt
    names: list[str] = []
    for tp in current:
        for alt in _unwrap(tp):
            if _is_model(alt):
                for name, f in alt.model_fields.items():
                    key = f.alias if isinstance(f.alias, str) else name
                    if key not in names:
                        names.append(key)
    return names


_MARKED_REFS: dict[str, type[ComponentRef]] = {}


def _ref_class(kind: str) -> type[ComponentRef]:
    """The slot class of registry ``kind`` (one is made for kinds without a top-level slot)."""
    if kind in SLOT_TYPES:
        return SLOT_TYPES[kind]
    if kind not in _MARKED_REFS:
        _MARKED_REFS[kind] = type(f"{kind.title().replace('_', '')}Ref", (ComponentRef,), {"kind": kind})
    return _MARKED_REFS[kind]


def _marked_kind(tp: Any) -> str | None:
    """The kind of a :class:`~seamkit._slots.ComponentSlot` marking ``tp`` (``Annotated[X,
    ComponentSlot(kind)]``, possibly inside ``Optional``/``Union``), else ``None``."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        for meta in tp.__metadata__:
            if isinstance(meta, ComponentSlot):
                return meta.kind
        return _marked_kind(typing.get_args(tp)[0])
    if origin is typing.Union or origin is types.UnionType:
        for a in typing.get_args(tp):
            kind = _marked_kind(a)
            if kind is not None:
                return kind
    return None


def iter_slots(tp: Any, data: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, type[ComponentRef], Any]]:
    """Each component slot in raw ``data`` shaped by annotation ``tp``: ``(path, slot class, raw)``.
    Slots are fields typed as a :class:`ComponentRef` subclass, or marked with
    :class:`~seamkit._slots.ComponentSlot` (in components' own config models)."""
    kind = _marked_kind(tp)
    if kind is not None:
        if data is not None:
            yield path, _ref_class(kind), data
        return
    member = _tagged(tp, lambda fn: fn(data))  # a discriminated union: the member data is
    if member is not None:
        tp = member
    for alt in _unwrap(tp):
        origin = typing.get_origin(alt)
        args = typing.get_args(alt)
        if isinstance(alt, type) and issubclass(alt, ComponentRef):
            yield path, alt, data
            return
        if _is_model(alt) and isinstance(data, Mapping):
            for name, f in alt.model_fields.items():
                key = f.alias if isinstance(f.alias, str) else name
                if key in data:
                    yield from iter_slots(_field_annotation(f), data[key], (*path, key))
            return
        if origin in (list, tuple, Sequence) and args and isinstance(data, list):
            for i, item in enumerate(data):
                yield from iter_slots(args[0], item, (*path, i))
            return
        if origin in (dict, Mapping) and len(args) == 2 and isinstance(data, Mapping):
            for k, v in data.items():
                yield from iter_slots(args[1], v, (*path, k))
            return


# -- pydantic errors ----------------------------------------------------------------------------


def _loc_path(loc: Sequence[str | int], data: Any) -> tuple[KeyPath, bool]:
    """Map a pydantic ``loc`` onto the raw data: union/function tags are dropped. Returns the path
    and whether its last element is absent from the data (missing/unknown key)."""
    path: list[str | int] = []
    cur = data
    absent = False
    for i, el in enumerate(loc):
        last = i == len(loc) - 1
        nxt = loc[i + 1] if not last else None
        if (isinstance(cur, Mapping) and isinstance(el, str) and el in cur and nxt is not None and nxt in cur
                and not (isinstance(cur[el], Mapping) and nxt in cur[el])):
            continue  # a union tag that is also one of the member's keys ({agent: NAME, emits: ...})
        if isinstance(cur, Mapping) and isinstance(el, str) and el in cur:
            path.append(el)
            cur = cur[el]
        elif isinstance(cur, list) and isinstance(el, int) and 0 <= el < len(cur):
            path.append(el)
            cur = cur[el]
        elif last and isinstance(cur, Mapping):
            path.append(el)
            absent = True
    return tuple(path), absent


#: pydantic error types whose messages name internals ("instance of AgentConfig"): user words instead.
_TYPE_WORDS = {
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "dict_type": "a mapping",
    "list_type": "a list",
}


def _value_at(data: Any, path: KeyPath) -> Any:
    cur = data
    for el in path:
        if isinstance(cur, Mapping) and el in cur:
            cur = cur[el]
        elif isinstance(cur, list) and isinstance(el, int) and 0 <= el < len(cur):
            cur = cur[el]
        else:
            return None
    return cur


def describe_value(value: Any) -> str:
    """What ``value`` is, in words for an error message (``a text``, ``a mapping``, ``an empty value``...)."""
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__


def pydantic_issues(
    ctx: Context,
    exc: pydantic.ValidationError,
    data: Any,
    base: KeyPath,
    model: type[BaseModel],
    *,
    what: str = "",
) -> None:
    """Add one issue per pydantic error of validating ``data`` (found at ``base``) with ``model``.
    Messages never contain input values; for values from the environment, not even the
    validator's own message."""
    seen: set[tuple[str, KeyPath]] = set()
    for err in exc.errors(include_url=False, include_input=False):
        rel, _ = _loc_path(err["loc"], data)
        path = (*base, *rel)
        etype = err["type"]
        if ctx.is_poisoned(path) or (etype, path) in seen or (path in ctx.flagged and etype != "extra_forbidden"):
            continue
        seen.add((etype, path))
        if etype == "extra_forbidden":
            key = str(rel[-1]) if rel else "?"
            allowed = fields_at(model, [el for el in err["loc"][:-1]])
            elsewhere = belongs_elsewhere(ctx, key, path[:-1])
            # a key another section takes as written (max_tokens under agent) says so before a
            # close spelling here (max_tool_rounds) is guessed
            exact = elsewhere.startswith("; it belongs under")
            hint = elsewhere if exact else did_you_mean(key, allowed) or elsewhere
            hint = _queue_hint(key, path) or hint
            listed = f" (allowed: {', '.join(allowed)})" if allowed else ""
            ctx.add(f"unknown key {shown(key)}{what}{hint}{listed}", path, at_key=True)
        elif etype == "missing":
            key = str(rel[-1]) if rel else "?"
            parent = path[:-1]
            ctx.add(f"missing required key {shown(key)}{what}", path, ctx.parent_position(parent))
        elif ctx.from_env(path) or (ctx.is_secret(path) and etype in ("value_error", "assertion_error")):
            ctx.add(f"invalid value ({etype}); not shown, it comes from an environment variable", path)
        elif etype in _TYPE_WORDS:
            value = _value_at(data, rel)
            hint = ""
            if etype == "list_type" and isinstance(value, str) and not ctx.is_secret(path):
                hint = f" (for a single item write [{clip(value)}])"
            ctx.add(f"expected {_TYPE_WORDS[etype]}, not {describe_value(value)}{hint}", path)
        else:
            msg = str(err["msg"])
            for prefix in ("Value error, ", "Assertion failed, "):
                if msg.startswith(prefix):
                    msg = msg[len(prefix):]
            ctx.add(msg, path)


# -- component slots ----------------------------------------------------------------------------

_PATH_TYPES: tuple[type, ...] = (PurePath,)


def _is_path_type(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, _PATH_TYPES)


def _rebase(tp: Any, value: Any, base: Path) -> Any:
    """Make relative paths in ``value`` (for fields annotated as paths) relative to ``base``."""
    alts = _unwrap(tp)
    if isinstance(value, str):
        if any(_is_path_type(a) for a in alts) and str not in alts:
            if value == "":
                return value
            p = Path(value).expanduser()  # `~/models/x.gguf` means the home directory, not base/~
            return str(p) if p.is_absolute() else str(base / p)
        return value
    for alt in alts:
        origin = typing.get_origin(alt)
        args = typing.get_args(alt)
        if _is_model(alt) and isinstance(value, Mapping):
            out = dict(value)
            for name, f in alt.model_fields.items():
                key = f.alias if isinstance(f.alias, str) else name
                if key in out:
                    out[key] = _rebase(f.annotation, out[key], base)
            return out
        if origin in (list, tuple, set, frozenset, Sequence) and args and isinstance(value, list):
            return [_rebase(args[0], v, base) for v in value]
    return value


def validate_params(ctx: Context, spec: ComponentSpec, params: Mapping[str, Any], path: KeyPath) -> tuple[bool, Any]:
    """Validate a slot's ``params`` with ``spec``'s config model (after rebasing relative paths).
    Returns ``(ok, config instance or None)``; problems are added to ``ctx``."""
    label = f"{spec.kind} {spec.name!r}"
    try:
        model = spec.config_model()
    except Exception as exc:
        ctx.add(f"{component_label(spec)} cannot be loaded: its config model {spec.config!r} does not import: "
                f"{type(exc).__name__}: {mask_message(str(exc))}",
                (*path, "use") if (*path, "use") in ctx.values else path)
        return False, None
    if model is None:
        for key in params:
            hint = _queue_hint(key, (*path, key)) or belongs_elsewhere(ctx, key, path)
            ctx.add(f"unknown key {shown(key)}: {label} takes no parameters{hint}",
                    (*path, key), at_key=True)
        return not params, None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        ctx.add(f"{label}: its config is not a pydantic model", path)
        return False, None
    rebased = _rebase(model, dict(params), ctx.base_dir)
    try:
        return True, model.model_validate(rebased)
    except pydantic.ValidationError as exc:
        pydantic_issues(ctx, exc, dict(params), path, model, what=f" for {label}")
        return False, None


def resolve_slot(
    ctx: Context, registry: Registry, kind: str, raw: Any, path: KeyPath
) -> tuple[ComponentSpec | None, Mapping[str, Any]]:
    """Resolve a raw slot value; problems are added to ``ctx``. Returns the spec (or ``None``) and
    the parameters as written."""
    name: Any
    dist: Any
    params: Mapping[str, Any]
    if isinstance(raw, str):
        name, dist, params, use_path = raw, None, {}, path
    elif isinstance(raw, Mapping):
        name, dist = raw.get("use"), raw.get("from")
        slot = SLOT_TYPES.get(kind)
        host_keys = slot.host_keys if slot is not None else ("use", "from")
        params = {k: v for k, v in raw.items() if k not in host_keys}
        use_path = (*path, "use")
        if name is None and "use" not in raw:
            typos = [k for k in params if difflib.get_close_matches(k, ["use"], n=1, cutoff=0.6)]
            hint = f"; {shown(typos[0])} looks like a misspelling of 'use'" if typos else ""
            ctx.add(f"missing required key 'use' (the {kind} component's name){hint}", path,
                    ctx.parent_position(path))
            ctx.poisoned.add((*path, "use"))
            return None, params
        if isinstance(name, int | float) and not isinstance(name, bool):
            name = str(name)  # the format's models take a number as its text (coerce_numbers_to_str), as run does
        if isinstance(dist, int | float) and not isinstance(dist, bool):
            dist = str(dist)
        if not isinstance(name, str) or (dist is not None and not isinstance(dist, str)):
            return None, params  # wrong types: reported by the structure check
    else:
        return None, {}
    if ctx.is_poisoned(use_path) or (dist is not None and ctx.is_poisoned((*path, "from"))):
        return None, params
    named = "(from the environment)" if ctx.is_secret(use_path) else shown(name)
    try:
        return registry.resolve(kind, name, dist), params
    except ComponentNotFound as exc:
        known = registry.names(kind)
        if dist is not None and name in known:
            dists = [s.distribution for s in registry.components.get(kind, {}).get(name, [])]
            ctx.add(f"no distribution {shown(dist)} registers {kind} {shown(name)}; it is registered by: "
                    f"{', '.join(dists)}",
                    (*path, "from"))
        else:
            hint = "" if ctx.is_secret(use_path) else (
                f"; did you mean {' or '.join(shown(s) for s in exc.suggestions)}?" if exc.suggestions else "")
            other = [k for k in registry.components if k != kind and name in registry.names(k)]
            if other and not ctx.is_secret(use_path):
                hint = f"; {shown(name)} is {_a(other[0])} {other[0]}, not {_a(kind)} {kind}"
            kinds = _PLURALS.get(kind, f"{kind}s")
            listed = f"installed {kinds}: {', '.join(known)}" if known else f"no {kinds} are installed"
            ctx.add(f"unknown {kind} {named}{hint} ({listed})", use_path)
    except AmbiguousComponent as exc:
        ctx.add(f"{kind} {named} is registered by both {' and '.join(exc.distributions)}; "
                f"add 'from: <distribution>' to pick one", use_path)
    return None, params


# the registry's kinds whose plural is not the kind + "s"
_PLURALS = {"memory": "memory components", "capability": "capabilities"}


def _a(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def check_slot(ctx: Context, registry: Registry, slot: type[ComponentRef], raw: Any, path: KeyPath) -> tuple[
        ComponentSpec | None, Any, bool]:
    """Resolve and validate one slot, and the slots nested in its parameters (see
    :func:`check_nested_slots`). Returns ``(spec, config, ok)``."""
    spec, params = resolve_slot(ctx, registry, slot.kind, raw, path)
    if spec is None:
        return None, None, False
    before = len(ctx.issues)
    ok, config = validate_params(ctx, spec, params, path)
    if _same_module(spec) and any(i.message.startswith(f"{component_label(spec)} cannot be loaded")
                                  for i in ctx.issues[before:]):
        ok = False  # the factory's module is the config's, which does not import: one problem, said once
    elif not check_factory(ctx, spec, path):
        ok = False
    elif slot.kind == "guardrail" and isinstance(raw, Mapping) and not check_guard_points(ctx, spec, raw, path):
        ok = False
    if not check_nested_slots(ctx, registry, spec, params, path):
        ok = False
    return spec, config, ok


def _same_module(spec: ComponentSpec) -> bool:
    """Whether ``spec``'s config model and factory are ``"module:attr"`` paths into one module."""
    f, c = spec.factory, spec.config
    return isinstance(f, str) and isinstance(c, str) and f.partition(":")[0] == c.partition(":")[0]


def component_label(spec: ComponentSpec) -> str:
    """``provider 'x' (from DIST VERSION, plugin EP)``: a component and who registered it."""
    version = f" {spec.version}" if spec.version else ""
    plugin = f", plugin {spec.plugin!r}" if spec.plugin and spec.plugin != spec.distribution else ""
    return f"{spec.kind} {spec.name!r} (from {spec.distribution}{version}{plugin})"


def slot_name(path: KeyPath) -> str:
    """The slot's own key (``model``, ``checkpoints``, ``grounding``, ``tools``...) in ``path``."""
    return next((str(el) for el in reversed(path) if isinstance(el, str)), "")


def check_factory(ctx: Context, spec: ComponentSpec, path: KeyPath) -> bool:
    """Import ``spec``'s factory (a ``"module:attr"`` path; nothing is built) and, when it is a
    class, check its methods against the slot's port (see :mod:`seamkit._plugins.ports_check`).
    Problems are added to ``ctx`` at the slot's ``use``; returns whether there were none."""
    from seamkit._plugins.ports_check import class_problems, slot_port

    at = (*path, "use") if (*path, "use") in ctx.values else path
    try:
        factory = spec.factory_callable()
    except Exception as exc:
        reason = str(exc).removeprefix(f"{spec.factory!r}: ")
        if not isinstance(exc, AttributeError | ModuleNotFoundError):  # those say what is missing themselves
            reason = f"{type(exc).__name__}: {reason}"
        reason = mask_message(reason)  # a plugin's message may quote a secret
        ctx.add(f"{component_label(spec)} cannot be loaded: its factory {spec.factory!r} does not import: "
                f"{reason}", at)
        return False
    if not callable(factory):
        ctx.add(f"{component_label(spec)} cannot be built: its factory {spec.factory!r} is not callable "
                f"(it is {type(factory).__name__})", at)
        return False
    if not isinstance(factory, type):
        return True
    port = slot_port(spec.kind, slot_name(path))
    if port is None:
        return True
    problems = class_problems(factory, port)
    if problems:
        ctx.add(f"{component_label(spec)} does not satisfy {port.label}: {'; '.join(problems)}", at)
        return False
    return True


def check_guard_points(ctx: Context, spec: ComponentSpec, raw: Mapping[str, Any], path: KeyPath) -> bool:
    """A guardrail slot's ``at`` (and ``parallel``) against the points its class has checks for,
    before anything is built: the class is the factory itself or the class its return annotation
    names (``def build(config) -> Redact``); a factory that says nothing is checked when built.
    Problems are added to ``ctx`` at ``at[i]`` (or ``parallel``); returns whether there were none."""
    from seamkit._guardrails import METHODS, placement_problems, points_of

    at = raw.get("at")
    points = [at] if isinstance(at, str) else at if isinstance(at, list) else []
    if not points and raw.get("parallel") is not True:
        return True
    factory = spec.factory_callable()
    cls: Any = factory
    if not isinstance(factory, type):
        try:
            cls = typing.get_type_hints(factory).get("return")
        except Exception:  # an annotation that does not resolve: checked when built
            return True
    if not isinstance(cls, type):
        return True
    has = points_of(cls)
    if not has:
        return True  # not a guardrail at all: the build says so
    problems = [
        (i, message)
        for i, message in placement_problems(f"guardrail {shown(spec.name)}", has, points or has,
                                             raw.get("parallel") is True)
        # an unknown point or a wrong type is the structure check's to report
        if i is None or (isinstance(points[i], str) and points[i] in METHODS)
    ]
    for i, message in problems:
        ctx.add(message, (*path, "parallel") if i is None else (*path, "at", i) if isinstance(at, list) else
                (*path, "at"))
    return not problems


def check_nested_slots(ctx: Context, registry: Registry, spec: ComponentSpec, params: Mapping[str, Any],
                       path: KeyPath) -> bool:
    """Resolve and validate the slots ``spec``'s config model marks with
    :class:`~seamkit._slots.ComponentSlot` in ``params`` (written at ``path``), recursively.
    Problems are added to ``ctx``; returns whether there were none."""
    try:
        model = spec.config_model()
    except Exception:  # reported by validate_params
        return True
    if not _is_model(model):
        return True
    ok = True
    for sub_path, slot, raw in iter_slots(model, params, path):
        if ctx.is_poisoned(sub_path) or sub_path in ctx.flagged:
            continue
        _, _, sub_ok = check_slot(ctx, registry, slot, raw, sub_path)
        ok = ok and sub_ok
    return ok


def is_bool_field(registry: Registry, root: type[BaseModel], data: Any, path: KeyPath) -> bool:
    """Whether the field at ``path`` in raw ``data`` (shaped by ``root``) is typed ``bool`` only
    (or ``bool`` or some ``Literal`` words),
    following component slots into their component's config model. Unknown: ``False``."""
    current: list[Any] = [root]
    for i, el in enumerate(path):
        slots = [alt for tp in current for alt in _unwrap(tp)
                 if isinstance(alt, type) and issubclass(alt, ComponentRef)]
        if slots:  # a component's parameter: continue in its config model
            raw = _value_at(data, path[:i])
            if not isinstance(raw, Mapping) or not isinstance(raw.get("use"), str):
                return False
            dist = raw.get("from")
            try:
                model = registry.resolve(slots[0].kind, raw["use"], dist if isinstance(dist, str) else None
                                         ).config_model()
            except Exception:
                return False
            if not _is_model(model):
                return False
            current = [model]
        current = [t for tp in current for t in _step(tp, el)]
        if not current:
            return False
    alts = [alt for tp in current for alt in _unwrap(tp)]
    # a few named words besides true/false (reset_tool_choice: true, false, auto or none) still
    # take a YAML 1.1 word (on, yes) as a mistaken boolean
    return bool in alts and all(alt in (bool, type(None)) or typing.get_origin(alt) is typing.Literal
                                for alt in alts)
