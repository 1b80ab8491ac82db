"""``ToolRegistry``: an agent's tools by name."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from seamkit._ports import ToolPort
from seamkit.values import ToolSchema

__all__ = ["MIN_DESCRIPTION_CHARS", "ToolRegistry", "missing_description", "short_description", "tool_name_of"]


def tool_name_of(text: str) -> str:
    """``text`` as a tool name: each character other than a letter, a digit, ``_`` or ``-``
    (what providers accept in a tool name) replaced by ``_``; the caller cuts it to length."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)

#: Below this many characters a tool's description gets a warning from ``seamkit validate``
#: (:func:`short_description`). The description is all a model knows about when to call a tool
#: and what it returns; Anthropic's guide to defining tools calls it "by far the most important
#: factor in tool performance" and shows "Gets the stock price for a ticker." (34 characters) as
#: the poor example next to a good one of four sentences
#: (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use, "Best
#: practices for tool definitions"). 40 characters flags such labels while a single sentence
#: that says what the tool does and returns passes; a warning, since brevity is sometimes enough.
MIN_DESCRIPTION_CHARS = 40


def missing_description(tool: str, where: str | None = None) -> str:
    """The message refusing ``tool``, which has no description; ``where`` names the function
    whose docstring would provide one."""
    fix = (f"add a docstring to {where} saying what the tool does, when to use it and what it returns, "
           "or pass description=... to @tool") if where else "set its ToolSchema's description"
    return f"tool {tool!r} has no description, and a model cannot know when to call it: {fix}"


def short_description(schema: ToolSchema) -> str | None:
    """A warning when ``schema.description`` is shorter than :data:`MIN_DESCRIPTION_CHARS`
    characters (stripped), else ``None``."""
    text = schema.description.strip()
    if len(text) >= MIN_DESCRIPTION_CHARS:
        return None
    return (f"tool {schema.name!r} has a very short description ({text!r}, {len(text)} characters): say what it "
            "does, when to use it and what it returns, so the model calls it at the right time")


class ToolRegistry:
    """Tools by name, in the order added. Adding a second tool with a name already present raises
    ``ValueError``; so does an object without a ``schema``, and a tool whose description is empty
    or blank (a model could not know when to call it)."""

    __slots__ = ("_schemas", "_tools")

    def __init__(self, tools: Iterable[ToolPort] = ()) -> None:
        self._tools: dict[str, ToolPort] = {}
        self._schemas: tuple[ToolSchema, ...] = ()
        for t in tools:
            self.add(t)

    def add(self, tool: ToolPort) -> None:
        schema = getattr(tool, "schema", None)
        if not isinstance(schema, ToolSchema):
            raise ValueError(f"{tool!r} is not a tool (no ToolSchema 'schema'); decorate it with @tool")
        if not schema.description.strip():
            raise ValueError(missing_description(schema.name))
        if schema.name in self._tools:
            raise ValueError(f"duplicate tool name {schema.name!r}")
        self._tools[schema.name] = tool
        self._schemas = (*self._schemas, schema)

    def get(self, name: str) -> ToolPort | None:
        return self._tools.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    @property
    def schemas(self) -> tuple[ToolSchema, ...]:
        return self._schemas

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[ToolPort]:
        return iter(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools
