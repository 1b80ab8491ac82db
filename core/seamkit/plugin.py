"""The public surface for plugin authors: every name a provider, store, tool, middleware,
compactor, schema flavour, guardrail, evaluator, runner or command plugin may import, in one place.

``from seamkit.plugin import hookimpl, LLMPort, ChatRequest, Delta, ProviderError`` is stable API;
modules of the host not named in docs/plugins/public-api.md are internal and may change without
notice. Names load lazily (PEP 562): importing this module costs nothing until a name is used.
"""

from __future__ import annotations

from seamkit._lazy import lazy_attributes

TYPE_CHECKING = False

_EXPORTS: dict[str, str] = {
    # the values a component receives and returns (seamkit.values)
    **{
        n: "seamkit.values"
        for n in (
            "Scope",
            "Usage",
            "Message",
            "TextBlock",
            "ImageBlock",
            "ToolCall",
            "ToolResult",
            "ReasoningBlock",
            "ToolSchema",
            "ChatRequest",
            "ToolRequest",
            "RunRequest",
            "LLMResult",
            "Delta",
            "ToolCallDelta",
            "ToolOutput",
            "FinishReason",
            "FrozenDict",
            "FrozenList",
            "EMPTY",
            "freeze",
            "thaw",
        )
    },
    # errors a component raises (seamkit.errors)
    **{
        n: "seamkit.errors"
        for n in (
            "SeamkitError",
            "FailureClass",
            "Failure",
            "ProviderError",
            "ToolError",
            "ToolArgumentError",
            "ToolUnavailable",
            "UnknownToolError",
            "OutputValidationError",
            "RunCancelled",
            "RunNotResumable",
            "BudgetExceeded",
            "CheckpointConflict",
            "EffectNotApplied",
            "StoreUnavailable",
            "StoreValueError",
            "TTLNotSupported",
            "CodecError",
            "InfrastructureUnavailable",
            "UnsupportedFeature",
            "ConfigError",
            "ConfigIssue",
            "PluginError",
            "ComponentNotFound",
            "ToolDefinitionError",
        )
    },
    # the ports (seamkit.ports)
    **{
        n: "seamkit.ports"
        for n in (
            "LLMPort",
            "ToolPort",
            "ToolsetPort",
            "StorePort",
            "CheckpointPort",
            "ClockPort",
            "EmbeddingPort",
            "VectorPort",
            "PROVIDER_FEATURES",
        )
    },
    # registration (seamkit.hookspecs)
    **{n: "seamkit.hookspecs" for n in ("hookimpl",)},
    # the registry a plugin registers into (a plugin's tests register it into a fresh one and check a
    # component as `seamkit plugins --check` does)
    **{n: "seamkit.plugins.registry" for n in ("Registry", "ComponentSpec", "PluginReport", "load_registry")},
    **{n: "seamkit.plugins.check" for n in ("ComponentCheck", "check_component")},
    # compositions (a plugin's tests compose its components from YAML)
    **{n: "seamkit.composition" for n in ("load_composition", "loads_composition", "build_agent")},
    # middleware contract
    **{n: "seamkit.middleware" for n in ("Call", "Middleware", "Next", "middleware", "collect", "collect_one")},
    # streams
    **{n: "seamkit.accumulate" for n in ("Accumulator", "collect_result")},
    # the run a component serves
    **{n: "seamkit.runtime.context" for n in ("RunContext",)},
    **{n: "seamkit.runtime.concurrency" for n in ("run_sync",)},
    # tools
    **{n: "seamkit.tools.decorator" for n in ("tool", "FunctionTool")},
    # guardrails
    **{
        n: "seamkit.guardrails"
        for n in ("Guard", "GuardContext", "Verdict", "GuardrailTripped", "ALLOW", "allow", "block", "rewrite")
    },
    # compactors
    **{
        n: "seamkit.compaction"
        for n in (
            "CompactorPort",
            "NOTES_KEY",
            "SUMMARY_MARKER",
            "check_invariants",
            "is_summary",
            "note",
            "split_leading_system",
            "summary_message",
            "transcript_tokens",
            "turn_units",
        )
    },
    # schema flavours
    **{
        n: "seamkit.schemas"
        for n in (
            "BaseSchemaAdapter",
            "SchemaAdapter",
            "SchemaFlavour",
            "UnsupportedSchemaType",
            "adapt",
            "parse_json",
            "partial_json",
            "raw_text",
        )
    },
    # config models
    **{n: "seamkit.config_types" for n in ("HTTPProviderConfig", "PriceOverride", "check_base_url")},
    # nested components in a config
    **{n: "seamkit.slots" for n in ("ComponentSlot", "NestedSlot", "build_nested")},
    # secrets
    **{n: "seamkit.composition.models" for n in ("MASK", "is_secret_name", "mask_named")},
    # pricing (USD as Decimal)
    **{
        n: "seamkit.pricing"
        for n in ("MILLION", "Price", "PriceTable", "cost_of", "load_price_table", "parse_usd", "price_usage")
    },
    # token estimates
    **{n: "seamkit.tokens" for n in ("estimate_tokens", "estimate_message_tokens", "register_tokenizer")},
    # checkpoint records (store authors)
    **{
        n: "seamkit.durability.records"
        for n in ("CheckpointInfo", "CheckpointRecord", "StoredCheckpoint", "FINISHED_STATUSES", "scope_namespace")
    },
    **{n: "seamkit.durability.singleflight" for n in ("SingleFlight",)},
    # memory (grounding sources), capabilities, workflow steps
    **{n: "seamkit.grounding" for n in ("MemoryItem", "MemorySource")},
    **{n: "seamkit.capabilities" for n in ("Capability",)},
    **{n: "seamkit.workflows" for n in ("StepContext",)},
    # evaluators
    **{n: "seamkit.evals" for n in ("Attempt", "EvalCase", "EvalContext", "Evaluator", "Score", "evaluate")},
    # runners
    **{n: "seamkit.runners" for n in ("RequeueRequest", "Runner", "QUEUED_KEY", "QUEUE_KEY")},
}

# modules exported whole (``from seamkit.plugin import codec``; ``codec.dumps(value)``)
_MODULES: dict[str, str] = {
    # typed values <-> JSON text: how a store encodes what it is given (seamkit.durability.codec)
    "codec": "seamkit.durability.codec",
}

__all__ = sorted([*_EXPORTS, *_MODULES])


_getattr, _dir = lazy_attributes(__name__, _EXPORTS, globals())


def __getattr__(name: str) -> object:
    if name in _MODULES:
        import importlib

        module = importlib.import_module(_MODULES[name])
        globals()[name] = module
        return module
    return _getattr(name)


def __dir__() -> list[str]:
    return sorted({*_dir(), *_MODULES})


if TYPE_CHECKING:
    pass
