"""``Prompt``: a system prompt as a versioned value."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Prompt", "invalid_markers"]

_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_MARKER = re.compile(r"\{\{([^{}]*)\}\}")
_NAME = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_]*\s*")


def invalid_markers(template: str) -> tuple[str, ...]:
    """The ``{{...}}`` markers of ``template`` whose content is not a variable name (``{{a.b}}``,
    ``{{}}``): a prompt would leave them as written instead of filling them."""
    return tuple(m.group(0) for m in _MARKER.finditer(template) if not _NAME.fullmatch(m.group(1)))


@dataclass(frozen=True, slots=True)
class Prompt:
    """A prompt template with an ``id`` and a ``version`` (recorded with every run).

    Variables are written ``{{name}}`` (single braces and ``${...}`` are left alone, so JSON
    examples and YAML env references need no escaping). ``render(variables)`` raises ``KeyError``
    naming every missing variable and ``ValueError`` for variables the template does not use.
    """

    template: str
    id: str = "prompt"
    version: str = "1"

    def __post_init__(self) -> None:
        for name in ("template", "id", "version"):
            value = getattr(self, name)
            if not isinstance(value, str):
                from seamkit.errors import AgentDefinitionError

                raise AgentDefinitionError(f"Prompt {name} must be a str, got {value!r:.60} ({type(value).__name__})")
        bad = invalid_markers(self.template)
        if bad:
            raise ValueError(f"prompt {self.id}@{self.version}: {', '.join(map(repr, bad))} is not a valid "
                             "template variable (a variable is a name such as {{topic}})")

    @property
    def variables(self) -> frozenset[str]:
        return frozenset(_VAR.findall(self.template))

    def render(self, variables: Mapping[str, Any] | None = None) -> str:
        names = self.variables
        if not names and not variables:
            return self.template
        given = dict(variables or {})
        missing = names - given.keys()
        if missing:
            raise KeyError(f"prompt {self.id}@{self.version} needs variables: {', '.join(sorted(missing))}")
        extra = given.keys() - names
        if extra:
            raise ValueError(f"prompt {self.id}@{self.version} has no variables {', '.join(sorted(extra))}")
        return _VAR.sub(lambda m: str(given[m.group(1)]), self.template)
