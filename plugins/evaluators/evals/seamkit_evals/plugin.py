"""Registers the built-in evaluators and ``seamkit eval`` with seamkit, lazily."""

from __future__ import annotations

from typing import Any

from seamkit.plugin import hookimpl

__all__ = ["seamkit_register_commands", "seamkit_register_evaluators"]


_CHECKS = (
    ("exact", "build_exact", "ExactConfig", "The answer (or a field of the typed output) equals the expected value"),
    ("contains", "build_contains", "ContainsConfig", "The answer contains a text (all or any of a list)"),
    ("regex", "build_regex", "RegexConfig", "A regular expression matches the answer (or a field)"),
    ("json_schema", "build_json_schema", "JsonSchemaConfig", "The output (or the answer as JSON) validates"),
    ("output_equals", "build_output_equals", "OutputEqualsConfig",
     "The typed output equals the expected value, field by field"),
    ("tool_called", "build_tool_called", "ToolCalledConfig",
     "A tool was called (with matching arguments) a number of times"),
    ("max_cost", "build_max_cost", "MaxCostConfig", "The run cost at most a USD ceiling (unknown cost: error)"),
    ("max_latency", "build_max_latency", "MaxLatencyConfig", "The run took at most a number of seconds"),
    ("citations", "build_citations", "CitationsConfig", "Every source the answer cites was shown to the model"),
)


@hookimpl
def seamkit_register_evaluators(register: Any) -> None:
    for name, factory, config, description in _CHECKS:
        register(name, f"seamkit_evals.checks:{factory}", config=f"seamkit_evals.config:{config}",
                 description=description)
    register("llm_judge", "seamkit_evals.judge:build", config="seamkit_evals.config:LLMJudgeConfig",
             description="A model grades the answer against a rubric (score in [0, 1], a threshold to pass)")


@hookimpl
def seamkit_register_commands(cli: Any) -> None:
    from seamkit_evals.commands import add_commands  # argparse only: cheap

    add_commands(cli)
