"""MCP results as seamkit tool outputs (:class:`~seamkit.values.ToolOutput`), nothing lost silently.

A ``tools/call`` result (:func:`call_output`):

- text blocks are joined with newlines;
- image blocks become :class:`~seamkit.values.ImageBlock` s (base64 decoded, ``mimeType`` kept);
- audio, embedded resources and resource links become text: an embedded text resource is shown
  with its uri, anything binary is described (uri, media type, size) and says it was left out;
- ``structuredContent`` is the value when present. The text goes with it (``{"structured": ...,
  "text": ...}``) only when it adds something: text that is the JSON of the structured value (or
  of its only member, as servers that wrap a plain return value in ``{"result": ...}`` write it,
  or, for a wrapped list, its items one per block or one per line) adds nothing and is dropped;
- ``isError: true`` makes an error output (``is_error=True``): the model sees the server's text.

A ``resources/read`` result (:func:`resource_output`) and a ``prompts/get`` result
(:func:`prompt_output`) follow the same rules for their contents.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from seamkit.values import ImageBlock, ToolOutput

__all__ = ["Limits", "call_output", "limited", "prompt_output", "resource_output"]


@dataclass(frozen=True)
class Limits:
    """How much of a result goes to the model: ``chars`` characters of text (the result's value as
    the model sees it: a string as is, anything else as its JSON), ``images`` images, each at most
    ``image_bytes`` bytes (decoded)."""

    chars: int = 100_000
    images: int = 8
    image_bytes: int = 5 * 1024 * 1024


def limited(out: ToolOutput, limits: Limits) -> ToolOutput:
    """``out`` within ``limits``: text beyond ``limits.chars`` is cut, with a note saying how much
    was left out; images beyond ``limits.images`` or larger than ``limits.image_bytes`` are not
    sent but described in the text. ``out`` itself when it is within them."""
    notes: list[str] = []
    images: list[ImageBlock] = []
    for image in out.images:
        size = len(image.data) if image.data is not None else 0
        if size > limits.image_bytes:
            notes.append(f"[image ({image.media_type}, {size} bytes) left out: larger than max_image_bytes "
                         f"({limits.image_bytes} bytes)]")
        elif len(images) >= limits.images:
            notes.append(f"[image ({image.media_type}, {size} bytes) left out: more than max_images "
                         f"({limits.images})]")
        else:
            images.append(image)
    value = out.value
    text = value if isinstance(value, str) else None
    if text is None and (notes or not isinstance(value, int | float | bool | type(None))):
        shown = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        if len(shown) > limits.chars or notes:
            text = shown  # the model sees this JSON anyway; cut or noted, it goes as text
    if text is not None and len(text) > limits.chars:
        left = len(text) - limits.chars
        text = (f"{text[:limits.chars]}\n[{left} more characters left out: the result has {len(text)}, "
                f"more than max_result_chars ({limits.chars})]")
    if text is not None and notes:
        text = "\n".join([text, *notes]) if text else "\n".join(notes)
    if text is None and len(images) == len(out.images):
        return out
    return ToolOutput(value if text is None else text, images=tuple(images), is_error=out.is_error)


def _decode(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _resource(contents: Any, texts: list[str], images: list[ImageBlock]) -> None:
    """One resource's contents (text or blob) into ``texts``/``images``."""
    mime = contents.mime_type or "unknown type"
    text = getattr(contents, "text", None)
    if text is not None:
        texts.append(f"[resource {contents.uri} ({mime})]\n{text}")
        return
    blob = getattr(contents, "blob", "") or ""
    data = _decode(blob)
    if data is not None and (contents.mime_type or "").startswith("image/"):
        images.append(ImageBlock(contents.mime_type, data=data))
        texts.append(f"[resource {contents.uri}: image ({mime}, {len(data)} bytes), attached]")
        return
    size = f"{len(data)} bytes" if data is not None else "undecodable base64"
    texts.append(f"[resource {contents.uri}: binary ({mime}, {size}) left out: only text and images are passed on]")


def _blocks(content: Iterable[Any]) -> tuple[list[str], list[ImageBlock], bool]:
    """Texts and images of MCP content blocks; the flag says whether anything other than plain
    text blocks was described in the texts."""
    texts: list[str] = []
    images: list[ImageBlock] = []
    described = False
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
            continue
        described = True
        if kind == "image":
            data = _decode(block.data)
            if data is None:
                texts.append(f"[image ({block.mime_type}) left out: its data is not valid base64]")
            else:
                images.append(ImageBlock(block.mime_type, data=data))
        elif kind == "audio":
            data = _decode(block.data)
            size = f"{len(data)} bytes" if data is not None else "undecodable base64"
            texts.append(f"[audio ({block.mime_type}, {size}) left out: audio is not passed on to the model]")
        elif kind == "resource":
            _resource(block.resource, texts, images)
        elif kind == "resource_link":
            about = f": {block.description}" if block.description else ""
            mime = f" ({block.mime_type})" if block.mime_type else ""
            texts.append(f"[resource link {block.name} <{block.uri}>{mime}{about}]")
        else:
            texts.append(f"[content of type {kind!r} left out: not understood]")
    return texts, images, described


def _shows(text: str, item: Any) -> bool:
    """Whether ``text`` is how a server writes ``item`` as a text block: the string itself, or
    its JSON (any formatting)."""
    if isinstance(item, str) and text == item:
        return True
    try:
        return bool(json.loads(text) == item)
    except ValueError:
        return False


def _items(texts: list[str], structured: Any) -> bool:
    """Whether ``texts`` are just the items of the list a server wrapped as ``{"result": [...]}``
    (the SDK sends each item of a returned list as its own text block): one block per item, or
    all of them in one block joined by newlines."""
    if not (isinstance(structured, dict) and len(structured) == 1):
        return False
    (items,) = structured.values()
    if not isinstance(items, list):
        return False
    if len(texts) == len(items) and all(_shows(t, i) for t, i in zip(texts, items, strict=True)):
        return True
    lines = [i if isinstance(i, str) else json.dumps(i, separators=(",", ":")) for i in items]
    return "\n".join(texts) in ("\n".join(lines), "\n".join(json.dumps(i) for i in items))


def _same(text: str, structured: Any) -> bool:
    """Whether ``text`` says nothing beyond ``structured``."""
    if not text.strip():
        return True
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = text
    if parsed == structured:
        return True
    if not (isinstance(structured, dict) and len(structured) == 1):
        return False
    (only,) = structured.values()
    return bool(only == parsed or only == text)


def call_output(result: Any) -> ToolOutput:
    """A ``CallToolResult`` as a :class:`~seamkit.values.ToolOutput` (see the module docstring)."""
    texts, images, described = _blocks(result.content)
    text = "\n".join(texts)
    structured = result.structured_content
    value: Any
    if structured is not None:
        plain = not described and (_same(text, structured) or _items(texts, structured))
        value = structured if plain else {"structured": structured, "text": text}
    else:
        value = text if texts else (f"[{len(images)} image(s) attached]" if images else "(no content)")
    return ToolOutput(value, images=tuple(images), is_error=bool(result.is_error))


def resource_output(result: Any) -> ToolOutput:
    """A ``ReadResourceResult``: each content's text (with its uri), images attached, other
    binary contents described."""
    texts: list[str] = []
    images: list[ImageBlock] = []
    for contents in result.contents:
        _resource(contents, texts, images)
    return ToolOutput("\n\n".join(texts) or "(the resource is empty)", images=tuple(images))


def prompt_output(result: Any) -> ToolOutput:
    """A ``GetPromptResult``: its description, then each message as ``[role] text``."""
    parts: list[str] = [result.description] if result.description else []
    images: list[ImageBlock] = []
    for message in result.messages:
        texts, got, _ = _blocks([message.content])
        images.extend(got)
        parts.append(f"[{message.role}] " + "\n".join(texts))
    return ToolOutput("\n\n".join(parts) or "(the prompt is empty)", images=tuple(images))
