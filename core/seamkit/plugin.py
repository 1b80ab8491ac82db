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
        "seamkit._ports",
        "LLMPort", "ToolPort", "ToolsetPort", "StorePort", "CheckpointPort", "ClockPort", "EmbeddingPort",
        "VectorPort", "PROVIDER_FEATURES",
    ),
    # -- registration and the registry
    **_names("seamkit._hookspecs", "hookimpl"),
    **_names("seamkit._plugins.registry", "ComponentSpec", "PluginReport", "Registry", "get_registry", "load_registry"),
    # a plugin's own tests: check a component as `seamkit plugins --check` does
    **_names("seamkit._plugins.check", "ComponentCheck", "check_component"),
    # compositions (a plugin's tests compose its components from YAML; also public as seamkit.composition)
    **_names("seamkit.composition", "load_composition", "loads_composition", "build_agent"),
    **_names("seamkit._plugins.ports_check", "Port", "port_problems"),
    # -- middleware contract
    **_names("seamkit._middleware", "Call", "Middleware", "Next", "middleware", "collect", "collect_one"),
    # -- streams
    **_names("seamkit._accumulate", "Accumulator", "collect_result"),
    # -- the run a component serves
    **_names("seamkit._runtime.context", "RunContext"),
    **_names("seamkit._runtime.concurrency", "run_sync"),
    **_names("seamkit._runtime.resources", "RunResources"),
    # -- tools
    **_names("seamkit._tools.decorator", "tool", "FunctionTool"),
    **_names("seamkit._tools.registry", "tool_name_of"),
    **_names("seamkit._runtime.invoker", "render_tool_value"),
    # -- provider helpers: requests, images, wrapped output schemas
    **_names("seamkit._request", "RequestBuilder"),
    **_names("seamkit._tool_images", "left_out_warning", "text_with_images_note"),
    **_names(
        "seamkit._schema_wrap",
        "RootWrap", "canonical_path", "normalize_root", "plain_schema", "unwrap_deltas", "wrap_root",
    ),
    # -- guardrails
    **_names("seamkit._guardrails", "Guard", "GuardContext", "Verdict", "ALLOW", "allow", "block", "rewrite"),
    **_names("seamkit._agent.guarding", "guards_by_point"),
    **_renamed("seamkit._agent.guarding", check_guards="check"),
    # -- compactors
    **_names(
        "seamkit._compaction",
        "CompactorPort", "check_invariants", "is_summary", "note", "split_leading_system", "summary_message",
        "transcript_tokens", "turn_units", "NOTES_KEY", "SUMMARY_MARKER",
    ),
    # -- schema flavours and typed output
    **_names(
        "seamkit._schemas",
        "BaseSchemaAdapter", "SchemaAdapter", "SchemaFlavour", "adapt", "parse_json", "partial_json", "raw_text",
    ),
    **_names("seamkit._agent.output", "drop_absent_nulls"),
    **_names("seamkit._agent.loop", "CORRECTIVE_TEMPLATE"),
    # -- config models and nested components in a config
    **_names("seamkit._config_types", "HTTPProviderConfig", "PriceOverride", "check_base_url"),
    **_names("seamkit._slots", "ComponentSlot", "NestedSlot", "build_nested"),
    # -- secrets
    **_names("seamkit.composition._models", "MASK", "MIN_SECRET_LENGTH", "is_secret_name", "mask_named"),
    **_names("seamkit._plugins.redact", "mask_secrets"),
    # -- pricing (USD as Decimal)
    **_names(
        "seamkit._pricing", "MILLION", "Price", "PriceTable", "cost_of", "load_price_table", "parse_usd", "price_usage",
    ),
    # -- token estimates
    **_names("seamkit._tokens", "estimate_tokens", "estimate_message_tokens", "register_tokenizer"),
    # -- grounding (memory items a retrieval component returns, citations)
    **_names("seamkit._grounding", "MemoryItem", "MemorySource", "find_citations"),
    # capabilities and workflow steps (also public as seamkit.capabilities, seamkit.workflows)
    **_names("seamkit.capabilities", "Capability"),
    **_names("seamkit.workflows", "StepContext"),
    # -- store authors: checkpoint records, the value codec (a module: codec.dumps / codec.loads)
    **_names(
        "seamkit._durability.records",
        "CheckpointInfo", "CheckpointRecord", "PendingWrite", "StoredCheckpoint", "FINISHED_STATUSES",
        "scope_namespace",
    ),
    "codec": "seamkit._durability.codec:",
    **_names("seamkit._durability.singleflight", "SingleFlight"),
    # -- evaluators
    **_names("seamkit._evals", "Attempt", "EvalCase", "EvalContext", "Evaluator", "Score", "evaluate"),
    # -- runners: queued and child runs, checkpoint leases, approvals
    **_names("seamkit._runners", "RequeueRequest", "Runner", "QUEUED_KEY", "QUEUE_KEY"),
    **_names("seamkit._agent.child_runs", "CHILD_RUNS_SERVICE", "ChildRunOutcome", "ChildRunRequest"),
    **_names("seamkit._durability.checkpointer", "Checkpointer", "lease_void", "worker_id"),
    **_names(
        "seamkit._durability.approvals",
        "Decision", "approve", "reject", "decision_data", "decisions_from_data", "parse_decision_flags",
    ),
    **_names("seamkit.composition._build", "DEFAULT_STORE", "child_queue_issues"),
    **_names("seamkit.composition._models", "AgentStepConfig"),
    # -- command plugins: exit statuses and signals, loading, rendering, scrubbing secrets
    **_names(
        "seamkit._cli.outcomes",
        "EXIT_OK", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_SUSPENDED", "UsageError", "BuildFailed", "Terminated",
    ),
    **_names("seamkit._cli.commands", "DEFAULT_DB", "no_run_text"),
    **_renamed(
        "seamkit._cli.commands",
        load_for_command="_load",
        check_variables="_check_variables",
    ),
    **_names("seamkit._cli.common", "existing_file", "read_task"),
    **_names("seamkit._cli._loop", "run_interruptible"),
    **_names("seamkit._cli.render", "call_json", "jsonable", "result_json", "resume_command", "truncate", "visible"),
    **_names("seamkit._cli.scrub", "TextScrubber", "scrub_output", "secret_forms"),
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
    from seamkit._cli import main as cli
    from seamkit._cli.outcomes import Terminated

    cli._terminated = True
    return Terminated()


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from seamkit._accumulate import Accumulator as Accumulator
    from seamkit._accumulate import collect_result as collect_result
    from seamkit._agent.child_runs import (
        CHILD_RUNS_SERVICE as CHILD_RUNS_SERVICE,
    )
    from seamkit._agent.child_runs import (
        ChildRunOutcome as ChildRunOutcome,
    )
    from seamkit._agent.child_runs import (
        ChildRunRequest as ChildRunRequest,
    )
    from seamkit._agent.guarding import check as check_guards
    from seamkit._agent.guarding import guards_by_point as guards_by_point
    from seamkit._agent.loop import CORRECTIVE_TEMPLATE as CORRECTIVE_TEMPLATE
    from seamkit._agent.output import drop_absent_nulls as drop_absent_nulls
    from seamkit._cli._loop import run_interruptible as run_interruptible
    from seamkit._cli.commands import DEFAULT_DB as DEFAULT_DB
    from seamkit._cli.commands import _check_variables as check_variables
    from seamkit._cli.commands import _load as load_for_command
    from seamkit._cli.commands import no_run_text as no_run_text
    from seamkit._cli.common import existing_file as existing_file
    from seamkit._cli.common import read_task as read_task
    from seamkit._cli.outcomes import (
        EXIT_FAILED as EXIT_FAILED,
    )
    from seamkit._cli.outcomes import (
        EXIT_INTERRUPTED as EXIT_INTERRUPTED,
    )
    from seamkit._cli.outcomes import (
        EXIT_OK as EXIT_OK,
    )
    from seamkit._cli.outcomes import (
        EXIT_SUSPENDED as EXIT_SUSPENDED,
    )
    from seamkit._cli.outcomes import (
        BuildFailed as BuildFailed,
    )
    from seamkit._cli.outcomes import (
        Terminated as Terminated,
    )
    from seamkit._cli.outcomes import (
        UsageError as UsageError,
    )
    from seamkit._cli.render import (
        call_json as call_json,
    )
    from seamkit._cli.render import (
        jsonable as jsonable,
    )
    from seamkit._cli.render import (
        result_json as result_json,
    )
    from seamkit._cli.render import (
        resume_command as resume_command,
    )
    from seamkit._cli.render import (
        truncate as truncate,
    )
    from seamkit._cli.render import (
        visible as visible,
    )
    from seamkit._cli.scrub import (
        TextScrubber as TextScrubber,
    )
    from seamkit._cli.scrub import (
        scrub_output as scrub_output,
    )
    from seamkit._cli.scrub import (
        secret_forms as secret_forms,
    )
    from seamkit._compaction import (
        NOTES_KEY as NOTES_KEY,
    )
    from seamkit._compaction import (
        SUMMARY_MARKER as SUMMARY_MARKER,
    )
    from seamkit._compaction import (
        CompactorPort as CompactorPort,
    )
    from seamkit._compaction import (
        check_invariants as check_invariants,
    )
    from seamkit._compaction import (
        is_summary as is_summary,
    )
    from seamkit._compaction import (
        note as note,
    )
    from seamkit._compaction import (
        split_leading_system as split_leading_system,
    )
    from seamkit._compaction import (
        summary_message as summary_message,
    )
    from seamkit._compaction import (
        transcript_tokens as transcript_tokens,
    )
    from seamkit._compaction import (
        turn_units as turn_units,
    )
    from seamkit._config_types import (
        HTTPProviderConfig as HTTPProviderConfig,
    )
    from seamkit._config_types import (
        PriceOverride as PriceOverride,
    )
    from seamkit._config_types import (
        check_base_url as check_base_url,
    )
    from seamkit._durability import codec as codec
    from seamkit._durability.approvals import (
        Decision as Decision,
    )
    from seamkit._durability.approvals import (
        approve as approve,
    )
    from seamkit._durability.approvals import (
        decision_data as decision_data,
    )
    from seamkit._durability.approvals import (
        decisions_from_data as decisions_from_data,
    )
    from seamkit._durability.approvals import (
        parse_decision_flags as parse_decision_flags,
    )
    from seamkit._durability.approvals import (
        reject as reject,
    )
    from seamkit._durability.checkpointer import (
        Checkpointer as Checkpointer,
    )
    from seamkit._durability.checkpointer import (
        lease_void as lease_void,
    )
    from seamkit._durability.checkpointer import (
        worker_id as worker_id,
    )
    from seamkit._durability.records import (
        FINISHED_STATUSES as FINISHED_STATUSES,
    )
    from seamkit._durability.records import (
        CheckpointInfo as CheckpointInfo,
    )
    from seamkit._durability.records import (
        CheckpointRecord as CheckpointRecord,
    )
    from seamkit._durability.records import (
        PendingWrite as PendingWrite,
    )
    from seamkit._durability.records import (
        StoredCheckpoint as StoredCheckpoint,
    )
    from seamkit._durability.records import (
        scope_namespace as scope_namespace,
    )
    from seamkit._durability.singleflight import SingleFlight as SingleFlight
    from seamkit._evals import (
        Attempt as Attempt,
    )
    from seamkit._evals import (
        EvalCase as EvalCase,
    )
    from seamkit._evals import (
        EvalContext as EvalContext,
    )
    from seamkit._evals import (
        Evaluator as Evaluator,
    )
    from seamkit._evals import (
        Score as Score,
    )
    from seamkit._evals import (
        evaluate as evaluate,
    )
    from seamkit._grounding import (
        MemoryItem as MemoryItem,
    )
    from seamkit._grounding import (
        MemorySource as MemorySource,
    )
    from seamkit._grounding import (
        find_citations as find_citations,
    )
    from seamkit._guardrails import (
        ALLOW as ALLOW,
    )
    from seamkit._guardrails import (
        Guard as Guard,
    )
    from seamkit._guardrails import (
        GuardContext as GuardContext,
    )
    from seamkit._guardrails import (
        Verdict as Verdict,
    )
    from seamkit._guardrails import (
        allow as allow,
    )
    from seamkit._guardrails import (
        block as block,
    )
    from seamkit._guardrails import (
        rewrite as rewrite,
    )
    from seamkit._hookspecs import hookimpl as hookimpl
    from seamkit._lazy import lazy_attributes as lazy_attributes
    from seamkit._middleware import (
        Call as Call,
    )
    from seamkit._middleware import (
        Middleware as Middleware,
    )
    from seamkit._middleware import (
        Next as Next,
    )
    from seamkit._middleware import (
        collect as collect,
    )
    from seamkit._middleware import (
        collect_one as collect_one,
    )
    from seamkit._middleware import (
        middleware as middleware,
    )
    from seamkit._plugins.check import ComponentCheck as ComponentCheck
    from seamkit._plugins.check import check_component as check_component
    from seamkit._plugins.ports_check import Port as Port
    from seamkit._plugins.ports_check import port_problems as port_problems
    from seamkit._plugins.redact import mask_secrets as mask_secrets
    from seamkit._plugins.registry import (
        ComponentSpec as ComponentSpec,
    )
    from seamkit._plugins.registry import (
        PluginReport as PluginReport,
    )
    from seamkit._plugins.registry import (
        Registry as Registry,
    )
    from seamkit._plugins.registry import (
        get_registry as get_registry,
    )
    from seamkit._plugins.registry import (
        load_registry as load_registry,
    )
    from seamkit._ports import (
        PROVIDER_FEATURES as PROVIDER_FEATURES,
    )
    from seamkit._ports import (
        CheckpointPort as CheckpointPort,
    )
    from seamkit._ports import (
        ClockPort as ClockPort,
    )
    from seamkit._ports import (
        EmbeddingPort as EmbeddingPort,
    )
    from seamkit._ports import (
        LLMPort as LLMPort,
    )
    from seamkit._ports import (
        StorePort as StorePort,
    )
    from seamkit._ports import (
        ToolPort as ToolPort,
    )
    from seamkit._ports import (
        ToolsetPort as ToolsetPort,
    )
    from seamkit._ports import (
        VectorPort as VectorPort,
    )
    from seamkit._pricing import (
        MILLION as MILLION,
    )
    from seamkit._pricing import (
        Price as Price,
    )
    from seamkit._pricing import (
        PriceTable as PriceTable,
    )
    from seamkit._pricing import (
        cost_of as cost_of,
    )
    from seamkit._pricing import (
        load_price_table as load_price_table,
    )
    from seamkit._pricing import (
        parse_usd as parse_usd,
    )
    from seamkit._pricing import (
        price_usage as price_usage,
    )
    from seamkit._request import RequestBuilder as RequestBuilder
    from seamkit._runners import (
        QUEUE_KEY as QUEUE_KEY,
    )
    from seamkit._runners import (
        QUEUED_KEY as QUEUED_KEY,
    )
    from seamkit._runners import (
        RequeueRequest as RequeueRequest,
    )
    from seamkit._runners import (
        Runner as Runner,
    )
    from seamkit._runtime.concurrency import run_sync as run_sync
    from seamkit._runtime.context import RunContext as RunContext
    from seamkit._runtime.invoker import render_tool_value as render_tool_value
    from seamkit._runtime.resources import RunResources as RunResources
    from seamkit._schema_wrap import (
        RootWrap as RootWrap,
    )
    from seamkit._schema_wrap import (
        canonical_path as canonical_path,
    )
    from seamkit._schema_wrap import (
        normalize_root as normalize_root,
    )
    from seamkit._schema_wrap import (
        plain_schema as plain_schema,
    )
    from seamkit._schema_wrap import (
        unwrap_deltas as unwrap_deltas,
    )
    from seamkit._schema_wrap import (
        wrap_root as wrap_root,
    )
    from seamkit._schemas import (
        BaseSchemaAdapter as BaseSchemaAdapter,
    )
    from seamkit._schemas import (
        SchemaAdapter as SchemaAdapter,
    )
    from seamkit._schemas import (
        SchemaFlavour as SchemaFlavour,
    )
    from seamkit._schemas import (
        adapt as adapt,
    )
    from seamkit._schemas import (
        parse_json as parse_json,
    )
    from seamkit._schemas import (
        partial_json as partial_json,
    )
    from seamkit._schemas import (
        raw_text as raw_text,
    )
    from seamkit._slots import ComponentSlot as ComponentSlot
    from seamkit._slots import NestedSlot as NestedSlot
    from seamkit._slots import build_nested as build_nested
    from seamkit._tokens import (
        estimate_message_tokens as estimate_message_tokens,
    )
    from seamkit._tokens import (
        estimate_tokens as estimate_tokens,
    )
    from seamkit._tokens import (
        register_tokenizer as register_tokenizer,
    )
    from seamkit._tool_images import left_out_warning as left_out_warning
    from seamkit._tool_images import text_with_images_note as text_with_images_note
    from seamkit._tools.decorator import FunctionTool as FunctionTool
    from seamkit._tools.decorator import tool as tool
    from seamkit._tools.registry import tool_name_of as tool_name_of
    from seamkit.capabilities import Capability as Capability
    from seamkit.composition import (
        build_agent as build_agent,
    )
    from seamkit.composition import (
        load_composition as load_composition,
    )
    from seamkit.composition import (
        loads_composition as loads_composition,
    )
    from seamkit.composition._build import DEFAULT_STORE as DEFAULT_STORE
    from seamkit.composition._build import child_queue_issues as child_queue_issues
    from seamkit.composition._check import Context as SlotCheckContext
    from seamkit.composition._check import (
        check_slot as check_slot,
    )
    from seamkit.composition._check import (
        describe_value as describe_value,
    )
    from seamkit.composition._check import (
        did_you_mean as did_you_mean,
    )
    from seamkit.composition._check import (
        iter_slots as iter_slots,
    )
    from seamkit.composition._check import (
        pydantic_issues as pydantic_issues,
    )
    from seamkit.composition._models import (
        MASK as MASK,
    )
    from seamkit.composition._models import (
        MIN_SECRET_LENGTH as MIN_SECRET_LENGTH,
    )
    from seamkit.composition._models import (
        AgentStepConfig as AgentStepConfig,
    )
    from seamkit.composition._models import (
        is_secret_name as is_secret_name,
    )
    from seamkit.composition._models import (
        mask_named as mask_named,
    )
    from seamkit.composition._yaml import MAX_DEPTH as YAML_MAX_DEPTH
    from seamkit.composition._yaml import (
        KeyPath as KeyPath,
    )
    from seamkit.composition._yaml import (
        Position as Position,
    )
    from seamkit.composition._yaml import (
        clip as clip,
    )
    from seamkit.composition._yaml import (
        parse_yaml as parse_yaml,
    )
    from seamkit.composition._yaml import (
        shown as shown,
    )
    from seamkit.errors import (
        BudgetExceeded as BudgetExceeded,
    )
    from seamkit.errors import (
        CheckpointConflict as CheckpointConflict,
    )
    from seamkit.errors import (
        CodecError as CodecError,
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
        EffectNotApplied as EffectNotApplied,
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
        InfrastructureUnavailable as InfrastructureUnavailable,
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
        ToolDefinitionError as ToolDefinitionError,
    )
    from seamkit.errors import (
        ToolError as ToolError,
    )
    from seamkit.errors import (
        ToolUnavailable as ToolUnavailable,
    )
    from seamkit.errors import (
        TTLNotSupported as TTLNotSupported,
    )
    from seamkit.errors import (
        UnknownToolError as UnknownToolError,
    )
    from seamkit.errors import (
        UnsupportedFeature as UnsupportedFeature,
    )
    from seamkit.errors import (
        UnsupportedSchemaType as UnsupportedSchemaType,
    )
    from seamkit.values import (
        EMPTY as EMPTY,
    )
    from seamkit.values import (
        ChatRequest as ChatRequest,
    )
    from seamkit.values import (
        Delta as Delta,
    )
    from seamkit.values import (
        FinishReason as FinishReason,
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
        ReasoningBlock as ReasoningBlock,
    )
    from seamkit.values import (
        RunRequest as RunRequest,
    )
    from seamkit.values import (
        Scope as Scope,
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
        ToolOutput as ToolOutput,
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
    from seamkit.workflows import StepContext as StepContext
    # renamed on the way out: mypy takes `name as name` as an explicit re-export, `a as b` not; these
    # are exported by naming them in __all__ (which it reads; the computed one above it cannot)
    __all__ += ["SlotCheckContext", "YAML_MAX_DEPTH", "check_guards", "check_variables", "load_for_command"]
