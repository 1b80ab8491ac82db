"""The seamkit-http distribution: its public names, no entry point, no vendor SDK."""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import seamkit_http

PUBLIC = {
    "json_kind", "ServerSentEvent", "SSEDecoder", "aiter_sse", "is_done", "make_client", "shared_client", "open_sse",
    "post_json", "classify_http_error", "classify_error_body", "classify_transport_error", "parse_retry_after",
    "classify_unexpected_body", "is_error_body",
    "ReplayTransport", "Reply", "FREE", "is_loopback", "local_pricing",
}


def test_public_api() -> None:
    assert set(seamkit_http.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(seamkit_http, name) is not None


def test_library_registers_no_components() -> None:
    dist = importlib.metadata.distribution("seamkit-http")
    assert [ep for ep in dist.entry_points if ep.group == "seamkit"] == []


def test_no_vendor_sdk_is_imported() -> None:
    package_dir = Path(seamkit_http.__file__).parent
    tests_dir = Path(__file__).parent
    for path in [*package_dir.glob("*.py"), *tests_dir.glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in {"openai", "anthropic", "httpx_sse"}, f"{path.name} imports {name}"
