"""The data the conversation steps pass along, as JSON data (so checkpoints and events hold it),
and the checks that read it. Every reader raises :class:`~seamkit.workflows.StepError`
``INVALID_STEP_INPUT`` naming what it found instead of what it wanted.

- **turn**: ``{"role": "user" | "assistant", "text": str}``; a **history** is a list of turns,
  oldest first.
- **conversation** (``contextualize``'s input): the person's message as a ``str``, or
  ``{"message": str, "history": [turn, ...], "title": str | None}`` (``history`` and ``title``
  optional).
- **question** (``contextualize``'s output): ``{"query": str, "title": str | None, "message": str,
  "history": [turn, ...]}``: the standalone query, the thread's title and the conversation it
  came from, so that later steps need only this one event.
- **block**: ``{"id": str, "text": str, "score": float | None, ...}``, a piece of gathered context
  (``recall`` adds ``source`` and ``origin``); a **gathered** payload is ``{"blocks": [block, ...]}``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seamkit.values import thaw
from seamkit.workflows import StepError

__all__ = ["Conversation", "as_blocks", "as_conversation", "as_history", "query_of", "text_of", "turn"]

ROLES = ("user", "assistant")


def _bad(what: str, value: Any) -> StepError:
    shown = value if isinstance(value, str) else type(value).__name__
    return StepError("INVALID_STEP_INPUT", f"{what}, got {shown!r:.120}")


def turn(role: str, text: str) -> dict[str, str]:
    """One turn of a history."""
    return {"role": role, "text": text}


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def as_history(value: Any) -> list[dict[str, str]]:
    """``value`` (``None`` or a list of turns) as a list of turns, oldest first."""
    if value is None:
        return []
    if not _is_list(value):
        raise _bad("'history' must be a list of {'role': 'user' | 'assistant', 'text': str}", value)
    out = []
    for i, t in enumerate(value):
        if not (isinstance(t, Mapping) and t.get("role") in ROLES and isinstance(t.get("text"), str)):
            raise _bad(f"history[{i}] must be {{'role': 'user' | 'assistant', 'text': str}}", t)
        out.append(turn(t["role"], t["text"]))
    return out


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation as the steps read it: the person's ``message``, the ``history`` before it
    (turns, oldest first), the thread's ``title`` and the standalone ``query`` (``None`` until
    ``contextualize`` derived one)."""

    message: str
    history: tuple[dict[str, str], ...] = ()
    title: str | None = None
    query: str | None = None


def is_conversation(value: Any) -> bool:
    """Whether ``value`` is a conversation or question mapping (it has a ``"message"``)."""
    return isinstance(value, Mapping) and "message" in value


def as_conversation(value: Any) -> Conversation:
    """A conversation or question (see the module doc) as a :class:`Conversation`."""
    if isinstance(value, str):
        return Conversation(value)
    if not is_conversation(value) or not isinstance(value["message"], str):
        raise _bad("expected the person's message as a str or {'message': str, 'history': [...], 'title': ...}",
                   value)
    title = value.get("title")
    if title is not None and not isinstance(title, str):
        raise _bad("'title' must be a str or null", title)
    query = value.get("query")
    if query is not None and not isinstance(query, str):
        raise _bad("'query' must be a str", query)
    return Conversation(value["message"], tuple(as_history(value.get("history"))), title, query)


def query_of(value: Any) -> str:
    """The text to search memory with: a ``str`` as it is, else a question's ``query`` (its
    ``message`` when it has none)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("query"), str):
        return str(value["query"])
    if is_conversation(value):
        return as_conversation(value).message
    raise _bad("expected a query: a str or {'query': str, ...}", value)


def text_of(value: Any, what: str) -> str:
    """An answer's text: a ``str`` as it is, a mapping's ``"answer"`` or ``"text"`` (a ``str``);
    any other value (an agent's typed output) as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in ("answer", "text"):
            if isinstance(value.get(key), str):
                return str(value[key])
    if value is None:
        raise _bad(f"expected {what}", value)
    return json.dumps(thaw(value), ensure_ascii=False, default=str)


def _block(value: Any, where: str) -> dict[str, Any]:
    if not (isinstance(value, Mapping) and isinstance(value.get("text"), str)):
        raise _bad(f"{where} must be a block {{'id': str, 'text': str, 'score': float | None}}", value)
    block = dict(thaw(value))
    # a block without an id gets one from its text: the same on every run and in every process
    block["id"] = str(block.get("id") or "b" + hashlib.sha256(block["text"].encode("utf-8", "replace")).hexdigest()[:6])
    block.setdefault("score", None)
    return block


def as_blocks(value: Any, where: str = "input") -> tuple[list[dict[str, Any]], Conversation | None]:
    """Every block in ``value`` and the conversation there, walking it: a conversation or question
    (a mapping with ``"message"``; its own ``"blocks"`` count too), a gathered payload
    (``{"blocks": [...]}``), a text payload of another event (one block: a gather-mode agent's
    context block), a mapping of event type -> payload (several events consumed) or a list of
    payloads (a join). Blocks keep their order (the order of the step's consumed events, then
    their own). Raises ``INVALID_STEP_INPUT`` for two different conversations, or a payload that
    is none of these."""
    blocks: list[dict[str, Any]] = []
    found: list[Conversation] = []

    def walk(v: Any, at: str) -> None:
        if v is None:
            return  # a step with nothing to give (memory off) may emit nothing useful
        if isinstance(v, str) and at != where:
            # a text payload of another event (a gather-mode agent's context block) is one block
            if v.strip():
                blocks.append(_block({"text": v, "source": at.rsplit(".", 1)[-1]}, at))
            return
        if isinstance(v, Mapping) and isinstance(v.get("text"), str) and not is_conversation(v) and "blocks" not in v:
            blocks.append(_block(v, at))
            return
        if isinstance(v, Mapping):
            if is_conversation(v):
                found.append(as_conversation(v))
            if "blocks" in v:
                items = v["blocks"]
                if not _is_list(items):
                    raise _bad(f"{at}.blocks must be a list of blocks", items)
                blocks.extend(_block(b, f"{at}.blocks[{i}]") for i, b in enumerate(items))
                for key, item in v.items():  # a gathered payload may carry the question along
                    if key != "blocks" and is_conversation(item):
                        walk(item, f"{at}.{key}")
            elif not is_conversation(v):
                for key, item in v.items():
                    walk(item, f"{at}.{key}")
            return
        if _is_list(v):
            for i, item in enumerate(v):
                walk(item, f"{at}[{i}]")
            return
        raise _bad(f"{at} must be a conversation, {{'blocks': [...]}} or a list of them", v)

    walk(value, where)
    distinct: list[Conversation] = []
    for c in found:  # the same question may arrive through several events
        if c not in distinct:
            distinct.append(c)
    if len(distinct) > 1:
        raise StepError("INVALID_STEP_INPUT", f"{where} holds {len(distinct)} different conversations; "
                        "compose answers one")
    return blocks, (distinct[0] if distinct else None)
