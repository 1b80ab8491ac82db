"""The pydantic models of the composition format (``seamkit: 1``).

Every model forbids unknown keys. A *component slot* is a :class:`ComponentRef` subclass whose
``kind`` says which registry kind ``use:`` resolves (:data:`SLOT_TYPES`); to add a new slot kind
(e.g. ``checkpoints:`` → ``store``), subclass :class:`ComponentRef` with ``kind = "store"`` and use
it as a field type anywhere in the tree: loading, building and the JSON Schema find it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, PrivateAttr, Tag, field_validator, model_validator

from seamkit._plugins.redact import MASK, MIN_SECRET_LENGTH, is_secret_name
from seamkit.composition._yaml import KeyPath, Position

__all__ = [
    "AgentConfig",
    "AgentStepConfig",
    "AgentToolRef",
    "ChildQueueConfig",
    "DEFAULT_CHILD_QUEUE",
    "CapabilityStepConfig",
    "GateStepConfig",
    "StepRef",
    "ToolStepConfig",
    "WorkflowConfig",
    "HandoffRef",
    "CapabilityRef",
    "CompactorRef",
    "ComponentRef",
    "GuardrailRef",
    "ContextConfig",
    "MemoryRef",
    "Composition",
    "MiddlewareRef",
    "OutputConfig",
    "PromptConfig",
    "ProviderRef",
    "SLOT_TYPES",
    "Settings",
    "ToolRef",
    "MASK",
    "MIN_SECRET_LENGTH",
    "is_secret_name",
    "mask_named",
]

_LITERAL = re.compile(r"(?i)-?\d+(\.\d+)?([eE][+-]?\d+)?|true|false|null")


def mask_named(value: Any, secret: bool = False) -> Any:
    """``value`` (JSON-like data: mappings, lists, scalars) with the value of every key named like a
    secret (:func:`is_secret_name`), at any depth, as ``***`` (a whole sub-tree under such a key;
    ``None`` stays ``None``); ``secret``: mask ``value`` itself. For tool-call arguments and
    outputs shown to people (the CLI's trace, eval reports), where a model may pass a credential."""
    if isinstance(value, Mapping):
        return {k: mask_named(v, secret or (isinstance(k, str) and is_secret_name(k))) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_named(v, secret) for v in value]
    return MASK if secret and value is not None else value


class _Model(BaseModel):
    """Base of the format's models: unknown keys are errors; numbers written where text is
    expected become their text (lossless: the loader only makes numbers whose text round-trips);
    fields holding values read from environment variables are masked in ``repr``."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True, populate_by_name=True)
    _masked: set[str] = PrivateAttr(default_factory=set)

    def __repr_args__(self) -> Iterable[tuple[str | None, Any]]:
        for key, value in super().__repr_args__():
            yield key, (MASK if key in self._masked else value)


class ComponentRef(_Model):
    """A component slot: ``use: NAME`` (+ ``from: DISTRIBUTION``) and the component's own
    parameters, or just ``NAME``. ``params`` holds the parameters as written; ``config`` the
    instance of the component's config model once validated (``None`` for components without one
    or before validation). Parameters that look secret or came from the environment are masked in
    ``repr``; ``config`` holds the real values (its own ``repr`` is the component's business: use
    ``SecretStr`` for secrets)."""

    kind: ClassVar[str] = ""
    #: Keys of the slot that the host reads; every other key is a parameter of the component.
    host_keys: ClassVar[tuple[str, ...]] = ("use", "from")

    use: str = Field(description="Name of the registered component")
    distribution: str | None = Field(
        default=None, alias="from",
        description="Distribution to take the component from, when several register this name",
    )
    params: dict[str, Any] = Field(default_factory=dict, description="The component's parameters")
    _config: Any = PrivateAttr(default=None)
    _secret_params: set[str] = PrivateAttr(default_factory=set)

    @model_validator(mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"use": value}
        if isinstance(value, ComponentRef):
            return value
        if isinstance(value, Mapping):
            keys = cls.host_keys
            head = {k: value[k] for k in keys if k in value}
            params = {k: v for k, v in value.items() if k not in keys}
            return {**head, "params": params}
        raise ValueError(
            "a component slot is a component name or a mapping with 'use: NAME' and the component's parameters"
        )

    @property
    def config(self) -> Any:
        """The validated config-model instance (``None`` when the component takes no parameters)."""
        return self._config

    def __repr_args__(self) -> Iterable[tuple[str | None, Any]]:
        for key, value in super().__repr_args__():
            if key == "params" and isinstance(value, dict):
                value = {
                    k: (MASK if k in self._secret_params or is_secret_name(k) else v) for k, v in value.items()
                }
            yield key, value


class ProviderRef(ComponentRef):
    """A model provider slot (registry kind ``provider``)."""

    kind: ClassVar[str] = "provider"


class ToolRef(ComponentRef):
    """A tool slot (registry kind ``tool``). The tool's name is its component name."""

    kind: ClassVar[str] = "tool"


class MiddlewareRef(ComponentRef):
    """A middleware slot (registry kind ``middleware``)."""

    kind: ClassVar[str] = "middleware"


class StoreRef(ComponentRef):
    """A store slot (registry kind ``store``): a backend for checkpoints and effect receipts."""

    kind: ClassVar[str] = "store"


class MemoryRef(ComponentRef):
    """A memory slot (registry kind ``memory``): for ``context.grounding``, a grounding source."""

    kind: ClassVar[str] = "memory"


class CompactorRef(ComponentRef):
    """A compactor slot (registry kind ``compactor``)."""

    kind: ClassVar[str] = "compactor"


GuardrailPoint = Literal["input", "tool", "tool_result", "output"]


class GuardrailRef(ComponentRef):
    """A guardrail slot (registry kind ``guardrail``): the component, and how the agent uses it
    (:class:`seamkit._guardrails.Guard`): ``at`` (points; default: every point the guardrail has a
    check for), ``advisory`` and ``parallel``. Those three keys are the host's; the rest are the
    guardrail's parameters."""

    kind: ClassVar[str] = "guardrail"
    host_keys: ClassVar[tuple[str, ...]] = ("use", "from", "at", "advisory", "parallel")

    at: list[GuardrailPoint] | None = Field(
        default=None, min_length=1,
        description="Points the guardrail acts at (input, tool, tool_result, output); absent: every point it "
        "has a check for",
    )
    advisory: bool = Field(
        default=False, strict=True,
        description="Its blocks and failures become run warnings instead of stopping the run (default: a block "
        "or a failure stops the run)",
    )
    parallel: bool = Field(
        default=False, strict=True,
        description="At the input point, run alongside the first model call instead of before it (lower latency; "
        "that call's tokens are spent even when the input is blocked)",
    )

    @field_validator("at", mode="before")
    @classmethod
    def _one_point(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class CapabilityRef(ComponentRef):
    """A capability slot (registry kind ``capability``): the component's factory returns a
    :class:`seamkit.capabilities.Capability`; the agent's capabilities are compiled together
    (:func:`seamkit.capabilities.compile_agent`) when the agent is built and by ``seamkit validate``."""

    kind: ClassVar[str] = "capability"


class StepRef(ComponentRef):
    """A workflow step component (registry kind ``step``, ``use: NAME``): its factory returns the
    step function; ``consumes`` / ``emits`` / ``join`` are the step's, every other key a parameter
    of the component."""

    kind: ClassVar[str] = "step"
    host_keys: ClassVar[tuple[str, ...]] = ("use", "from", "consumes", "emits", "join")

    consumes: list[str] = Field(default_factory=lambda: ["start"], description="Event types it waits for (all)")
    emits: list[str] = Field(default_factory=list, description="Event types it may emit")
    join: bool = Field(default=False, description="Receive every branch of a fan-out at once (a list)")

    @field_validator("consumes", "emits", mode="before", json_schema_input_type=str | list[str])
    @classmethod
    def _one_event(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


#: Slot classes by registry kind.
SLOT_TYPES: dict[str, type[ComponentRef]] = {
    c.kind: c for c in (ProviderRef, ToolRef, MiddlewareRef, StoreRef, MemoryRef, CompactorRef, GuardrailRef,
                        CapabilityRef, StepRef)
}


#: The queue an agent tool's child runs go to with ``queue: true``: one of their own, so that
#: workers waiting on children never hold every process the children need (see docs/multi-agent.md).
DEFAULT_CHILD_QUEUE = "children"


class ChildQueueConfig(_Model):
    """Where an agent tool's (or a workflow agent step's) child runs go when a queue runs the calling
    run (``queue: {name: ...}``)."""

    name: str = Field(default=DEFAULT_CHILD_QUEUE, min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$",
                      description="The queue (workers consume it with 'seamkit worker FILE --queue NAME')")


def _queue_name(queue: bool | ChildQueueConfig) -> str | None:
    """The queue a ``queue:`` value sends child runs to, ``None`` for in-process."""
    if isinstance(queue, ChildQueueConfig):
        return queue.name
    return DEFAULT_CHILD_QUEUE if queue else None


class _StepBase(_Model):
    """What every built-in kind of ``workflow.steps`` entry has: ``consumes``, ``emits``, ``join``."""

    consumes: list[str] = Field(
        default_factory=lambda: ["start"],
        description="Event types the step waits for (one event of each); 'start' carries the workflow's input",
    )
    emits: list[str] = Field(default_factory=list, description="Event types the step may emit")
    join: bool = Field(
        default=False, description="Receive every branch of a fan-out at once, as a list (a join)",
    )

    @field_validator("consumes", "emits", mode="before", json_schema_input_type=str | list[str])
    @classmethod
    def _one_event(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value  # `emits: done` means [done]


class AgentStepConfig(_StepBase):
    """A step running an agent of the file (``agent: NAME``) on its input, as a child run."""

    agent: str = Field(description="Name of the agent (the entry agent's name or a key of 'agents:')")
    pick: str | None = Field(
        default=None, description="Take this field of the agent's output (a list there fans out)",
    )
    queue: bool | ChildQueueConfig = Field(
        default=False,
        description="Run the agent on a worker queue when a worker runs the workflow (seamkit-celery): true for "
        f"the queue {DEFAULT_CHILD_QUEUE!r}, {{name: QUEUE}} for another; elsewhere it runs in-process. Its "
        "agent must checkpoint into a store every worker shares",
    )

    def queue_name(self) -> str | None:
        """The queue the step's agent run goes to, ``None`` for in-process."""
        return _queue_name(self.queue)


class ToolStepConfig(_StepBase):
    """A step calling a tool component with its input as the arguments."""

    tool: ToolRef = Field(description="The tool component")


class CapabilityStepConfig(_StepBase):
    """A step executing one capability component on its input."""

    capability: CapabilityRef = Field(description="The capability component")


class GateStepConfig(_StepBase):
    """A human gate: the workflow suspends until the person answers (seamkit resume RUN --answer)."""

    gate: str = Field(description="The question to the person")
    on_yes: str | None = Field(default=None, description="Event emitted for a plain yes (with on_no)")
    on_no: str | None = Field(default=None, description="Event emitted for a plain no (with on_yes)")


def _step_kind(value: Any) -> str:
    """Which kind of ``workflow.steps`` entry ``value`` is, by its key: ``agent``, ``tool``,
    ``capability``, ``gate``, or a step component (``use:``)."""
    if isinstance(value, Mapping):
        for key in ("agent", "tool", "capability", "gate"):
            if key in value and "use" not in value:
                return key
        return "component"
    for cls, tag in ((AgentStepConfig, "agent"), (ToolStepConfig, "tool"), (CapabilityStepConfig, "capability"),
                     (GateStepConfig, "gate")):
        if isinstance(value, cls):
            return tag
    return "component"


#: A ``workflow.steps`` entry.
StepEntry = Annotated[
    Annotated[AgentStepConfig, Tag("agent")] | Annotated[ToolStepConfig, Tag("tool")]
    | Annotated[CapabilityStepConfig, Tag("capability")] | Annotated[GateStepConfig, Tag("gate")]
    | Annotated[StepRef, Tag("component")],
    Discriminator(_step_kind),
]


class WorkflowConfig(_Model):
    """``workflow:``: named steps joined by typed events (see :mod:`seamkit.workflows`), validated
    with the file; ``seamkit run`` runs it instead of the entry agent."""

    name: str | None = Field(default=None, description="Workflow name; default: the file name without extension")
    outcomes: list[str] = Field(default_factory=list, description="Event types the workflow ends with")
    external: list[str] = Field(default_factory=list, description="Event types that arrive from outside")
    max_concurrency: int = Field(default=4, ge=1, description="Steps running at once (fan-out branches included)")
    max_activations: int = Field(
        default=10_000, ge=1, description="Steps one run may run in all (a cycle that never ends stops there)",
    )
    memory: MemoryRef | None = Field(
        default=None,
        description="A memory component with an embedding model and a vector store (vector_memory): the steps "
        "find them as the services 'embeddings' and 'vectors' (recall, remember)",
    )
    steps: dict[str, StepEntry] = Field(
        description="The steps by name: {agent: NAME} | {tool: {...}} | {capability: {...}} | {gate: QUESTION} | "
        "{use: STEP}, each with consumes, emits and join",
    )

    @field_validator("outcomes", "external", mode="before", json_schema_input_type=str | list[str])
    @classmethod
    def _one_type(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value  # `outcomes: done` means [done]

ApprovalPolicyName = Literal["never", "every_call", "once_per_run", "once_per_thread"]


class PromptConfig(_Model):
    """A system prompt: ``template`` with ``{{variables}}``, and optionally ``id`` and ``version``
    (recorded with every run). Written as a plain string it is the template alone."""

    template: str = Field(description="Prompt text; {{name}} marks a variable")
    id: str | None = Field(default=None, description="Prompt id, recorded with every run")
    version: str | None = Field(default=None, description="Prompt version, recorded with every run")


class OutputConfig(_Model):
    """Structured output: the final answer must be JSON valid against ``json_schema``."""

    json_schema: dict[str, Any] = Field(description="JSON Schema (draft 2020-12) of the final answer")


class Settings(_Model):
    """Model settings; omitted = the provider's default."""

    temperature: float | None = Field(
        default=None, ge=0, le=10, allow_inf_nan=False, description="Sampling temperature (finite, 0 to 10)"
    )
    max_tokens: int | None = Field(default=None, ge=1, description="Most output tokens per model turn")
    seed: int | None = Field(
        default=None, ge=-(2**63), le=2**64 - 1, description="Sampling seed (64-bit), where the provider supports one"
    )


def _not_boolean(value: Any, what: str) -> Any:
    """``value``, unless it is ``true``/``false``: a count or a limit is no boolean (pydantic would
    read ``true`` as 1). Raises ``ValueError`` saying ``what`` it is."""
    if isinstance(value, bool):
        raise ValueError(f"{what}, not true/false")
    return value


class AgentToolRef(_Model):
    """An agent of the file offered as a tool (``{agent: NAME, ...}`` in ``tools:``), see
    :func:`seamkit._agent.as_tool.agent_tool`: each call runs it as a child run."""

    agent: str = Field(description="Name of the agent (a key of 'agents:') to offer as a tool")
    name: str | None = Field(default=None, description="Tool name; default: the agent's name")
    description: str | None = Field(
        default=None, description="What the model reads to decide when to call it: what the agent does and returns"
    )
    max_depth: int = Field(
        default=3, ge=1,
        description="Deepest child run this tool starts (a child of a top-level run is at depth 1); deeper calls "
        "get an error result",
    )
    max_steps: int | None = Field(default=None, ge=1, description="The child's model turns (default: its own)")
    input: dict[str, Any] | None = Field(
        default=None,
        description="JSON Schema (type: object) of the tool's arguments; default: {task: string}. The validated "
        "arguments are handed to the agent as JSON text",
    )
    middlewares: list[MiddlewareRef] = Field(
        default_factory=list,
        description="Extra middleware components wrapping only the child (e.g. a budget: this tool's budget share)",
    )

    @field_validator("max_depth", "max_steps", mode="before")
    @classmethod
    def _count_not_boolean(cls, value: Any) -> Any:
        return _not_boolean(value, "a count is a whole number of at least 1")
    queue: bool | ChildQueueConfig = Field(
        default=False,
        description="Run each child on a worker queue when a worker runs the caller (seamkit-celery): true for "
        f"the queue {DEFAULT_CHILD_QUEUE!r}, {{name: QUEUE}} for another; elsewhere children run in-process. The "
        "child's agent must checkpoint into a store every worker shares",
    )

    def queue_name(self) -> str | None:
        """The queue the children go to, ``None`` for in-process."""
        return _queue_name(self.queue)


def _tool_kind(value: Any) -> str:
    """Which kind of ``tools:`` entry ``value`` is: an agent (``agent:`` key) or a component."""
    if isinstance(value, Mapping) and "agent" in value and "use" not in value:
        return "agent_tool"
    if isinstance(value, AgentToolRef):
        return "agent_tool"
    return "component"


#: A ``tools:`` entry: a tool component, or ``{agent: NAME, ...}``.
ToolEntry = Annotated[
    Annotated[ToolRef, Tag("component")] | Annotated[AgentToolRef, Tag("agent_tool")],
    Discriminator(_tool_kind),
]

HandoffFilterName = Literal["all", "no_tools", "user_only", "last_user"]


class HandoffRef(_Model):
    """A handoff target (``handoffs:``): an agent of the file, or ``{agent: NAME, filter: RULE}``,
    see :mod:`seamkit._agent.handoff`."""

    agent: str = Field(description="Name of the agent (a key of 'agents:') that may take the conversation over")
    filter: HandoffFilterName = Field(
        default="all",
        description="What the target sees of the conversation before the handoff: all, no_tools (without tool "
        "calls and results), user_only (the person's messages), last_user (the person's last message)",
    )
    description: str | None = Field(
        default=None, description="What the model reads to decide when to transfer (the transfer_to_NAME tool)"
    )

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, value: Any) -> Any:
        return {"agent": value} if isinstance(value, str) else value


class ContextConfig(_Model):
    """How each request is built (see :class:`seamkit._request.RequestBuilder`): a cache-stable
    prefix (prompt, grounding, output schema) and a tail compacted to ``budget_tokens``."""

    grounding: MemoryRef | None = Field(
        default=None, description="A memory component retrieving grounding items (a grounding source)"
    )
    k: int = Field(default=5, ge=1, description="Grounding items to retrieve")
    admit: Literal["recorded", "all"] = Field(
        default="recorded",
        description="Which items reach the model: 'recorded' refuses items a model wrote (origin inferred); 'all'",
    )
    reground_every_turn: bool = Field(
        default=False, description="Re-retrieve and re-render the grounding on every turn (the prefix then changes)"
    )
    include_schema: bool = Field(default=True, description="Write the output schema into the prefix")
    compactor: CompactorRef | None = Field(
        default=None, description="A compactor component fitting the tail into budget_tokens"
    )
    budget_tokens: int | None = Field(default=None, ge=1, description="Token budget of each request (estimate)")
    record_grounding: bool = Field(
        default=False, description="Store the admitted grounding items of every retrieval in the checkpoints store"
    )

    @model_validator(mode="after")
    def _compactor_needs_budget(self) -> ContextConfig:
        if self.compactor is not None and self.budget_tokens is None:
            raise ValueError("a compactor needs budget_tokens (the budget it compacts each request to)")
        return self


class AgentConfig(_Model):
    """The agent: see :class:`seamkit._agent.agent.Agent` for the meaning of each field."""

    name: str | None = Field(default=None, description="Agent name; default: the file name without extension")
    # not ge=1 here: the capability compiler owns that check, so that a bad version is reported
    # with its stable code (INVALID_AGENT_VERSION); the schema still tells editors the minimum
    version: int = Field(
        default=1, strict=True, json_schema_extra={"minimum": 1},
        description="Agent version (a positive integer) that the capabilities are compiled for",
    )
    model: ProviderRef = Field(description="The model provider component")
    prompt: PromptConfig | None = Field(default=None, description="System prompt: text or {id, version, template}")
    tools: list[ToolEntry] = Field(
        default_factory=list,
        description="Tool components, and agents of the file as tools ({agent: NAME, description, max_depth}); "
        "names must be unique",
    )
    output: OutputConfig | None = Field(
        default=None, description="'text' (default) for free text, or {json_schema: {...}}"
    )
    tool_choice: str = Field(
        default="auto", description="First turn's tool choice: auto, required, none or a tool name"
    )
    reset_tool_choice: bool | Literal["auto", "none"] = Field(
        default=True,
        description="After a tool batch, return a forced tool_choice to auto (true, 'auto'), or to none "
        "('none': the forced call is the only one wanted, the next turn answers without tools)",
    )
    max_steps: int = Field(default=10, ge=1, description="Model turns before the run stops")
    max_parallel_tools: int = Field(default=4, ge=1, description="Tool calls of one turn run at most this many at once")
    parallel_side_effects: bool = Field(
        default=False,
        description="Let side-effecting tool calls of one turn run concurrently; by default they run one after "
        "another, in the model's order (read-only calls always run concurrently)",
    )
    settings: Settings = Field(default_factory=Settings, description="Model settings")
    middlewares: list[MiddlewareRef] = Field(
        default_factory=list, description="Middleware components, outermost first"
    )
    checkpoints: StoreRef | None = Field(
        default=None,
        description="Store for durable runs (checkpoints, effect receipts). Absent: the embedded default "
        "(sqlite at .seamkit/seamkit.db in the current directory) when seamkit-sqlite is installed; "
        "null: no checkpoints",
    )
    context: ContextConfig | None = Field(
        default=None,
        description="Request building: grounding, reground_every_turn, compactor, budget_tokens (absent: the "
        "transcript is sent as it is)",
    )
    guardrails: list[GuardrailRef] = Field(
        default_factory=list,
        description="Guardrail components, each with 'at' (points), 'advisory' and 'parallel'; at a point they "
        "run in this order, a rewrite feeding the next",
    )
    capabilities: list[CapabilityRef] = Field(
        default_factory=list,
        description="Capability components (declared operations with facts, effects and confirmation), compiled "
        "together before any turn",
    )
    approvals: dict[str, ApprovalPolicyName] = Field(
        default_factory=dict,
        description="Tool name -> approval policy (never, every_call, once_per_run, once_per_thread); "
        "a call that needs approval suspends the run until `seamkit resume`",
    )
    handoffs: list[HandoffRef] = Field(
        default_factory=list,
        description="Agents of the file this one may hand the conversation to: NAME or {agent: NAME, filter: all | "
        "no_tools | user_only | last_user, description}",
    )
    max_tool_calls: int | None = Field(
        default=None, ge=1,
        description="Tool calls one run may make; at the limit the model answers without tools (stopped_early)",
    )
    max_tool_rounds: int | None = Field(
        default=None, ge=1,
        description="Model turns of one run that may call tools (below max_steps); at the limit the model answers "
        "without tools (stopped_early)",
    )
    disabled_tools: list[str] = Field(
        default_factory=list,
        description="Names of agent.tools not offered to the model; a call to one is answered as an unknown tool",
    )
    mode: Literal["answer", "gather"] = Field(
        default="answer",
        description="answer: run until the model answers; gather: one gathering decision, its tool results "
        "returned as a context block, no answer",
    )

    @field_validator("max_tool_calls", "max_tool_rounds", mode="before")
    @classmethod
    def _limit_not_boolean(cls, value: Any) -> Any:
        return _not_boolean(value, "a limit is a whole number of at least 1 (or null for none)")

    @field_validator("reset_tool_choice", mode="before")
    @classmethod
    def _reset_is_one_of(cls, value: Any) -> Any:
        # one problem for a wrong value, not one per alternative of the union
        if value is True or value is False or value in ("auto", "none"):
            return value
        raise ValueError(f"must be true, false, 'auto' or 'none', not {value!r}")

    @field_validator("max_steps", "max_parallel_tools", mode="before")
    @classmethod
    def _count_not_boolean(cls, value: Any) -> Any:
        return _not_boolean(value, "a count is a whole number of at least 1")

    @field_validator("name")
    @classmethod
    def _name_not_empty(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("the agent name is empty; give it a name, or remove 'name:' to use the file name")
        return value

    @field_validator("handoffs", mode="before", json_schema_input_type=list[str | HandoffRef])
    @classmethod
    def _handoff_names(cls, value: Any) -> Any:
        return value  # a bare name is read by HandoffRef itself; this tells the JSON Schema it is allowed

    @field_validator("prompt", mode="before", json_schema_input_type=str | PromptConfig | None)
    @classmethod
    def _prompt_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"template": value}
        if value is None or isinstance(value, Mapping | PromptConfig):
            return value
        raise ValueError("the prompt is a text, or a mapping {template: ..., id: ..., version: ...}")

    @field_validator("output", mode="before", json_schema_input_type=Literal["text"] | OutputConfig | None)
    @classmethod
    def _output_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value == "text":
                return None
            raise ValueError("output is 'text' (free text) or a mapping {json_schema: {...}}")
        return value


class Composition(_Model):
    """A validated composition file. ``seamkit``: format version (1). ``agent``: the agent (the
    entry agent ``seamkit run`` runs). ``agents``: more agents by name (each like ``agent:``),
    which agents use as tools (``tools: [{agent: NAME}]``) or hand conversations to
    (``handoffs: [NAME]``); names are unique across ``agent`` and ``agents``.

    ``file``: the YAML file (``None`` when read from text); ``base_dir``: the directory relative
    component paths were resolved against (the file's directory). ``position(path)`` gives the
    1-based line and column of a key path such as ``("agent", "model")``.
    """

    seamkit: Literal[1] = Field(description="Format version of this file; this seamkit reads version 1")
    agent: AgentConfig = Field(description="The agent (the entry agent)")
    agents: dict[str, AgentConfig] = Field(
        default_factory=dict,
        description="More agents by name, each like 'agent:'; used as tools ({agent: NAME}) and handoff targets",
    )
    workflow: WorkflowConfig | None = Field(
        default=None, description="A workflow of steps joined by typed events; seamkit run runs it",
    )
    _file: Path | None = PrivateAttr(default=None)
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    _values: dict[KeyPath, Position] = PrivateAttr(default_factory=dict)
    _keys: dict[KeyPath, Position] = PrivateAttr(default_factory=dict)
    _secret_paths: frozenset[KeyPath] = PrivateAttr(default=frozenset())
    _secrets: frozenset[str] = PrivateAttr(default=frozenset())
    _named_secrets: frozenset[str] = PrivateAttr(default=frozenset())  # from ${API_KEY}-like names
    _env_texts: frozenset[str] = PrivateAttr(default=frozenset())  # the values ${...} were put into, composed

    @property
    def file(self) -> Path | None:
        return self._file

    def secret_values(self) -> frozenset[str]:
        """The secrets among the values that ``${NAME}`` references took from the environment, to
        be masked in anything shown (the CLI scrubs them from its output, see
        :mod:`seamkit._cli.scrub`): those in a secret-named parameter (``api_key``, ``password``,
        ``headers``...) or a ``SecretStr`` field of a component, the rule that keeps them out of
        checkpoints, and those of a variable named like a secret (``${OPENAI_API_KEY}``, wherever
        it is used) (:func:`seamkit.composition._build.output_secrets`). Other environment values
        (a team name in the prompt, a folder, a limit) are configuration and shown as they are.
        A secret shorter than :data:`MIN_SECRET_LENGTH` is not listed itself but through the longer
        values it was put into: the whole composed value (``postgresql://user:g@127.0.0.1/db``)
        and its URL user-info (``user:g@``), see :func:`seamkit._plugins.redact.secret_contexts`;
        one that is a whole value on its own (``api_key: ${KEY}`` with ``KEY=e``) is not masked."""
        from seamkit.composition._build import output_secrets  # _build imports this module

        return output_secrets(self)

    def env_values(self) -> frozenset[str]:
        """Every value that ``${NAME}`` references took from the environment, secret or not, but
        those shorter than :data:`MIN_SECRET_LENGTH` and numbers and ``true``/``false``/``null``
        (which match too much text to tell a secret by)."""
        return frozenset(
            s for s in self._secrets if len(s) >= MIN_SECRET_LENGTH and not _LITERAL.fullmatch(s.strip())
        )

    def all_agents(self) -> dict[str, tuple[tuple[str | int, ...], AgentConfig]]:
        """Every agent by name, with its key path (``("agent",)`` or ``("agents", NAME)``), the
        entry agent first."""
        entry = self.agent.name or "agent"
        out: dict[str, tuple[tuple[str | int, ...], AgentConfig]] = {entry: (("agent",), self.agent)}
        for key, a in self.agents.items():
            out.setdefault(key, (("agents", key), a))
        return out

    @property
    def base_dir(self) -> Path:
        return self._base_dir

    def position(self, path: KeyPath) -> Position | None:
        """Where ``path``'s value was written (or its nearest written ancestor's)."""
        p = tuple(path)
        while True:
            if p in self._values:
                return self._values[p]
            if not p:
                return None
            p = p[:-1]
