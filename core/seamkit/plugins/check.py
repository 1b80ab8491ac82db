"""Check one registered component the way a composition would use it, without a composition:
``seamkit plugins --check NAME``.

:func:`check_component` imports the component's config model and factory (listing plugins does
not: registration is lazy), checks that the config is a pydantic model and that its defaults
validate, and checks the factory against the port of the component's kind
(:mod:`seamkit.plugins.ports_check`): a class is checked member by member without building
anything; a function is called with the default config and what it returns is checked. Stores
are never built (building one opens its database); a store class must satisfy the key-value or
the checkpoint port.

A component whose config has required fields cannot be built with defaults: that is a note, not a
problem (a provider needs its ``model``).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seamkit.plugins.registry import ComponentSpec

__all__ = ["ComponentCheck", "check_component"]


@dataclass(frozen=True, slots=True)
class ComponentCheck:
    """What :func:`check_component` found for the component ``kind``/``name`` of ``distribution``
    (``version``, entry point ``plugin``): ``problems`` (each a located, actionable sentence; empty
    when it passes) and ``notes`` (what was not checked, and why)."""

    kind: str
    name: str
    distribution: str
    version: str
    plugin: str
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def label(self) -> str:
        """``tool 'greet' (seamkit-hello 0.1.0, plugin 'hello')``."""
        version = f" {self.version}" if self.version else ""
        return f"{self.kind} {self.name!r} ({self.distribution}{version}, plugin {self.plugin!r})"


def _path(obj: object) -> str:
    if isinstance(obj, str):
        return repr(obj)
    return repr(f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', type(obj).__name__)}")


def _exc(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def check_component(spec: ComponentSpec) -> ComponentCheck:
    """Import and validate ``spec`` (see the module doc). Never raises for a broken component: every
    failure becomes a problem of the returned :class:`ComponentCheck`."""
    import pydantic

    problems: list[str] = []
    notes: list[str] = []

    def result() -> ComponentCheck:
        return ComponentCheck(spec.kind, spec.name, spec.distribution, spec.version, spec.plugin,
                              tuple(problems), tuple(notes))

    model: Any = None
    if spec.config is not None:
        try:
            model = spec.config_model()
        except Exception as exc:
            problems.append(f"config model {_path(spec.config)} does not import: {_exc(exc)}")
        else:
            if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)):
                problems.append(f"config {_path(spec.config)} is {type(model).__name__} {model!r}, not a pydantic "
                                "model (a subclass of pydantic.BaseModel)")
                model = None
    try:
        factory = spec.factory_callable()
    except Exception as exc:
        problems.append(f"factory {_path(spec.factory)} does not import: {_exc(exc)}")
        return result()
    if not callable(factory):
        problems.append(f"factory {_path(spec.factory)} is {type(factory).__name__}, not callable")
        return result()
    if problems:
        return result()

    config: Any = None
    if model is not None:
        try:
            config = model.model_validate({})
        except pydantic.ValidationError as exc:
            missing = [".".join(str(p) for p in e["loc"]) for e in exc.errors() if e["type"] == "missing"]
            wrong = [e for e in exc.errors() if e["type"] != "missing"]
            if wrong:
                problems.extend(f"the default config does not validate: {'.'.join(str(p) for p in e['loc'])}: "
                                f"{e['msg']}" for e in wrong)
                return result()
            notes.append(f"not built: the config requires {', '.join(missing)}")
            config = None
    args = () if model is None else (config,)
    if spec.kind == "store":
        problems.extend(_store_problems(factory))
        notes.append("not built: building a store opens its database")
        return result()

    from seamkit.plugins.ports_check import class_problems, kind_port, port_problems

    port = kind_port(spec.kind)
    if inspect.isclass(factory):
        if port is not None and (found := class_problems(factory, port)):
            problems.append(f"class {factory.__qualname__} does not satisfy {port.label}: {'; '.join(found)}")
        if not problems and (model is None or config is not None):
            notes.append("checked the class, not an instance: its __init__ did not run")
        return result()
    if model is not None and config is None:
        return result()  # the note says why it was not built
    try:
        built = factory(*args)
    except Exception as exc:
        problems.append(f"factory {_path(spec.factory)} raised {_exc(exc)} when called with the default config"
                        if model is not None else f"factory {_path(spec.factory)} raised {_exc(exc)}")
        return result()
    if port is not None:
        if found := port_problems(built, port):
            problems.append(f"the factory built {type(built).__name__}, which does not satisfy {port.label}: "
                            f"{'; '.join(found)}")
    else:
        notes.append(f"built {type(built).__name__}; no port to check for kind {spec.kind!r}")
    return result()


def _store_problems(factory: Any) -> list[str]:
    """A store class must satisfy the key-value port, the checkpoint port or both."""
    if not inspect.isclass(factory):
        return []
    from seamkit.plugins.ports_check import Port, class_problems
    from seamkit.ports import CheckpointPort, StorePort

    kv = class_problems(factory, Port("the store port (StorePort)", StorePort))
    cp = class_problems(factory, Port("the checkpoint port (CheckpointPort)", CheckpointPort))
    if kv and cp:
        return [f"class {factory.__qualname__} satisfies neither the store port (StorePort: {'; '.join(kv)}) "
                f"nor the checkpoint port (CheckpointPort: {'; '.join(cp)})"]
    return []
