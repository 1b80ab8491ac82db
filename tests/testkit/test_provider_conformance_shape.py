"""The provider suite's structural checks of what was sent, on hand-written bodies of each wire
format (OpenAI chat, Responses, Anthropic, Gemini, a rendered chat-template prompt): the correct
body passes; every role sent as ``user``, the turns reversed, the turns squashed into one message,
results without their own call id, results before their calls, a turn sent twice, and an image
mislabelled, inside an https URL, pasted into the text, without its media type or in a message of
its own each fail, whatever the format."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pytest_seamkit.conformance._shape import (
    MISSING,
    image_problems,
    once_problems,
    order_problems,
    result_id_problems,
    turn_problems,
    value_at,
)

S, U1, A1, U2 = "SYS-marker", "U1-marker", "A1-marker", "U2-marker"
TURNS = [("user", U1), ("assistant", A1), ("user", U2)]


def _chat() -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "system", "content": S}, {"role": "user", "content": U1},
                                       {"role": "assistant", "content": A1}, {"role": "user", "content": U2}]}


def _responses() -> dict[str, Any]:
    return {"instructions": S, "input": [
        {"role": "user", "content": [{"type": "input_text", "text": U1}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": A1}]},
        {"role": "user", "content": [{"type": "input_text", "text": U2}]}]}


def _anthropic() -> dict[str, Any]:
    return {"system": [{"type": "text", "text": S}], "messages": [
        {"role": "user", "content": [{"type": "text", "text": U1}]},
        {"role": "assistant", "content": [{"type": "text", "text": A1}]},
        {"role": "user", "content": [{"type": "text", "text": U2, "cache_control": {"type": "ephemeral"}}]}]}


def _gemini() -> dict[str, Any]:
    return {"systemInstruction": {"parts": [{"text": S}]}, "contents": [
        {"role": "user", "parts": [{"text": U1}]}, {"role": "model", "parts": [{"text": A1}]},
        {"role": "user", "parts": [{"text": U2}]}]}


FORMATS: dict[str, tuple[Callable[[], dict[str, Any]], str]] = {
    "chat": (_chat, "messages"), "responses": (_responses, "input"), "anthropic": (_anthropic, "messages"),
    "gemini": (_gemini, "contents"),
}


def _chatml(turns: list[tuple[str, str]]) -> dict[str, Any]:
    return {"prompt": "".join(f"<|im_start|>{r}\n{t}<|im_end|>\n" for r, t in turns) + "<|im_start|>assistant\n",
            "temperature": 0.2}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_well_sent_conversation_passes(fmt: str) -> None:
    assert turn_problems(FORMATS[fmt][0](), TURNS, S) == []


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_role_sent_as_user_fails(fmt: str) -> None:
    body = FORMATS[fmt][0]()
    for m in body[FORMATS[fmt][1]]:
        m["role"] = "user"
        for part in m.get("content") if isinstance(m.get("content"), list) else ():
            if part.get("type") == "output_text":  # Responses: an assistant part is output_text
                part["type"] = "input_text"
    (problem,) = turn_problems(body, TURNS)
    assert "roles are lost" in problem


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_reversed_turns_fail(fmt: str) -> None:
    body = FORMATS[fmt][0]()
    body[FORMATS[fmt][1]].reverse()
    assert any("order" in p for p in turn_problems(body, TURNS, S))


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_turns_squashed_into_one_message_fail(fmt: str) -> None:
    body = FORMATS[fmt][0]()
    key = FORMATS[fmt][1]
    body[key] = [{"role": "user", "content": "\n".join(json.dumps(m) for m in body[key])}]
    assert turn_problems(body, TURNS) == [
        "the turns were squashed into one message: each turn must be a message of its own"]


def test_two_turns_in_one_message_fail() -> None:
    body = _chat()
    body["messages"][2:] = [{"role": "assistant", "content": f"{A1}\n{U2}"}]
    assert any("squashed" in p for p in turn_problems(body, TURNS))


def test_the_system_prompt_sent_as_a_user_turn_fails() -> None:
    body = _chat()
    body["messages"][0]["role"] = "user"
    assert turn_problems(body, TURNS, S) == [
        "the system prompt was sent like a turn of the conversation: its role is lost"]


def test_a_system_prompt_merged_into_the_first_turn_fails() -> None:
    body = _chat()
    body["messages"][1]["content"] = f"{S}\n\n{U1}"
    del body["messages"][0]
    assert turn_problems(body, TURNS, S) == ["the system prompt was squashed into a turn's message"]


def test_a_rendered_prompt_is_read_as_text() -> None:
    good = [("system", S), ("user", U1), ("assistant", A1), ("user", U2)]
    assert turn_problems(_chatml(good), TURNS, S) == []
    all_user = [("system", S), ("user", U1), ("user", A1), ("user", U2)]
    assert turn_problems(_chatml(all_user), TURNS, S) == [
        "the assistant and user turns are introduced alike in the prompt: their roles are lost"]
    assert turn_problems(_chatml(good[::-1]), TURNS, S) == [
        "the turns were not sent in the conversation's order (oldest first)"]


def test_an_in_process_request_is_read_through_its_dataclasses() -> None:
    from seamkit.values import ChatRequest, Message

    request = ChatRequest((Message.system(S), Message.user(U1), Message.assistant(A1), Message.user(U2)))
    assert turn_problems(request, TURNS, S) == []
    flattened = ChatRequest((Message.user(S), Message.user(U1), Message.user(A1), Message.user(U2)))
    assert any("roles are lost" in p for p in turn_problems(flattened, TURNS, S))


# --- tool results and their call ids ----------------------------------------------------------

ID1, ID2, C1, C2, R1, R2 = "call_ID1", "call_ID2", "City-1", "City-2", "Result-1", "Result-2"


def _tool_chat() -> tuple[dict[str, Any], Callable[[dict[str, Any]], list[dict[str, Any]]]]:
    calls = [{"id": i, "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"city": c})}}
             for i, c in ((ID1, C1), (ID2, C2))]
    body = {"messages": [{"role": "assistant", "content": None, "tool_calls": calls},
                         {"role": "tool", "tool_call_id": ID1, "content": R1},
                         {"role": "tool", "tool_call_id": ID2, "content": R2}]}
    return body, lambda b: b["messages"][1:]


def _tool_responses() -> tuple[dict[str, Any], Callable[[dict[str, Any]], list[dict[str, Any]]]]:
    body = {"input": [{"type": "function_call", "call_id": i, "name": "get_weather",
                       "arguments": json.dumps({"city": c})} for i, c in ((ID1, C1), (ID2, C2))]
            + [{"type": "function_call_output", "call_id": i, "output": r} for i, r in ((ID1, R1), (ID2, R2))]}
    return body, lambda b: b["input"][2:]


def _tool_anthropic() -> tuple[dict[str, Any], Callable[[dict[str, Any]], list[dict[str, Any]]]]:
    body = {"messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": "get_weather", "input": {"city": c}}
                                          for i, c in ((ID1, C1), (ID2, C2))]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": ID1,
                                      "content": [{"type": "text", "text": R1}]},
                                     {"type": "tool_result", "tool_use_id": ID2, "content": R2}]}]}
    return body, lambda b: b["messages"][1]["content"]


def _tool_gemini() -> tuple[dict[str, Any], Callable[[dict[str, Any]], list[dict[str, Any]]]]:
    body = {"contents": [
        {"role": "model", "parts": [{"functionCall": {"id": i, "name": "get_weather", "args": {"city": c}}}
                                    for i, c in ((ID1, C1), (ID2, C2))]},
        {"role": "user", "parts": [{"functionResponse": {"id": i, "name": "get_weather", "response": {"result": r}}}
                                   for i, r in ((ID1, R1), (ID2, R2))]}]}
    return body, lambda b: [p["functionResponse"] for p in b["contents"][1]["parts"]]


TOOL_FORMATS = {"chat": _tool_chat, "responses": _tool_responses, "anthropic": _tool_anthropic,
                "gemini": _tool_gemini}
_ID_KEYS = ("tool_call_id", "call_id", "tool_use_id", "id")


def _both(body: Any) -> list[str]:
    return (result_id_problems(body, R1, ID1, (ID2,), C1) + result_id_problems(body, R2, ID2, (ID1,), C2))


@pytest.mark.parametrize("fmt", sorted(TOOL_FORMATS))
def test_results_sent_with_their_own_ids_pass(fmt: str) -> None:
    assert _both(TOOL_FORMATS[fmt]()[0]) == []


@pytest.mark.parametrize("fmt", sorted(TOOL_FORMATS))
def test_results_without_their_ids_fail(fmt: str) -> None:
    body, results = TOOL_FORMATS[fmt]()
    for r in results(body):
        for key in _ID_KEYS:
            r.pop(key, None)
    problems = _both(body)
    assert len(problems) == 2 and all("not sent with its own call id" in p for p in problems)
    # asked about its own id only: the id is found, but on the call, not with the result
    assert "on the call itself" in result_id_problems(body, R1, ID1, (), C1)[0]


@pytest.mark.parametrize("fmt", sorted(TOOL_FORMATS))
def test_parallel_results_all_carrying_the_first_id_fail(fmt: str) -> None:
    body, results = TOOL_FORMATS[fmt]()
    for r in results(body):
        for key in _ID_KEYS:
            if key in r:
                r[key] = ID1
    assert result_id_problems(body, R1, ID1, (ID2,), C1) == []
    (problem,) = result_id_problems(body, R2, ID2, (ID1,), C2)
    assert "not sent with its own call id 'call_ID2'" in problem


# --- order, once ------------------------------------------------------------------------------

_CONVERSATION = [("tool call", C1), ("second tool call", C2), ("tool result", R1), ("second tool result", R2)]


@pytest.mark.parametrize("fmt", sorted(TOOL_FORMATS))
def test_calls_before_their_results_pass_and_results_first_fail(fmt: str) -> None:
    body, _ = TOOL_FORMATS[fmt]()
    assert order_problems(body, _CONVERSATION) == [] and once_problems(body, _CONVERSATION) == []
    turns = body.get("messages") or body.get("input") or body.get("contents")
    turns.reverse()  # the results' message(s) first
    (problem,) = order_problems(body, _CONVERSATION)
    assert "was sent before the" in problem


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_turn_sent_twice_fails(fmt: str) -> None:
    make, key = FORMATS[fmt]
    body = make()
    named = [("first user turn", U1), ("answer", A1), ("last user turn", U2)]
    assert once_problems(body, named) == []
    first = next(i for i, m in enumerate(body[key]) if U1 in json.dumps(m))
    body[key].insert(first, json.loads(json.dumps(body[key][first])))
    assert once_problems(body, named) == ["the first user turn was sent 2 times, not once"]
    body[key] += body[key]
    assert len(once_problems(body, named)) == 3


def test_order_within_one_rendered_prompt_is_by_offset() -> None:
    body = {"prompt": f"<user>{U1}<assistant>{A1}"}
    assert order_problems(body, [("a", U1), ("b", A1)]) == []
    assert order_problems(body, [("b", A1), ("a", U1)]) == [
        "the a was sent before the b: the conversation's order is lost"]


def test_value_at_follows_keys_and_array_indexes() -> None:
    body = {"generationConfig": {"maxOutputTokens": 7}, "messages": [{"role": "system"}, {"role": "user"}]}
    assert value_at(body, "generationConfig.maxOutputTokens") == 7
    assert value_at(body, "messages.1.role") == "user"
    assert value_at(body, "max_tokens") is MISSING and value_at(body, "messages.5.role") is MISSING
    assert value_at({"0": "key"}, "0") == "key"  # a mapping's key, not an index


# --- images -----------------------------------------------------------------------------------

IMG = b"\x89PNG-image-bytes\x00\x01"
B64 = __import__("base64").b64encode(IMG).decode()


def _img_chat() -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": U1}, {"role": "user", "content": [
        {"type": "text", "text": U2}, {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}]}]}


def _img_responses() -> dict[str, Any]:
    return {"input": [{"role": "user", "content": [{"type": "input_text", "text": U1}]}, {"role": "user", "content": [
        {"type": "input_text", "text": U2}, {"type": "input_image", "image_url": f"data:image/png;base64,{B64}"}]}]}


def _img_anthropic() -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": [{"type": "text", "text": U1}]}, {"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}},
        {"type": "text", "text": U2}]}]}


def _img_gemini() -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": U1}]}, {"role": "user", "parts": [
        {"text": U2}, {"inlineData": {"mimeType": "image/png", "data": B64}}]}]}


IMAGE_FORMATS = {"chat": _img_chat, "responses": _img_responses, "anthropic": _img_anthropic, "gemini": _img_gemini}


def _image(body: Any) -> list[str]:
    return image_problems(body, IMG, "image/png", U2, (U1,))


def _rewrite(body: Any, old: str, new: str) -> Any:
    return json.loads(json.dumps(body).replace(old, new))


@pytest.mark.parametrize("fmt", sorted(IMAGE_FORMATS))
def test_an_inline_image_sent_right_passes(fmt: str) -> None:
    assert _image(IMAGE_FORMATS[fmt]()) == []


@pytest.mark.parametrize("fmt", sorted(IMAGE_FORMATS))
def test_an_image_labelled_with_another_media_type_fails(fmt: str) -> None:
    (problem,) = _image(_rewrite(IMAGE_FORMATS[fmt](), "image/png", "image/jpeg"))
    assert "'image/jpeg'" in problem


@pytest.mark.parametrize("fmt", sorted(IMAGE_FORMATS))
def test_image_bytes_inside_an_https_url_fail(fmt: str) -> None:
    body = _rewrite(IMAGE_FORMATS[fmt](), "data:image/png;base64,", "https://cdn.invalid/")
    body = _rewrite(body, f'"{B64}"', f'"https://cdn.invalid/{B64}"')
    assert _image(body) == ["the image's bytes were put inside an http(s) URL (the API would fetch that URL)"]


@pytest.mark.parametrize("fmt", sorted(IMAGE_FORMATS))
def test_an_image_pasted_into_the_text_fails(fmt: str) -> None:
    body = IMAGE_FORMATS[fmt]()
    body = _rewrite(body, f'"{U2}"', f'"{U2} data:image/png;base64,{B64}"')
    body = _rewrite(body, f'"data:image/png;base64,{B64}"', '"elsewhere"')
    body = _rewrite(body, f'"{B64}"', '"elsewhere"')
    assert _image(body) == ["the image was pasted into the text of the message, not sent as an image"]


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
def test_bare_base64_without_its_media_type_fails(fmt: str) -> None:
    body = _rewrite(IMAGE_FORMATS[fmt](), '"image/png"', '"png"')
    assert _image(body) == ["the image was sent without its media type ('image/png')"]


@pytest.mark.parametrize("fmt", sorted(IMAGE_FORMATS))
def test_an_image_in_a_message_of_its_own_fails(fmt: str) -> None:
    body = IMAGE_FORMATS[fmt]()
    turns = body.get("messages") or body.get("input") or body.get("contents")
    message = turns[-1]
    parts_key = "parts" if "parts" in message else "content"
    image = [p for p in message[parts_key] if U2 not in json.dumps(p)]
    message[parts_key] = [p for p in message[parts_key] if p not in image]
    turns.append({**message, parts_key: image})
    assert _image(body) == ["the image was not sent in the message holding the text sent with it"]


def test_raw_bytes_of_an_in_process_request_pass_with_their_media_type() -> None:
    assert image_problems({"prompt": U2, "images": [{"data": IMG, "mime": "image/png"}]}, IMG, "image/png", U2) == []
    assert image_problems({"prompt": U2, "images": [IMG]}, IMG, "image/png", U2) == [
        "the image was sent without its media type ('image/png')"]


def _img_ollama() -> dict[str, Any]:
    """Ollama's ``POST /api/chat``: a message's ``images`` is a list of bare base64 strings, no media type."""
    return {"model": "m", "messages": [{"role": "user", "content": U1},
                                       {"role": "user", "content": U2, "images": [B64]}]}


def _bare(body: Any) -> list[str]:
    return image_problems(body, IMG, "image/png", U2, (U1,), media_type_required=False)


def test_bare_base64_passes_where_the_api_carries_no_media_type() -> None:
    assert _bare(_img_ollama()) == []
    assert _image(_img_ollama()) == ["the image was sent without its media type ('image/png')"]


def test_an_api_without_media_types_still_needs_the_image_as_a_value_of_its_own() -> None:
    pasted = _img_ollama()
    pasted["messages"][1] = {"role": "user", "content": f"{U2} {B64}"}
    assert _bare(pasted) == ["the image was pasted into the text of the message, not sent as an image"]
    in_url = _rewrite(_img_ollama(), f'"{B64}"', f'"https://cdn.invalid/{B64}"')
    assert _bare(in_url) == ["the image's bytes were put inside an http(s) URL (the API would fetch that URL)"]
    longer = _rewrite(_img_ollama(), f'"{B64}"', f'"img:{B64}"')
    assert "not as a value of its own" in _bare(longer)[0]
    own_message = _img_ollama()
    own_message["messages"][1].pop("images")
    own_message["messages"].append({"role": "user", "content": "", "images": [B64]})
    assert _bare(own_message) == ["the image was not sent in the message holding the text sent with it"]


def test_an_api_without_media_types_must_not_send_a_wrong_one() -> None:
    body = _img_ollama()
    body["messages"][1]["format"] = "image/jpeg"
    assert _bare(body) == ["the image was sent labelled ['image/jpeg'], not 'image/png'"]
    for fmt in sorted(IMAGE_FORMATS):
        assert _bare(IMAGE_FORMATS[fmt]()) == []
        (problem,) = _bare(_rewrite(IMAGE_FORMATS[fmt](), "image/png", "image/jpeg"))
        assert "'image/jpeg'" in problem
