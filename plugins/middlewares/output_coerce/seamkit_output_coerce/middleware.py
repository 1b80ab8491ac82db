"""The ``output_coerce`` middleware: typed output while a model streams JSON, final validation,
and bounded parse-and-repair.

It wraps chat calls only, and only those whose request has an ``output_schema`` (a JSON Schema);
every other call passes through untouched.

While the model streams
    Every delta is passed on as it arrives, except the answer's text while a repair is still
    possible (``max_repairs`` > 0): that text is held back until it validates (see below), because
    a caller folds all the text of one call into one message and a repaired answer must replace
    the first one, not follow it. After a text delta the text so far is partial-parsed
    (:func:`partial_parser`: the ``seamkit._schemas`` adapter's ``partial_parse`` when that module
    is installed, else ``pydantic_core.from_json(..., allow_partial=True)``; a leading Markdown code
    fence is skipped) and ``Delta(partial_output=value)`` is yielded **only when the value changed**
    since the last one yielded. To bound the cost on long answers the buffer is parsed again only
    once it has grown by ``partial_min_growth`` of its length at the previous parse; the complete
    text is always parsed at the end, so the last partial is the whole answer's value. The agent
    loop turns each such delta into a ``StreamEvent`` of kind ``partial_output``.

At the end of the stream
    The text is validated with :meth:`seamkit._agent.output.OutputSpec.parse` for the request's
    schema (``jsonschema``; a code fence is stripped and strict-mode ``null`` members of optional
    properties are dropped first). When it validates, the held text is yielded as one delta.

    When it does not, up to ``max_repairs`` corrective calls are made: ``next`` is called again
    with the request's messages extended by the assistant's reply and a user message listing the
    validation problems (``seamkit._agent.loop.CORRECTIVE_TEMPLATE``), and ``meta["output_repair"]``
    set to the attempt number (1, 2, ...). A corrective reply's text is held back too; its
    partials are yielded as it streams; its reasoning is dropped. How a caller sees a successful
    repair, in order: ``Delta(warning="output_coerce: the answer did not match the output schema
    (...); corrective call N of M repaired it")``, ``Delta(text=<the repaired answer>)``, and
    ``Delta(usage=<first call + corrective calls>, finish_reason=..., model=...)``: the usage
    delta of each corrective call carries the running total (a usage delta's last value wins),
    so the result's usage counts every request. When every corrective call fails (or one fails
    with a :class:`~seamkit.errors.ProviderError`, or calls a tool), the model's **original** text
    is yielded unchanged with a warning naming the remaining problems; the agent loop's own
    validation then reports :class:`~seamkit.errors.OutputValidationError` with that raw text.
    With ``max_repairs=0`` the text streams through at once and only the warning is added.

Tool calls
    A turn with a tool call is never validated or repaired: from the first tool-call fragment on,
    held text is released and every delta passes through. A corrective reply that calls a tool is
    discarded (its usage is still counted).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from seamkit import OutputSpec
from seamkit.errors import OutputValidationError, ProviderError
from seamkit.plugin import CORRECTIVE_TEMPLATE, Call, Next
from seamkit.values import ChatRequest, Delta, FrozenDict, Message, TextBlock, Usage, thaw

from seamkit_output_coerce.config import OutputCoerceConfig

__all__ = ["OutputCoerceMiddleware", "build", "partial_parser"]

PartialParse = Callable[[str], Any]

_NOTHING: Any = object()  # "no new partial": distinct from every JSON value
_ONE_REQUEST = Usage(requests=1)
_MAX_PROBLEMS = 20  # listed in a corrective message
_PROBLEM_CHARS = 500
_CACHE_SIZE = 64


def partial_parser(schema: Mapping[str, Any], *, use_adapter: bool = True) -> PartialParse:
    """The function that parses a mid-stream text buffer for ``schema`` (a JSON Schema): it
    returns the JSON data written so far (``dict``/``list``/scalars, as the model wrote them: a
    strict-mode ``null`` is dropped only from the final output; ``None`` when nothing is
    parseable yet) and never raises.

    The schema's adapter (``seamkit.plugin.adapt(schema).partial_parse``: unfinished strings
    reported as their prefix, a number still growing at the end left out) when a flavour for plain
    JSON Schemas is installed, else ``seamkit.plugin.partial_json`` (the same rules); with
    ``use_adapter=False``, the bare ``pydantic_core.from_json(buffer, allow_partial=True)``
    (unfinished strings left out, a number at the end reported as far as it goes).
    """
    if use_adapter:
        from seamkit.plugin import adapt, partial_json

        try:
            return adapt(thaw(schema)).partial_parse
        except Exception:  # no flavour for a plain JSON Schema installed
            return partial_json
    from pydantic_core import from_json

    def parse(buffer: str) -> Any:
        try:
            return from_json(buffer, allow_partial=True)
        except ValueError:  # nothing parseable yet (empty, prose, a bare partial literal)
            return None

    return parse


def _text_only(d: Delta) -> bool:
    return (d.usage is None and d.finish_reason is None and d.tool_call is None and d.reasoning is None
            and d.reasoning_signature is None and d.model is None and d.warning is None and d.raw_usage is None
            and d.partial_output is None)


def _body(buffer: str) -> str | None:
    """``buffer`` without a leading Markdown code fence line; ``None`` while that line is incomplete."""
    s = buffer.lstrip()
    if s.startswith("`"):
        if not s.startswith("```"):
            return None
        nl = s.find("\n")
        return None if nl < 0 else s[nl + 1 :]
    return buffer


class _Partials:
    """The text of one model turn and the partial values parsed from it."""

    __slots__ = ("growth", "last", "length", "parse", "parsed_at", "parts", "seconds")

    def __init__(self, parse: PartialParse, growth: float) -> None:
        self.parse = parse
        self.growth = growth
        self.parts: list[str] = []
        self.length = 0
        self.parsed_at = 0
        self.last: Any = _NOTHING  # the last partial yielded, across turns

    def reset(self) -> None:
        self.parts = []
        self.length = 0
        self.parsed_at = 0

    def text(self) -> str:
        parts = self.parts
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        return parts[0] if parts else ""

    def feed(self, text: str) -> Any:
        """Add ``text``; the new partial value, or ``_NOTHING`` when not parsed or unchanged."""
        self.parts.append(text)
        self.length += len(text)
        if self.length - self.parsed_at < self.parsed_at * self.growth:
            return _NOTHING
        return self._parse()

    def finish(self) -> Any:
        """The partial value of the complete text when it was not parsed yet and changed."""
        if self.parsed_at == self.length and self.length:
            return _NOTHING
        return self._parse()

    def _parse(self) -> Any:
        self.parsed_at = self.length
        body = _body(self.text())
        if body is None:
            return _NOTHING
        try:
            value = self.parse(body)
        except Exception:  # a partial is best effort; the final validation reports problems
            return _NOTHING
        if value is None or value == self.last:
            return _NOTHING
        self.last = value
        return value


@dataclasses.dataclass(frozen=True, slots=True)
class _Compiled:
    spec: OutputSpec
    parse: PartialParse


def _summary(problems: tuple[str, ...]) -> str:
    shown = "; ".join(p[:200] for p in problems[:3])
    return shown + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")


def _corrective(problems: tuple[str, ...]) -> Message:
    listed = "\n".join(f"- {p[:_PROBLEM_CHARS]}" for p in problems[:_MAX_PROBLEMS])
    if len(problems) > _MAX_PROBLEMS:
        listed += f"\n- ... and {len(problems) - _MAX_PROBLEMS} more"
    return Message("user", (TextBlock(CORRECTIVE_TEMPLATE.format(problems=listed)),))


async def _pass(call: Call, nxt: Next) -> AsyncIterator[Any]:
    stream = nxt(call)
    try:
        async for item in stream:
            yield item
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()


class OutputCoerceMiddleware:
    """A chat middleware streaming partial typed output, validating the final answer against the
    request's ``output_schema`` and repairing it with at most ``max_repairs`` corrective calls
    (see the module doc for exactly what a caller sees).

    ``max_repairs``: 0 to 3. ``partial_min_growth``: 0 to 1, the fraction by which the text must
    grow before it is partial-parsed again. Raises ``ValueError`` for values out of range. Calling
    it (``mw(call, next)``) returns the async iterator of deltas; errors of the wrapped call
    propagate, except a :class:`~seamkit.errors.ProviderError` from a corrective call, which ends
    the repairs (the original text is kept, with a warning).
    """

    kinds = frozenset({"chat"})

    def __init__(self, *, max_repairs: int = 1, partial_min_growth: float = 0.1) -> None:
        if not 0 <= max_repairs <= 3:
            raise ValueError(f"max_repairs must be between 0 and 3, got {max_repairs}")
        if not 0.0 <= partial_min_growth <= 1.0:
            raise ValueError(f"partial_min_growth must be between 0 and 1, got {partial_min_growth}")
        self.max_repairs = max_repairs
        self.partial_min_growth = partial_min_growth
        self._compiled: dict[Any, _Compiled] = {}

    def __repr__(self) -> str:
        return f"OutputCoerceMiddleware(max_repairs={self.max_repairs}, partial_min_growth={self.partial_min_growth})"

    def compiled(self, schema: Mapping[str, Any]) -> _Compiled:
        """The validator and partial parser for ``schema`` (cached per schema). Raises
        ``ValueError`` when ``schema`` is not a valid JSON Schema."""
        try:
            hit = self._compiled.get(schema)
        except TypeError:  # an unhashable (mutable) schema: not cached
            return _Compiled(OutputSpec.from_json_schema(schema), partial_parser(schema))
        if hit is None:
            hit = _Compiled(OutputSpec.from_json_schema(schema), partial_parser(schema))
            if len(self._compiled) >= _CACHE_SIZE:
                self._compiled.pop(next(iter(self._compiled)))
            self._compiled[schema] = hit
        return hit

    async def __call__(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        """The deltas of ``call``, with partial outputs, held-back text and repairs as described in
        the module doc."""
        request = call.request
        if call.kind != "chat" or not isinstance(request, ChatRequest) or request.output_schema is None:
            async for item in _pass(call, nxt):
                yield item
            return
        try:
            compiled = self.compiled(request.output_schema)
        except ValueError as exc:
            yield Delta(warning=f"output_coerce: the output_schema is not usable, the answer is not checked: {exc}")
            async for item in _pass(call, nxt):
                yield item
            return

        hold = self.max_repairs > 0
        partials = _Partials(compiled.parse, self.partial_min_growth)
        held = False
        tool_turn = False
        usage: Usage | None = None
        stream = nxt(call)
        try:
            async for d in stream:
                if d.usage is not None:
                    usage = d.usage
                if d.tool_call is not None and not tool_turn:
                    tool_turn = True
                    if held:  # release what was held: a tool-call turn is never checked
                        yield Delta(text=partials.text())
                        held = False
                text = d.text
                if not text or tool_turn:
                    yield d
                    continue
                value = partials.feed(text)
                if not hold:
                    yield d
                else:
                    held = True
                    if not _text_only(d):
                        yield dataclasses.replace(d, text=None)
                if value is not _NOTHING:
                    yield Delta(partial_output=value)
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
        if tool_turn:
            return

        value = partials.finish()
        if value is not _NOTHING:
            yield Delta(partial_output=value)
        raw = partials.text()
        try:
            compiled.spec.parse(raw)
        except OutputValidationError as exc:
            problems = exc.problems
        else:
            if held:
                yield Delta(text=raw)
            return
        if not hold:
            yield Delta(warning=f"output_coerce: the answer does not match the output schema ({_summary(problems)}); "
                                "no repair is configured (max_repairs 0), the raw text is kept")
            return

        # parse-and-repair: corrective calls, each seeing every earlier reply and its problems
        first_problems = problems
        messages = list(request.messages)
        reply = raw
        why = ""
        attempts = 0
        for attempt in range(1, self.max_repairs + 1):
            attempts = attempt
            messages.append(Message("assistant", (TextBlock(reply),)))
            messages.append(_corrective(problems))
            repair = call.replace(request=request.replace(messages=tuple(messages)),
                                  meta=FrozenDict({**call.meta, "output_repair": attempt}))
            partials.reset()
            r_usage: Usage | None = None
            finish = None
            model = None
            called_tool = False
            warnings: list[str] = []
            stream = nxt(repair)
            try:
                async for d in stream:
                    if d.usage is not None:
                        r_usage = d.usage
                    if d.finish_reason is not None:
                        finish = d.finish_reason
                    if d.model is not None:
                        model = d.model
                    if d.warning is not None:
                        warnings.append(d.warning)
                    if d.tool_call is not None:
                        called_tool = True
                    if d.text and not called_tool:
                        value = partials.feed(d.text)
                        if value is not _NOTHING:
                            yield Delta(partial_output=value)
            except ProviderError as exc:
                why = f"corrective call {attempt} failed: {exc}"
                attempts = attempt - 1
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
            for w in warnings:
                yield Delta(warning=w)
            if why:
                if r_usage is not None:
                    usage = (usage or _ONE_REQUEST) + r_usage
                    yield Delta(usage=usage)
                break
            usage = (usage or _ONE_REQUEST) + (r_usage or _ONE_REQUEST)
            if called_tool:
                yield Delta(usage=usage)
                why = f"corrective call {attempt} called a tool instead of answering; it was discarded"
                break
            value = partials.finish()
            if value is not _NOTHING:
                yield Delta(partial_output=value)
            reply = partials.text()
            try:
                compiled.spec.parse(reply)
            except OutputValidationError as exc:
                problems = exc.problems
                yield Delta(usage=usage)
                continue
            yield Delta(warning=f"output_coerce: the answer did not match the output schema "
                                f"({_summary(first_problems)}); corrective call {attempt} of {self.max_repairs} "
                                "repaired it")
            yield Delta(text=reply)
            yield Delta(usage=usage, finish_reason=finish, model=model)
            return

        # still failing: the model's original text, unchanged
        partials.reset()
        partials.parts.append(raw)
        partials.length = len(raw)
        value = partials.finish()
        if value is not _NOTHING:
            yield Delta(partial_output=value)
        detail = f"; {why}" if why else ""
        yield Delta(warning=f"output_coerce: the answer still does not match the output schema after "
                            f"{attempts} corrective call{'s' if attempts != 1 else ''} ({_summary(problems)}){detail}; "
                            "the original text is kept")
        yield Delta(text=raw)


def build(config: OutputCoerceConfig) -> OutputCoerceMiddleware:
    """The ``output_coerce`` middleware for a validated
    :class:`~seamkit_output_coerce.config.OutputCoerceConfig`."""
    return OutputCoerceMiddleware(max_repairs=config.max_repairs, partial_min_growth=config.partial_min_growth)
