"""Config model of ``use: mcp`` (imports only pydantic and the standard library)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    StrictInt,
    Tag,
    field_validator,
    model_validator,
)

__all__ = ["HttpServer", "McpConfig", "StdioServer"]

_PREFIX = re.compile(r"[A-Za-z0-9_-]*")


class StdioServer(BaseModel):
    """A server the run starts as a subprocess and talks to over its stdin/stdout (MCP
    specification, "Transports", stdio). Its stderr is captured, never mixed into the protocol."""

    model_config = ConfigDict(extra="forbid")
    command: str = Field(
        min_length=1,
        description="The program to start (looked up on PATH); 'python' and 'python3' mean the Python running "
        "seamkit, so the server sees the same installed packages",
    )
    args: list[str] = Field(default_factory=list, description="Its arguments")
    env: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Environment variables for it, added to a minimal safe environment (values masked in output)",
    )
    cwd: Path | None = Field(
        default=None, description="Its working directory, relative to the YAML file (default: the current one)"
    )


class HttpServer(BaseModel):
    """A server reached over streamable HTTP (MCP specification, "Transports", Streamable HTTP)."""

    model_config = ConfigDict(extra="forbid")
    url: str = Field(description="The server's MCP endpoint, http:// or https://")
    headers: dict[str, SecretStr] = Field(
        default_factory=dict, description="HTTP headers sent with every request (e.g. Authorization; masked in output)"
    )

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"the url of an MCP server must start with http:// or https://, got {value!r}")
        return value


def _server_kind(value: Any) -> str | None:
    """The tag of a ``server:`` value: ``stdio`` when it has ``command``, ``http`` when it has
    ``url`` (``_one_server`` has already refused both and neither)."""
    if isinstance(value, StdioServer):
        return "stdio"
    if isinstance(value, HttpServer):
        return "http"
    if isinstance(value, dict):
        return "stdio" if "command" in value else "http" if "url" in value else None
    return None


#: ``server:``: one of the two transports, picked by its key (``command`` or ``url``) so that a
#: mistake in one is reported against that one only, never as a mix of both members' errors.
Server = Annotated[Annotated[StdioServer, Tag("stdio")] | Annotated[HttpServer, Tag("http")],
                   Discriminator(_server_kind)]


class McpConfig(BaseModel):
    """Parameters of ``use: mcp``: which server, which of its tools, and how long to wait."""

    model_config = ConfigDict(extra="forbid")
    server: Server = Field(
        description="{command, args, env, cwd} for a stdio server, or {url, headers} for streamable HTTP"
    )
    name: str | None = Field(
        default=None,
        description="The server's name in messages and in pinned definitions (default: from its command or url)",
    )
    prefix: str = Field(
        default="", max_length=32, description="Put before each tool name (e.g. 'github_'), to keep servers apart"
    )
    allow: list[str] | None = Field(
        default=None, description="Only these tools (as the server names them); default: all"
    )
    deny: list[str] = Field(default_factory=list, description="Never these tools (deny wins over allow)")
    timeout: float = Field(default=60.0, gt=0, le=3600, description="Seconds one call may take")
    connect_timeout: float = Field(
        default=30.0, gt=0, le=600, description="Seconds to start (or reach) the server and initialize the session"
    )
    on_failure: Literal["error", "stop"] = Field(
        default="error",
        description="A dead, hung or unreachable server: 'error' gives the model an error result and the run "
        "goes on; 'stop' stops the run with ToolUnavailable",
    )
    max_result_chars: StrictInt = Field(
        default=100_000, ge=1, le=10_000_000,
        description="Characters of a result's text passed to the model (its JSON for structured results); "
        "the rest is cut, with a note saying how many characters were left out")
    max_images: StrictInt = Field(
        default=8, ge=0, le=100,
        description="Images of one result passed to the model; those beyond are described in the text")
    max_image_bytes: StrictInt = Field(
        default=5 * 1024 * 1024, ge=1, le=100 * 1024 * 1024,
        description="Bytes (decoded) an image may have to be passed to the model (default 5 MiB); a larger "
        "one is described in the text instead")
    resources: bool = Field(default=True, description="Offer the server's resources through read tools")
    prompts: bool = Field(default=True, description="Offer the server's prompts through a tool")

    @field_validator("server", mode="before")
    @classmethod
    def _one_server(cls, value: Any) -> Any:
        if isinstance(value, StdioServer | HttpServer):
            return value
        if not isinstance(value, dict):
            raise ValueError("server needs a mapping: {command: ..., args: [...]} for a stdio server, "
                             "or {url: ...} for streamable HTTP")
        if "command" in value and "url" in value:
            raise ValueError("give either command (a stdio server) or url (streamable HTTP), not both")
        if "command" not in value and "url" not in value:
            import difflib

            near = [k for k in value if isinstance(k, str)
                    and difflib.get_close_matches(k.lower(), ("command", "url"), n=1, cutoff=0.7)]
            hint = f" (is {near[0]!r} one of them, misspelt?)" if near else ""
            raise ValueError("server needs command (a stdio server, e.g. {command: python, args: [server.py]}) "
                             f"or url (streamable HTTP, e.g. {{url: http://127.0.0.1:8000/mcp}}){hint}")
        return value

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not _PREFIX.fullmatch(value):
            raise ValueError(f"a prefix may hold letters, digits, '_' and '-' only, got {value!r}")
        return value

    @model_validator(mode="after")
    def _lists(self) -> McpConfig:
        for key in ("allow", "deny"):
            names = getattr(self, key) or []
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ValueError(f"{key} names {', '.join(map(repr, dup))} more than once")
        return self
