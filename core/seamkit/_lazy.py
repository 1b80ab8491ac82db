"""Lazy module attributes (PEP 562), so packages import their heavy parts on first use."""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing here would cost `import seamkit` ~10 ms
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def lazy_attributes(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps a public name to the module
    that defines it under that name, or to ``"module:attr"`` where it is defined under another
    name (``"module:"``: the module itself); a loaded name is cached in the package's
    ``namespace``. An unknown name raises ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        module, colon, attr = target.partition(":")
        loaded = importlib.import_module(module)
        value = (getattr(loaded, attr) if attr else loaded) if colon else getattr(loaded, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *exports])

    return __getattr__, __dir__
