"""The one sentence a provider sends in place of a tool result's images it cannot send.

A tool may return images with its result (:attr:`seamkit.values.ToolResult.images`, from a
:class:`~seamkit.values.ToolOutput`). A provider whose API takes images in a tool result sends
them; one whose API or model takes none must not drop them silently (the model would take the
result for all there is) nor fail the run (the tool did its work): it sends the result's text with
this note instead, so the model knows something was left out and why, e.g.::

    [1 image left out (image/png, 2,048 bytes): this model does not take images]

Public API (stable; every provider plugin uses the same wording):

- :data:`NO_IMAGES`: the usual reason, "this model does not take images".
- :func:`images_left_out(images, why=NO_IMAGES) -> str`: the note for ``images`` (``""`` for none).
- :func:`text_with_images_note(result, why=NO_IMAGES) -> str`: the result's text followed by the
  note (the text unchanged when the result has no images).
- :func:`left_out_warning(result, model) -> str`: the warning (a ``Delta(warning=...)``) a provider
  reports when it sent the note instead of ``result``'s images to a model that takes none.
"""

from __future__ import annotations

from collections.abc import Sequence

from seamkit.values import ImageBlock, ToolResult

__all__ = ["NO_IMAGES", "images_left_out", "left_out_warning", "text_with_images_note"]

NO_IMAGES = "this model does not take images"
"""Why images are left out when the model (by its capability flags) takes no image input."""


def _what(image: ImageBlock) -> str:
    # the URL itself is not repeated: it may carry a signed query string the model has no use for
    if image.data is not None:
        return f"{image.media_type}, {len(image.data):,} bytes"
    return f"{image.media_type}, by URL"


def images_left_out(images: Sequence[ImageBlock], why: str = NO_IMAGES) -> str:
    """The note saying that ``images`` were not sent and ``why``: ``"[N image(s) left out (<media
    type>, <size in bytes> | by URL; ...): <why>]"``; ``""`` when ``images`` is empty."""
    if not images:
        return ""
    n = len(images)
    return f"[{n} image{'' if n == 1 else 's'} left out ({'; '.join(_what(i) for i in images)}): {why}]"


def text_with_images_note(result: ToolResult, why: str = NO_IMAGES) -> str:
    """``result.content`` followed (after a blank line) by :func:`images_left_out` for its images;
    the note alone when the content is empty; the content unchanged when there are no images."""
    note = images_left_out(result.images, why)
    if not note:
        return result.content
    return f"{result.content}\n\n{note}" if result.content else note


def left_out_warning(result: ToolResult, model: str) -> str:
    """``"N image(s) from tool call '<id>' (<tool>) not sent: <model> does not take images; the tool
    result says so instead"``: what a provider reports for each tool result whose images it
    replaced with the note (a run keeps each warning once)."""
    n = len(result.images)
    return (f"{n} image{'' if n == 1 else 's'} from tool call {result.call_id!r} ({result.name}) not sent: "
            f"{model} does not take images; the tool result says so instead")
