"""Helpers for the anthropic provider's wire tests (imported by the test modules and conftest):
fixture loading and providers whose HTTP transport replays a recorded exchange
(``seamkit_http.ReplayTransport``); nothing touches the network."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seamkit_anthropic.config import AnthropicConfig
from seamkit_anthropic.provider import AnthropicProvider
from seamkit_http import ReplayTransport, Reply, make_client

FIXTURES = Path(__file__).parent / "fixtures"
SECRET = "sk-ant-api03-test-7Yq2Lr9Vx0Wm"
SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8", "request-id": "req_018EeWyXxfu5pfWkrYcMdjWG"}


def sse_bytes(name: str) -> bytes:
    """The recorded event stream ``fixtures/<name>.sse``."""
    return (FIXTURES / f"{name}.sse").read_bytes()


def expected_body(name: str) -> Any:
    """The request body ``fixtures/<name>.request.json`` the provider must send."""
    return json.loads((FIXTURES / f"{name}.request.json").read_text(encoding="utf-8"))


def error_fixture(name: str) -> dict[str, Any]:
    """An entry of ``fixtures/errors.json``: status, headers, body, failure_class."""
    data: dict[str, Any] = json.loads((FIXTURES / "errors.json").read_text(encoding="utf-8"))
    return data[name]


def sse_reply(name: str, chunk: int | None = None) -> Reply:
    """A 200 reply streaming ``fixtures/<name>.sse``, in ``chunk``-byte pieces when given."""
    raw = sse_bytes(name)
    if chunk is None:
        return Reply(200, SSE_HEADERS, chunks=[raw])
    return Reply(200, SSE_HEADERS, chunks=[raw[i:i + chunk] for i in range(0, len(raw), chunk)])


def error_reply(name: str) -> Reply:
    """The recorded error answer ``name`` of ``fixtures/errors.json``."""
    e = error_fixture(name)
    return Reply(e["status"], {"content-type": "application/json", **e["headers"]}, body=json.dumps(e["body"]))


Build = Callable[..., tuple[AnthropicProvider, ReplayTransport]]
"""``build_provider(*replies, env=None, **config) -> (provider, transport)`` (the conftest fixture)."""


def build(*replies: Reply | BaseException, env: dict[str, str] | None = None,
          **config: Any) -> tuple[AnthropicProvider, ReplayTransport]:
    """A provider for ``config`` (default model ``claude-sonnet-4-5``, api key :data:`SECRET`
    unless credentials or ``env`` are given) whose transport replays ``replies``."""
    config.setdefault("model", "claude-sonnet-4-5")
    if "api_key" not in config and "auth_token" not in config and env is None:
        config["api_key"] = SECRET
    transport = ReplayTransport(*replies)
    provider = AnthropicProvider(AnthropicConfig(**config), client=make_client(transport=transport),
                                 env=env if env is not None else {})
    return provider, transport
