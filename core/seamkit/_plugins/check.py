"""Check one registered component the way a composition would use it, without a composition:
``seamkit plugins --check NAME``.

:func:`check_component` imports the component's config model and factory (listing plugins does
not: registration is lazy), checks that the config is a pydantic model and that its default values
validate (pydantic does not validate defaults by itself), and checks the factory against the port
of the component's kind (:mod:`seamkit._plugins.ports_check`): a class is checked member by member
without building anything; a function is called with the default config and what it returns is
checked. A function that cannot be called (a store: building one opens its database; a config with
required fields: a provider needs its ``model``) is checked through its return annotation
(``def build(config) -> MyStore``: the class ``MyStore`` is checked); without one, a note says it was
not checked. A store class must satisfy the key-value or the checkpoint port.

Whatever the component's code does is caught: an exception of any kind (``SystemExit`` from
``sys.exit`` included; not ``KeyboardInterrupt``) is a problem of that component, what it prints
goes to stderr, and the messages shown have their secrets masked (:mod:`seamkit._plugins.redact`).
:func:`check_commands` checks a plugin's CLI commands.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import sys
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seamkit._plugins.redact import mask_message

if TYPE_CHECKING:
    from seamkit._plugins.registry import ComponentSpec

__all__ = ["NOT_CHECKED", "NO_ANNOTATION", "CheckTimeout", "ComponentCheck", "check_commands", "check_component"]


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
    def checked(self) -> bool:
        """Whether the port was checked: ``False`` when a note says it was ``not checked`` (a
        function factory that was not called and has no usable return annotation). Such a
        component is ``ok`` (nothing wrong was found) but shown ``unchecked``: ``ok`` would claim
        more than was seen."""
        return not any(n.startswith(NOT_CHECKED) for n in self.notes)

    @property
    def status(self) -> str:
        """``failed``, ``unchecked`` or ``ok``."""
        return "failed" if self.problems else "ok" if self.checked else "unchecked"

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


def check_component(spec: ComponentSpec, *, clashes: Sequence[ComponentSpec] = (),
                    timeout_s: float | None = None) -> ComponentCheck:
    """Import and validate ``spec`` (see the module doc). Never raises for a broken component (a
    ``KeyboardInterrupt`` goes through): every failure becomes a problem of the returned
    :class:`ComponentCheck`. ``clashes``: the other components of that kind and name (from other
    distributions): a composition's bare ``use: NAME`` is then refused as ambiguous, a problem.
    ``timeout_s``: a component whose import or factory has not returned after that many seconds
    (it blocks: a network connect, a sleep) is interrupted and that is its problem; honoured in the
    main thread of a platform with ``signal.setitimer`` (not Windows), else ignored."""
    problems: list[str] = []
    notes: list[str] = []
    if clashes:
        others = ", ".join(sorted({f"{c.distribution} (plugin {c.plugin!r})" for c in clashes}))
        problems.append(f"ambiguous: {spec.kind} {spec.name!r} is also registered by {others}; 'use: {spec.name}' "
                        f"is refused: add 'from: {spec.distribution}' to pick this one, or uninstall one of them")
    try:
        with contextlib.redirect_stdout(sys.stderr), _deadline(timeout_s):  # chatter must not corrupt --json
            _check(spec, problems, notes)
    except CheckTimeout as exc:  # outside the component's own code (it says so when inside)
        problems.append(f"the check stopped: {exc}")
    private = _private_imports(spec)
    if private:
        notes.append(f"its distribution imports private host modules ({', '.join(private[:5])}"
                     f"{', ...' if len(private) > 5 else ''}): internal, they may change in any release; import "
                     "the public names instead (seamkit.plugin, seamkit.values, ...: docs/plugins/public-api.md)")
    return ComponentCheck(spec.kind, spec.name, spec.distribution, spec.version, spec.plugin,
                          tuple(mask_message(p) for p in problems), tuple(mask_message(n) for n in notes))


class CheckTimeout(BaseException):
    """Raised inside a component's code that runs past :func:`check_component`'s ``timeout_s``.
    A ``BaseException``, like ``KeyboardInterrupt``, so that the component's own ``except
    Exception`` does not swallow it."""


@contextlib.contextmanager
def _deadline(timeout_s: float | None) -> Iterator[None]:
    """Raise :class:`CheckTimeout` in this thread after ``timeout_s`` seconds (``SIGALRM``; see
    :func:`~seamkit._plugins.guard.alarm_deadline`, which also suspends and puts back a limit armed
    around the check)."""
    from seamkit._plugins.guard import alarm_deadline

    if timeout_s is None:
        yield
        return
    stop = f"it did not return within {timeout_s:g} s (it may block: a network connect, a sleep)"
    with alarm_deadline(timeout_s, lambda: CheckTimeout(stop)):
        yield


#: how a note saying that the port was not checked starts
NOT_CHECKED = "not checked:"


def _private_imports(spec: ComponentSpec) -> tuple[str, ...]:
    """:func:`~seamkit._plugins.private_imports.private_imports` of the component's distribution."""
    from seamkit._plugins.private_imports import private_imports

    modules = tuple(p.partition(":")[0] if isinstance(p, str) else str(getattr(p, "__module__", "") or "")
                    for p in (spec.factory, spec.config) if p is not None)
    try:
        return private_imports(spec.distribution, modules)
    except Exception:  # reading its source is a courtesy: never a problem of the check
        return ()


#: the note for a function factory that could not be built nor checked through its return annotation
NO_ANNOTATION = ("not checked: the factory has no return annotation; annotate it (-> MyStore) so the port can "
                 "be checked")


def _check(spec: ComponentSpec, problems: list[str], notes: list[str]) -> None:
    """The checks of :func:`check_component`, adding to ``problems`` and ``notes``."""
    import pydantic

    model: Any = None
    config_error = ""
    if spec.config is not None:
        try:
            model = spec.config_model()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            config_error = _exc(exc)
            problems.append(f"config model {_path(spec.config)} does not import: {config_error}")
        else:
            if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)):
                problems.append(f"config {_path(spec.config)} is {type(model).__name__} {model!r}, not a pydantic "
                                "model (a subclass of pydantic.BaseModel)")
                model = None
    try:
        factory = spec.factory_callable()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        problem = f"factory {_path(spec.factory)} does not import: {_exc(exc)}"
        if config_error and _exc(exc) == config_error:  # one module, one failure: say it once
            problem = (f"config model {_path(spec.config)} and factory {_path(spec.factory)} do not import: "
                       f"{config_error}")
            problems.pop()
        problems.append(problem)
        return
    if not callable(factory):
        problems.append(f"factory {_path(spec.factory)} is {type(factory).__name__}, not callable")
        return
    if any(not p.startswith("ambiguous:") for p in problems):
        return

    config: Any = None
    if model is not None:
        found = _default_config(model)
        if isinstance(found, list):
            problems.extend(found)
            return
        if isinstance(found, str):
            notes.append(found)
        else:
            config = found
    built_ok = model is None or config is not None
    from seamkit._plugins.ports_check import class_problems, kind_port, method_names, port_problems

    if spec.kind == "store":
        cls = factory if inspect.isclass(factory) else _returned_class(factory, notes)
        if cls is not None:
            problems.extend(_store_problems(cls, notes, annotated=not inspect.isclass(factory)))
        notes.append("not built: building a store opens its database")
        return
    port = kind_port(spec.kind)
    if spec.toolset:  # its factory returns several tools, not one
        from seamkit._plugins.ports_check import Port
        from seamkit._ports import ToolsetPort

        port = Port("the toolset port (ToolsetPort)", ToolsetPort)
    if inspect.isclass(factory):
        if port is not None and (found_problems := class_problems(factory, port)):
            problems.append(f"class {factory.__qualname__} does not satisfy {port.label}: {'; '.join(found_problems)}")
        if not problems and built_ok:
            notes.append("checked the class, not an instance: its __init__ did not run")
        return
    if not built_ok:  # the note says why it was not built: check what the annotation promises
        # a callable contract (middleware, step) is met by a function: no class to name
        checkable = port is not None and "__call__" not in method_names(port.protocol)
        cls = _returned_class(factory, notes) if checkable else None
        if cls is not None and port is not None:
            if found_problems := class_problems(cls, port):
                problems.append(f"class {cls.__qualname__} (the factory's return annotation) does not satisfy "
                                f"{port.label}: {'; '.join(found_problems)}")
            else:
                notes.append(f"checked the class {cls.__qualname__} that the factory's return annotation names")
        return
    args = () if model is None else (config,)
    try:
        built = factory(*args)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # sys.exit in a factory is that factory's problem, not the end of the check
        problems.append(f"factory {_path(spec.factory)} raised {_exc(exc)} when called with the default config"
                        if model is not None else f"factory {_path(spec.factory)} raised {_exc(exc)}")
        return
    if port is not None:
        if found_problems := port_problems(built, port):
            problems.append(f"the factory built {type(built).__name__}, which does not satisfy {port.label}: "
                            f"{'; '.join(found_problems)}")
    else:
        notes.append(f"built {type(built).__name__}; no port to check for kind {spec.kind!r}")


def _default_config(model: Any) -> Any:
    """The config ``model`` builds from no parameters; a note (``str``) when it has required fields;
    a list of problems when its defaults do not validate. Pydantic does not validate default values,
    so they are validated here: the instance's values are validated again as if written."""
    import pydantic

    def errors(exc: pydantic.ValidationError, *, missing: bool = True) -> list[str]:
        return [f"the default config does not validate: {'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                for e in exc.errors() if missing or e["type"] != "missing"]

    try:
        config = model.model_validate({})
    except KeyboardInterrupt:
        raise
    except pydantic.ValidationError as exc:
        missing = [".".join(str(p) for p in e["loc"]) for e in exc.errors() if e["type"] == "missing"]
        if len(missing) < len(exc.errors()):
            return errors(exc, missing=False)
        return f"not built: the config requires {', '.join(repr(m) for m in missing)} (no default)"
    except BaseException as exc:  # a validator that raises something else
        return [f"the default config does not validate: {_exc(exc)}"]
    fields = model.model_fields
    values = {(f.validation_alias if isinstance(f.validation_alias, str) else f.alias or name): getattr(config, name)
              for name, f in fields.items()}
    try:
        model.model_validate(values)
    except KeyboardInterrupt:
        raise
    except pydantic.ValidationError as exc:  # "missing": an alias this key did not match, not a bad default
        return errors(exc, missing=False) or config
    except BaseException as exc:
        return [f"the default config does not validate: {_exc(exc)}"]
    return config


def _returned_class(factory: Any, notes: list[str]) -> type | None:
    """The class a function factory's return annotation names (``-> MyStore``), to check without
    calling it; ``None`` with a note saying why not (no annotation, not a class, unresolvable)."""
    from seamkit._plugins.ports_check import is_protocol

    try:
        ret = typing.get_type_hints(factory).get("return")
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        notes.append(f"not checked: the factory's return annotation does not resolve ({_exc(exc)}); annotate it "
                     "with a class its module imports (-> MyStore) so the port can be checked")
        return None
    if ret is None:
        notes.append(NO_ANNOTATION)
        return None
    if not isinstance(ret, type) or is_protocol(ret) or ret is object:
        notes.append(f"not checked: the factory's return annotation {getattr(ret, '__name__', ret)!s} is not "
                     "the class it builds; annotate it with that class (-> MyStore) so the port can be checked")
        return None
    return ret


def _store_problems(cls: type, notes: list[str], *, annotated: bool = False) -> list[str]:
    """A store class must satisfy the key-value port, the checkpoint port or both. One that meets
    one port and has some (not all) of the other's own methods gets a note naming what it lacks."""
    from seamkit._plugins.ports_check import Port, class_problems, method_names
    from seamkit._ports import CheckpointPort, StorePort

    kv_port = Port("the store port (StorePort)", StorePort)
    cp_port = Port("the checkpoint port (CheckpointPort)", CheckpointPort)
    kv, cp = class_problems(cls, kv_port), class_problems(cls, cp_port)
    what = f"class {cls.__qualname__}" + (" (the factory's return annotation)" if annotated else "")
    if kv and cp:
        return [f"{what} satisfies neither the store port (StorePort: {'; '.join(kv)}) "
                f"nor the checkpoint port (CheckpointPort: {'; '.join(cp)})"]
    for met, other, found in ((kv_port, cp_port, cp), (cp_port, kv_port, kv)):
        if not found:
            continue
        own = set(method_names(other.protocol)) - set(method_names(met.protocol))
        if any(inspect.getattr_static(cls, name, None) is not None for name in own) or any(
                "not callable" in f or "wrong parameters" in f for f in found):
            notes.append(f"{what} satisfies {met.label} but only part of {other.label}: {'; '.join(found)}")
    return []


def check_commands(plugin: str, distribution: str, version: str, hook: Callable[..., Any]) -> ComponentCheck:
    """Check the CLI commands of ``plugin``: run its ``seamkit_register_commands`` ``hook`` against a
    throwaway parser holding seamkit's built-in commands (a name one of them has is a problem)."""
    from seamkit._cli.main import build_parser
    from seamkit._plugins.registry import run_command_hook

    parser, _ = build_parser(None)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    before = set(sub.choices)
    error = run_command_hook(hook, sub)
    problems = (f"its seamkit_register_commands hook failed: {error}",) if error else ()
    added = sorted(set(sub.choices) - before)
    notes = () if error else (f"commands added: {', '.join(added) or 'none'}",)
    return ComponentCheck("command", plugin, distribution, version, plugin, problems, notes)
