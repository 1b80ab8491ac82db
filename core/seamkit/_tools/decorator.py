"""``@tool``: a Python function as a :class:`~seamkit._ports.ToolPort`.

The JSON Schema of the parameters comes from the type hints (through pydantic, draft 2020-12:
nested pydantic models and dataclasses under ``$defs``, ``list[X]`` with ``items``, ``Literal`` and
``Enum`` as ``enum``, ``X | None`` as ``anyOf`` with ``null``) and the descriptions from the
docstring (Google, NumPy or reST style, parsed by ``docstring_parser``). A parameter annotated
with :class:`~seamkit._runtime.context.RunContext` receives the run's context and is not advertised.
Both are built on first use (an agent built with the tool, ``.schema``, ``.validate()``), not at
decoration: defining a tool imports neither pydantic nor the docstring parser.
"""

from __future__ import annotations

import functools
import inspect
import re
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, overload

from seamkit._lazy import lazy_module
from seamkit._runtime.context import RunContext
from seamkit._tools.registry import missing_description
from seamkit.errors import ToolArgumentError, ToolDefinitionError
from seamkit.values import ToolSchema, freeze

if TYPE_CHECKING:
    import asyncio

    import pydantic
else:  # imported on first use: a third of a usable agent's import time (issue 19)
    asyncio = lazy_module("asyncio", globals())

__all__ = ["FunctionTool", "tool"]


def _strip_titles(schema: Any, *, in_properties: bool = False) -> Any:
    """Drop pydantic's generated ``title`` keys (noise for a model), keeping properties that are
    literally named ``title``."""
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "title" and not in_properties and isinstance(v, str):
                continue
            out[k] = _strip_titles(v, in_properties=(k in ("properties", "$defs", "definitions")))
        return out
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


#: what providers accept as a tool name (OpenAI's and Anthropic's function-name rule)
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _check_options(fn: Callable[..., Any], name: object, blocking: object, idempotent: object) -> None:
    """Refuse (:class:`~seamkit.errors.ToolDefinitionError`) a ``name`` providers would not
    accept, ``blocking`` / ``idempotent`` that are not booleans, and a generator function (its
    caller would get a generator object, not a result)."""
    if name is not None and not isinstance(name, str):
        raise ToolDefinitionError(f"@tool name must be a str, got {type(name).__name__}")
    shown = str(name or getattr(fn, "__name__", None) or repr(fn))
    if not _TOOL_NAME.fullmatch(shown):
        raise ToolDefinitionError(f"tool name {shown!r:.80} is not one a model provider accepts: 1 to 64 letters, "
                                  "digits, '_' or '-' (pass name=... to @tool)")
    for option, value in (("blocking", blocking), ("idempotent", idempotent)):
        if not isinstance(value, bool):
            raise ToolDefinitionError(f"tool {shown!r}: {option} must be True or False, got {value!r:.60}")
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise ToolDefinitionError(f"tool {shown!r}: a generator function cannot be a tool (calling it returns a "
                                  "generator, not a result): return the values instead, e.g. as a list")


def _type_hints(fn: Callable[..., Any], tool: str) -> dict[str, Any]:
    """``fn``'s resolved type hints; an annotation that does not resolve (a name not defined
    where the function is, a string that is not an expression, not a type) raises
    :class:`~seamkit.errors.ToolDefinitionError` naming the parameter and the cause."""
    target: Any = fn
    while isinstance(target, functools.partial):  # its function's hints (the signature drops bound ones)
        target = target.func
    if inspect.isclass(target):  # called to make an instance: its __init__'s parameters
        target = target.__init__
    elif not inspect.isroutine(target):  # a callable object: its __call__'s
        target = type(target).__call__
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as first:  # NameError, SyntaxError, TypeError...: find which annotation
        exc: Exception = first
        where = "an annotation"
        globalns = getattr(inspect.unwrap(target), "__globals__", {})
        for pname, raw in dict(getattr(target, "__annotations__", None) or {}).items():
            try:
                typing.get_type_hints(_Annotations({pname: raw}), globalns=globalns, include_extras=True)
            except Exception as one:  # this annotation is the cause
                exc, where = one, ("the return annotation" if pname == "return" else f"parameter {pname!r}")
                break
        if isinstance(exc, NameError):
            cause = (f"{exc.name!r} is not defined where the function is (define or import it at module level, "
                     "not under `if TYPE_CHECKING:` or inside a function)") if exc.name else str(exc)
        else:
            cause = str(exc)
        raise ToolDefinitionError(f"tool {tool!r}: the type hint of {where} cannot be resolved: {cause}") from exc


class _Annotations:
    """An object whose ``__annotations__`` ``typing.get_type_hints`` resolves one at a time."""

    def __init__(self, annotations: dict[str, Any]) -> None:
        self.__annotations__ = annotations


def _routine_in(ann: Any) -> Any:
    """The function (a lambda, a builtin, a ``functools.partial``) written where a type belongs in
    ``ann`` (at any depth of ``list[...]``, ``X | Y``...; not in ``Annotated`` metadata, where
    validators are functions), or ``None``."""
    if inspect.isroutine(ann) or isinstance(ann, functools.partial):
        return ann
    args = typing.get_args(ann)
    if typing.get_origin(ann) is typing.Annotated:
        args = args[:1]
    for arg in args:
        for a in arg if isinstance(arg, list) else (arg,):  # Callable[[X], Y]'s argument list
            found = _routine_in(a)
            if found is not None:
                return found
    return None


def _sections_first(doc: str) -> str:
    """``doc`` as the docstring parser reads it right: a first line that is a section title
    (``Args:``) is parsed as a section, as it is when the docstring starts on the next line;
    otherwise the parser takes the title for the summary and the section for the description."""
    first = doc.lstrip("\n").split("\n", 1)[0].strip()
    if _SECTION_TITLE.fullmatch(first):
        return "\n" + doc
    return doc


#: Google-style section titles (docstring_parser's, with their usual variants), alone on a line
_SECTION_TITLE = re.compile(
    r"(args|arguments|parameters|params|keyword args|keyword arguments|other parameters|raises|exceptions|except"
    r"|attributes|examples?|returns?|yields?|warns|warnings?|notes?|todo|see also|references):",
    re.IGNORECASE,
)


def _type_name(ann: Any) -> str:
    return getattr(ann, "__qualname__", None) or repr(ann)


def _pydantic_reason(exc: Exception) -> str:
    """pydantic's reason for refusing a type, in terms a tool's author can act on."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    undefined = re.search(r"you should define `([^`]+)`", text)
    if undefined:  # a model's forward reference that does not resolve
        return (f"it refers to {undefined.group(1)!r}, which is not defined where its class is (define or import "
                "it at module level)")
    text = re.sub(r"\.?\s*Set `arbitrary_types_allowed=True`.*$", "", text)
    if not type(exc).__module__.startswith("pydantic"):  # pydantic tripped on it: say how
        text = f"{type(exc).__name__}: {text}"
    return text.rstrip(". ")


class FunctionTool:
    """A tool backed by a Python function (sync or async). Build it with :func:`tool`.

    ``schema``: the advertised :class:`~seamkit.values.ToolSchema`. ``validate(arguments)``
    returns keyword arguments ready for the function or raises
    :class:`~seamkit.errors.ToolArgumentError`. ``invoke(arguments, ctx)`` calls the function
    (sync functions in a worker thread unless ``blocking=False``). The function stays callable
    directly: ``add(2, 3)``. When the run is cancelled (``ctx.cancellation.cancel()``), an async
    function is cancelled; a function in a worker thread cannot be, so it should take a
    ``RunContext`` parameter and return when ``ctx.cancellation.cancelled`` turns true: the run
    waits :attr:`cancel_grace` seconds for it.
    """


    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        side_effecting: bool,
        name: str | None = None,
        description: str | None = None,
        blocking: bool = True,
        idempotent: bool = False,
    ) -> None:
        _check_options(fn, name, blocking, idempotent)
        self.fn = fn
        self.__wrapped__ = fn
        self.__doc__ = fn.__doc__
        self.__name__ = name or fn.__name__
        self._is_async = inspect.iscoroutinefunction(fn)
        self._blocking = blocking
        self._quick = True  # whether its last call in a worker thread returned within quick_wait
        self._side_effecting = side_effecting
        self._idempotent = idempotent
        self._description = description
        # What decoration checks is cheap (no pydantic, no docstring parser): the signature, the
        # type hints resolving, a description existing. Whether pydantic can describe each type
        # is learnt when the schema is built (_build), on first use: importing pydantic and
        # building the first model is most of a cold start (issue 19).
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError) as exc:  # a builtin or a class without a readable signature
            raise ToolDefinitionError(f"tool {self.__name__!r}: its signature cannot be read ({exc}); "
                                      "decorate a def or async def function") from exc
        hints = _type_hints(fn, self.__name__)
        params: list[tuple[str, Any, Any]] = []
        self._ctx_param: str | None = None
        for pname, param in sig.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(f"tool {self.__name__!r}: *args/**kwargs cannot be described to a model")
            if param.kind is param.POSITIONAL_ONLY:  # the model's arguments are passed by name
                raise ToolDefinitionError(f"tool {self.__name__!r}: parameter {pname!r} is positional-only "
                                          "(before '/'); the tool is called with keyword arguments: remove the '/'")
            if pname.startswith("_"):  # pydantic refuses such field names; a model would see it anyway
                raise ToolDefinitionError(f"tool {self.__name__!r}: parameter {pname!r} starts with '_'; name the "
                                          "parameters the model fills in without a leading underscore")
            ann = hints.get(pname, Any)
            if ann is RunContext:
                self._ctx_param = pname
                continue
            if pname not in hints:
                raise ToolDefinitionError(f"tool {self.__name__!r}: parameter {pname!r} needs a type hint")
            not_a_type = _routine_in(ann)
            if not_a_type is not None:  # pydantic would read it as a validator, not a type
                raise ToolDefinitionError(
                    f"tool {self.__name__!r}: parameter {pname!r} is annotated with {not_a_type!r:.80}, a "
                    f"{type(not_a_type).__name__} and not a type: annotate it with a type (int, str, a pydantic "
                    "model, a dataclass, a TypedDict, list[...], Literal[...], ...)")
            params.append((pname, ann, ... if param.default is param.empty else param.default))
        self._params = params
        if description is not None and not isinstance(description, str):
            raise ToolDefinitionError(f"tool {self.__name__!r}: description must be a str, got "
                                      f"{type(description).__name__}")
        text = description if description is not None else (fn.__doc__ or "")
        if not text.strip():
            raise ToolDefinitionError(self._missing_description())
        self._schema: ToolSchema | None = None
        # the pydantic-core validator of the arguments: one C call per tool call, no BaseModel
        # wrapper frames; None until _build
        self._validate_python: Callable[[Any], Any] | None = None
        self._validation_error: type[pydantic.ValidationError]  # set with it
        self._validator: type[pydantic.BaseModel]  # the arguments' model, set with it

    def _missing_description(self) -> str:
        return missing_description(self.__name__, getattr(self.fn, "__qualname__", self.__name__))

    def _build(self) -> ToolSchema:
        """Build the argument model, its JSON Schema and the description (from the docstring);
        returns the schema. Raises :class:`~seamkit.errors.ToolDefinitionError` for a parameter
        type pydantic cannot describe, or a docstring without a description (only sections)."""
        import docstring_parser
        import pydantic

        doc = docstring_parser.parse(_sections_first(self.fn.__doc__ or ""))
        param_docs = {p.arg_name: p.description for p in doc.params if p.description}
        for pname, _ann, _default in self._params:
            if pname == "model_config" or (pname.startswith("model_") and hasattr(pydantic.BaseModel, pname)):
                # the argument model is a pydantic model: model_config would be taken for its
                # configuration and silently left out of the schema
                raise ToolDefinitionError(f"tool {self.__name__!r}: parameter {pname!r} has a name pydantic "
                                          "reserves for its models (the tool's arguments are one); rename it")
        fields: dict[str, Any] = {
            pname: (ann, pydantic.Field(default, description=param_docs.get(pname)))
            for pname, ann, default in self._params
        }
        config = pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False)
        try:
            model = pydantic.create_model(f"{self.__name__}_arguments", __config__=config, **fields)
            params = _strip_titles(model.model_json_schema())
        except Exception as exc:  # a type pydantic cannot describe as JSON Schema (any error of its)
            raise ToolDefinitionError(self._undescribable(fields, config, exc)) from exc
        params.pop("additionalProperties", None)
        params["additionalProperties"] = False
        params.setdefault("properties", {})
        desc = self._description
        if desc is None:
            parts = [doc.short_description or "", doc.long_description or ""]
            desc = "\n\n".join(p for p in parts if p).strip()
        if not desc.strip():
            raise ToolDefinitionError(
                f"{self._missing_description()} (its docstring has sections such as Args: but no summary "
                "before them)")
        schema = ToolSchema(self.__name__, desc, freeze(params), self._side_effecting, self._idempotent)
        # set together, the validator last: a thread that sees it sees the rest (a race builds twice)
        self._validator = model
        self._validation_error = pydantic.ValidationError
        self._schema = schema
        self._validate_python = model.__pydantic_validator__.validate_python
        return schema

    def _undescribable(self, fields: dict[str, Any], config: Any, exc: Exception) -> str:
        """The message refusing the tool's types, naming the first parameter whose type pydantic
        cannot describe (each is tried alone) and keeping pydantic's reason, less its advice to
        set ``arbitrary_types_allowed``, which a tool's author cannot act on."""
        import pydantic

        culprit = ""
        for pname, field in fields.items():
            try:
                pydantic.create_model("probe", __config__=config, **{pname: field}).model_json_schema()
            except Exception as one:  # this parameter is (one of) the cause
                culprit, exc = f"parameter {pname!r} ({_type_name(field[0])}) ", one
                break
        reason = _pydantic_reason(exc)
        return (f"tool {self.__name__!r}: {culprit or 'a parameter type '}cannot be described to a model: {reason}. "
                "Use a type JSON Schema can describe: str, int, float, bool, None, Literal[...], an Enum, datetime, "
                "list/dict/tuple of those, a pydantic model, a dataclass or a TypedDict")

    @property
    def schema(self) -> ToolSchema:
        """The advertised schema, built on first use (see :meth:`_build` for what it raises)."""
        return self._schema or self._build()

    @property
    def name(self) -> str:
        return self.__name__

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validate the model's ``arguments``; returns keyword arguments for the function.

        Raises :class:`~seamkit.errors.ToolArgumentError` listing each problem as ``path: message``
        (and, on the tool's first use, :class:`~seamkit.errors.ToolDefinitionError` when its schema
        cannot be built).
        """
        validate = self._validate_python
        if validate is None:
            self._build()
            validate = self._validate_python
            assert validate is not None
        try:
            obj = validate(arguments)
        except self._validation_error as exc:
            problems = [
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}" for e in exc.errors()
            ]
            raise ToolArgumentError(self.name, problems) from None
        return obj.__dict__  # type: ignore[no-any-return]  # the instance is discarded: its dict is ours

    async def invoke(self, arguments: Mapping[str, Any], ctx: RunContext) -> Any:
        """Call the function with validated ``arguments`` (from :meth:`validate`)."""
        kwargs = arguments
        if self._ctx_param is not None:
            kwargs = {**arguments, self._ctx_param: ctx}
        if self._is_async:
            return await self.fn(**kwargs)
        if self._blocking:
            return await _in_thread(self, kwargs, ctx)
        return self.fn(**kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    #: Seconds a cancelled run waits for a sync tool running in a worker thread to return once
    #: ``ctx.cancellation`` is cancelled (a thread cannot be interrupted: the tool sees the token
    #: through a ``RunContext`` parameter and returns, its ``finally`` blocks running). After
    #: that the run stops waiting; the thread runs on until the function returns.
    cancel_grace: float = 2.0

    #: Seconds the event loop's thread may wait, blocked, for a call of a sync tool in a worker
    #: thread to return, while the tool's calls return within it (see :func:`_in_thread`): a
    #: quick tool then costs one thread wake-up less per call. Bounds how long one call stops
    #: the loop; a call that takes longer is awaited like any other, and so are the tool's calls
    #: after it until one returns within this again. ``0`` awaits every call.
    quick_wait: float = 0.0005

    def __repr__(self) -> str:
        return f"<tool {self.name} side_effecting={self._side_effecting}>"


async def _in_thread(tool: FunctionTool, kwargs: Mapping[str, Any], ctx: RunContext) -> Any:
    """``tool.fn(**kwargs)`` in one of the sync-tool threads (:mod:`seamkit._tools.threads`),
    context variables copied (as ``asyncio.to_thread``).

    While the tool's calls return within :attr:`FunctionTool.quick_wait` seconds, the loop thread
    waits for the outcome on a lock, blocked for that long at most: the thread answers with one
    wake-up, where handing the outcome back through the loop costs the event loop's own wake-up,
    its callbacks and the task's (~30 µs of CPU a call, more than the trivial tool itself; the two
    thread wake-ups remain, ~40 µs each on an idle VM). A
    call that takes longer is awaited like any other from then on, and the tool's later calls
    are awaited at once until one returns within ``quick_wait`` again.

    When the awaiting task is cancelled and ``ctx.cancellation`` is too, waits up to
    :attr:`FunctionTool.cancel_grace` seconds for the function to return before re-raising."""
    import contextvars
    import threading
    import time

    from seamkit._tools.threads import tool_threads

    fn, quick_wait = tool.fn, tool.quick_wait
    wait = quick_wait if tool._quick else 0.0
    run_in_context = contextvars.copy_context().run
    # outcome ([ok, value]) is set by the worker and later (the future to answer) by the loop
    # thread, each under guard, so that exactly one of them sees the other's and the worker
    # either releases `done` (the loop thread waits on it) or answers through the future
    outcome: list[Any] = []
    later: list[asyncio.Future[Any]] = []
    guard = threading.Lock()
    done = threading.Lock()
    done.acquire()
    # running / returned are read and written on the loop thread only (settle runs there):
    # returned holds the event a cancelled caller waits on, made only then
    running = [True]
    returned: list[asyncio.Event] = []

    def settle() -> None:
        running[0] = False
        future = later[0]
        if not future.done():  # not cancelled
            ok, value = outcome
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        if returned:
            returned[0].set()

    def hand_back() -> None:
        try:
            loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the loop is closed: nobody waits for the outcome
            pass

    def job() -> Callable[[], None]:
        began = time.perf_counter()
        try:
            value, ok = run_in_context(fn, **kwargs), True
        except BaseException as exc:  # handed to the caller, as an executor does
            value, ok = exc, False
        if time.perf_counter() - began < quick_wait:
            tool._quick = True  # quick again: its next call is waited for on the loop thread
        with guard:
            outcome.extend((ok, value))
            answer_later = bool(later)
        return hand_back if answer_later else done.release

    loop = asyncio.get_running_loop()
    tool_threads().submit(job)
    if not (wait and done.acquire(timeout=wait)):
        with guard:
            if not outcome:  # still running: await it, and the tool's next calls at once
                tool._quick = False
                later.append(loop.create_future())
    if not later:
        ok, value = outcome
        if ok:
            return value
        raise value
    try:
        return await later[0]
    except asyncio.CancelledError:
        # the thread cannot be interrupted; a tool watching ctx.cancellation returns soon, its
        # finally blocks run, and the run ends after it rather than under it
        if ctx.cancellation.cancelled and tool.cancel_grace > 0 and running[0]:
            returned.append(asyncio.Event())
            try:
                await asyncio.wait_for(returned[0].wait(), tool.cancel_grace)
            except TimeoutError:
                pass
        raise


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    side_effecting: bool,
    name: str | None = None,
    description: str | None = None,
    blocking: bool = True,
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    side_effecting: bool | None = None,
    name: str | None = None,
    description: str | None = None,
    blocking: bool = True,
    idempotent: bool = False,
) -> Any:
    """Turn a function into a tool: ``@tool(side_effecting=False)``.

    ``side_effecting`` is required: say whether calling the tool changes anything outside the run
    (writes a file, sends a payment); side-effecting calls are the ones approvals and the effect
    ledger guard. ``name`` and ``description`` override the function's name and docstring.
    ``blocking=False`` runs a *sync* function directly on the event loop (only for cheap, pure
    functions); by default sync functions run in a worker thread. ``idempotent=True`` (with
    ``side_effecting=True``) says the tool hands ``ctx.idempotency_key`` (a parameter annotated
    :class:`~seamkit._runtime.context.RunContext`) to the outside system, which applies one key at
    most once: a call a crash interrupted is then run again on resume instead of waiting for a
    person to settle it.

    Raises :class:`~seamkit.errors.ToolDefinitionError` (a ``TypeError``) when ``side_effecting`` is
    missing, when what it decorates is not a function (or has no readable signature, or is a
    generator function), when the name is not 1-64 letters, digits, ``_`` or ``-`` (what providers
    accept), ``blocking``/``idempotent`` is not a bool, when a parameter has no type hint, is
    ``*args``/``**kwargs`` or positional-only, starts with ``_``, has a type hint that
    does not resolve (naming the unresolved name) or that is a function rather than a type (a
    lambda), or the tool has no description (neither a non-blank docstring nor a ``description=``
    string): the description is what the model reads to decide when to call it. The schema is
    built on first use, which raises it for a parameter type JSON Schema cannot describe (naming
    the parameter and what to use instead), a parameter named ``model_config`` (pydantic's) or a
    docstring with sections but no summary (a first
    line ``Args:`` included): building an :class:`~seamkit.Agent` with the tool does, so the
    error shows there.
    """
    from seamkit.errors import ToolDefinitionError

    if fn is not None and not callable(fn):
        raise ToolDefinitionError(f"@tool decorates a function (def or async def), got {fn!r:.60} "
                                  f"({type(fn).__name__}); write @tool(side_effecting=...) above the function")
    if fn is not None or side_effecting is None:
        raise ToolDefinitionError(
            "@tool needs side_effecting=True or False: say whether calling the tool changes anything "
            "outside the run, e.g. @tool(side_effecting=False)"
        )
    if not isinstance(side_effecting, bool):
        raise ToolDefinitionError(f"side_effecting must be True or False, got {side_effecting!r:.60}")
    se = side_effecting

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        if not callable(f):
            raise ToolDefinitionError(f"@tool(...) decorates a function (def or async def), got {f!r:.60} "
                                      f"({type(f).__name__})")
        return FunctionTool(f, side_effecting=se, name=name, description=description, blocking=blocking,
                            idempotent=idempotent)

    return wrap
