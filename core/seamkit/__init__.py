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
    from seamkit.accumulate import Accumulator as Accumulator
    from seamkit.accumulate import collect_result as collect_result
    from seamkit.agent.agent import Agent as Agent
    from seamkit.agent.as_tool import AgentTool as AgentTool
    from seamkit.agent.as_tool import agent_tool as agent_tool
    from seamkit.agent.handoff import Handoff as Handoff
    from seamkit.agent.output import OutputSpec as OutputSpec
    from seamkit.agent.prompt import Prompt as Prompt
    from seamkit.agent.result import AgentResult as AgentResult
    from seamkit.calls.answer import Answer as Answer
    from seamkit.calls.answer import Session as Session
    from seamkit.calls.ask import ask as ask
    from seamkit.calls.ask import ask_sync as ask_sync
    from seamkit.calls.binding import Binding as Binding
    from seamkit.calls.binding import CallLimits as CallLimits
    from seamkit.calls.binding import CredentialRef as CredentialRef
    from seamkit.durability.approvals import Decision as Decision
    from seamkit.durability.approvals import approve as approve
    from seamkit.durability.approvals import reject as reject
    from seamkit.durability.checkpointer import Checkpointer as Checkpointer
    from seamkit.errors import (
        AmbiguousComponent as AmbiguousComponent,
    )
    from seamkit.errors import (
        AskFailed as AskFailed,
    )
    from seamkit.errors import (
        BudgetExceeded as BudgetExceeded,
    )
    from seamkit.errors import (
        ComponentBuildError as ComponentBuildError,
    )
    from seamkit.errors import (
        ComponentNotFound as ComponentNotFound,
    )
    from seamkit.errors import (
        ConfigError as ConfigError,
    )
    from seamkit.errors import (
        ConfigIssue as ConfigIssue,
    )
    from seamkit.errors import (
        Failure as Failure,
    )
    from seamkit.errors import (
        FailureClass as FailureClass,
    )
    from seamkit.errors import (
        GuardrailTripped as GuardrailTripped,
    )
    from seamkit.errors import (
        OutputValidationError as OutputValidationError,
    )
    from seamkit.errors import (
        PluginError as PluginError,
    )
    from seamkit.errors import (
        ProviderError as ProviderError,
    )
    from seamkit.errors import (
        RunCancelled as RunCancelled,
    )
    from seamkit.errors import (
        RunError as RunError,
    )
    from seamkit.errors import (
        RunNotResumable as RunNotResumable,
    )
    from seamkit.errors import (
        SeamkitError as SeamkitError,
    )
    from seamkit.errors import (
        StoreError as StoreError,
    )
    from seamkit.errors import (
        StoreUnavailable as StoreUnavailable,
    )
    from seamkit.errors import (
        StoreValueError as StoreValueError,
    )
    from seamkit.errors import (
        ToolArgumentError as ToolArgumentError,
    )
    from seamkit.errors import (
        ToolError as ToolError,
    )
    from seamkit.errors import (
        UnknownToolError as UnknownToolError,
    )
    from seamkit.hookspecs import hookimpl as hookimpl
    from seamkit.middleware import (
        Call as Call,
    )
    from seamkit.middleware import (
        Middleware as Middleware,
    )
    from seamkit.middleware import (
        chain as chain,
    )
    from seamkit.middleware import (
        collect as collect,
    )
    from seamkit.middleware import (
        collect_one as collect_one,
    )
    from seamkit.runtime.concurrency import (
        gather_best_effort as gather_best_effort,
    )
    from seamkit.runtime.concurrency import (
        gather_bounded as gather_bounded,
    )
    from seamkit.runtime.concurrency import (
        run_sync as run_sync,
    )
    from seamkit.runtime.context import CancellationToken as CancellationToken
    from seamkit.runtime.context import RunContext as RunContext
    from seamkit.runtime.invoker import Invoker as Invoker
    from seamkit.schemas import SchemaAdapter as SchemaAdapter
    from seamkit.schemas import adapt as adapt
    from seamkit.tools.decorator import FunctionTool as FunctionTool
    from seamkit.tools.decorator import tool as tool
    from seamkit.tools.registry import ToolRegistry as ToolRegistry
    from seamkit.values import (
        ChatRequest as ChatRequest,
    )
    from seamkit.values import (
        Delta as Delta,
    )
    from seamkit.values import (
        FrozenDict as FrozenDict,
    )
    from seamkit.values import (
        FrozenList as FrozenList,
    )
    from seamkit.values import (
        ImageBlock as ImageBlock,
    )
    from seamkit.values import (
        LLMResult as LLMResult,
    )
    from seamkit.values import (
        Message as Message,
    )
    from seamkit.values import (
        Operation as Operation,
    )
    from seamkit.values import (
        ReasoningBlock as ReasoningBlock,
    )
    from seamkit.values import (
        Scope as Scope,
    )
    from seamkit.values import (
        StreamEvent as StreamEvent,
    )
    from seamkit.values import (
        TextBlock as TextBlock,
    )
    from seamkit.values import (
        ToolCall as ToolCall,
    )
    from seamkit.values import (
        ToolCallDelta as ToolCallDelta,
    )
    from seamkit.values import (
        ToolRequest as ToolRequest,
    )
    from seamkit.values import (
        ToolResult as ToolResult,
    )
    from seamkit.values import (
        ToolSchema as ToolSchema,
    )
    from seamkit.values import (
        Usage as Usage,
    )
    from seamkit.values import (
        freeze as freeze,
    )
    from seamkit.values import (
        thaw as thaw,
    )
