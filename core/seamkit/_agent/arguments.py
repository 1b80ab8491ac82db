"""Checking the types of ``Agent(...)`` arguments before anything is built from them.

A wrong type used to surface as whatever the first code touching it raised (``'int' object is
not iterable``, ``'<' not supported between instances of 'str' and 'int'``, a pydantic schema
error) or not at all (``middlewares=[5]`` failed at the first model call). :func:`check_arguments`
raises :class:`~seamkit.errors.AgentDefinitionError` (a ``TypeError`` and a ``ValueError``)
naming the argument, what was given and what it accepts. Values (``max_steps=0``, a tool name
that is no tool) are checked where they are used, in :class:`~seamkit._agent.definition.AgentDefinition`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from seamkit.errors import AgentDefinitionError

__all__ = ["check_arguments"]


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{text[:60]}..." if len(text) > 60 else text


def _given(value: Any) -> str:
    return f"got {_shown(value)} ({type(value).__name__})"


def _sequence(name: str, value: Any, what: str) -> None:
    """``value`` must be an iterable (not a string or a mapping) of ``what``."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise AgentDefinitionError(f"{name} must be a list of {what}, {_given(value)}")


def _int(name: str, value: Any, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if type(value) is not int:
        none = " or None" if optional else ""
        raise AgentDefinitionError(f"{name} must be an int{none}, {_given(value)}")


def check_arguments(a: Any) -> None:
    """Check the types of the fields of ``a`` (an :class:`~seamkit._agent.definition.AgentDefinition`)."""
    from seamkit._agent.prompt import Prompt

    if not isinstance(a.name, str) or not a.name.strip():
        raise AgentDefinitionError(f"name must be a non-empty str, {_given(a.name)}")
    if a.prompt is not None and not isinstance(a.prompt, (str, Prompt)):
        raise AgentDefinitionError(f"prompt must be a str, a seamkit.Prompt or None, {_given(a.prompt)}")
    _sequence("tools", a.tools, "tools (functions decorated with @seamkit.tool, ToolPort or ToolsetPort objects, "
                                "agents as tools)")
    _sequence("middlewares", a.middlewares, "middlewares (async generator functions (call, next) or "
                                            "@seamkit.plugin.middleware objects)")
    for i, mw in enumerate(a.middlewares):
        if not callable(mw):
            raise AgentDefinitionError(f"middlewares[{i}] must be a middleware: an async generator function "
                                       f"(call, next) or a @seamkit.plugin.middleware object, {_given(mw)}")
    _sequence("observers", a.observers, "observers (objects with on_event(event))")
    for i, ob in enumerate(a.observers):
        if not callable(getattr(ob, "on_event", None)):
            raise AgentDefinitionError(f"observers[{i}] must have an on_event(event) method, {_given(ob)}")
    _sequence("guardrails", a.guardrails, "guardrails")
    _sequence("handoffs", a.handoffs, "handoffs (agents or seamkit.Handoff values)")
    if not isinstance(a.tool_choice, str):
        raise AgentDefinitionError(f"tool_choice must be 'auto', 'required', 'none' or a tool's name (a str), "
                                   f"{_given(a.tool_choice)}")
    for name in ("max_steps", "max_parallel_tools"):
        _int(name, getattr(a, name))
    for name in ("max_tokens", "seed"):  # max_tool_calls, max_tool_rounds: checked with their values
        _int(name, getattr(a, name), optional=True)
    t = a.temperature
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))):
        raise AgentDefinitionError(f"temperature must be a number or None, {_given(t)}")
    if not isinstance(a.parallel_side_effects, bool):
        raise AgentDefinitionError(f"parallel_side_effects must be True or False, {_given(a.parallel_side_effects)}")
    if a.reset_tool_choice not in (True, False, "auto", "none") or type(a.reset_tool_choice) not in (bool, str):
        raise AgentDefinitionError(f"reset_tool_choice must be True, False, 'auto' or 'none', "
                                   f"{_given(a.reset_tool_choice)}")
    if not isinstance(a.approvals, Mapping):
        raise AgentDefinitionError(f"approvals must be a mapping of tool name to policy, {_given(a.approvals)}")
    if not isinstance(a.model_extra, Mapping):
        raise AgentDefinitionError(f"model_extra must be a mapping, {_given(a.model_extra)}")
