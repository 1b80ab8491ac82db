"""seamkit: a small host for LLM agents; providers, stores and the rest are plugins.

Names are imported lazily on first access, so ``import seamkit`` stays fast.
"""

from __future__ import annotations

from seamkit._lazy import install_old_path_finder, lazy_attributes

install_old_path_finder()  # `import seamkit.agent` then says where it went (seamkit._moved)

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
    # (the `middleware` decorator stays in seamkit._middleware: a top-level name would be shadowed by
    # the submodule of the same name once it is imported)
    **{n: "seamkit._middleware" for n in ("Call", "Middleware", "chain", "collect", "collect_one")},
    "collect_result": "seamkit._accumulate",
    "Accumulator": "seamkit._accumulate",
    # runtime
    "RunContext": "seamkit._runtime.context",
    "CancellationToken": "seamkit._runtime.context",
    "Invoker": "seamkit._runtime.invoker",
    "gather_bounded": "seamkit._runtime.concurrency",
    "gather_best_effort": "seamkit._runtime.concurrency",
    "run_sync": "seamkit._runtime.concurrency",
    # tools
    "tool": "seamkit._tools.decorator",
    "FunctionTool": "seamkit._tools.decorator",
    "ToolRegistry": "seamkit._tools.registry",
    # agent
    "Agent": "seamkit._agent.agent",
    "AgentResult": "seamkit._agent.result",
    "Prompt": "seamkit._agent.prompt",
    "OutputSpec": "seamkit._agent.output",
    "agent_tool": "seamkit._agent.as_tool",
    "AgentTool": "seamkit._agent.as_tool",
    "Handoff": "seamkit._agent.handoff",
    # typed output flavours
    "SchemaAdapter": "seamkit._schemas",
    "adapt": "seamkit._schemas",
    # model-neutral calls
    "ask": "seamkit._calls.ask",
    "ask_sync": "seamkit._calls.ask",
    **{n: "seamkit._calls.binding" for n in ("Binding", "CredentialRef", "CallLimits")},
    **{n: "seamkit._calls.answer" for n in ("Answer", "Session")},
    # durable runs: checkpoints and approval decisions
    "Checkpointer": "seamkit._durability.checkpointer",
    **{n: "seamkit._durability.approvals" for n in ("Decision", "approve", "reject")},
    # plugins
    "hookimpl": "seamkit._hookspecs",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())


if TYPE_CHECKING:
    from seamkit._accumulate import Accumulator as Accumulator
    from seamkit._accumulate import collect_result as collect_result
    from seamkit._agent.agent import Agent as Agent
    from seamkit._agent.as_tool import AgentTool as AgentTool
    from seamkit._agent.as_tool import agent_tool as agent_tool
    from seamkit._agent.handoff import Handoff as Handoff
    from seamkit._agent.output import OutputSpec as OutputSpec
    from seamkit._agent.prompt import Prompt as Prompt
    from seamkit._agent.result import AgentResult as AgentResult
    from seamkit._calls.answer import Answer as Answer
    from seamkit._calls.answer import Session as Session
    from seamkit._calls.ask import ask as ask
    from seamkit._calls.ask import ask_sync as ask_sync
    from seamkit._calls.binding import Binding as Binding
    from seamkit._calls.binding import CallLimits as CallLimits
    from seamkit._calls.binding import CredentialRef as CredentialRef
    from seamkit._durability.approvals import Decision as Decision
    from seamkit._durability.approvals import approve as approve
    from seamkit._durability.approvals import reject as reject
    from seamkit._durability.checkpointer import Checkpointer as Checkpointer
    from seamkit._hookspecs import hookimpl as hookimpl
    from seamkit._middleware import (
        Call as Call,
    )
    from seamkit._middleware import (
        Middleware as Middleware,
    )
    from seamkit._middleware import (
        chain as chain,
    )
    from seamkit._middleware import (
        collect as collect,
    )
    from seamkit._middleware import (
        collect_one as collect_one,
    )
    from seamkit._runtime.concurrency import (
        gather_best_effort as gather_best_effort,
    )
    from seamkit._runtime.concurrency import (
        gather_bounded as gather_bounded,
    )
    from seamkit._runtime.concurrency import (
        run_sync as run_sync,
    )
    from seamkit._runtime.context import CancellationToken as CancellationToken
    from seamkit._runtime.context import RunContext as RunContext
    from seamkit._runtime.invoker import Invoker as Invoker
    from seamkit._schemas import SchemaAdapter as SchemaAdapter
    from seamkit._schemas import adapt as adapt
    from seamkit._tools.decorator import FunctionTool as FunctionTool
    from seamkit._tools.decorator import tool as tool
    from seamkit._tools.registry import ToolRegistry as ToolRegistry
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
