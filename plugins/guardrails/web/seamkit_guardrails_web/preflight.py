"""What the ``egress`` middleware, the ``egress`` guardrail and the ``fetch`` tool share: the
resolving check (:class:`EgressChecker`) and the walk that finds a tool call's URL arguments
(:func:`url_arguments`).

A tool declares which of its arguments hold URLs in its parameters JSON Schema: a string property
with ``"format"`` ``uri``, ``uri-reference``, ``iri`` or ``iri-reference`` (JSON Schema 2020-12
Validation, section 7.3.5 "Resource Identifiers"; pydantic's ``AnyUrl`` / ``HttpUrl`` emit
``format: uri``), at any depth: nested objects, arrays (``items`` / ``prefixItems``),
``anyOf`` / ``oneOf`` / ``allOf`` and local ``$ref`` s (``#/$defs/...``) are followed. Tools that do
not declare them are named in the config's ``url_arguments``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from seamkit_guardrails_web import urls
from seamkit_guardrails_web.errors import EgressRefused, ResolutionFailed
from seamkit_guardrails_web.resolver import IPAddress, Resolver, SystemResolver

if TYPE_CHECKING:
    from seamkit.values import ToolCall, ToolSchema

__all__ = [
    "URI_FORMATS",
    "EgressChecker",
    "ToolCallEgress",
    "check_tool_call",
    "declares_urls",
    "egress_checker",
    "host_key",
    "inert",
    "url_argument_names",
    "url_arguments",
]

#: The JSON Schema ``format`` values that mark a string as a URL (RFC 3986 / RFC 3987).
URI_FORMATS = frozenset({"uri", "uri-reference", "iri", "iri-reference"})

UrlCheck = Callable[[str | httpx.URL, "urls.EgressPolicy"], httpx.URL]
AddressCheck = Callable[..., None]


def inert(what: str) -> TypeError:
    """The error for a security control constructed without its policy."""
    return TypeError(
        f"{what} needs an egress policy (an EgressPolicy, e.g. policy_from(EgressConfig(...))): "
        "an inert security control must not exist"
    )


def _default_check_url(url: str | httpx.URL, policy: urls.EgressPolicy) -> httpx.URL:
    return urls.check_url(url, policy)  # looked up per call: the module's current function


def _default_check_address(address: IPAddress, policy: urls.EgressPolicy, *, url: str = "") -> None:
    urls.check_address(address, policy, url=url)


@dataclass(frozen=True, slots=True)
class EgressChecker:
    """The egress check of one policy. ``policy``: an
    :class:`~seamkit_guardrails_web.urls.EgressPolicy` (``None`` raises ``TypeError``: an inert
    security control must not exist); ``resolver``: a :class:`Resolver` (default: the system's);
    ``check_url`` / ``check_address``: the checks of :mod:`seamkit_guardrails_web.urls`
    (replaceable in tests)."""

    policy: urls.EgressPolicy
    resolver: Resolver = field(default_factory=SystemResolver)
    check_url: UrlCheck = _default_check_url
    check_address: AddressCheck = _default_check_address

    def __post_init__(self) -> None:
        if self.policy is None:
            raise inert(type(self).__name__)

    def url(self, url: str | httpx.URL) -> httpx.URL:
        """``url`` as httpx will send it, when it may go out (no DNS). Raises
        :class:`~seamkit_guardrails_web.errors.EgressRefused`."""
        return self.check_url(url, self.policy)

    async def addresses(self, url: httpx.URL) -> tuple[IPAddress, ...]:
        """The addresses ``url`` (already through :meth:`url`) may connect to: its literal
        address (in any spelling a resolver reads: :func:`~seamkit_guardrails_web.urls.host_address`),
        or its host name resolved **once**. Every address is checked; one refused
        address refuses the URL (a name answering public and private addresses at once is a
        rebinding or misconfiguration, never something to pick from). Raises
        :class:`EgressRefused` (the refused address's category) or
        :class:`~seamkit_guardrails_web.errors.ResolutionFailed` (the name does not resolve)."""
        shown = str(url)
        host = host_key(url)
        ip = urls.host_address(host)
        if ip is not None:
            self.check_address(ip, self.policy, url=shown)
            return (ip,)
        answer = await self.resolver.resolve(host)
        if not answer:
            raise ResolutionFailed(shown, "the name resolves to no address")
        for address in answer:
            self.check_address(address, self.policy, url=shown)
        return tuple(answer)

    async def check(self, url: str | httpx.URL) -> tuple[httpx.URL, tuple[IPAddress, ...]]:
        """:meth:`url` then :meth:`addresses`: the parsed URL and its checked addresses."""
        parsed = self.url(url)
        return parsed, await self.addresses(parsed)


def egress_checker(
    what: str, policy: urls.EgressPolicy | None, resolver: Resolver | None = None, checker: EgressChecker | None = None
) -> EgressChecker:
    """``checker``, else an :class:`EgressChecker` of ``policy`` and ``resolver`` (default: the
    system's): what the ``egress`` middleware, the ``egress`` guardrail and the fetcher are built
    with. Raises ``TypeError`` (:func:`inert`, naming ``what``) when both ``checker`` and
    ``policy`` are ``None``."""
    if checker is not None:
        return checker
    if policy is None:
        raise inert(what)
    return EgressChecker(policy, resolver if resolver is not None else SystemResolver())


def url_argument_names(url_args: Mapping[str, Sequence[str]] | None) -> dict[str, tuple[str, ...]]:
    """The ``url_arguments`` option (tool name -> names of its URL arguments) as tuples. Raises
    ``TypeError`` for a string where a list of names belongs (it would be read letter by letter)."""
    out: dict[str, tuple[str, ...]] = {}
    for tool, names in (url_args or {}).items():
        if isinstance(names, str):
            raise TypeError(f"url_arguments[{tool!r}] must be a list of argument names, not a string")
        out[tool] = tuple(names)
    return out


def host_key(url: httpx.URL) -> str:
    """The host as the connection pool hands it to the network backend (httpcore's origin host:
    ``url.raw_host``, ASCII, IDNA-encoded, lower case; an IPv6 literal without brackets)."""
    return url.raw_host.decode("ascii").lower()


# -- the argument walk ---------------------------------------------------------------------------------


# Schemas and arguments are JSON values: dicts (seamkit's FrozenDict is a dict) and lists
# (FrozenList is a list); exact builtin checks are several times cheaper than the Mapping ABC.
_OBJ = dict
_ARR = (list, tuple)


def _deref(schema: Any, root: dict[str, Any]) -> Any:
    """``schema`` with a local ``$ref`` (``#/...``) followed (up to 32 hops: a cycle stops)."""
    for _ in range(32):
        if not isinstance(schema, _OBJ):
            return schema
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#"):
            return schema
        target: Any = root
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")  # JSON Pointer, RFC 6901 section 4
            target = target.get(part) if isinstance(target, _OBJ) else None
        if target is None:
            return schema
        schema = target
    return schema


def _walk(schema: Any, value: Any, root: dict[str, Any], path: str, depth: int) -> Iterator[tuple[str, str]]:
    if depth > 64:
        return
    schema = _deref(schema, root)
    if not isinstance(schema, _OBJ):
        return
    if isinstance(value, str):
        if schema.get("format") in URI_FORMATS:
            yield path, value
    elif isinstance(value, _OBJ):
        props = schema.get("properties")
        patterns = schema.get("patternProperties")
        for name, item in value.items():
            at = f"{path}.{name}" if path else str(name)
            matched = False
            if isinstance(props, _OBJ) and name in props:
                matched = True
                yield from _walk(props[name], item, root, at, depth + 1)
            if isinstance(patterns, _OBJ):
                for pattern, sub in patterns.items():
                    if _matches(pattern, name):
                        matched = True
                        yield from _walk(sub, item, root, at, depth + 1)
            if not matched:
                for key in ("additionalProperties", "unevaluatedProperties"):
                    yield from _walk(schema.get(key), item, root, at, depth + 1)
        deps = schema.get("dependentSchemas")
        if isinstance(deps, _OBJ):
            for name, sub in deps.items():
                if name in value:
                    yield from _walk(sub, value, root, path, depth + 1)
    elif isinstance(value, _ARR):
        prefix = schema.get("prefixItems")
        for i, item in enumerate(value):
            at = f"{path}[{i}]"
            if isinstance(prefix, _ARR) and i < len(prefix):
                yield from _walk(prefix[i], item, root, at, depth + 1)
            else:
                for key in ("items", "unevaluatedItems"):
                    yield from _walk(schema.get(key), item, root, at, depth + 1)
            yield from _walk(schema.get("contains"), item, root, at, depth + 1)
    # every subschema that may apply to the value itself; if/then/else: both branches, since which
    # one applies is not decided here (a string checked for nothing is never a URL argument)
    for key in ("anyOf", "oneOf", "allOf"):
        alternatives = schema.get(key)
        if isinstance(alternatives, _ARR):
            for alt in alternatives:
                yield from _walk(alt, value, root, path, depth + 1)
    for key in ("then", "else"):
        yield from _walk(schema.get(key), value, root, path, depth + 1)


def _matches(pattern: str, name: Any) -> bool:
    """Whether a ``patternProperties`` regex (ECMA-262, read with Python's ``re``: the JSON Schema
    subset both share) matches ``name`` anywhere; a pattern Python cannot read matches every name,
    so its URLs are checked rather than missed."""
    try:
        return re.search(pattern, str(name)) is not None
    except re.error:
        return True


def _mentions_uri_format(schema: Any) -> bool:
    if isinstance(schema, _OBJ):
        return schema.get("format") in URI_FORMATS or any(_mentions_uri_format(v) for v in schema.values())
    if isinstance(schema, _ARR):
        return any(_mentions_uri_format(v) for v in schema)
    return False


# parameters schema (by identity; tool schemas are frozen) -> whether it declares any URL at all, so
# the calls of a tool without URL arguments cost one dict lookup
_DECLARES: dict[int, tuple[Any, bool]] = {}


def declares_urls(parameters: Any) -> bool:
    """Whether the parameters JSON Schema marks any string as a URL (``format`` in
    :data:`URI_FORMATS`, at any depth). Remembered per schema object."""
    entry = _DECLARES.get(id(parameters))
    if entry is not None and entry[0] is parameters:
        return entry[1]
    found = _mentions_uri_format(parameters)
    if len(_DECLARES) > 4096:
        _DECLARES.clear()
    _DECLARES[id(parameters)] = (parameters, found)
    return found


def url_arguments(
    parameters: Mapping[str, Any] | None, arguments: Mapping[str, Any], names: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """The URL arguments of one tool call: ``(path, url)`` pairs (``path`` like ``url``,
    ``sources[1]``, ``page.link``), each once, in argument order. ``parameters``: the tool's
    parameters JSON Schema (``None`` for an unknown tool); ``arguments``: the call's arguments;
    ``names``: top-level argument names to treat as URLs whatever the schema says (the config's
    ``url_arguments``; a list value is checked item by item). Values that are not strings are
    skipped (the tool's own validation refuses them)."""
    found: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()

    def add(path: str, url: str) -> None:
        if (path, url) not in seen:
            seen.add((path, url))
            found.append((path, url))

    if parameters and declares_urls(parameters):
        for path, url in _walk(parameters, arguments, parameters, "", 0):  # type: ignore[arg-type]
            add(path, url)
    for name in names:
        value = arguments.get(name)
        if isinstance(value, str):
            add(name, value)
        elif isinstance(value, _ARR):
            for i, item in enumerate(value):
                if isinstance(item, str):
                    add(f"{name}[{i}]", item)
    return found


async def check_tool_call(
    checker: EgressChecker, call: ToolCall, schema: ToolSchema | None, names: Sequence[str] = ()
) -> int:
    """Check every URL argument of ``call`` (found by :func:`url_arguments` from ``schema``'s
    parameters and ``names``) with ``checker`` (resolving); returns how many were checked.
    Raises :class:`~seamkit_guardrails_web.errors.EgressRefused` for the first refused one, its
    ``reason`` naming the tool and the argument
    (:class:`~seamkit_guardrails_web.errors.ResolutionFailed` when its name does not resolve).
    The ``egress`` middleware and the ``egress`` guardrail both decide through this function."""
    found = url_arguments(schema.parameters if schema is not None else None, call.arguments, names)
    for path, url in found:
        try:
            await checker.check(url)
        except ResolutionFailed as exc:  # kept apart: a failure, not a refusal (see the guardrail)
            raise ResolutionFailed(exc.url, f"argument {path!r} of tool {call.name!r}: {exc.reason}") from None
        except EgressRefused as exc:
            raise EgressRefused(exc.url, f"argument {path!r} of tool {call.name!r}: {exc.reason}",
                                exc.category) from None
    return len(found)


class ToolCallEgress:
    """What the ``egress`` middleware and the ``egress`` guardrail are built on: an
    :class:`EgressChecker` (``checker``, else one of ``policy`` and ``resolver``; neither raises
    ``TypeError``: an inert security control must not exist), the ``url_arguments`` option (tool
    name -> names of its URL arguments, for tools that do not declare them) and
    :meth:`check_call`."""

    def __init__(
        self,
        policy: urls.EgressPolicy | None,
        *,
        url_arguments: Mapping[str, Sequence[str]] | None = None,
        resolver: Resolver | None = None,
        checker: EgressChecker | None = None,
    ) -> None:
        self.checker = egress_checker(type(self).__name__, policy, resolver, checker)
        self.url_arguments = url_argument_names(url_arguments)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(policy={self.checker.policy!r}, url_arguments={self.url_arguments!r})"

    async def check_call(self, call: ToolCall, schema: ToolSchema | None) -> int:
        """:func:`check_tool_call` of ``call`` (``schema``: its tool's, ``None`` for an unknown
        tool) with this checker and the tool's ``url_arguments``."""
        return await check_tool_call(self.checker, call, schema, self.url_arguments.get(call.name, ()))
