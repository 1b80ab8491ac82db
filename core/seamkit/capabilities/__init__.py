"""The capability kernel: declared operations with facts, effects and confirmation (see
:mod:`seamkit.capabilities._model`), checked before any turn by the compiler
(:mod:`seamkit.capabilities._compiler`); what is known after each result
(:mod:`seamkit.capabilities._reducer`)."""

from seamkit.capabilities._compiler import CODES, CompiledAgent, CompileError, Problem, compile_agent
from seamkit.capabilities._executor import CapabilityContext, execute_capability
from seamkit.capabilities._model import (
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
from seamkit.capabilities._planner import plan
from seamkit.capabilities._reducer import KernelError, Reduction, reduce_facts
from seamkit.capabilities._state import Disposition, Intention

__all__ = [
    "CODES",
    "Capability",
    "CapabilityContext",
    "CapabilityResult",
    "CompileError",
    "CompiledAgent",
    "Completed",
    "Disposition",
    "Evidence",
    "Fact",
    "FactType",
    "Failed",
    "Guidance",
    "Intention",
    "KernelError",
    "NeedsConfirmation",
    "NeedsDependency",
    "NeedsInput",
    "Problem",
    "Reduction",
    "compile_agent",
    "execute_capability",
    "fact_type",
    "plan",
    "reduce_facts",
]
