"""The ``audit`` middleware in process: what a record holds, errors without their messages, and a
store that fails never failing the call."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import pytest
from seamkit._middleware import Call, chain, collect, collect_one
from seamkit.errors import FailureClass, ProviderError, StoreUnavailable
from seamkit.testing import make_test_ctx
from seamkit.testing._memory_store import MemoryStore
from seamkit.values import ChatRequest, Delta, Message, MessageLog, Scope, ToolCall, ToolRequest, ToolResult, Usage
from seamkit_audit.middleware import Audit, arguments_digest, read_records

SECRET = "hunter2-very-secret-password"


class Model:
    provider, model = "fake", "fake-1"


async def _chat_ok(call: Call) -> AsyncIterator[Any]:
    yield Delta(text="hi")
    yield Delta(usage=Usage(10, 2, requests=1, cost=Decimal("0.0005"), cost_source="reported"),
                finish_reason="stop", model="fake-1-2026")


async def _chat_fail(call: Call) -> AsyncIterator[Any]:
    raise ProviderError(f"bad key {SECRET}", FailureClass.AUTHENTICATION, provider="fake")
    yield  # pragma: no cover


async def _tool(call: Call) -> AsyncIterator[Any]:
    req: ToolRequest = call.request  # type: ignore[assignment]
    yield ToolResult(req.call.id, req.call.name, "ok", is_error="fail" in req.call.arguments)


def _ctx() -> Any:
    return make_test_ctx(run_id="run_a", scope=Scope("acme", user="ann"))


async def test_records_chat_and_tool_calls_with_digests_only() -> None:
    store = MemoryStore()
    audit = Audit(store)
    ctx = _ctx()
    req = ChatRequest((Message.user(f"my password is {SECRET}"),))
    await collect(chain([audit], _chat_ok)(Call("chat", req, ctx, {"step": 1, "agent": "bot"}, Model())))
    call = ToolCall("c1", "login", {"password": SECRET})
    await collect_one(chain([audit], _tool)(Call("tool", ToolRequest(call), ctx, {"step": 1})))
    failing = ToolCall("c2", "login", {"fail": True})
    await collect_one(chain([audit], _tool)(Call("tool", ToolRequest(failing), ctx, {"step": 1})))
    with pytest.raises(ProviderError):
        await collect(chain([audit], _chat_fail)(Call("chat", req, ctx, {"step": 2}, Model())))
    recs = await read_records(store, "run_a", tenant="acme")
    assert [(r["kind"], r["outcome"]) for r in recs] == [("chat", "ok"), ("tool", "ok"), ("tool", "error"),
                                                         ("chat", "error")]
    chat, tool, failed, err = recs
    assert chat["provider"] == "fake" and chat["model"] == "fake-1" and chat["response_model"] == "fake-1-2026"
    assert (chat["input_tokens"], chat["output_tokens"], chat["cost_usd"]) == (10, 2, "0.0005")
    assert chat["user"] == "ann" and chat["tenant"] == "acme" and chat["step"] == 1 and chat["agent"] == "bot"
    assert tool["agent"] is None  # not given in this call's meta
    assert tool["tool"] == "login" and tool["call_id"] == "c1"
    assert tool["arguments_sha256"] == arguments_digest({"password": SECRET})
    assert failed["error"] == "tool_error"
    assert err["error"] == "ProviderError(authentication)" and err["cost_usd"] is None
    assert SECRET not in repr(recs)
    assert await read_records(store, "run_a", tenant="default") == []


async def test_a_failing_store_never_fails_the_call(caplog: pytest.LogCaptureFixture) -> None:
    class Down(MemoryStore):
        async def append(self, scope: Scope, key: str, value: Any) -> int:
            raise StoreUnavailable(f"down {SECRET}")

    audit = Audit(Down())
    req = ChatRequest((Message.user("hi"),))
    with caplog.at_level(logging.WARNING, logger="seamkit.audit"):
        out = await collect(chain([audit], _chat_ok)(Call("chat", req, _ctx(), model=Model())))
    assert [d.text for d in out if d.text] == ["hi"]
    assert audit.write_failures == 1
    assert "could not be written" in caplog.text and SECRET not in caplog.text


async def test_without_a_store_or_checkpoints_nothing_is_recorded() -> None:
    audit = Audit()
    req = ChatRequest((Message.user("hi"),))
    out = await collect(chain([audit], _chat_ok)(Call("chat", req, _ctx(), model=Model())))
    assert out[-1].finish_reason == "stop"


def test_digest_is_order_independent_and_ignores_metadata() -> None:
    assert arguments_digest({"a": 1, "b": [1, {"c": 2, "d": 3}]}) == arguments_digest({"b": [1, {"d": 3, "c": 2}],
                                                                                        "a": 1})
    req = ChatRequest((Message.user("hi"),))
    assert arguments_digest(req) == arguments_digest(req.replace(metadata={"x": 1}))
    assert arguments_digest(req) != arguments_digest(req.replace(temperature=0.1))


def test_digest_of_the_agent_loop_s_shared_messages_is_that_of_the_same_tuple() -> None:
    """The agent loop sends a MessageSnapshot (not a tuple): the digest reads its messages all the same."""
    messages = (Message.user("hi"), Message.assistant("hello"))
    shared = ChatRequest(MessageLog(messages).snapshot())
    assert arguments_digest(shared) == arguments_digest(ChatRequest(messages))
    assert arguments_digest(shared) != arguments_digest(ChatRequest(messages[:1]))


KEY = "k3y-from-the-environment-0123456789"


def test_a_keyed_digest_cannot_be_confirmed_without_the_key() -> None:
    import hashlib
    import hmac
    import json

    pin = {"pin": "1234"}  # a low-entropy secret: 10,000 guesses confirm an unkeyed digest
    plain = arguments_digest(pin)
    assert plain == hashlib.sha256(json.dumps(pin, separators=(",", ":")).encode()).hexdigest()
    keyed = arguments_digest(pin, key=KEY.encode())
    assert keyed != plain and len(keyed) == 64
    assert keyed == hmac.new(KEY.encode(), json.dumps(pin, separators=(",", ":")).encode(), "sha256").hexdigest()
    assert arguments_digest(pin, key=b"another-key-0123456789abcdef") != keyed


async def test_with_a_digest_key_records_hold_hmacs_and_say_so() -> None:
    from seamkit_audit.config import AuditConfig
    from seamkit_audit.middleware import build

    cfg = AuditConfig.model_validate({"digest_key": KEY})
    assert KEY not in repr(cfg) and KEY not in str(cfg.model_dump())
    audit = build(cfg)
    assert KEY not in repr(audit) and KEY not in repr(vars(audit)) and audit.digest == "hmac-sha256"
    store = MemoryStore()
    audit.store = store
    call = ToolCall("c1", "login", {"password": SECRET})
    await collect_one(chain([audit], _tool)(Call("tool", ToolRequest(call), _ctx(), {"step": 1})))
    (rec,) = await read_records(store, "run_a", tenant="acme")
    assert rec["digest"] == "hmac-sha256"
    assert rec["arguments_sha256"] == arguments_digest({"password": SECRET}, key=KEY.encode())
    assert rec["arguments_sha256"] != arguments_digest({"password": SECRET})
    from seamkit_audit.show import format_record

    assert f"args hmac:{rec['arguments_sha256'][:16]}" in format_record(1, rec)

    unkeyed = Audit(MemoryStore())
    await collect_one(chain([unkeyed], _tool)(Call("tool", ToolRequest(call), _ctx(), {"step": 1})))
    (rec,) = await read_records(unkeyed.store, "run_a", tenant="acme")
    assert rec["digest"] == "sha256" and rec["arguments_sha256"] == arguments_digest({"password": SECRET})


@pytest.mark.parametrize("key", ["", "short"])
def test_a_short_digest_key_is_refused(key: str) -> None:
    from pydantic import ValidationError
    from seamkit_audit.config import AuditConfig

    with pytest.raises(ValidationError, match="digest_key") as info:
        AuditConfig.model_validate({"digest_key": key})
    assert "at least 16 characters" in str(info.value)
    assert key == "" or key not in str(info.value).replace("digest_key", "")  # the key is never quoted
