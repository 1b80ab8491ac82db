"""The ``deny`` guardrail: blocks (a tripwire) when a configured pattern occurs in the task, a tool
call's arguments, a tool result or the output.

A keyword / pattern deny-list is the simplest policy that needs no model: a company name that must
not be discussed, an internal host name, a marker a red team plants. Patterns are Python regular
expressions (``re`` syntax), matched case-insensitively against the text as
:func:`~seamkit_guardrails_content.folding.fold` folds it (the same folding as the injection
markers of ``wrap_tool_output``): tag characters decoded, NFKC (fullwidth and ligature spellings
match plain ones), invisible characters removed (``proj\u00adect``) or, in a second view, read as spaces
(``project\u200bfalcon``), Cyrillic/Greek look-alike letters folded to Latin (``pr\u043eject``), lower
case, Unicode dashes as ``-`` and every whitespace run as one space. Write patterns in plain Latin
letters. A tool call is checked as its tool name plus its arguments as JSON; a typed output as its
JSON.

The block's reason names the pattern by its index only (``matched deny pattern 0``), never its
text: a pattern is often the very codename that must not leak, and the reason goes to stderr,
events and checkpoints. ``reason`` replaces it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from seamkit.plugin import ALLOW, GuardContext, Verdict, block
from seamkit.values import ToolCall, ToolResult

from seamkit_guardrails_content.config import _compile_all
from seamkit_guardrails_content.folding import folds

__all__ = ["Deny", "DenyConfig", "build_deny"]


class DenyConfig(BaseModel):
    """Parameters of ``use: deny``."""

    model_config = ConfigDict(extra="forbid")

    patterns: list[str] = Field(min_length=1, description="Regular expressions (Python re syntax, case-insensitive)")
    reason: str | None = Field(
        default=None,
        description="The reason a block gives (default: which pattern matched, by its index only: never its text)"
    )

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, value: list[str]) -> list[str]:
        return _compile_all(value)


class Deny:
    """See the module doc. ``check_*`` return :func:`~seamkit._guardrails.block` on a match, else
    :data:`~seamkit._guardrails.ALLOW`."""

    name = "deny"

    def __init__(self, config: DenyConfig) -> None:
        self.config = config
        self._patterns = [re.compile(p, re.IGNORECASE) for p in config.patterns]

    def _verdict(self, text: str) -> Verdict:
        views = folds(text)
        for i, p in enumerate(self._patterns):
            if any(p.search(v) for v in views):
                return block(self.config.reason or f"matched deny pattern {i}")
        return ALLOW

    async def check_input(self, text: str, guard: GuardContext) -> Verdict:
        return self._verdict(text)

    async def check_tool_call(self, call: ToolCall, guard: GuardContext) -> Verdict:
        return self._verdict(f"{call.name} {json.dumps(call.arguments, ensure_ascii=False, default=str)}")

    async def check_tool_result(self, result: ToolResult, guard: GuardContext) -> Verdict:
        return self._verdict(result.content)

    async def check_output(self, output: Any, guard: GuardContext) -> Verdict:
        if isinstance(output, str):
            return self._verdict(output)
        from seamkit.plugin import render_tool_value

        return self._verdict(render_tool_value(output))


def build_deny(config: DenyConfig) -> Deny:
    return Deny(config)
