"""Does a component satisfy its port? The members a built component (or its class, before
building) lacks or gets wrong, in words a plugin author can act on.

Ports are ``typing.Protocol`` classes, and ``isinstance(x, LLMPort)`` only says yes or no. Here
each member of the port is checked: present, callable, a signature that accepts the port's
arguments, the right kind of function (an ``AsyncIterator`` member must not be a plain
``async def`` returning a coroutine; an ``async def`` member must not be a generator), and data
attributes annotated ``str``/``int``/``float``/``bool`` of that type.

:func:`kind_port` gives the port every component of a registry kind implements (the hookspecs'
contracts: provider, tool, compactor, middleware). A kind whose components are values rather than
services (``capability``: a :class:`~seamkit.capabilities.Capability`) has a :class:`Port` whose
``protocol`` is that value's class: conforming is ``isinstance``. A slot may ask for more (``checkpoints:`` a
:class:`~seamkit._ports.CheckpointPort`, ``context.grounding`` a
:class:`~seamkit._grounding.MemorySource`); see :func:`slot_port`.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["MiddlewareShape", "Port", "class_problems", "is_protocol", "kind_port", "method_names", "port_problems",
           "slot_port"]


class MiddlewareShape(Protocol):
    """The middleware contract (:data:`seamkit._middleware.Middleware`) as a port: a callable
    ``mw(call, next)`` returning an async iterator (an async generator function)."""

    def __call__(self, call: Any, next: Any) -> AsyncIterator[Any]: ...


class StepShape(Protocol):
    """The workflow step contract (:data:`seamkit.workflows._model.StepFn`) as a port: an async
    callable ``fn(ctx, input)``."""

    def __call__(self, ctx: Any, input: Any) -> Awaitable[Any]: ...


@dataclass(frozen=True, slots=True)
class Port:
    """A port as messages name it: ``label`` (``"the model port (LLMPort)"``) and the
    ``protocol`` class whose members are checked (a ``typing.Protocol``), or a plain class
    whose instances conform (a value type such as :class:`~seamkit.capabilities.Capability`)."""

    label: str
    protocol: type


@functools.cache
def kind_port(kind: str) -> Port | None:
    """The port of every component of registry ``kind``, or ``None`` when the slot decides
    (``store``: checkpoints and/or key-value; ``memory``: grounding source, embeddings, vectors).
    Imports only that port's module."""
    if kind == "provider":
        from seamkit._ports import LLMPort

        return Port("the model port (LLMPort)", LLMPort)
    if kind == "tool":
        from seamkit._ports import ToolPort

        return Port("the tool port (ToolPort)", ToolPort)
    if kind == "compactor":
        from seamkit._compaction import CompactorPort

        return Port("the compactor port (CompactorPort)", CompactorPort)
    if kind == "middleware":
        return Port("the middleware contract (an async generator function mw(call, next))", MiddlewareShape)
    if kind == "step":
        return Port("the workflow step contract (async fn(ctx, input) -> result)", StepShape)
    if kind == "capability":
        from seamkit.capabilities import Capability

        return Port("the capability contract (a seamkit.capabilities.Capability value)", Capability)
    if kind == "evaluator":
        from seamkit._evals import Evaluator

        return Port("the evaluator port (Evaluator: name, async evaluate(attempt, ctx) -> Score)", Evaluator)
    if kind == "runner":
        from seamkit._runners import Runner

        return Port("the runner port (Runner: requeue(request) -> str)", Runner)
    return None


@functools.cache
def slot_port(kind: str, slot: str) -> Port | None:
    """The port the slot ``slot`` (``"checkpoints"``, ``"grounding"``, ...) of registry ``kind``
    needs; the kind's port when the slot asks nothing more."""
    if kind == "store" and slot == "checkpoints":
        from seamkit._ports import CheckpointPort

        return Port("the checkpoint port (CheckpointPort)", CheckpointPort)
    if kind == "memory" and slot == "grounding":
        from seamkit._grounding import MemorySource

        return Port("the grounding-source port (MemorySource: async retrieve(query, *, scope, k))", MemorySource)
    return kind_port(kind)


# -- the members of a protocol -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Member:
    name: str
    kind: str  # "method", "property" or "attribute"
    signature: inspect.Signature | None = None
    is_async: bool = False  # `async def`: calling it gives an awaitable
    is_stream: bool = False  # returns an async iterator (AsyncIterator / AsyncGenerator)
    type: Any = None  # for attributes and properties: the annotated class, when simple


_SIMPLE_TYPES: dict[str, type | tuple[type, ...]] = {"str": str, "int": int, "float": (int, float), "bool": bool}


def _annotation_type(annotation: Any, owner: Any) -> Any:
    """A simple class for ``annotation`` (a string under ``from __future__ import annotations``):
    ``str``/``int``/``float``/``bool``, or a class the owner's module defines; else ``None``."""
    if isinstance(annotation, str):
        if annotation in _SIMPLE_TYPES:
            return _SIMPLE_TYPES[annotation]
        module = inspect.getmodule(owner)
        found = getattr(module, annotation, None) if annotation.isidentifier() else None
        return found if isinstance(found, type) else None
    if annotation in (str, int, bool):
        return annotation
    if annotation is float:
        return (int, float)
    return None


def _returns_stream(fn: Any) -> bool:
    ret = getattr(fn, "__annotations__", {}).get("return")
    text = ret if isinstance(ret, str) else getattr(ret, "__name__", "") or str(ret)
    return "AsyncIterator" in text or "AsyncGenerator" in text or "AsyncIterable" in text


@functools.cache
def _members(protocol: type) -> tuple[_Member, ...]:
    out: dict[str, _Member] = {}
    for cls in reversed(protocol.__mro__):
        if cls in (object, Protocol, typing.Generic) or not getattr(cls, "_is_protocol", False):
            continue
        for name, ann in vars(cls).get("__annotations__", {}).items():
            if not name.startswith("_"):
                out[name] = _Member(name, "attribute", type=_annotation_type(ann, cls))
        for name, value in vars(cls).items():
            if name.startswith("_") and name != "__call__":
                continue
            if isinstance(value, property) and value.fget is not None:
                ret = value.fget.__annotations__.get("return")
                out[name] = _Member(name, "property", type=_annotation_type(ret, cls))
            elif inspect.isfunction(value):
                out[name] = _Member(name, "method", inspect.signature(value),
                                    inspect.iscoroutinefunction(value), _returns_stream(value))
    return tuple(out.values())


# -- checks --------------------------------------------------------------------------------------


def _params(sig: inspect.Signature, *, skip_first: bool) -> str:
    """``sig``'s parameters as written, without annotations (and without ``self``)."""
    params = list(sig.parameters.values())[1 if skip_first else 0:]
    return "(" + ", ".join(str(p.replace(annotation=inspect.Parameter.empty)) for p in params) + ")"


def _binds(impl: inspect.Signature, expected: inspect.Signature, *, unbound: bool) -> bool:
    """Whether ``impl`` accepts every call the port's ``expected`` signature allows: its
    positional parameters positionally and its keyword-only ones by name."""
    params = list(expected.parameters.values())[1:]  # the port's `self`
    positional = [None for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keywords = {p.name: None for p in params if p.kind == p.KEYWORD_ONLY}
    if unbound:
        positional.insert(0, None)
    try:
        impl.bind(*positional, **keywords)
    except TypeError:
        return False
    return True


def _function_problems(member: _Member, impl: Any, *, unbound: bool) -> list[str]:
    shown = "the middleware" if member.name == "__call__" else f"{member.name}()"
    problems: list[str] = []
    if not callable(impl):
        return [f"{shown[:-2] if shown.endswith('()') else shown} is not callable (it is {_a(type(impl).__name__)})"]
    target = impl
    if member.name == "__call__" and not (inspect.isfunction(impl) or inspect.ismethod(impl)
                                          or isinstance(impl, functools.partial)):
        target = type(impl).__call__
        unbound = True
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):  # a builtin without a signature: nothing more to check
        return problems
    if member.signature is not None and not _binds(sig, member.signature, unbound=unbound):
        called = "mw" if member.name == "__call__" else member.name
        problems.append(f"{shown} has the wrong parameters: it takes {_params(sig, skip_first=unbound)}, "
                        f"the port calls {called}{_params(member.signature, skip_first=True)}")
    if member.is_stream:
        if inspect.iscoroutinefunction(target):
            problems.append(f"{shown} is an 'async def' without 'yield', so calling it gives a coroutine, not an "
                            "async iterator: make it an async generator (yield each item)")
        elif inspect.isgeneratorfunction(target):
            problems.append(f"{shown} is a plain generator: write 'async def' so that it is an async generator")
    elif member.is_async and (inspect.isasyncgenfunction(target) or inspect.isgeneratorfunction(target)):
        problems.append(f"{shown} must be an 'async def' returning its result, not a generator")
    return problems


def is_protocol(tp: type) -> bool:
    """Whether ``tp`` is a ``typing.Protocol`` class (checked member by member), not a value type."""
    return bool(getattr(tp, "_is_protocol", False))


_is_protocol = is_protocol


def method_names(protocol: type) -> tuple[str, ...]:
    """The names of the methods of the port ``protocol``."""
    return tuple(m.name for m in _members(protocol) if m.kind == "method")


def _a(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def _type_name(tp: Any) -> str:
    if isinstance(tp, tuple):
        return "number" if float in tp else " or ".join(t.__name__ for t in tp)
    return str(tp.__name__)


def _missing(member: _Member, has: Any) -> str:
    """The problem for a missing ``member``; ``has(name)`` says whether the component has ``name``.
    One closing method for every component: a component with ``close()`` but no ``aclose()`` (the
    name before seamkit settled on ``aclose``, or a library's habit) is told so, since seamkit never
    calls ``close()`` and would otherwise leave it open."""
    if member.kind != "method":
        return f"missing {member.name}"
    if member.name == "aclose" and has("close"):
        return ("missing aclose(): it has close(), which seamkit never calls; every component closes with "
                "'async def aclose(self) -> None' (rename close to aclose)")
    return f"missing {member.name}()"


def port_problems(obj: Any, port: Port | type) -> list[str]:
    """What ``obj`` (a built component) lacks or gets wrong to satisfy ``port``: one short phrase
    per member (``"missing chat()"``, ``"provider must be a str (got int)"``,
    ``"stream() is an 'async def' without 'yield' ..."``); ``[]`` when it satisfies it. Reading a
    property that raises counts as a problem, named with the exception type."""
    protocol = port.protocol if isinstance(port, Port) else port
    if not _is_protocol(protocol):  # a value type
        return [] if isinstance(obj, protocol) else [f"the factory must return {_a(protocol.__name__)}"]
    problems: list[str] = []
    for member in _members(protocol):
        if member.name == "__call__":
            problems.extend(_function_problems(member, obj, unbound=False) if callable(obj)
                            else [f"the middleware is not callable (it is {_a(type(obj).__name__)})"])
            continue
        try:
            value = getattr(obj, member.name)
        except AttributeError:
            problems.append(_missing(member, lambda name: callable(getattr(obj, name, None))))
            continue
        except Exception as exc:  # a property that fails when read
            problems.append(f"reading {member.name} raised {type(exc).__name__}")
            continue
        if member.kind == "method":
            problems.extend(_function_problems(member, value, unbound=False))
        elif member.type is not None and not isinstance(value, member.type):
            problems.append(f"{member.name} must be {_a(_type_name(member.type))} (got {type(value).__name__})")
    return problems


def class_problems(cls: type, port: Port | type) -> list[str]:
    """What the class ``cls`` lacks or gets wrong to satisfy ``port``, checked before building
    anything: its methods only (data attributes and properties may be set by ``__init__``)."""
    protocol = port.protocol if isinstance(port, Port) else port
    if not _is_protocol(protocol):  # a value type: a class used as factory builds its own instances
        return [] if issubclass(cls, protocol) else [f"its instances are not {_a(protocol.__name__)} values"]
    problems: list[str] = []
    if inspect.getattr_static(cls, "__getattr__", None) is not None:  # members made on demand: build to know
        return problems
    for member in _members(protocol):
        if member.kind != "method":
            continue
        if member.name == "__call__":
            call = next((vars(c)["__call__"] for c in cls.__mro__[:-1] if "__call__" in vars(c)), None)
            if call is None:
                problems.append("instances are not callable (no __call__ method)")
            else:
                problems.extend(_function_problems(member, call, unbound=True))
            continue
        try:
            value = inspect.getattr_static(cls, member.name)
        except AttributeError:
            if not any(member.name in getattr(c, "__annotations__", {}) for c in cls.__mro__):
                problems.append(_missing(member, lambda name: callable(getattr(cls, name, None))))
            continue
        if isinstance(value, staticmethod | classmethod | property):
            continue
        if not callable(value):  # `increment = None`: present, but a call fails
            problems.append(f"{member.name} is not callable (it is {_a(type(value).__name__)})")
        elif inspect.isfunction(value):
            problems.extend(_function_problems(member, value, unbound=True))
    return problems
