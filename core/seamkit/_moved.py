"""Where the host's modules lived before they were made private (written by scripts/privatize.py).

The checkpoint codec names a class ``module:qualname`` in what it stores; a value stored before a
module was renamed names the old module, and :func:`current` turns that into the module's name
now, so stored checkpoints, run records and transcripts stay readable. Keys and values are dotted
module paths; a key also covers its submodules (``seamkit.agent`` moves ``seamkit.agent.loop``).
"""

from __future__ import annotations

MOVED: dict[str, str] = {
    "seamkit.accumulate": "seamkit._accumulate",
    "seamkit.agent": "seamkit._agent",
    "seamkit.calls": "seamkit._calls",
    "seamkit.capabilities.compiler": "seamkit.capabilities._compiler",
    "seamkit.capabilities.executor": "seamkit.capabilities._executor",
    "seamkit.capabilities.model": "seamkit.capabilities._model",
    "seamkit.capabilities.planner": "seamkit.capabilities._planner",
    "seamkit.capabilities.reducer": "seamkit.capabilities._reducer",
    "seamkit.capabilities.state": "seamkit.capabilities._state",
    "seamkit.cli": "seamkit._cli",
    "seamkit.compaction": "seamkit._compaction",
    "seamkit.composition.build": "seamkit.composition._build",
    "seamkit.composition.loader": "seamkit.composition._loader",
    "seamkit.composition.models": "seamkit.composition._models",
    "seamkit.composition.schema": "seamkit.composition._schema",
    "seamkit.config_types": "seamkit._config_types",
    "seamkit.durability": "seamkit._durability",
    "seamkit.evals": "seamkit._evals",
    "seamkit.grounding": "seamkit._grounding",
    "seamkit.guardrails": "seamkit._guardrails",
    "seamkit.hookspecs": "seamkit._hookspecs",
    "seamkit.middleware": "seamkit._middleware",
    "seamkit.plugins": "seamkit._plugins",
    "seamkit.ports": "seamkit._ports",
    "seamkit.pricing": "seamkit._pricing",
    "seamkit.request": "seamkit._request",
    "seamkit.runners": "seamkit._runners",
    "seamkit.runtime": "seamkit._runtime",
    "seamkit.schema_wrap": "seamkit._schema_wrap",
    "seamkit.schemas": "seamkit._schemas",
    "seamkit.slots": "seamkit._slots",
    "seamkit.testing.clock": "seamkit.testing._clock",
    "seamkit.testing.components": "seamkit.testing._components",
    "seamkit.testing.context": "seamkit.testing._context",
    "seamkit.testing.memory_store": "seamkit.testing._memory_store",
    "seamkit.testing.memory_store_config": "seamkit.testing._memory_store_config",
    "seamkit.testing.models": "seamkit.testing._models",
    "seamkit.testing.network": "seamkit.testing._network",
    "seamkit.testing.scripted_component": "seamkit.testing._scripted_component",
    "seamkit.testing.transcripts": "seamkit.testing._transcripts",
    "seamkit.tokens": "seamkit._tokens",
    "seamkit.tool_images": "seamkit._tool_images",
    "seamkit.tools": "seamkit._tools",
    "seamkit.workflows.engine": "seamkit.workflows._engine",
    "seamkit.workflows.model": "seamkit.workflows._model",
    "seamkit.workflows.steps": "seamkit.workflows._steps",
    "seamkit.workflows.validate": "seamkit.workflows._validate",
}


def current(module: str) -> str:
    """``module`` (a dotted path) under its current name; itself when it never moved."""
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        new = MOVED.get(".".join(parts[:i]))
        if new is not None:
            return ".".join([new, *parts[i:]])
    return module
