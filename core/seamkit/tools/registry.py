"""``ToolRegistry``: an agent's tools by name."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from seamkit.ports import ToolPort
from seamkit.values import ToolSchema

__all__ = ["ToolRegistry"]


class ToolRegistry:
    """Tools by name, in the order added. Adding a second tool with a name already present raises
    ``ValueError``; so does an object without a ``schema``."""

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
