"""seamkit's hook specifications: the contract between the host and its plugins.

A plugin is a module named by an entry point in the group ``seamkit``. It implements any of the
hooks below with ``@hookimpl`` (accepting a subset of the arguments is fine, as in pluggy). The
registration hooks run once, at start-up, and must stay cheap: register components *lazily*, by
import path, so the heavy module loads on first use::

    from seamkit._hookspecs import hookimpl

    @hookimpl
    def seamkit_register_providers(register):
        register("mymodel", "my_pkg.provider:MyProvider", config="my_pkg.provider:MyConfig",
                 description="My hosted model")

``register(name, factory, *, config=None, description="", toolset=False)``:

- ``name``: the name YAML uses (``use: mymodel``); lower-case letters, digits, ``_`` and ``-``.
- ``factory``: a callable or a ``"module:attr"`` path to one. It is called with the validated
  config model instance (or with no argument when there is no config) and returns the component.
- ``config``: a pydantic model class (or ``"module:attr"`` path) validating the component's YAML
  parameters; ``None`` means it takes none.
- ``description``: one line for ``seamkit plugins``.
- ``toolset`` (tools only): the factory returns a :class:`~seamkit._ports.ToolsetPort`, several
  tools whose names are known once built (an MCP server's): the loader then leaves the checks
  of tool names (duplicates, ``approvals``, ``disabled_tools``, ``tool_choice``) to the build.

The host records the registering distribution and its version with every registration. A hook
that raises, or a module that fails to import, marks that plugin failed (``seamkit plugins``
shows the error); the rest of the host keeps working.

pluggy is synchronous and these hooks run at start-up only; per-call behaviour belongs in
middlewares (``seamkit._middleware``), never in hooks.
"""

from __future__ import annotations

from typing import Any

import pluggy

__all__ = ["PROJECT", "hookimpl", "hookspec", "SeamkitHookSpecs", "KIND_BY_HOOK"]

PROJECT = "seamkit"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class SeamkitHookSpecs:
    """The hooks. Each registration hook receives a ``register`` callback (see module doc)."""

    @hookspec
    def seamkit_register_providers(self, register: Any) -> None:
        """Register model providers. The factory returns an :class:`~seamkit._ports.LLMPort`."""

    @hookspec
    def seamkit_register_stores(self, register: Any) -> None:
        """Register stores. The factory returns a :class:`~seamkit._ports.StorePort` (and may also
        implement :class:`~seamkit._ports.CheckpointPort`)."""

    @hookspec
    def seamkit_register_compactors(self, register: Any) -> None:
        """Register compactors: transcript rewriters used by request building."""

    @hookspec
    def seamkit_register_guardrails(self, register: Any) -> None:
        """Register guardrails: checks on inputs and outputs, applied as middlewares."""

    @hookspec
    def seamkit_register_schema_adapters(self, register: Any) -> None:
        """Register schema adapters: typed-output flavours (pydantic, attrs, dataclass, ...)."""

    @hookspec
    def seamkit_register_middlewares(self, register: Any) -> None:
        """Register middlewares. The factory returns a middleware (``seamkit._middleware``)."""

    @hookspec
    def seamkit_register_tools(self, register: Any) -> None:
        """Register tools. The factory returns a :class:`~seamkit._ports.ToolPort`, or with
        ``toolset=True`` a :class:`~seamkit._ports.ToolsetPort`."""

    @hookspec
    def seamkit_register_memory(self, register: Any) -> None:
        """Register memory components: embeddings, vector stores, grounding sources."""

    @hookspec
    def seamkit_register_capabilities(self, register: Any) -> None:
        """Register capabilities: declared operations with facts, effects and confirmation (see
        :mod:`seamkit.capabilities`). The factory returns a :class:`~seamkit.capabilities.Capability`
        (a value, checked with ``isinstance``); YAML uses it in ``agent.capabilities``."""

    @hookspec
    def seamkit_register_steps(self, register: Any) -> None:
        """Register workflow steps (see :mod:`seamkit.workflows`). The factory returns a step
        function, ``async fn(ctx, input) -> result`` (:data:`seamkit.workflows._model.StepFn`: ``ctx``
        is a :class:`~seamkit.workflows._engine.StepContext`); YAML uses it in ``workflow.steps``
        (``use: NAME``) with the step's own ``consumes`` / ``emits``."""

    @hookspec
    def seamkit_register_evaluators(self, register: Any) -> None:
        """Register evaluators (see :mod:`seamkit._evals`). The factory returns an
        :class:`~seamkit._evals.Evaluator`; an eval suite's YAML uses it in a case's or the suite's
        ``evaluators`` (``use: NAME``)."""

    @hookspec
    def seamkit_register_runners(self, register: Any) -> None:
        """Register runners (see :mod:`seamkit._runners`): the factory returns a
        :class:`~seamkit._runners.Runner`. A run records the name of the runner that started it in
        its checkpoint metadata; ``seamkit resume`` hands such a run back to that runner."""

    @hookspec
    def seamkit_register_commands(self, cli: Any) -> None:
        """Add CLI sub-commands. ``cli`` is the ``argparse`` sub-parsers object of ``seamkit``;
        set ``func=callable(args) -> int`` on the parser you add."""


KIND_BY_HOOK: dict[str, str] = {
    "seamkit_register_providers": "provider",
    "seamkit_register_stores": "store",
    "seamkit_register_compactors": "compactor",
    "seamkit_register_guardrails": "guardrail",
    "seamkit_register_schema_adapters": "schema_adapter",
    "seamkit_register_middlewares": "middleware",
    "seamkit_register_tools": "tool",
    "seamkit_register_memory": "memory",
    "seamkit_register_capabilities": "capability",
    "seamkit_register_steps": "step",
    "seamkit_register_evaluators": "evaluator",
    "seamkit_register_runners": "runner",
}
