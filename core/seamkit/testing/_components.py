"""Registers the test kit's components: the in-memory ``memory`` store (store and checkpoint
ports; nothing survives the process) and the ``scripted`` provider, so composed agents can run
offline:

.. code-block:: yaml

    model:
      use: scripted
      turns:
        - tool_calls: [{name: calculator, arguments: {expression: "2 + 3"}}]
        - text: "5"
      delay: 0.05        # seconds before each turn (per-turn ``delay`` overrides)
"""

from __future__ import annotations

from seamkit._hookspecs import hookimpl

__all__ = ["seamkit_register_providers", "seamkit_register_stores"]


@hookimpl
def seamkit_register_providers(register):  # type: ignore[no-untyped-def]
    register(
        "scripted",
        "seamkit.testing._scripted_component:build",
        config="seamkit.testing._scripted_component:ScriptedConfig",
        description="Plays back turns written in the YAML (offline testing)",
    )


@hookimpl
def seamkit_register_stores(register):  # type: ignore[no-untyped-def]
    register(
        "memory",
        "seamkit.testing._memory_store:build",
        config="seamkit.testing._memory_store_config:MemoryStoreConfig",
        description="In-memory store and checkpoints (tests; nothing survives the process)",
    )
