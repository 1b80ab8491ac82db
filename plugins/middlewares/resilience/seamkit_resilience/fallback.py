"""The ``fallback`` middleware: answer with other models when the model fails early.

When the rest of the chain (ending at ``call.model``) raises a
:class:`~seamkit.errors.ProviderError` whose class is in ``on`` *before its first token* (text,
reasoning or tool-call delta), the same request is sent to the ``to`` models in order, each
called directly (``model.stream(request)``: middlewares inside this one do not wrap them;
middlewares outside it wrap the whole exchange). The first model that answers wins; a failure
after a token, or of another class, or any other exception, propagates at once. When every model
fails, the last error is raised with a note listing the failures.

The answer carries ``Delta(warning="fallback: <provider>:<model> failed (<class>); answered by
<provider>:<model>", model=<fallback model>)`` before its first token, and only the answering
model's deltas (so its usage and cost are what is reported). Deltas that are not tokens are held
back until the first token, so a failed model leaves nothing behind.

The ``to`` entries are provider slots (:class:`~seamkit._slots.ComponentSlot`): loading a
composition (``seamkit validate``) resolves them and validates their parameters, located at
``agent.middlewares[i].to[j]``. They are checked again when the middleware is built (problems
raise :class:`~seamkit.errors.ConfigError` located at ``to.<i>``); each is built on
first use, through ``seamkit._plugins.registry.get_registry().resolve("provider", use).build(params)``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pydantic
from seamkit.errors import ConfigError, ConfigIssue, FailureClass, PluginError, ProviderError
from seamkit.plugin import Call, ComponentSpec, Next, Registry, get_registry, middleware
from seamkit.values import Delta

from seamkit_resilience._stream import aclose, is_token, model_label
from seamkit_resilience.config import FallbackConfig, FallbackSlot

__all__ = ["Fallback", "build"]


def _slot_name(slot: FallbackSlot) -> str:
    return slot.use + (f" (from {slot.from_})" if slot.from_ else "")


class Fallback:
    """The ``fallback`` middleware (see the module doc). ``config`` is a :class:`FallbackConfig`;
    ``registry`` defaults to the process-wide one. Raises :class:`~seamkit.errors.ConfigError`
    listing every unknown provider and invalid parameter of the ``to`` slots."""

    def __init__(self, config: FallbackConfig, *, registry: Registry | None = None) -> None:
        self.config = config
        self._on: frozenset[FailureClass] = frozenset(config.on)
        reg = registry if registry is not None else get_registry()
        issues: list[ConfigIssue] = []
        self._specs: list[ComponentSpec] = []
        for i, slot in enumerate(config.to):
            spec = self._check_slot(reg, i, slot, issues)
            if spec is not None:
                self._specs.append(spec)
        if issues:
            raise ConfigError(issues)
        self._models: list[Any] = [None] * len(self._specs)

    @staticmethod
    def _check_slot(reg: Registry, i: int, slot: FallbackSlot, issues: list[ConfigIssue]) -> ComponentSpec | None:
        at = f"to.{i}"
        try:
            spec = reg.resolve("provider", slot.use, slot.from_)
        except PluginError as exc:  # ComponentNotFound, AmbiguousComponent
            issues.append(ConfigIssue(str(exc), f"{at}.use"))
            return None
        params = slot.params
        try:
            model = spec.config_model()
        except Exception as exc:
            issues.append(ConfigIssue(f"provider {_slot_name(slot)!r} cannot be loaded: {type(exc).__name__}: {exc}",
                                      at))
            return None
        if model is None:
            if params:
                issues.append(ConfigIssue(f"provider {slot.use!r} takes no parameters, got "
                                          f"{', '.join(sorted(params))}", at))
                return None
            return spec
        try:
            model.model_validate(params)  # type: ignore[attr-defined]
        except pydantic.ValidationError as exc:
            for e in exc.errors():
                loc = ".".join(str(p) for p in e["loc"])
                issues.append(ConfigIssue(f"provider {slot.use!r}: {e['msg']}", f"{at}.{loc}" if loc else at))
            return None
        return spec

    def __repr__(self) -> str:
        return (f"Fallback(to={[_slot_name(s) for s in self.config.to]}, "
                f"on={[c.value for c in self.config.on]})")

    def model(self, index: int) -> Any:
        """The ``index``-th fallback :class:`~seamkit._ports.LLMPort`, built on first use.
        Raises :class:`~seamkit.errors.ConfigError` / :class:`~seamkit.errors.PluginError` when it
        cannot be built."""
        m = self._models[index]
        if m is None:
            m = self._models[index] = self._specs[index].build(self.config.to[index].params)
        return m

    async def __call__(self, call: Call, nxt: Next) -> AsyncIterator[Any]:
        if call.kind != "chat":
            async for item in nxt(call):
                yield item
            return
        failed: list[str] = []
        last: ProviderError | None = None
        for index in range(-1, len(self._specs)):
            stream: AsyncIterator[Any] | None = None
            if index < 0:
                label = model_label(call.model)
                warning: Delta | None = None
            else:
                try:
                    fb = self.model(index)
                except (ConfigError, PluginError) as exc:
                    exc.add_note(f"fallback: {'; '.join(failed)}; fallback {index + 1} "
                                 f"({_slot_name(self.config.to[index])}) could not be built")
                    raise
                label = model_label(fb)
                warning = Delta(warning=f"fallback: {'; '.join(failed)}; answered by {label}",
                                model=getattr(fb, "model", None))
            held: list[Delta] = []
            streamed = False
            try:
                stream = nxt(call) if index < 0 else fb.stream(call.request)
                async for d in stream:
                    if streamed:
                        yield d
                    elif is_token(d):
                        streamed = True
                        if warning is not None:
                            yield warning
                        for h in held:
                            yield h
                        held.clear()
                        yield d
                    else:
                        held.append(d)
            except ProviderError as exc:
                if streamed or exc.failure_class not in self._on:
                    if failed:
                        exc.add_note(f"fallback: {'; '.join(failed)}; then {label} failed ({exc.failure_class.value})")
                    raise
                failed.append(f"{label} failed ({exc.failure_class.value})")
                last = exc
                continue
            finally:
                if stream is not None:
                    await aclose(stream)
            if not streamed:
                if warning is not None:
                    yield warning
                for h in held:
                    yield h
            return
        assert last is not None
        last.add_note(f"fallback: every model failed: {'; '.join(failed)}")
        raise last


def build(config: FallbackConfig) -> Fallback:
    """Factory of the ``fallback`` component: a :class:`Fallback` for chat calls only. Raises
    :class:`~seamkit.errors.ConfigError` for unknown providers or invalid parameters in ``to``."""
    return middleware(kinds=("chat",))(Fallback(config))  # type: ignore[return-value]
