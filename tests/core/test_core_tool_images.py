"""``seamkit._tool_images``: the one note providers send in place of tool-result images they cannot send."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from seamkit._tool_images import NO_IMAGES, images_left_out, left_out_warning, text_with_images_note
from seamkit.values import ImageBlock, ToolResult

PNG = ImageBlock("image/png", data=b"\x89PNG" + bytes(2044))


def test_one_inline_image() -> None:
    assert images_left_out([PNG]) == "[1 image left out (image/png, 2,048 bytes): this model does not take images]"


def test_several_images_and_a_url_image_and_a_reason() -> None:
    url = ImageBlock("image/jpeg", url="https://example.com/a.jpg?sig=SECRET")
    note = images_left_out([PNG, url], "the API takes no images here")
    assert note == "[2 images left out (image/png, 2,048 bytes; image/jpeg, by URL): the API takes no images here]"
    assert "SECRET" not in note  # a signed URL is not repeated to the model


def test_no_images_no_note() -> None:
    assert images_left_out([]) == ""
    assert text_with_images_note(ToolResult("c1", "t", "42")) == "42"


def test_text_then_note_or_note_alone() -> None:
    assert text_with_images_note(ToolResult("c1", "t", "done", images=(PNG,))) == (
        f"done\n\n[1 image left out (image/png, 2,048 bytes): {NO_IMAGES}]"
    )
    assert text_with_images_note(ToolResult("c1", "t", "", images=(PNG,))) == images_left_out([PNG])


def test_the_warning_names_the_call_the_tool_and_the_model() -> None:
    result = ToolResult("call_7", "screenshot", "", images=(PNG, PNG))
    assert left_out_warning(result, "gpt-3.5-turbo") == (
        "2 images from tool call 'call_7' (screenshot) not sent: gpt-3.5-turbo does not take images; "
        "the tool result says so instead")


@given(st.text(), st.lists(st.binary(min_size=1, max_size=64), min_size=1, max_size=4))
def test_the_text_is_kept_and_every_image_is_counted(content: str, blobs: list[bytes]) -> None:
    images = tuple(ImageBlock("image/png", data=b) for b in blobs)
    out = text_with_images_note(ToolResult("c1", "t", content, images=images))
    assert out.startswith(content)
    noun = "image" if len(blobs) == 1 else "images"
    assert out.endswith(f"[{len(blobs)} {noun} left out ("
                        + "; ".join(f"image/png, {len(b):,} bytes" for b in blobs) + f"): {NO_IMAGES}]")
