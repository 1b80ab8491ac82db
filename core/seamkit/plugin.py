"""The public surface for plugin authors: every name a provider, store, tool, middleware,
compactor, schema flavour, guardrail, evaluator, runner or command plugin may import, in one place.

``from seamkit.plugin import hookimpl, LLMPort, ChatRequest, Delta, ProviderError`` is stable API.
The public modules are ``seamkit`` (applications), ``seamkit.plugin`` (this one),
``seamkit.testing``, the vocabulary modules ``seamkit.values`` and ``seamkit.errors``, and the
feature packages ``seamkit.composition``, ``seamkit.workflows`` and ``seamkit.capabilities``
(each through its ``__all__``); every other module of the host is internal and may change
without notice (docs/plugins/public-api.md). Names load lazily (PEP 562): importing this module
costs nothing until a name is used.

A name the host defines under a private or ambiguous name is published here under a public one
(``load_for_command`` is the CLI's ``_load``); the map below is the one place that says so.
"""

from __future__ import annotations

from seamkit._lazy import lazy_attributes

TYPE_CHECKING = False


def _names(module: str, *names: str) -> dict[str, str]:
    return dict.fromkeys(names, module)


def _renamed(module: str, **names: str) -> dict[str, str]:
    """``public name -> "module:name it has there"``."""
    return {public: f"{module}:{private}" for public, private in names.items()}


_EXPORTS: dict[str, str] = {
    # -- the values a component receives and returns (also public as seamkit.values)
    **_names(
        "seamkit.values",
        "Scope", "Usage", "Message", "TextBlock", "ImageBlock", "ToolCall", "ToolResult", "ReasoningBlock",
        "ToolSchema", "ChatRequest", "ToolRequest", "RunRequest", "LLMResult", "Delta", "ToolCallDelta",
        "ToolOutput", "FinishReason", "FrozenDict", "FrozenList", "EMPTY", "freeze", "thaw",
    ),
    # -- errors a component raises (also public as seamkit.errors, where the tree is drawn)
    **_names(
        "seamkit.errors",
        "SeamkitError", "FailureClass", "Failure", "ProviderError", "ToolError", "ToolArgumentError",
        "ToolUnavailable", "UnknownToolError", "OutputValidationError", "RunError", "RunCancelled",
        "RunNotResumable", "BudgetExceeded", "CheckpointConflict", "EffectNotApplied", "StoreError",
        "StoreUnavailable", "StoreValueError", "TTLNotSupported", "InfrastructureUnavailable",
        "UnsupportedFeature", "ConfigError", "ConfigIssue", "ComponentBuildError", "PluginError",
        "ComponentNotFound", "GuardrailTripped", "CodecError", "ToolDefinitionError", "UnsupportedSchemaType",
    ),
    # -- the ports
    **_names(
        "seamkit.ports",
        "LLMPort", "ToolPort", "ToolsetPort", "StorePort", "CheckpointPort", "ClockPort", "EmbeddingPort",
        "VectorPort", "PROVIDER_FEATURES",
    ),
    # -- registration and the registry
    **_names("seamkit.hookspecs", "hookimpl"),
    **_names("seamkit.plugins.registry", "ComponentSpec", "PluginReport", "Registry", "get_registry", "load_registry"),
    # a plugin's own tests: check a component as `seamkit plugins --check` does
    **_names("seamkit.plugins.check", "ComponentCheck", "check_component"),
    # compositions (a plugin's tests compose its components from YAML; also public as seamkit.composition)
    **_names("seamkit.composition", "load_composition", "loads_composition", "build_agent"),
    **_names("seamkit.plugins.ports_check", "Port", "port_problems"),
    # -- middleware contract
    **_names("seamkit.middleware", "Call", "Middleware", "Next", "middleware", "collect", "collect_one"),
    # -- streams
    **_names("seamkit.accumulate", "Accumulator", "collect_result"),
    # -- the run a component serves
    **_names("seamkit.runtime.context", "RunContext"),
    **_names("seamkit.runtime.concurrency", "run_sync"),
    **_names("seamkit.runtime.resources", "RunResources"),
    # -- tools
    **_names("seamkit.tools.decorator", "tool", "FunctionTool"),
    **_names("seamkit.tools.registry", "tool_name_of"),
    **_names("seamkit.runtime.invoker", "render_tool_value"),
    # -- provider helpers: requests, images, wrapped output schemas
    **_names("seamkit.request", "RequestBuilder"),
    **_names("seamkit.tool_images", "left_out_warning", "text_with_images_note"),
    **_names(
        "seamkit.schema_wrap",
        "RootWrap", "canonical_path", "normalize_root", "plain_schema", "unwrap_deltas", "wrap_root",
    ),
    # -- guardrails
    **_names("seamkit.guardrails", "Guard", "GuardContext", "Verdict", "ALLOW", "allow", "block", "rewrite"),
    **_names("seamkit.agent.guarding", "guards_by_point"),
    **_renamed("seamkit.agent.guarding", check_guards="check"),
    # -- compactors
    **_names(
        "seamkit.compaction",
        "CompactorPort", "check_invariants", "is_summary", "note", "split_leading_system", "summary_message",
        "transcript_tokens", "turn_units", "NOTES_KEY", "SUMMARY_MARKER",
    ),
    # -- schema flavours and typed output
    **_names(
        "seamkit.schemas",
        "BaseSchemaAdapter", "SchemaAdapter", "SchemaFlavour", "adapt", "parse_json", "partial_json", "raw_text",
    ),
    **_names("seamkit.agent.output", "drop_absent_nulls"),
    **_names("seamkit.agent.loop", "CORRECTIVE_TEMPLATE"),
    # -- config models and nested components in a config
    **_names("seamkit.config_types", "HTTPProviderConfig", "PriceOverride", "check_base_url"),
    **_names("seamkit.slots", "ComponentSlot", "NestedSlot", "build_nested"),
    # -- secrets
    **_names("seamkit.composition.models", "MASK", "MIN_SECRET_LENGTH", "is_secret_name", "mask_named"),
    # -- pricing (USD as Decimal)
    **_names(
        "seamkit.pricing", "MILLION", "Price", "PriceTable", "cost_of", "load_price_table", "parse_usd", "price_usage",
    ),
    # -- token estimates
    **_names("seamkit.tokens", "estimate_tokens", "estimate_message_tokens", "register_tokenizer"),
    # -- grounding (memory items a retrieval component returns, citations)
    **_names("seamkit.grounding", "MemoryItem", "MemorySource", "find_citations"),
    # capabilities and workflow steps (also public as seamkit.capabilities, seamkit.workflows)
    **_names("seamkit.capabilities", "Capability"),
    **_names("seamkit.workflows", "StepContext"),
    # -- store authors: checkpoint records, the value codec (a module: codec.dumps / codec.loads)
    **_names(
        "seamkit.durability.records",
        "CheckpointInfo", "CheckpointRecord", "StoredCheckpoint", "FINISHED_STATUSES", "scope_namespace",
    ),
    "codec": "seamkit.durability.codec:",
    **_names("seamkit.durability.singleflight", "SingleFlight"),
    # -- evaluators
    **_names("seamkit.evals", "Attempt", "EvalCase", "EvalContext", "Evaluator", "Score", "evaluate"),
    # -- runners: queued and child runs, checkpoint leases, approvals
    **_names("seamkit.runners", "RequeueRequest", "Runner", "QUEUED_KEY", "QUEUE_KEY"),
    **_names("seamkit.agent.child_runs", "CHILD_RUNS_SERVICE", "ChildRunOutcome", "ChildRunRequest"),
    **_names("seamkit.durability.checkpointer", "Checkpointer", "lease_void", "worker_id"),
    **_names(
        "seamkit.durability.approvals",
        "Decision", "approve", "reject", "decision_data", "decisions_from_data", "parse_decision_flags",
    ),
    **_names("seamkit.composition.build", "DEFAULT_STORE", "child_queue_issues"),
    **_names("seamkit.composition.models", "AgentStepConfig"),
    # -- command plugins: exit statuses and signals, loading, rendering, scrubbing secrets
    **_names(
        "seamkit.cli.outcomes",
        "EXIT_OK", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_SUSPENDED", "UsageError", "BuildFailed", "Terminated",
    ),
    **_names("seamkit.cli.commands", "DEFAULT_DB", "no_run_text"),
    **_renamed(
        "seamkit.cli.commands",
        load_for_command="_load",
        check_variables="_check_variables",
    ),
    **_names("seamkit.cli.common", "existing_file", "read_task"),
    **_names("seamkit.cli._loop", "run_interruptible"),
    **_names("seamkit.cli.render", "call_json", "jsonable", "result_json", "resume_command", "truncate", "visible"),
    **_names("seamkit.cli.scrub", "TextScrubber", "scrub_output", "secret_forms"),
    # -- located configuration errors (a command reading its own YAML files)
    **_names(
        "seamkit.composition._check", "check_slot", "describe_value", "did_you_mean", "iter_slots", "pydantic_issues",
    ),
    **_renamed("seamkit.composition._check", SlotCheckContext="Context"),
    **_names("seamkit.composition._yaml", "KeyPath", "Position", "clip", "parse_yaml", "shown"),
    **_renamed("seamkit.composition._yaml", YAML_MAX_DEPTH="MAX_DEPTH"),
    # -- packaging: lazy package attributes (keeps a plugin's import cheap)
    "lazy_attributes": "seamkit._lazy",
}

__all__ = sorted([*_EXPORTS, "mark_terminated"])


def mark_terminated() -> BaseException:
    """Record that SIGTERM ended the command (as the CLI's own handler does, so ``seamkit`` exits
    143) and return the :class:`Terminated` to raise. For a command plugin that installs its own
    SIGTERM handler (an asyncio server)."""
    from seamkit.cli import main as cli
    from seamkit.cli.outcomes import Terminated

    cli._terminated = True
    return Terminated()


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from seamkit._lazy import lazy_attributes
    from seamkit.accumulate import Accumulator, collect_result
    from seamkit.agent.child_runs import CHILD_RUNS_SERVICE, ChildRunOutcome, ChildRunRequest
    from seamkit.agent.guarding import check as check_guards
    from seamkit.agent.guarding import guards_by_point
    from seamkit.agent.loop import CORRECTIVE_TEMPLATE
    from seamkit.agent.output import drop_absent_nulls
    from seamkit.capabilities import Capability
    from seamkit.cli._loop import run_interruptible
    from seamkit.cli.commands import DEFAULT_DB, no_run_text
    from seamkit.cli.commands import _check_variables as check_variables
    from seamkit.cli.commands import _load as load_for_command
    from seamkit.cli.common import existing_file, read_task
    from seamkit.cli.outcomes import (
        EXIT_FAILED,
        EXIT_INTERRUPTED,
        EXIT_OK,
        EXIT_SUSPENDED,
        BuildFailed,
        Terminated,
        UsageError,
    )
    from seamkit.cli.render import call_json, jsonable, result_json, resume_command, truncate, visible
    from seamkit.cli.scrub import TextScrubber, scrub_output, secret_forms
    from seamkit.compaction import (
        NOTES_KEY,
        SUMMARY_MARKER,
        CompactorPort,
        check_invariants,
        is_summary,
        note,
        split_leading_system,
        summary_message,
        transcript_tokens,
        turn_units,
    )
    from seamkit.composition import build_agent, load_composition, loads_composition
    from seamkit.composition._check import Context as SlotCheckContext
    from seamkit.composition._check import check_slot, describe_value, did_you_mean, iter_slots, pydantic_issues
    from seamkit.composition._yaml import MAX_DEPTH as YAML_MAX_DEPTH
    from seamkit.composition._yaml import KeyPath, Position, clip, parse_yaml, shown
    from seamkit.composition.build import DEFAULT_STORE, child_queue_issues
    from seamkit.composition.models import MASK, MIN_SECRET_LENGTH, AgentStepConfig, is_secret_name, mask_named
    from seamkit.config_types import HTTPProviderConfig, PriceOverride, check_base_url
    from seamkit.durability import codec
    from seamkit.durability.approvals import (
        Decision,
        approve,
        decision_data,
        decisions_from_data,
        parse_decision_flags,
        reject,
    )
    from seamkit.durability.checkpointer import Checkpointer, lease_void, worker_id
    from seamkit.durability.records import (
        FINISHED_STATUSES,
        CheckpointInfo,
        CheckpointRecord,
        StoredCheckpoint,
        scope_namespace,
    )
    from seamkit.durability.singleflight import SingleFlight
    from seamkit.errors import (
        BudgetExceeded,
        CheckpointConflict,
        CodecError,
        ComponentBuildError,
        ComponentNotFound,
        ConfigError,
        ConfigIssue,
        EffectNotApplied,
        Failure,
        FailureClass,
        GuardrailTripped,
        InfrastructureUnavailable,
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
        ToolDefinitionError,
        ToolError,
        ToolUnavailable,
        TTLNotSupported,
        UnknownToolError,
        UnsupportedFeature,
        UnsupportedSchemaType,
    )
    from seamkit.evals import Attempt, EvalCase, EvalContext, Evaluator, Score, evaluate
    from seamkit.grounding import MemoryItem, MemorySource, find_citations
    from seamkit.guardrails import ALLOW, Guard, GuardContext, Verdict, allow, block, rewrite
    from seamkit.hookspecs import hookimpl
    from seamkit.middleware import Call, Middleware, Next, collect, collect_one, middleware
    from seamkit.plugins.check import ComponentCheck, check_component
    from seamkit.plugins.ports_check import Port, port_problems
    from seamkit.plugins.registry import ComponentSpec, PluginReport, Registry, get_registry, load_registry
    from seamkit.ports import (
        PROVIDER_FEATURES,
        CheckpointPort,
        ClockPort,
        EmbeddingPort,
        LLMPort,
        StorePort,
        ToolPort,
        ToolsetPort,
        VectorPort,
    )
    from seamkit.pricing import MILLION, Price, PriceTable, cost_of, load_price_table, parse_usd, price_usage
    from seamkit.request import RequestBuilder
    from seamkit.runners import QUEUE_KEY, QUEUED_KEY, RequeueRequest, Runner
    from seamkit.runtime.concurrency import run_sync
    from seamkit.runtime.context import RunContext
    from seamkit.runtime.invoker import render_tool_value
    from seamkit.runtime.resources import RunResources
    from seamkit.schema_wrap import RootWrap, canonical_path, normalize_root, plain_schema, unwrap_deltas, wrap_root
    from seamkit.schemas import (
        BaseSchemaAdapter,
        SchemaAdapter,
        SchemaFlavour,
        adapt,
        parse_json,
        partial_json,
        raw_text,
    )
    from seamkit.slots import ComponentSlot, NestedSlot, build_nested
    from seamkit.tokens import estimate_message_tokens, estimate_tokens, register_tokenizer
    from seamkit.tool_images import left_out_warning, text_with_images_note
    from seamkit.tools.decorator import FunctionTool, tool
    from seamkit.tools.registry import tool_name_of
    from seamkit.values import (
        EMPTY,
        ChatRequest,
        Delta,
        FinishReason,
        FrozenDict,
        FrozenList,
        ImageBlock,
        LLMResult,
        Message,
        ReasoningBlock,
        RunRequest,
        Scope,
        TextBlock,
        ToolCall,
        ToolCallDelta,
        ToolOutput,
        ToolRequest,
        ToolResult,
        ToolSchema,
        Usage,
        freeze,
        thaw,
    )
    from seamkit.workflows import StepContext
