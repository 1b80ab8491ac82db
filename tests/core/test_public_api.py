"""The host's public surface (docs/plugins/public-api.md): which modules are public, what each
exports, and that plugins, examples, the test kit (testkit/) and the docs' code use nothing else.

A change to a public ``__all__`` fails :func:`test_public_all_is_pinned` until the list below is
updated in the same change: the public surface only moves as a visible diff.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))
from docs_testlib import fenced_blocks

ROOT = Path(__file__).resolve().parents[2]

PINNED: dict[str, list[str]] = {
    "seamkit": [
        "Accumulator", "Agent", "AgentResult", "AgentTool", "AmbiguousComponent", "Answer", "AskFailed", "Binding",
        "BudgetExceeded", "Call", "CallLimits", "CancellationToken", "ChatRequest", "Checkpointer",
        "ComponentBuildError", "ComponentNotFound", "ConfigError", "ConfigIssue", "CredentialRef", "Decision",
        "Delta", "Failure", "FailureClass", "FrozenDict", "FrozenList", "FunctionTool", "GuardrailTripped",
        "Handoff", "ImageBlock", "Invoker", "LLMResult", "Message", "Middleware", "Operation", "OutputSpec",
        "OutputValidationError", "PluginError", "Prompt", "ProviderError", "ReasoningBlock", "RunCancelled",
        "RunContext", "RunError", "RunNotResumable", "SchemaAdapter", "Scope", "SeamkitError", "Session",
        "StoreError", "StoreUnavailable", "StoreValueError", "StreamEvent", "TextBlock", "ToolArgumentError",
        "ToolCall", "ToolCallDelta", "ToolError", "ToolRegistry", "ToolRequest", "ToolResult", "ToolSchema",
        "UnknownToolError", "Usage", "adapt", "agent_tool", "approve", "ask", "ask_sync", "chain", "collect",
        "collect_one", "collect_result", "freeze", "gather_best_effort", "gather_bounded", "hookimpl", "reject",
        "run_sync", "thaw", "tool",
    ],
    "seamkit.plugin": [
        "ALLOW", "Accumulator", "AgentStepConfig", "Attempt", "BaseSchemaAdapter", "BudgetExceeded", "BuildFailed",
        "CHILD_RUNS_SERVICE", "CORRECTIVE_TEMPLATE", "Call", "Capability", "ChatRequest", "CheckpointConflict",
        "CheckpointInfo", "CheckpointPort", "CheckpointRecord", "Checkpointer", "ChildRunOutcome", "ChildRunRequest",
        "ClockPort", "CodecError", "CompactorPort", "ComponentBuildError", "ComponentCheck", "ComponentNotFound",
        "ComponentSlot", "ComponentSpec", "ConfigError", "ConfigIssue", "DEFAULT_DB", "DEFAULT_STORE", "Decision",
        "Delta", "EMPTY", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_SUSPENDED", "EffectNotApplied",
        "EmbeddingPort", "EvalCase", "EvalContext", "Evaluator", "FINISHED_STATUSES", "Failure", "FailureClass",
        "FinishReason", "FrozenDict", "FrozenList", "FunctionTool", "Guard", "GuardContext", "GuardrailTripped",
        "HTTPProviderConfig", "ImageBlock", "InfrastructureUnavailable", "KeyPath", "LLMPort", "LLMResult", "MASK",
        "MILLION", "MIN_SECRET_LENGTH", "MemoryItem", "MemorySource", "Message", "Middleware", "NOTES_KEY",
        "NestedSlot", "Next", "OutputValidationError", "PROVIDER_FEATURES", "PendingWrite", "PluginError",
        "PluginReport", "Port",
        "Position", "Price", "PriceOverride", "PriceTable", "ProviderError", "QUEUED_KEY", "QUEUE_KEY",
        "ReasoningBlock", "Registry", "RequestBuilder", "RequeueRequest", "RootWrap", "RunCancelled", "RunContext",
        "RunError", "RunNotResumable", "RunRequest", "RunResources", "Runner", "SUMMARY_MARKER", "SchemaAdapter",
        "SchemaFlavour", "Scope", "Score", "SeamkitError", "SingleFlight", "SlotCheckContext", "StepContext",
        "StoreError", "StorePort", "StoreUnavailable", "StoreValueError", "StoredCheckpoint", "TTLNotSupported",
        "Terminated", "TextBlock", "TextScrubber", "ToolArgumentError", "ToolCall", "ToolCallDelta",
        "ToolDefinitionError", "ToolError", "ToolOutput", "ToolPort", "ToolRequest", "ToolResult", "ToolSchema",
        "ToolUnavailable", "ToolsetPort", "UnknownToolError", "UnsupportedFeature", "UnsupportedSchemaType", "Usage",
        "UsageError", "VectorPort", "Verdict", "YAML_MAX_DEPTH", "adapt", "allow", "approve", "block", "build_agent",
        "build_nested", "call_json", "canonical_path", "check_base_url", "check_component", "check_guards",
        "check_invariants", "check_slot", "check_variables", "child_queue_issues", "clip", "codec", "collect",
        "collect_one", "collect_result", "cost_of", "decision_data", "decisions_from_data", "describe_value",
        "did_you_mean", "drop_absent_nulls", "estimate_message_tokens", "estimate_tokens", "evaluate",
        "existing_file", "find_citations", "freeze", "get_registry", "guards_by_point", "hookimpl", "is_secret_name",
        "is_summary", "iter_slots", "jsonable", "lazy_attributes", "lease_void", "left_out_warning",
        "load_composition", "load_for_command", "load_price_table", "load_registry", "loads_composition",
        "mark_terminated", "mask_named", "mask_secrets", "middleware", "no_run_text", "normalize_root", "note",
        "parse_decision_flags", "parse_json", "parse_usd", "parse_yaml", "partial_json", "plain_schema",
        "port_problems", "price_usage", "pydantic_issues", "raw_text", "read_task", "register_tokenizer", "reject",
        "render_tool_value", "result_json", "resume_command", "rewrite", "run_interruptible", "run_sync",
        "scope_namespace", "scrub_output", "secret_forms", "shown", "split_leading_system", "summary_message",
        "text_with_images_note", "thaw", "tool", "tool_name_of", "transcript_tokens", "truncate", "turn_units",
        "unwrap_deltas", "visible", "worker_id", "wrap_root",
    ],
    "seamkit.testing": [
        "FakeClock", "MemoryStore", "NetworkBlocked", "SchemaDrivenModel", "ScriptedModel", "ScriptedTurn",
        "block_network", "example_for_schema", "make_test_ctx",
    ],
    "seamkit.values": [
        "ChatRequest", "ContentBlock", "CostSource", "Delta", "EMPTY", "FinishReason", "FrozenDict", "FrozenList",
        "ImageBlock", "LLMResult", "Message", "MessageLog", "MessageSnapshot", "Operation", "ReasoningBlock", "Role",
        "RunRequest", "Scope",
        "StreamEvent", "StreamEventKind", "TextBlock", "ToolCall", "ToolCallDelta", "ToolChoice", "ToolOutput",
        "ToolRequest", "ToolResult", "ToolSchema", "Usage", "freeze", "thaw",
    ],
    "seamkit.errors": [
        "AgentDefinitionError", "AmbiguousComponent", "AskFailed", "BudgetExceeded",
        "CheckpointConflict", "ChildRunFailed", "CodecError",
        "CompileError", "ComponentBuildError", "ComponentNotFound", "ConfigError", "ConfigIssue",
        "ContextBudgetExceeded", "EffectNotApplied", "EffectUncertain", "Failure", "FailureClass",
        "GuardrailTripped", "InfrastructureUnavailable", "KernelError", "OutputValidationError", "PluginError",
        "PromptVariablesError", "ProviderError", "RunCancelled", "RunError", "RunNotResumable", "SeamkitError",
        "StepError", "StoreError", "StoreUnavailable", "StoreValueError", "TTLNotSupported", "TaskTooLarge",
        "ToolArgumentError",
        "ToolDefinitionError", "ToolError", "ToolUnavailable", "UnknownToolError", "UnsupportedFeature",
        "UnsupportedSchemaType", "WorkflowFailed", "WorkflowInvalid",
    ],
    "seamkit.composition": [
        "AgentConfig", "AgentToolRef", "ComponentBuildError", "ComponentRef", "Composition", "FORMAT_VERSION",
        "HandoffRef", "MiddlewareRef", "OutputConfig", "PromptConfig", "ProviderRef", "SLOT_TYPES", "Settings",
        "StoreRef", "ToolRef", "build_agent", "build_agents", "build_store", "build_workflow",
        "composition_json_schema", "interpolate", "load_composition", "loads_composition", "resolve_plain",
    ],
    "seamkit.workflows": [
        "Activation", "Branch", "Emit", "Event", "START", "Step", "StepContext", "StepError", "Workflow",
        "WorkflowFailed", "WorkflowInvalid", "WorkflowProblem", "WorkflowResult", "WorkflowState", "agent_step",
        "capability_step", "function_step", "gate", "resume_workflow", "run_workflow", "tool_step", "validate",
        "workflow_state", "workflow_step",
    ],
    "seamkit.capabilities": [
        "CODES", "Capability", "CapabilityContext", "CapabilityResult", "CompileError", "CompiledAgent",
        "Completed", "Disposition", "Evidence", "Fact", "FactType", "Failed", "Guidance", "Intention",
        "KernelError", "NeedsConfirmation", "NeedsDependency", "NeedsInput", "Problem", "Reduction",
        "compile_agent", "execute_capability", "fact_type", "plan", "reduce_facts",
    ],
}
PUBLIC = frozenset(PINNED)
PUBLIC_MODULES = PUBLIC | {"seamkit.__main__"}
"""Every public module (``python -m seamkit`` has no names to pin); every other module of the host
has a ``_``-prefixed component in its dotted path (``seamkit._agent.loop``, ``seamkit.composition._build``)."""


@pytest.mark.parametrize("module", sorted(PINNED))
def test_public_all_is_pinned(module: str) -> None:
    assert sorted(importlib.import_module(module).__all__) == PINNED[module]


@pytest.mark.parametrize("module", sorted(PINNED))
def test_every_public_name_resolves(module: str) -> None:
    mod = importlib.import_module(module)
    for name in mod.__all__:
        getattr(mod, name)  # AttributeError for a name that does not resolve
    assert len(set(mod.__all__)) == len(mod.__all__)


def test_the_plugin_surface_republishes_the_host_objects() -> None:
    """A name of seamkit.plugin that seamkit also exports is the same object (one class, however
    it is imported), and the error family bases are there for a plugin to raise and catch."""
    import seamkit
    import seamkit.plugin as plugin

    for name in set(plugin.__all__) & set(seamkit.__all__):
        assert getattr(plugin, name) is getattr(seamkit, name), name
    from seamkit._cli.commands import _load

    assert plugin.load_for_command is _load  # published under a public name


def test_importing_the_plugin_surface_loads_nothing_else() -> None:
    """``import seamkit.plugin`` (every plugin's first import) loads only itself, ``seamkit`` and
    the lazy-attribute helper: the names load when used."""
    code = ("import sys; before = set(sys.modules); import seamkit.plugin; "
            "print('\\n'.join(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert set(out.split()) <= {"__future__", "seamkit", "seamkit._lazy", "seamkit.plugin"}, out


def _host(module: str | None) -> bool:
    return module is not None and (module == "seamkit" or module.startswith("seamkit."))


def _private_uses(source: str, where: str) -> list[str]:
    """Each import of the host in ``source`` that names a non-public module (``seamkit._anything``
    among them), or a name that is not in its public module's ``__all__``."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            bad += [f"{where}:{node.lineno}: import {a.name}" for a in node.names
                    if _host(a.name) and a.name not in PUBLIC_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _host(node.module):
            if node.module not in PUBLIC:
                bad.append(f"{where}:{node.lineno}: from {node.module} import ...")
                continue
            exported = set(PINNED[node.module]) | ({"__version__"} if node.module == "seamkit" else set())
            bad += [f"{where}:{node.lineno}: {node.module}.{a.name} is not in its __all__"
                    for a in node.names if a.name not in exported]
    return bad


def _python_files(*roots: str) -> list[Path]:
    return [p for r in roots for p in sorted((ROOT / r).rglob("*.py")) if ".venv" not in p.parts]


@pytest.mark.parametrize("root", ["plugins", "examples", "testkit"])
def test_code_outside_the_host_imports_only_public_names(root: str) -> None:
    """No module outside core/ imports ``seamkit._anything``, a module not in the public list, or
    a name outside a public module's ``__all__``."""
    files = _python_files(root)
    assert files
    bad = [b for f in files for b in _private_uses(f.read_text(encoding="utf-8"), str(f.relative_to(ROOT)))]
    assert bad == [], "\n".join(bad)


def test_every_name_the_docs_import_is_public() -> None:
    """The docs' Python blocks (run or only compiled) import the host's public names only."""
    bad, blocks = [], 0
    for doc in sorted((ROOT / "docs").rglob("*.md")):
        for block in fenced_blocks(doc):
            if block.info.split()[:1] == ["python"]:
                blocks += 1
                bad += _private_uses(block.body, f"{doc.relative_to(ROOT)}:{block.line}")
    assert blocks > 20
    assert bad == [], "\n".join(bad)


def _host_modules() -> list[str]:
    """The dotted name of every module under core/seamkit."""
    pkg = ROOT / "core" / "seamkit"
    out = []
    for f in sorted(pkg.rglob("*.py")):
        parts = list(f.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append(".".join(parts))
    return out


def test_every_module_but_the_public_ones_is_private_by_name() -> None:
    """As in httpx (``httpx._client``): a module outside the public list has a ``_`` component in its
    dotted path, so that ``seamkit.x.y`` without one is public and nothing else is."""
    modules = _host_modules()
    assert set(PUBLIC_MODULES) <= set(modules)
    leaked = [m for m in modules if m not in PUBLIC_MODULES
              and not any(part.startswith("_") and part != "__main__" for part in m.split(".")[1:])]
    assert leaked == [], leaked


def test_the_public_packages_submodules_are_private() -> None:
    """A public package re-exports its ``__all__`` from submodules that are themselves private."""
    packages = [m for m in PUBLIC if (ROOT / "core" / Path(*m.split("."))).is_dir() and m != "seamkit"]
    assert sorted(packages) == ["seamkit.capabilities", "seamkit.composition", "seamkit.testing", "seamkit.workflows"]
    for pkg in packages:
        subs = [m for m in _host_modules() if m.startswith(pkg + ".")]
        assert subs, pkg
        assert all(m[len(pkg) + 1:].startswith("_") for m in subs), subs


def test_the_checker_reports_private_imports() -> None:
    """The check above can fail: an internal module, a private name of a public module, a bare
    ``import`` of an internal module."""
    src = "from seamkit._cli.main import UsageError\nfrom seamkit.values import _frozen\nimport seamkit._agent.loop\n"
    assert len(_private_uses(src, "x.py")) == 3
    assert len(_private_uses("import seamkit._lazy\nfrom seamkit.composition._build import build_agent\n", "x.py")) == 2
    assert _private_uses("from seamkit.plugin import UsageError\nimport seamkit\n", "x.py") == []


def test_the_type_checking_imports_match_the_lazy_map() -> None:
    """seamkit.plugin's ``if TYPE_CHECKING:`` imports (what a type checker and an editor see) name
    the same object as the lazy map, for every public name."""
    import seamkit.plugin as plugin

    tree = ast.parse(Path(plugin.__file__ or "").read_text(encoding="utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"]
    seen = {}
    for node in block.body:
        if isinstance(node, ast.AugAssign) and getattr(node.target, "id", "") == "__all__":
            continue  # the renamed names, exported for type checkers (see the test below)
        assert isinstance(node, ast.ImportFrom) and node.module
        for a in node.names:
            seen[a.asname or a.name] = _resolve(node.module, a.name)
    assert sorted(seen) == sorted(set(plugin.__all__) - {"mark_terminated"})
    for name, obj in seen.items():
        assert getattr(plugin, name) is obj, name


def _resolve(module: str, name: str) -> object:
    mod = importlib.import_module(module)
    return getattr(mod, name) if hasattr(mod, name) else importlib.import_module(f"{module}.{name}")


@pytest.mark.parametrize("module", ["seamkit", "seamkit.plugin", "seamkit.testing"])
def test_the_lazy_names_are_explicit_re_exports_for_type_checkers(module: str) -> None:
    """The names a lazy public module publishes are imported under ``if TYPE_CHECKING:`` as
    ``name as name`` (or, renamed, listed in an ``__all__ +=`` there): mypy --strict (no implicit
    re-export) reads only those as exported, and cannot read the computed ``__all__``; without
    it ``from seamkit.plugin import Delta`` is an error in a strictly typed plugin (and in
    pytest-seamkit)."""
    mod = importlib.import_module(module)
    tree = ast.parse(Path(mod.__file__ or "").read_text(encoding="utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"]
    listed: set[str] = set()
    for node in block.body:  # `__all__ += [...]`: names mypy reads as exported
        if isinstance(node, ast.AugAssign) and getattr(node.target, "id", "") == "__all__":
            listed |= set(ast.literal_eval(node.value))
    implicit = [f"{node.module}.{a.name} as {a.asname}" for node in block.body if isinstance(node, ast.ImportFrom)
                for a in node.names if a.asname != a.name and (a.asname or a.name) not in listed]
    assert implicit == [], f"write these as `name as name`, or list a renamed one in `__all__ +=`: {implicit}"
