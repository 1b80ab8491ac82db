"""Composition: YAML → validated :class:`Composition` → wired :class:`~seamkit._agent.agent.Agent`.

.. code-block:: yaml

    seamkit: 1                          # format version, required
    agent:
      name: quickstart                  # default: the file name without extension
      model: {use: scripted, turns: ["hello"]}
      prompt: "You are terse."          # or {id: x, version: 1.0.0, template: "... {{var}} ..."}
      tools: [calculator, {use: read_file, root: ./data}]
      output: {json_schema: {type: object, properties: {answer: {type: number}}}}
      tool_choice: auto                 # auto | required | none | a tool name
      max_steps: 6
      settings: {temperature: 0, max_tokens: 256, seed: 7}
      middlewares: [{use: retry, max_attempts: 3}]
      checkpoints: {use: sqlite, path: runs.db}   # absent: sqlite at .seamkit/seamkit.db; null: off
      approvals: {write_file: every_call}     # never | every_call | once_per_run | once_per_thread
      handoffs: [billing]               # or {agent: billing, filter: all | no_tools | user_only | last_user}
    agents:                             # more agents by name, each like agent:
      billing: {model: {use: scripted, turns: ["refunded"]}, tools: [{agent: lookup, max_depth: 2}]}
      lookup: {model: {use: scripted, turns: ["found"]}}

- :func:`load_composition` validates everything (without building heavy components) and raises
  :class:`~seamkit.errors.ConfigError` listing every problem with file, line, column and key path.
- :func:`build_agent` calls the component factories and returns the (entry) ``Agent``;
  :func:`build_agents` returns every agent of the file by name (``agents:``, see below); they raise
  ``ConfigError`` for configuration problems (also those a factory finds) and
  :class:`ComponentBuildError` (a ``ConfigError``) when components fail to build otherwise.
- :func:`composition_json_schema` describes the format, with every installed component's config.

Rules worth knowing: unquoted values are read with YAML-1.2-like rules (``NO``/``on``/``yes``
unquoted are errors; ``3.10`` and ``0755`` stay text where a field wants text); ``${NAME}`` and
``${NAME:-default}`` are replaced from the environment in any string (``$${`` for a literal ``${``)
and such values are masked in errors and reprs (:meth:`Composition.secret_values` lists them
for callers that show other text, as the CLI does); relative path parameters are resolved against the
YAML file's directory.
"""

from seamkit.composition._build import ComponentBuildError, build_agent, build_agents, build_store, build_workflow
from seamkit.composition._loader import FORMAT_VERSION, load_composition, loads_composition
from seamkit.composition._models import (
    SLOT_TYPES,
    AgentConfig,
    AgentToolRef,
    ComponentRef,
    Composition,
    HandoffRef,
    MiddlewareRef,
    OutputConfig,
    PromptConfig,
    ProviderRef,
    Settings,
    StoreRef,
    ToolRef,
)
from seamkit.composition._schema import composition_json_schema
from seamkit.composition._yaml import interpolate, resolve_plain

__all__ = [
    "FORMAT_VERSION",
    "SLOT_TYPES",
    "AgentConfig",
    "AgentToolRef",
    "ComponentBuildError",
    "ComponentRef",
    "Composition",
    "HandoffRef",
    "MiddlewareRef",
    "OutputConfig",
    "PromptConfig",
    "ProviderRef",
    "Settings",
    "StoreRef",
    "ToolRef",
    "build_agent",
    "build_agents",
    "build_workflow",
    "build_store",
    "composition_json_schema",
    "interpolate",
    "load_composition",
    "loads_composition",
    "resolve_plain",
]
