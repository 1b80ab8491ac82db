"""``AgentDefinition``: what an agent is (its fields, checked and completed when it is built), apart
from how it runs. :class:`~seamkit._agent.agent.Agent` adds the entry points (``run``, ``stream``,
``resume``, ...); the run machinery (:mod:`seamkit._agent.loop`, :mod:`seamkit._agent.kernel`) reads
the definition, so it imports this module and not the one that imports it."""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from seamkit._agent.controls import MODES, Mode
from seamkit._agent.guarding import guards_by_point
from seamkit._agent.handoff import Handoff
from seamkit._agent.output import OutputSpec, output_spec
from seamkit._agent.prompt import Prompt
from seamkit._guardrails import Guard
from seamkit._middleware import Middleware
from seamkit._ports import LLMPort, ObserverPort, ToolPort
from seamkit._runtime.invoker import Invoker
from seamkit._tools.registry import ToolRegistry
from seamkit.values import EMPTY, FrozenDict, Message, freeze

if TYPE_CHECKING:
    from seamkit._durability.approvals import Decision
    from seamkit._request.builder import RequestBuilder
    from seamkit.capabilities import CompiledAgent

__all__ = ["AgentDefinition"]


@contextlib.contextmanager
def _argument(name: str) -> Iterator[None]:
    """A plain ``TypeError``/``ValueError`` raised while ``name`` is taken becomes an
    :class:`~seamkit.errors.AgentDefinitionError` saying which argument it is about."""
    from seamkit.errors import AgentDefinitionError, SeamkitError

    try:
        yield
    except (TypeError, ValueError) as exc:
        if isinstance(exc, SeamkitError):
            raise
        raise AgentDefinitionError(f"{name}: {exc}") from exc


@dataclass(frozen=True)
class AgentDefinition:
    """The fields of an :class:`~seamkit._agent.agent.Agent` (documented there) and what is derived
    from them when it is built; every agent is an ``Agent``, which adds how it runs."""


    model: LLMPort
    name: str = "agent"
    prompt: Prompt | str | None = None
    tools: tuple[ToolPort, ...] = ()
    output: Any = None
    middlewares: tuple[Middleware, ...] = ()
    tool_choice: str = "auto"
    reset_tool_choice: bool | Literal["auto", "none"] = True
    max_steps: int = 10
    max_parallel_tools: int = 4
    parallel_side_effects: bool = False
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    model_extra: FrozenDict = EMPTY
    observers: tuple[ObserverPort, ...] = ()
    checkpointer: Any = None
    approvals: Mapping[str, str] = EMPTY
    request_builder: RequestBuilder | None = None
    guardrails: tuple[Any, ...] = ()
    capabilities: CompiledAgent | None = None
    capability_policy: Any = None
    capability_ports: Mapping[str, Any] = EMPTY
    handoffs: tuple[Handoff, ...] = ()
    _handoff_tools: Mapping[str, Handoff] = field(init=False, repr=False, compare=False)
    max_tool_calls: int | None = None
    max_tool_rounds: int | None = None
    disabled_tools: Collection[str] = frozenset()
    mode: Mode = "answer"
    _invoker: Invoker = field(init=False, repr=False, compare=False)
    _output: OutputSpec | None = field(init=False, repr=False, compare=False)
    _system: Message | None = field(init=False, repr=False, compare=False)
    _guards: Mapping[str, tuple[Guard, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from seamkit._agent.arguments import check_arguments
        from seamkit.errors import AgentDefinitionError

        check_arguments(self)  # wrong types: AgentDefinitionError naming the argument and what it takes
        for name in ("tools", "middlewares", "observers", "guardrails", "handoffs"):
            v = getattr(self, name)
            if type(v) is not tuple:
                object.__setattr__(self, name, tuple(v))
        if type(self.model_extra) is not FrozenDict:
            object.__setattr__(self, "model_extra", freeze(self.model_extra))
        if type(self.approvals) is not FrozenDict:
            object.__setattr__(self, "approvals", freeze(self.approvals))
        if self.checkpointer is not None:
            from seamkit._durability.checkpointer import Checkpointer

            if not isinstance(self.checkpointer, Checkpointer):
                with _argument("checkpointer"):
                    object.__setattr__(self, "checkpointer", Checkpointer(self.checkpointer))
        if not isinstance(self.model, LLMPort):
            from seamkit._plugins.ports_check import kind_port, port_problems

            port = kind_port("provider")
            assert port is not None
            problems = "; ".join(port_problems(self.model, port)) or "not an LLMPort"
            raise AgentDefinitionError(
                f"model must implement {port.label} (provider, model, stream(), chat()); "
                f"{type(self.model).__name__} does not: {problems}"
            )
        if self.capabilities is not None:
            from seamkit.capabilities import CompiledAgent

            if not isinstance(self.capabilities, CompiledAgent):
                raise TypeError("capabilities must be a CompiledAgent (seamkit.capabilities.compile_agent) or None, "
                                f"got {type(self.capabilities).__name__}")
            clash = [name for name, v in (("tools", self.tools), ("output", self.output),
                                          ("guardrails", self.guardrails), ("request_builder", self.request_builder))
                     if v]
            if clash:
                raise ValueError(f"an agent with capabilities has no {', '.join(clash)}: the kernel plans and writes "
                                 "each request itself (give the capabilities ports instead of tools)")
            if self.capability_policy is not None and not callable(self.capability_policy):
                raise TypeError("capability_policy must be a function (capability, input, facts) -> reason | None")
        if type(self.capability_ports) is not FrozenDict:
            object.__setattr__(self, "capability_ports", FrozenDict(self.capability_ports))
        if self.max_steps < 1:
            raise AgentDefinitionError(f"max_steps must be at least 1, got {self.max_steps}")
        if self.max_parallel_tools < 1:
            raise AgentDefinitionError(f"max_parallel_tools must be at least 1, got {self.max_parallel_tools}")
        with _argument("tools"):
            every_tool = ToolRegistry(self.tools)
        registry = self._controls(every_tool)
        object.__setattr__(self, "_handoff_tools", self._adopt_handoffs(registry))
        if self.tool_choice == "required" and not registry:
            raise ValueError("tool_choice 'required' needs at least one tool")
        if self.tool_choice not in ("auto", "required", "none") and self.tool_choice not in registry:
            raise ValueError(f"tool_choice {self.tool_choice!r} names no tool of this agent")
        if self.approvals:
            from seamkit._durability.approvals import APPROVAL_POLICIES

            for tool_name, policy in self.approvals.items():
                if policy not in APPROVAL_POLICIES:
                    allowed = ", ".join(APPROVAL_POLICIES)
                    raise ValueError(f"approval policy for {tool_name!r} must be one of {allowed}, got {policy!r}")
                if tool_name not in every_tool:  # a disabled tool may keep its policy
                    raise ValueError(f"approvals name {tool_name!r}, which is not a tool of this agent")
            if self.checkpointer is None and any(p != "never" for p in self.approvals.values()):
                raise ValueError("approvals need a checkpointer: a run waiting for a person is suspended durably")
        with _argument("guardrails"):
            guards = tuple(g if isinstance(g, Guard) else Guard(g) for g in self.guardrails)
        object.__setattr__(self, "guardrails", guards)
        object.__setattr__(self, "_guards", guards_by_point(guards))
        object.__setattr__(self, "_invoker", Invoker(self.model, registry, self.middlewares))
        object.__setattr__(self, "_output", output_spec(self.output))
        if isinstance(self.prompt, str) and Prompt(self.prompt).variables:
            # a plain string with {{variables}} is a template too
            object.__setattr__(self, "prompt", Prompt(self.prompt, id=self.name))
        static = self.prompt if isinstance(self.prompt, str) else None
        if isinstance(self.prompt, Prompt) and not self.prompt.variables:
            static = self.prompt.template
        object.__setattr__(self, "_system", Message.system(static) if static is not None else None)
        if self.request_builder is not None:
            self._adopt_builder(self.request_builder)

    def _adopt_handoffs(self, registry: ToolRegistry) -> Mapping[str, Handoff]:
        """The handoffs as :class:`Handoff` values, their ``transfer_to_<name>`` tools added to
        ``registry``; tool name -> handoff."""
        if not self.handoffs:
            return EMPTY
        from seamkit._agent.handoff import HandoffTool, as_handoff

        if self.capabilities is not None:
            raise ValueError("an agent with capabilities has no handoffs: the kernel plans each turn itself")
        handoffs = tuple(as_handoff(h) for h in self.handoffs)
        object.__setattr__(self, "handoffs", handoffs)
        table: dict[str, Handoff] = {}
        for h in handoffs:
            if isinstance(h.agent.prompt, Prompt) and h.agent.prompt.variables:
                raise ValueError(f"handoff target {h.agent.name!r} has a prompt with variables "
                                 f"({', '.join(sorted(h.agent.prompt.variables))}); a target's prompt is used as "
                                 "written: give it one without {{variables}}")
            tool = HandoffTool(h)
            registry.add(tool)  # ValueError for a second handoff to one name, or a tool of that name
            table[tool.schema.name] = h
        return table
    def _controls(self, tools: ToolRegistry) -> ToolRegistry:
        """Check the tool-loop controls; returns the registry of the tools offered (``tools``
        less the disabled ones)."""
        for name in ("max_tool_calls", "max_tool_rounds"):
            v = getattr(self, name)
            if v is not None and (type(v) is not int or v < 1):
                raise ValueError(f"{name} must be a positive integer or None, got {v!r:.40}")
        if self.max_tool_rounds is not None and self.max_tool_rounds >= self.max_steps:
            raise ValueError(f"max_tool_rounds ({self.max_tool_rounds}) must be below max_steps ({self.max_steps}): "
                             "the answer after the last tool round needs a step of its own")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r:.40}")
        if self.mode == "gather" and (self.output is not None or self.capabilities is not None):
            what = "an output type" if self.output is not None else "capabilities"
            raise ValueError(f"gather mode returns a context block, not an answer: it takes no {what}")
        disabled = self.disabled_tools
        if isinstance(disabled, str) or not all(isinstance(n, str) for n in disabled):
            raise TypeError("disabled_tools must be a collection of tool names")
        if type(disabled) is not frozenset:
            disabled = frozenset(disabled)
            object.__setattr__(self, "disabled_tools", disabled)
        if not disabled:
            return tools
        unknown = sorted(n for n in disabled if n not in tools)
        if unknown:
            raise ValueError(f"disabled_tools name {', '.join(map(repr, unknown))}, which "
                             f"{'is' if len(unknown) == 1 else 'are'} not a tool of this agent")
        if self.tool_choice in disabled:
            raise ValueError(f"tool_choice {self.tool_choice!r} names a disabled tool")
        return ToolRegistry(t for t in tools if t.schema.name not in disabled)

    def _adopt_builder(self, builder: RequestBuilder) -> None:
        import dataclasses

        from seamkit._request.builder import RequestBuilder

        if not isinstance(builder, RequestBuilder):
            raise TypeError(f"request_builder must be a RequestBuilder, got {type(builder).__name__}")
        if self.prompt is not None:
            if builder.prompt is not None:
                raise ValueError("set the prompt on the agent or on its request_builder, not both")
            prompt = self.prompt if isinstance(self.prompt, Prompt) else Prompt(self.prompt, id=self.name)
            object.__setattr__(self, "request_builder", dataclasses.replace(builder, prompt=prompt))
        object.__setattr__(self, "_system", None)

    @property
    def invoker(self) -> Invoker:
        return self._invoker

    @property
    def output_spec(self) -> OutputSpec | None:
        return self._output

    def _system_text(self, variables: Mapping[str, Any] | None) -> str | None:
        p = self.prompt
        if p is None:
            return None
        if isinstance(p, str):
            p = Prompt(p, id=self.name)
        return p.render(variables)


    def _holder(self, run_id: str, state: Mapping[str, Any]) -> AgentDefinition:
        """The agent holding ``run_id``'s conversation (this one, or a handoff target); raises
        :class:`~seamkit.errors.RunNotResumable` when it is not reachable from this agent."""
        from seamkit._agent.handoff import find_agent

        handoffs = state.get("handoffs")
        if not handoffs:
            return self
        name = str(handoffs[-1]["to"])
        holder = find_agent(self, name)
        if holder is None:
            from seamkit.errors import RunNotResumable

            raise RunNotResumable(run_id, f"agent {name!r} holds the conversation, and it is not a handoff target "
                                  f"of agent {self.name!r} (resume it with the agent the run started with)")
        return holder

    def _check_decisions(self, state: Mapping[str, Any], decisions: Mapping[str, Decision]) -> None:
        pending = {p.call_id: p for p in state.get("pending_approvals") or ()}
        for call_id, d in decisions.items():
            p = pending.get(call_id)
            if p is None:
                raise ValueError(f"no pending tool call {call_id!r}; pending: {', '.join(pending) or 'none'}")
            tool = self.invoker.tools.get(p.tool)
            if d.approved and tool is None:
                raise ValueError(f"call {call_id!r} is for the tool {p.tool!r}, which this agent does not have")
            if d.arguments is not None and tool is not None:
                tool.validate(d.arguments)
