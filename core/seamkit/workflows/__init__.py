"""Workflows: named steps joined by typed events (:mod:`seamkit.workflows._model`), validated before
any step runs so that no step can wait for an event nothing produces
(:mod:`seamkit.workflows._validate`), run as child runs with a checkpoint after every step
(:mod:`seamkit.workflows._engine`); steps from functions, agents, tools, capabilities, gates and
nested workflows (:mod:`seamkit.workflows._steps`)."""

from seamkit.workflows._engine import (
    Activation,
    Branch,
    Event,
    StepContext,
    WorkflowFailed,
    WorkflowResult,
    WorkflowState,
    resume_workflow,
    run_workflow,
    workflow_state,
)
from seamkit.workflows._model import START, Emit, Step, Workflow
from seamkit.workflows._steps import (
    StepError,
    agent_step,
    capability_step,
    function_step,
    gate,
    tool_step,
    workflow_step,
)
from seamkit.workflows._validate import WorkflowInvalid, WorkflowProblem, validate

__all__ = [
    "START",
    "Activation",
    "Branch",
    "Emit",
    "Event",
    "Step",
    "StepContext",
    "StepError",
    "Workflow",
    "WorkflowFailed",
    "WorkflowInvalid",
    "WorkflowProblem",
    "WorkflowResult",
    "WorkflowState",
    "agent_step",
    "capability_step",
    "function_step",
    "gate",
    "resume_workflow",
    "run_workflow",
    "tool_step",
    "validate",
    "workflow_state",
    "workflow_step",
]
