"""The capability kernel: declared operations with facts, effects and confirmation (see
:mod:`seamkit.capabilities.model`), checked before any turn by the compiler
(:mod:`seamkit.capabilities.compiler`)."""

from seamkit.capabilities.compiler import CODES, CompiledAgent, CompileError, Problem, compile_agent
from seamkit.capabilities.model import (
    Capability,
    CapabilityResult,
    Completed,
    Evidence,
    Fact,
    FactType,
    Failed,
    Guidance,
    NeedsConfirmation,
    NeedsDependency,
    NeedsInput,
    fact_type,
)

__all__ = [
    "CODES",
    "Capability",
    "CapabilityResult",
    "CompileError",
    "CompiledAgent",
    "Completed",
    "Evidence",
    "Fact",
    "FactType",
    "Failed",
    "Guidance",
    "NeedsConfirmation",
    "NeedsDependency",
    "NeedsInput",
    "Problem",
    "compile_agent",
    "fact_type",
]
