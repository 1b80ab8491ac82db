"""Reading an eval suite (``seamkit eval SUITE.yaml``) into a validated :class:`Suite`.

.. code-block:: yaml

    version: 1                          # format version, required
    agent: ../quickstart.yaml           # a composition file, relative to this file
    agent_name: quickstart              # which agent of that file (default: its entry agent)
    concurrency: 4                      # attempts running at once (default 4)
    repeat: 1                           # attempts per case (default 1)
    budget: "0.50"                      # USD for the whole eval (agent runs + judge calls); optional
    middlewares: [{use: retry}]         # around the judge's model calls (traced, retried, charged)
    evaluators:                         # applied to every case
      - {use: contains, text: "391"}
    thresholds: {pass_rate: 0.9, evaluators: {contains: 1.0}, max_cost_usd: "0.10", max_p95_latency_s: 30}
    cases:
      - id: multiply                    # unique in the suite
        input: What is 17 times 23?     # a text, or [{role: user, content: ...}, ...]
        expected: {answer: 391}
        variables: {}                   # prompt template variables
        metadata: {}                    # free-form, shown in reports
        evaluators: [{use: output_equals}]
    cases_file: more_cases.jsonl        # optional: one case (same keys) per line

The YAML is read with the composition loader's machinery (:mod:`seamkit.composition._yaml`): the
same YAML-1.2-like rules, ``${ENV}`` references (masked as secrets), and every problem reported as
a :class:`~seamkit.errors.ConfigIssue` with file, line, column and key path, all of them at once
in one :class:`~seamkit.errors.ConfigError`: unknown keys, unknown evaluator or middleware names,
parameters an evaluator refuses, duplicate case ids, a missing agent file, thresholds naming no
evaluator of the suite. The agent's own composition is validated too (its problems are located
in its own file); it is built only when the suite runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator
from seamkit.errors import ConfigError, ConfigIssue, PluginError
from seamkit.plugin import YAML_MAX_DEPTH as MAX_DEPTH
from seamkit.plugin import (
    ComponentSlot,
    EvalCase,
    Evaluator,
    KeyPath,
    NestedSlot,
    Position,
    check_slot,
    clip,
    describe_value,
    did_you_mean,
    iter_slots,
    parse_yaml,
    pydantic_issues,
    shown,
)
from seamkit.plugin import (
    SlotCheckContext as Context,
)
from seamkit.values import EMPTY, FrozenDict, Message

if TYPE_CHECKING:
    from seamkit.composition import Composition
    from seamkit.plugin import Registry

__all__ = ["FORMAT_VERSION", "MAX_CASES_FILE_BYTES", "MAX_SUITE_BYTES", "Suite", "SuiteCase", "Thresholds",
           "load_suite"]

FORMAT_VERSION = 1
#: Largest suite file accepted, in bytes.
MAX_SUITE_BYTES = 4 * 1024 * 1024
#: Largest ``cases_file`` accepted, in bytes.
MAX_CASES_FILE_BYTES = 64 * 1024 * 1024

EvaluatorSlot = Annotated[NestedSlot, ComponentSlot("evaluator")]
MiddlewareSlot = Annotated[NestedSlot, ComponentSlot("middleware")]


def _usd(value: Any) -> Any:
    """A USD amount as an exact ``Decimal`` (``0.1`` written in YAML is 0.1, not 0.1000000000000000055)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float | str):
        try:
            d = Decimal(str(value).strip())
        except InvalidOperation:
            raise ValueError(f"expected an amount in USD such as \"0.50\", got {shown(value)}") from None
        if not d.is_finite():
            raise ValueError("expected a finite amount in USD")
        return d
    return value


def _depth(value: Any) -> int:
    """How deeply ``value`` (decoded JSON) nests lists and objects (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict | list):
            deepest = max(deepest, d + 1)
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return deepest


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageModel(_Strict):
    role: Literal["system", "user", "assistant"]
    content: str


class CaseModel(_Strict):
    id: str = Field(min_length=1, description="Unique in the suite")
    # discriminated, so a bad message is one problem, not also "Input should be a valid string"
    input: Annotated[Annotated[str, Tag("text")] | Annotated[list[MessageModel], Tag("messages")],
                     Discriminator(lambda v: "text" if isinstance(v, str) else "messages")] = Field(
        description="The task: a text, or messages")
    expected: Any = Field(default=None, description="What the evaluators compare with")
    variables: dict[str, Any] = Field(default_factory=dict, description="Prompt template variables")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free-form, shown in reports")
    evaluators: list[EvaluatorSlot] = Field(default_factory=list, description="This case's own evaluators")

    @field_validator("id", mode="before")
    @classmethod
    def _number_id(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("input", mode="before")
    @classmethod
    def _text_or_messages(cls, v: Any) -> Any:
        # one problem in the user's words, not one per member of the union keyed by pydantic's
        # type names ('input.str', 'input["list[MessageModel]"]')
        if not isinstance(v, str | list):
            raise ValueError("expected a text or a list of messages ({role: user, content: ...}), "
                             f"not {describe_value(v)}")
        return v

    @field_validator("input")
    @classmethod
    def _some_input(cls, v: Any) -> Any:
        if isinstance(v, list) and not v:
            raise ValueError("input needs at least one message")
        return v


class ThresholdsModel(_Strict):
    pass_rate: float | None = Field(default=None, ge=0, le=1,
                                    description="Least fraction of attempts whose every score passed")
    evaluators: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(
        default_factory=dict, description="Least pass rate per evaluator name")
    max_cost_usd: Decimal | None = Field(default=None, ge=0, description="Most total cost in USD")
    max_p95_latency_s: float | None = Field(default=None, gt=0, description="Most p95 latency of a run, seconds")

    _usd = field_validator("max_cost_usd", mode="before")(_usd)


class SuiteModel(_Strict):
    version: int
    agent: str = Field(min_length=1, description="Composition file, relative to the suite file")
    agent_name: str | None = Field(default=None, description="Which agent of the file (default: the entry agent)")
    concurrency: int = Field(default=4, ge=1, le=1000, description="Attempts running at once")
    repeat: int = Field(default=1, ge=1, le=10_000, description="Attempts per case")
    budget: Decimal | None = Field(default=None, gt=0, description="USD ceiling for the whole eval")
    middlewares: list[MiddlewareSlot] = Field(default_factory=list, description="Around the judge's model calls")
    evaluators: list[EvaluatorSlot] = Field(default_factory=list, description="Applied to every case")
    thresholds: ThresholdsModel | None = None
    cases: list[CaseModel] = Field(default_factory=list)
    cases_file: str | None = Field(default=None, description="JSONL file of more cases, relative to the suite file")

    _usd = field_validator("budget", mode="before")(_usd)


@dataclass(frozen=True, slots=True)
class Thresholds:
    """What the eval must reach (each ``None``/empty when not stated): ``pass_rate`` (fraction of
    attempts whose every score passed), ``evaluators`` (least pass rate per evaluator name),
    ``max_cost_usd`` (total, agent runs + judge calls), ``max_p95_latency_s``."""

    pass_rate: float | None = None
    evaluators: Mapping[str, float] = EMPTY
    max_cost_usd: Decimal | None = None
    max_p95_latency_s: float | None = None

    @property
    def stated(self) -> bool:
        return (self.pass_rate is not None or bool(self.evaluators) or self.max_cost_usd is not None
                or self.max_p95_latency_s is not None)


@dataclass(frozen=True, slots=True)
class SuiteCase:
    """A case and the evaluators judging it (the suite's, then its own)."""

    case: EvalCase
    evaluators: tuple[Evaluator, ...]


@dataclass(frozen=True, slots=True)
class Suite:
    """A validated suite: its ``file``, the agent's ``composition`` (validated, not built) and
    ``agent_name``, the cases in file order (``cases_file`` ones last), ``concurrency``,
    ``repeat``, the judge's ``middlewares`` (built), the eval's ``budget`` (USD or ``None``),
    the ``thresholds``, and ``secrets``: values its ``${ENV}`` references and the agent's took
    from the environment (masked in reports)."""

    file: Path
    composition: Composition
    agent_name: str
    cases: tuple[SuiteCase, ...]
    concurrency: int = 4
    repeat: int = 1
    middlewares: tuple[Any, ...] = ()
    budget: Decimal | None = None
    thresholds: Thresholds = field(default_factory=Thresholds)
    secrets: frozenset[str] = frozenset()

    @property
    def evaluator_names(self) -> frozenset[str]:
        return frozenset(str(e.name) for c in self.cases for e in c.evaluators)


def load_suite(path: str | Path, *, registry: Registry | None = None,
               env: Mapping[str, str] | None = None) -> Suite:
    """Read and validate the suite at ``path``, load (not build) its agent's composition, and
    build its evaluators and judge middlewares.

    Raises :class:`~seamkit.errors.ConfigError` listing every problem, each located (file, line,
    column, key path); a problem in the agent's composition is located in that file."""
    from seamkit.plugin import get_registry

    reg = registry if registry is not None else get_registry()
    p = Path(path)
    text = _read(p, MAX_SUITE_BYTES)
    doc = parse_yaml(text, env)
    ctx = Context(str(p), doc.values, doc.keys, doc.secret_paths, doc.secrets, set(doc.poisoned),
                  p.resolve().parent, flagged=set(doc.flagged), aliases=doc.aliases)
    for pr in doc.problems:
        ctx.add(pr.message, pr.path, pr.position)
    if doc.empty:
        ctx.add(f"the file is empty; a suite starts with 'version: {FORMAT_VERSION}' and has 'agent:' and 'cases:'",
                (), Position(1, 1))
    data = doc.data
    if doc.empty or not isinstance(data, Mapping):
        if not doc.empty and () not in ctx.poisoned and not ctx.issues:
            ctx.add(f"the top level must be a mapping with 'version: {FORMAT_VERSION}', 'agent:' and 'cases:'", ())
        raise ConfigError(_sorted(ctx.issues))
    _check_version(ctx, data)
    slots_ok = _check_slots(ctx, reg, data, ())
    model: SuiteModel | None = None
    try:
        model = SuiteModel.model_validate(data)
    except pydantic.ValidationError as exc:
        pydantic_issues(ctx, exc, data, (), SuiteModel)
    if model is None:
        raise ConfigError(_sorted(ctx.issues))
    # the rest is checked too, so that every problem is reported at once
    _check_case_ids(ctx, model.cases, ())
    composition = _load_agent(ctx, model, reg, env)
    agent_name = _agent_name(ctx, model, composition)
    extra: list[tuple[CaseModel, Context, KeyPath]] = []
    if model.cases_file is not None:
        extra = _load_cases_file(ctx, reg, model, env)
    if not model.cases and not extra and not ctx.issues:
        ctx.add("the suite has no cases: add 'cases:' (or 'cases_file:')", (), ctx.value_position(()))
    if ctx.issues or not slots_ok:
        if slots_ok and model.cases_file is None:
            # the thresholds' evaluator names too, so that every problem is reported at once: by
            # the names the (valid) evaluators are declared with, ``name:`` else the registered
            # name (an evaluator's default name), as nothing is built while the suite has problems
            declared = [*model.evaluators, *(e for c in model.cases for e in c.evaluators)]
            _check_threshold_names(ctx, model.thresholds, [str(e.params.get("name") or e.use) for e in declared])
        raise ConfigError(_sorted(ctx.issues))
    shared = tuple(_build_slots(ctx, reg, "evaluator", model.evaluators, ("evaluators",)))
    middlewares = tuple(_build_slots(ctx, reg, "middleware", model.middlewares, ("middlewares",)))
    cases: list[SuiteCase] = []
    for i, c in enumerate(model.cases):
        own = _build_slots(ctx, reg, "evaluator", c.evaluators, ("cases", i, "evaluators"))
        cases.append(SuiteCase(_case(c), (*shared, *own)))
    for c, cctx, base in extra:
        own = _build_slots(cctx, reg, "evaluator", c.evaluators, (*base, "evaluators"))
        cases.append(SuiteCase(_case(c), (*shared, *own)))
    for cctx in {id(cctx): cctx for _, cctx, _ in extra}.values():  # the cases file's context, once
        ctx.issues.extend(cctx.issues)
    thresholds = _thresholds(ctx, model.thresholds, cases)
    if ctx.issues:
        raise ConfigError(_sorted(ctx.issues))
    # a report is kept and shared: every value from the environment is masked in it, secret or not
    secrets = frozenset(doc.secrets) | (composition.env_values() if composition is not None else frozenset())
    assert composition is not None and agent_name is not None
    return Suite(p, composition, agent_name, tuple(cases), model.concurrency, model.repeat, middlewares,
                 model.budget, thresholds, secrets)


# -- pieces ------------------------------------------------------------------------------------------


def _read(p: Path, limit: int) -> str:
    try:
        with p.open("rb") as f:
            raw = f.read(limit + 1)
    except OSError as exc:
        raise ConfigError([ConfigIssue(f"cannot read the file: {exc.strerror or exc}", "", str(p))]) from None
    if len(raw) > limit:
        raise ConfigError([ConfigIssue(f"the file is larger than {limit // (1024 * 1024)} MiB", "", str(p))])
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        col = exc.start - (before.rfind(b"\n") + 1) + 1
        raise ConfigError([ConfigIssue("the file is not valid UTF-8 text", "", str(p), line, col)]) from None


def _sorted(issues: Sequence[ConfigIssue]) -> list[ConfigIssue]:
    return sorted(issues, key=lambda i: (i.file or "", i.line or 0, i.column or 0))


def _check_version(ctx: Context, data: Mapping[str, Any]) -> None:
    if "version" not in data:
        ctx.add(f"missing format version: add 'version: {FORMAT_VERSION}' at the top of the file", (),
                ctx.value_position(()))
        ctx.poisoned.add(("version",))
        return
    v = data["version"]
    if ctx.is_poisoned(("version",)):
        return
    if v != FORMAT_VERSION or isinstance(v, bool):
        ctx.add(f"unsupported suite format version {shown(v)}; this seamkit-evals reads 'version: "
                f"{FORMAT_VERSION}' (the number, unquoted)", ("version",))
        ctx.poisoned.add(("version",))


def _check_slots(ctx: Context, reg: Registry, data: Any, base: KeyPath) -> bool:
    """Resolve and validate every evaluator and middleware slot in raw ``data`` (unknown names
    with close names, parameters the component refuses); problems go to ``ctx``."""
    ok = True
    for path, slot, raw in iter_slots(SuiteModel if not base else CaseModel, data, base):
        if ctx.is_poisoned(path) or path in ctx.flagged:
            continue
        _, _, slot_ok = check_slot(ctx, reg, slot, raw, path)
        ok = ok and slot_ok
    return ok


def _build_slots(ctx: Context, reg: Registry, kind: str, slots: Sequence[NestedSlot], base: KeyPath) -> list[Any]:
    """Build each slot (validated before); a factory that refuses its configuration or fails is
    a located issue."""
    out: list[Any] = []
    for i, slot in enumerate(slots):
        path = (*base, i)
        try:
            out.append(reg.resolve(kind, slot.use, slot.from_).build(slot.params))
        except ConfigError as exc:
            for issue in exc.issues:
                sub: KeyPath = (*path, *(el for el in issue.path.split(".") if el)) if issue.path else path
                ctx.add(f"{kind} {shown(slot.use)}: {issue.message}", sub)
        except PluginError as exc:
            ctx.add(f"{kind} {shown(slot.use)} cannot be built: {exc}", (*path, "use"))
        except Exception as exc:  # a factory's own bug: located, not a traceback
            ctx.add(f"{kind} {shown(slot.use)} cannot be built: {type(exc).__name__}: {clip(str(exc))}", (*path, "use"))
    return out


def _check_case_ids(ctx: Context, cases: Sequence[CaseModel], base: KeyPath,
                    seen: dict[str, str] | None = None, where: str = "") -> dict[str, str]:
    seen = {} if seen is None else seen
    for i, c in enumerate(cases):
        path = (*base, "cases", i, "id") if not where else (*base, "id")
        if c.id in seen:
            ctx.add(f"duplicate case id {shown(c.id)} (first at {seen[c.id]}); case ids must be unique", path)
        else:
            pos = ctx.value_position(path)
            seen[c.id] = where or (f"line {pos.line}" if pos is not None else "an earlier case")
    return seen


def _load_agent(ctx: Context, model: SuiteModel, reg: Registry, env: Mapping[str, str] | None) -> Composition | None:
    from seamkit.composition import load_composition

    agent_path = (ctx.base_dir / model.agent)
    if not agent_path.is_file():
        what = "is a directory, not a composition file" if agent_path.is_dir() else "does not exist"
        ctx.add(f"the agent file {shown(str(agent_path))} {what} (the path is relative to the suite file)", ("agent",))
        return None
    try:
        return load_composition(agent_path, registry=reg, env=env)
    except ConfigError as exc:  # located in the agent's own file
        ctx.issues.extend(exc.issues)
        return None


def _agent_name(ctx: Context, model: SuiteModel, composition: Composition | None) -> str | None:
    if composition is None:
        return None
    agents = composition.all_agents()
    if model.agent_name is None:
        return next(iter(agents))
    if model.agent_name not in agents:
        ctx.add(f"no agent {shown(model.agent_name)} in {model.agent}{did_you_mean(model.agent_name, list(agents))} "
                f"(agents: {', '.join(agents)})", ("agent_name",))
        return None
    return model.agent_name


def _load_cases_file(ctx: Context, reg: Registry, model: SuiteModel,
                     env: Mapping[str, str] | None) -> list[tuple[CaseModel, Context, KeyPath]]:
    """The cases of ``cases_file`` (JSONL, one case object a line; blank lines skipped), each with
    the context locating its problems at its line."""
    assert model.cases_file is not None
    p = ctx.base_dir / model.cases_file
    if not p.is_file():
        what = "is a directory, not a file of cases" if p.is_dir() else "does not exist"
        ctx.add(f"the cases file {shown(str(p))} {what} (the path is relative to the suite file)", ("cases_file",))
        return []
    try:
        text = _read(p, MAX_CASES_FILE_BYTES)
    except ConfigError as exc:
        ctx.issues.extend(exc.issues)
        return []
    # the suite's own case ids, with where they are (already checked among themselves)
    seen = _check_case_ids(Context(ctx.file, ctx.values, ctx.keys, set(), set()), model.cases, ())
    # named: a duplicate is reported in the cases file, where a bare "line 4" would read as its own
    suite_name = Path(ctx.file).name if ctx.file else "the suite"
    seen = {k: f"{suite_name} {v}" if v.startswith("line ") else v for k, v in seen.items()}
    out: list[tuple[CaseModel, Context, KeyPath]] = []
    values: dict[KeyPath, Position] = {}
    lctx = Context(str(p), values, {}, set(), set(), base_dir=p.resolve().parent)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        base: KeyPath = (lineno,)
        values[base] = Position(lineno, 1)
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            lctx.add(f"not a JSON object: {exc.msg}", base, Position(lineno, exc.colno))
            continue
        except RecursionError:  # "[[[[...": json.loads recurses
            lctx.add(f"nested more than {MAX_DEPTH} levels deep", base)
            continue
        if _depth(data) > MAX_DEPTH:  # as deep as the YAML loader allows, so the reports can render it
            lctx.add(f"nested more than {MAX_DEPTH} levels deep", base)
            continue
        if not isinstance(data, dict):
            lctx.add("each line of a cases file is one case, a JSON object with 'id' and 'input'", base)
            continue
        slots_ok = _check_slots(lctx, reg, data, base)
        try:
            case = CaseModel.model_validate(data)
        except pydantic.ValidationError as exc:
            pydantic_issues(lctx, exc, data, base, CaseModel)
            continue
        if not slots_ok:
            continue
        _check_case_ids(lctx, [case], base, seen, where=f"{p.name} line {lineno}")
        out.append((case, lctx, base))
    ctx.issues.extend(lctx.issues)
    lctx.issues.clear()
    return out


def _case(c: CaseModel) -> EvalCase:
    task: str | tuple[Message, ...]
    if isinstance(c.input, str):
        task = c.input
    else:
        make = {"system": Message.system, "user": Message.user, "assistant": Message.assistant}
        task = tuple(make[m.role](m.content) for m in c.input)
    return EvalCase(c.id, task, c.expected, FrozenDict(c.variables), FrozenDict(c.metadata))


def _thresholds(ctx: Context, t: ThresholdsModel | None, cases: Sequence[SuiteCase]) -> Thresholds:
    if t is None:
        return Thresholds()
    _check_threshold_names(ctx, t, [str(e.name) for c in cases for e in c.evaluators])
    return Thresholds(t.pass_rate, FrozenDict(t.evaluators), t.max_cost_usd, t.max_p95_latency_s)


def _check_threshold_names(ctx: Context, t: ThresholdsModel | None, evaluator_names: Sequence[str]) -> None:
    """A located problem for each evaluator ``thresholds.evaluators`` names that no case uses."""
    if t is None:
        return
    names = sorted(set(evaluator_names))
    for name in t.evaluators:
        if name not in names:
            listed = ", ".join(names) if names else "the suite has none"
            ctx.add(f"thresholds name the evaluator {shown(name)}, which no case of the suite uses"
                    f"{did_you_mean(name, names)} (evaluators: {listed})", ("thresholds", "evaluators", name),
                    at_key=True)
