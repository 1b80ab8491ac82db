"""Lazy module attributes (PEP 562), so packages import their heavy parts on first use; lazy
module globals (:func:`lazy_module`), so a module can name a heavy dependency at its top and import
it on first use; and a lazy finder of the host's old module paths (:class:`OldPathFinder`),
consulted only by an import that failed otherwise."""

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


class _LazyModule:
    """Stands in for a module global until the module is first used; see :func:`lazy_module`."""

    __slots__ = ("_alias", "_name", "_namespace")

    def __init__(self, name: str, namespace: dict[str, Any], alias: str) -> None:
        self._name, self._namespace, self._alias = name, namespace, alias

    def __getattr__(self, attr: str) -> Any:
        import importlib

        module = importlib.import_module(self._name)
        if self._namespace.get(self._alias) is self:
            self._namespace[self._alias] = module  # later reads of the global find the module itself
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str, namespace: dict[str, Any], alias: str | None = None) -> Any:
    """A stand-in for module ``name``, to bind as the global ``alias`` (default: ``name``) of the
    module whose globals are ``namespace``: its first attribute read imports ``name`` and rebinds
    the global to the module, so the code reads ``asyncio.sleep`` as usual and pays nothing after
    that first read. For a dependency used only inside functions, which ``import``-ing the
    module should not load (``asyncio``: ~30 ms, a third of a usable agent's import)::

        if TYPE_CHECKING:
            import asyncio
        else:
            asyncio = lazy_module("asyncio", globals())

    Only attribute reads are forwarded: pass the module itself elsewhere only after one."""
    return _LazyModule(name, namespace, alias or name)


class OldPathFinder:
    """A ``sys.meta_path`` finder, last in line (it costs nothing to an import that succeeds): an
    import of an old module path (``import seamkit.agent.loop``, any path :mod:`seamkit._moved`
    maps) fails with a ``ModuleNotFoundError`` saying that the module became private, its name now,
    and where the public names are, instead of a bare "No module named". Installed by
    ``import seamkit`` (:func:`install_old_path_finder`); :mod:`seamkit._moved` is read only when
    a ``seamkit.`` import was not found."""

    @staticmethod
    def find_spec(fullname: str, path: object = None, target: object = None) -> None:
        """``None`` (not found: the next finder's turn) unless ``fullname`` is an old path of the
        host's; then raises ``ModuleNotFoundError`` (``name``: ``fullname``)."""
        if not fullname.startswith("seamkit."):
            return None
        from seamkit._moved import current

        now = current(fullname)
        if now == fullname:
            return None
        raise ModuleNotFoundError(
            f"No module named {fullname!r}: this host module became private ({now}, internal: it may change in "
            "any release); import the public names instead: seamkit, seamkit.plugin, seamkit.values, "
            "seamkit.errors, seamkit.testing, ... (docs/plugins/public-api.md)", name=fullname)


def install_old_path_finder() -> None:
    """Append :class:`OldPathFinder` to ``sys.meta_path``, once."""
    import sys

    if not any(type(f).__name__ == "OldPathFinder" for f in sys.meta_path):  # a reloaded module's too
        sys.meta_path.append(OldPathFinder())
