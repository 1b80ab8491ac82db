"""seamkit: a small host for LLM agents; providers, stores and the rest are plugins.

Names are imported lazily on first access, so ``import seamkit`` stays fast.
"""

from __future__ import annotations

from seamkit._lazy import lazy_attributes

TYPE_CHECKING = False  # not importing typing keeps `import seamkit` to a few milliseconds

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # values
    **{n: "seamkit.values" for n in (
        "Scope", "Usage", "Message", "TextBlock", "ImageBlock", "ToolCall", "ToolResult", "ReasoningBlock",
        "ToolSchema", "ChatRequest", "ToolRequest", "LLMResult", "Delta", "ToolCallDelta", "StreamEvent",
        "Operation", "FrozenDict", "FrozenList", "freeze", "thaw",
    )},
    # errors
    **{n: "seamkit.errors" for n in (
        "SeamkitError", "FailureClass", "Failure", "ProviderError", "ToolError", "ToolArgumentError",
        "UnknownToolError", "OutputValidationError", "RunError", "RunCancelled", "RunNotResumable",
        "BudgetExceeded", "GuardrailTripped", "StoreError", "StoreUnavailable", "StoreValueError",
        "ConfigError", "ConfigIssue", "ComponentBuildError", "PluginError", "ComponentNotFound",
        "AmbiguousComponent", "AskFailed",
    )},
    # middleware
    # (the `middleware` decorator stays in seamkit.middleware: a top-level name would be shadowed by
    # the submodule of the same name once it is imported)
    **{n: "seamkit.middleware" for n in ("Call", "Middleware", "chain", "collect", "collect_one")},
    "collect_result": "seamkit.accumulate",
    "Accumulator": "seamkit.accumulate",
    # runtime
    "RunContext": "seamkit.runtime.context",
    "CancellationToken": "seamkit.runtime.context",
    "Invoker": "seamkit.runtime.invoker",
    "gather_bounded": "seamkit.runtime.concurrency",
    "gather_best_effort": "seamkit.runtime.concurrency",
    "run_sync": "seamkit.runtime.concurrency",
    # tools
    "tool": "seamkit.tools.decorator",
    "FunctionTool": "seamkit.tools.decorator",
    "ToolRegistry": "seamkit.tools.registry",
    # agent
    "Agent": "seamkit.agent.agent",
    "AgentResult": "seamkit.agent.result",
    "Prompt": "seamkit.agent.prompt",
    "OutputSpec": "seamkit.agent.output",
    "agent_tool": "seamkit.agent.as_tool",
    "AgentTool": "seamkit.agent.as_tool",
    "Handoff": "seamkit.agent.handoff",
    # typed output flavours
    "SchemaAdapter": "seamkit.schemas",
    "adapt": "seamkit.schemas",
    # model-neutral calls
    "ask": "seamkit.calls.ask",
    "ask_sync": "seamkit.calls.ask",
    **{n: "seamkit.calls.binding" for n in ("Binding", "CredentialRef", "CallLimits")},
    **{n: "seamkit.calls.answer" for n in ("Answer", "Session")},
    # durable runs: checkpoints and approval decisions
    "Checkpointer": "seamkit.durability.checkpointer",
    **{n: "seamkit.durability.approvals" for n in ("Decision", "approve", "reject")},
    # plugins
    "hookimpl": "seamkit.hookspecs",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())


if TYPE_CHECKING:
    from seamkit.accumulate import Accumulator, collect_result
    from seamkit.agent.agent import Agent
    from seamkit.agent.as_tool import AgentTool, agent_tool
    from seamkit.agent.handoff import Handoff
    from seamkit.agent.output import OutputSpec
    from seamkit.agent.prompt import Prompt
    from seamkit.agent.result import AgentResult
    from seamkit.calls.answer import Answer, Session
    from seamkit.calls.ask import ask, ask_sync
    from seamkit.calls.binding import Binding, CallLimits, CredentialRef
    from seamkit.durability.approvals import Decision, approve, reject
    from seamkit.durability.checkpointer import Checkpointer
    from seamkit.errors import (
        AmbiguousComponent,
        AskFailed,
        BudgetExceeded,
        ComponentBuildError,
        ComponentNotFound,
        ConfigError,
        ConfigIssue,
        Failure,
        FailureClass,
        GuardrailTripped,
        OutputValidationError,
        PluginError,
        ProviderError,
        RunCancelled,
        RunError,
        RunNotResumable,
        SeamkitError,
        StoreError,
        StoreUnavailable,
        StoreValueError,
        ToolArgumentError,
        ToolError,
        UnknownToolError,
    )
    from seamkit.hookspecs import hookimpl
    from seamkit.middleware import Call, Middleware, chain, collect, collect_one
    from seamkit.runtime.concurrency import gather_best_effort, gather_bounded, run_sync
    from seamkit.runtime.context import CancellationToken, RunContext
    from seamkit.runtime.invoker import Invoker
    from seamkit.schemas import SchemaAdapter, adapt
    from seamkit.tools.decorator import FunctionTool, tool
    from seamkit.tools.registry import ToolRegistry
    from seamkit.values import (
        ChatRequest,
        Delta,
        FrozenDict,
        FrozenList,
        ImageBlock,
        LLMResult,
        Message,
        Operation,
        ReasoningBlock,
        Scope,
        StreamEvent,
        TextBlock,
        ToolCall,
        ToolCallDelta,
        ToolRequest,
        ToolResult,
        ToolSchema,
        Usage,
        freeze,
        thaw,
    )
