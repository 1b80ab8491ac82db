"""Where marker values sit in a sent request's body, for the provider suite's structural checks.

The body is read as a tree, whatever the wire format: mappings and dataclasses are objects (their
keys / field names are steps), lists and tuples are arrays (indexes are steps), everything else is a
leaf. A marker is found in the first string leaf (in document order: JSON keeps the order sent)
containing it. The checks compare positions and the shape of the objects around the markers, never
field names, so they hold for OpenAI chat (``messages``), Responses (``input``), Anthropic
(``messages`` + ``system``), Gemini (``contents`` + ``systemInstruction``) and in-process requests
alike; a rendered prompt (one string outside any array holding every turn) is checked as text.
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

Path = tuple[Any, ...]

_MAX_DEPTH = 64


def _children(value: Any) -> list[tuple[Any, Any]] | None:
    """``(step, child)`` pairs of an object or array; ``None`` for a leaf."""
    if isinstance(value, Mapping):
        return [(str(k), v) for k, v in value.items()]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    if isinstance(value, Sequence | set | frozenset) and not isinstance(value, str | bytes | bytearray):
        return [(i, v) for i, v in enumerate(value)]
    return None


def leaves(body: Any) -> list[tuple[Path, Any]]:
    """Every leaf of ``body`` with its path, in document order (mapping keys are kept as leaves of
    their own, at the path of their value plus ``"<key>"``)."""
    out: list[tuple[Path, Any]] = []

    def walk(value: Any, path: Path) -> None:
        if len(path) > _MAX_DEPTH:
            return
        kids = _children(value)
        if kids is None:
            out.append((path, value))
            return
        for step, child in kids:
            if isinstance(value, Mapping):
                out.append(((*path, step, "<key>"), step))
            walk(child, (*path, step))

    walk(body, ())
    return out


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return None


def find(body: Any, marker: str) -> Path | None:
    """The path of the first string leaf containing ``marker`` (``None`` when none does)."""
    for path, value in leaves(body):
        text = _text(value)
        if text is not None and marker in text:
            return path
    return None


def _at(body: Any, path: Path) -> Any:
    value = body
    for step in path:
        kids = dict(_children(value) or [])
        if step not in kids:
            return None  # a mapping key's own path
        value = kids[step]
    return value


def _mentions(body: Any, prefix: Path, marker: str) -> bool:
    return any(path[:len(prefix)] == prefix and (t := _text(v)) is not None and marker in t
               for path, v in leaves(body))


def _common(paths: Sequence[Path]) -> Path:
    first = paths[0]
    n = 0
    while all(len(p) > n and p[n] == first[n] for p in paths):
        n += 1
    return first[:n]


def _signature(value: Any, markers: Sequence[str]) -> str:
    """``value`` as canonical JSON with every string holding a marker replaced by ``<marker>``: what
    is left says which role the object has (``"role": "user"``, ``"type": "output_text"``...)."""

    def plain(v: Any, depth: int = 0) -> Any:
        kids = _children(v) if depth < _MAX_DEPTH else None
        if kids is None:
            text = _text(v)
            if text is not None and any(m in text for m in markers):
                return "<marker>"
            return v if isinstance(v, int | float | bool | str) or v is None else repr(v)
        if isinstance(v, Mapping) or (dataclasses.is_dataclass(v) and not isinstance(v, type)):
            return {k: plain(c, depth + 1) for k, c in kids}
        return [plain(c, depth + 1) for _, c in kids]

    return json.dumps(plain(value), sort_keys=True, default=repr)


def turn_problems(body: Any, turns: Sequence[tuple[str, str]], system: str | None = None,
                  leading: bool = True) -> list[str]:
    """What is wrong with how the conversation ``turns`` (``(role, marker)`` in conversation order,
    roles ``user`` / ``assistant``) and the ``system`` marker sit in ``body``; ``[]`` when nothing.

    Each turn must sit in its own message (not squashed into one string with the others), in the
    conversation's order, and a message of another role must look different once the marker texts
    are blanked out (its role field, its part types...): a role sent as another is lost. The system
    prompt, when it sits in the same array as the turns, must come first (unless not ``leading``: a
    system message later in the conversation) and look like no turn.
    A rendered prompt (every turn in one string that is inside no array) is read as text: the turns
    in order, and the text introducing the assistant turn differs from the text introducing a user
    turn (the role tags of the chat template)."""
    markers = [m for _, m in turns] + ([system] if system else [])
    paths = [find(body, m) for _, m in turns]
    missing = [m for (_, m), p in zip(turns, paths, strict=True) if p is None]
    if missing:
        return [f"the turn(s) {missing} were not sent in the body"]
    found: list[Path] = [p for p in paths if p is not None]
    if len(set(found)) == 1:
        return _flat_problems(body, found[0], turns, system)
    if len(set(found)) < len(found):
        return ["two turns were squashed into one message: each turn must be a message of its own"]
    problems: list[str] = []
    order = [p for p, _ in leaves(body)]
    positions = [order.index(p) for p in found]
    if positions != sorted(positions):
        problems.append("the turns were not sent in the conversation's order (oldest first)")
    base = _common(found)
    items = [p[:len(base) + 1] for p in found]
    signatures = [_signature(_at(body, item), markers) for item in items]
    by_role: dict[str, set[str]] = {}
    for (role, _), signature in zip(turns, signatures, strict=True):
        by_role.setdefault(role, set()).add(signature)
    roles = list(by_role)
    for i, role in enumerate(roles):
        for other in roles[i + 1:]:
            if by_role[role] & by_role[other]:
                problems.append(f"the {role} and {other} turns were sent alike "
                                f"({sorted(by_role[role] & by_role[other])[0]}): their roles are lost")
    if system is not None:
        problems += _system_problems(body, system, found, items, signatures, markers, order, leading)
    return problems


def _system_problems(body: Any, system: str, found: list[Path], items: list[Path], signatures: list[str],
                     markers: Sequence[str], order: list[Path], leading: bool = True) -> list[str]:
    where = find(body, system)
    if where is None:
        return ["the system prompt was not sent in the body"]
    if where in found:
        return ["the system prompt was squashed into a turn's message"]
    base = _common(found)
    if where[:len(base)] != base or len(where) <= len(base):
        return []  # a field of its own (Anthropic's system, Gemini's systemInstruction...)
    item = where[:len(base) + 1]
    if item in items:
        return ["the system prompt was squashed into a turn's message"]
    problems = []
    if leading and order.index(where) > order.index(found[0]):
        problems.append("the system prompt was not sent before the conversation")
    if _signature(_at(body, item), markers) in signatures:
        problems.append("the system prompt was sent like a turn of the conversation: its role is lost")
    return problems


def _flat_problems(body: Any, path: Path, turns: Sequence[tuple[str, str]], system: str | None) -> list[str]:
    if any(isinstance(step, int) for step in path):
        return ["the turns were squashed into one message: each turn must be a message of its own"]
    text = _text(_at(body, path)) or ""
    starts = [text.index(m) for _, m in turns]
    if starts != sorted(starts):
        return ["the turns were not sent in the conversation's order (oldest first)"]
    if system is not None and system in text and text.index(system) > starts[0]:
        return ["the system prompt was not sent before the conversation"]
    # the text between one turn's end and the next turn's start: the next turn's role tag
    intros: dict[str, set[str]] = {}
    for (_, prev), (role, _), start, prev_start in zip(turns, turns[1:], starts[1:], starts, strict=False):
        intros.setdefault(role, set()).add(text[prev_start + len(prev):start])
    roles = list(intros)
    for i, role in enumerate(roles):
        for other in roles[i + 1:]:
            if intros[role] & intros[other]:
                return [f"the {role} and {other} turns are introduced alike in the prompt: their roles are lost"]
    return []


def result_id_problems(body: Any, result: str, own_id: str, other_ids: Sequence[str], call_marker: str) -> list[str]:
    """What is wrong with how the tool result ``result`` is tied to its call's id ``own_id``: the
    nearest object around the result that holds any call id must hold ``own_id``, none of
    ``other_ids``, and not the call itself (``call_marker``, its arguments): an id found only on the
    call does not tell the API which call this result answers."""
    where = find(body, result)
    if where is None:
        return [f"the tool result {result!r} was not sent in the body"]
    ids = [own_id, *other_ids]
    for n in range(len(where), -1, -1):
        prefix = where[:n]
        held = [i for i in ids if _mentions(body, prefix, i)]
        if not held:
            continue
        if held != [own_id] or _mentions(body, prefix, call_marker):
            return [f"the tool result {result!r} was not sent with its own call id {own_id!r}: the nearest "
                    f"id(s) around it are {held}{', on the call itself' if held == [own_id] else ''}"]
        return []
    return [f"the tool result {result!r} was sent without any call id"]


def _position(body: Any, marker: str) -> tuple[int, int] | None:
    """Where ``marker`` first occurs: (its leaf's index in document order, its offset in the leaf)."""
    for i, (_, value) in enumerate(leaves(body)):
        text = _text(value)
        if text is not None and marker in text:
            return i, text.index(marker)
    return None


def count(body: Any, marker: str) -> int:
    """How many times ``marker`` occurs in the string leaves of ``body`` (keys included)."""
    return sum(t.count(marker) for _, v in leaves(body) if (t := _text(v)) is not None)


def once_problems(body: Any, named: Sequence[tuple[str, str]]) -> list[str]:
    """Each ``(what, marker)`` sent exactly once: a turn sent twice (a duplicated message, the
    history appended again) is a different conversation."""
    return [f"the {what} was sent {n} times, not once" for what, marker in named
            if (n := count(body, marker)) > 1]


def order_problems(body: Any, named: Sequence[tuple[str, str]]) -> list[str]:
    """The ``(what, marker)`` pairs occur in ``body`` in the order given (document order: JSON
    keeps the order sent; inside one string, by offset): a tool result before the call it answers,
    or a turn moved, is out of order. Markers not found are left to the presence checks."""
    placed = [(what, p) for what, m in named if (p := _position(body, m)) is not None]
    for (before, p), (after, q) in itertools.pairwise(placed):
        if q < p:
            return [f"the {after} was sent before the {before}: the conversation's order is lost"]
    return []


MISSING = object()
"""What :func:`value_at` returns for a path that leads nowhere."""


def value_at(body: Any, path: str) -> Any:
    """The value at the dotted ``path`` of ``body`` (``"generationConfig.maxOutputTokens"``; a
    number steps into an array: ``"messages.0.role"``), or :data:`MISSING`."""
    value = body
    for step in path.split("."):
        kids = _children(value)
        if kids is None:
            return MISSING
        found = dict(kids)
        key: Any = int(step) if step.isdigit() and not isinstance(value, Mapping) else step
        if key not in found:
            return MISSING
        value = found[key]
    return value


_MEDIA_TYPE = re.compile(r"^image/[A-Za-z0-9.+-]+$")


def _media_types(value: Any) -> list[str]:
    return [v for _, v in leaves(value) if isinstance(v, str) and _MEDIA_TYPE.match(v)]


def image_problems(body: Any, data: bytes, media_type: str, text_marker: str,
                   turn_markers: Sequence[str] = (), *, media_type_required: bool = True) -> list[str]:
    """What is wrong with how the inline image ``data`` (``media_type``) sits in ``body``; ``[]``
    when nothing. It must be a value of its own: the base64 of the bytes (standard or URL-safe),
    the raw bytes, or exactly ``data:<media_type>;base64,<base64>``; never inside an ``http(s)``
    URL (the API would fetch it) or inside text (the model reads it as words). A bare base64 or
    bytes value needs its media type (a value ``image/...``) beside it, in the nearest object that
    names one (unless not ``media_type_required``: an API whose images carry no media type, such as
    Ollama's bare base64 ``images``; a media type found beside it must still be ``media_type``). With
    ``turn_markers`` (markers of other turns, one message each), the image must sit in the same
    message as ``text_marker`` (the text sent with it)."""
    encoded = (base64.b64encode(data).decode(), base64.urlsafe_b64encode(data).decode())
    data_url = tuple(f"data:{media_type};base64,{e}" for e in encoded)
    where: Path | None = None
    raw = False
    near: list[str] = []
    for path, value in leaves(body):
        if (isinstance(value, bytes | bytearray) and bytes(value) == data) or value in encoded:
            where, raw = path, True
            break
        if isinstance(value, str) and value in data_url:
            where = path
            break
        if isinstance(value, str) and any(e in value for e in encoded):
            near.append(value)
    if where is None:
        if not near:
            return ["the image's bytes were not sent"]
        text = near[0]
        if text_marker in text:
            return ["the image was pasted into the text of the message, not sent as an image"]
        if text.lower().startswith(("http://", "https://")):
            return ["the image's bytes were put inside an http(s) URL (the API would fetch that URL)"]
        if text.startswith("data:"):
            label = text[5:].split(";", 1)[0].split(",", 1)[0]
            return [f"the image was sent as a data URL labelled {label!r}, not {media_type!r}"]
        return ["the image's base64 was sent inside a longer text, not as a value of its own "
                f"(the base64 alone, or exactly data:{media_type};base64,...)"]
    problems: list[str] = []
    if raw:
        for n in range(len(where) - 1, -1, -1):
            types = _media_types(_at(body, where[:n]))
            if types:
                if set(types) != {media_type}:
                    problems.append(f"the image was sent labelled {sorted(set(types))}, not {media_type!r}")
                break
        else:
            if media_type_required:
                problems.append(f"the image was sent without its media type ({media_type!r})")
    text_at = find(body, text_marker)
    others = [p for m in turn_markers if (p := find(body, m)) is not None]
    if text_at is not None and others and text_at not in others:
        base = _common([text_at, *others])
        if where[:len(base) + 1] != text_at[:len(base) + 1]:
            problems.append("the image was not sent in the message holding the text sent with it")
    return problems


def _embedded(text: str) -> list[tuple[int, Any, str]]:
    """The JSON objects written inside ``text`` (a prompt an engine renders): ``(offset, value,
    the text since the previous one ended)`` each."""
    out: list[tuple[int, Any, str]] = []
    decoder = json.JSONDecoder()
    at, since = text.find("{"), 0
    while at != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        out.append((at, value, text[since:at]))
        since = end
        at = text.find("{", end)
    return out


def _objects(body: Any) -> list[tuple[Path, Mapping[str, Any], str | None]]:
    """Every mapping in ``body`` with its path, in document order, and ``None``; a JSON object
    written inside a string leaf (a schema in a rendered prompt) too, its path the leaf's plus
    ``("<json>", offset)`` and the text before it (since the previous such object) instead of
    ``None``."""
    out: list[tuple[Path, Mapping[str, Any], str | None]] = []

    def walk(value: Any, path: Path, lead: str | None) -> None:
        if len(path) > _MAX_DEPTH:
            return
        if isinstance(value, str) and "{" in value:
            for offset, inner, before in _embedded(value):
                walk(inner, (*path, ("<json>", offset)), before)
            return
        if isinstance(value, Mapping):
            out.append((path, value, lead))
        for step, child in _children(value) or []:
            walk(child, (*path, step), lead)

    walk(body, (), None)
    return out


def schema_sent(body: Any, property_name: str) -> tuple[Path, Mapping[str, Any], str | None] | None:
    """The first object of ``body`` whose ``properties`` (an object) has ``property_name``: where a
    JSON Schema holding that property was sent, with the text before it when it was written inside
    a text (see :func:`_objects`); ``None`` when none is."""
    for path, obj, lead in _objects(body):
        props = obj.get("properties")
        if isinstance(props, Mapping) and property_name in props:
            return path, obj, lead
    return None


def owner_of(body: Any, path: Path, name: str) -> Any:
    """The nearest object (mapping or dataclass) enclosing ``path`` that has a string leaf equal
    to ``name`` outside the value at ``path`` (a tool's object: its name beside its parameters);
    ``None`` when none does."""
    for n in range(len(path) - 1, -1, -1):
        around = _at(body, path[:n])
        if (isinstance(around, Mapping) or dataclasses.is_dataclass(around)) and any(
                v == name and p[:len(path) - n] != path[n:] for p, v in leaves(around)):
            return around
    return None


def _types(value: Any) -> set[str]:
    kinds = value if isinstance(value, list | tuple) else [value]
    return {k.lower() for k in kinds if isinstance(k, str)}


def schema_loss(original: Mapping[str, Any], sent: Any, where: str = "the schema") -> list[str]:
    """What of ``original`` (a JSON Schema) ``sent`` lost or loosened; ``[]`` when nothing. Every
    property (recursively, and ``items``) must be there with its ``type`` (case-insensitive: Gemini
    writes ``STRING``; a nullable union such as ``["string", "null"]`` keeps it), ``description``
    and ``enum`` values (``null`` may be added: a nullable property); every ``required`` name must
    stay required; ``additionalProperties: false`` must not be sent as anything else but false or
    left out. A provider may add (OpenAI strict mode requires every property and adds
    ``additionalProperties: false``); a sent ``anyOf`` keeps the original when one branch does."""
    if not isinstance(sent, Mapping):
        return [f"{where} was not sent as an object"]
    branches = sent.get("anyOf")
    if "type" in original and "type" not in sent and isinstance(branches, list | tuple):
        found = [schema_loss(original, b, where) for b in branches]
        return [] if any(not f for f in found) else found[0] if found else [f"{where}: an empty anyOf was sent"]
    out: list[str] = []
    for key, value in original.items():
        got = sent.get(key, MISSING)
        if key == "properties" and isinstance(value, Mapping):
            for name, sub in value.items():
                if not isinstance(got, Mapping) or name not in got:
                    out.append(f"{where}: property {name!r} was not sent")
                elif isinstance(sub, Mapping):
                    out += schema_loss(sub, got[name], f"property {name!r}")
        elif key == "items" and isinstance(value, Mapping):
            out += schema_loss(value, got, f"{where} items") if got is not MISSING else [f"{where}: items not sent"]
        elif key == "required":
            lost = [n for n in value if not isinstance(got, list | tuple) or n not in got]
            if lost:
                out.append(f"{where}: {lost} no longer required (required was sent as "
                           f"{'nothing' if got is MISSING else got!r})")
        elif key == "enum":
            if not isinstance(got, list | tuple) or any(v not in got for v in value) or any(
                    v not in value and v is not None for v in got):
                out.append(f"{where}: enum {list(value)!r} was sent as {'nothing' if got is MISSING else got!r}")
        elif key == "type":
            if not _types(value) <= _types(got):
                out.append(f"{where}: type {value!r} was sent as {'nothing' if got is MISSING else got!r}")
        elif key == "description":
            if not (isinstance(got, str) and isinstance(value, str) and value in got):
                out.append(f"{where}: description {value!r} was sent as {'nothing' if got is MISSING else got!r}")
        elif key == "additionalProperties" and value is False and got is not MISSING and got is not False:
            out.append(f"{where}: additionalProperties false was sent as {got!r} (other properties now allowed)")
    return out


def parent_of(body: Any, path: Path) -> Any:
    """The value holding the one at ``path`` (``None`` at the root)."""
    return _at(body, path[:-1]) if path else None
