"""What the seamkit-evals tests share: attempts made from real runs or results, an EvalContext,
and building evaluators through the registry from YAML text with located config errors."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from seamkit._agent.result import AgentResult
from seamkit._evals import Attempt, EvalCase, EvalContext
from seamkit._plugins.registry import get_registry
from seamkit.composition._check import Context, _ref_class, check_slot
from seamkit.composition._yaml import parse_yaml
from seamkit.errors import ConfigIssue
from seamkit.testing import make_test_ctx
from seamkit.values import LLMResult, Message, ToolCall, ToolResult, Usage

__test__ = False


async def no_chat(model: Any, request: Any) -> LLMResult:
    raise AssertionError("no model call expected")


def ectx() -> EvalContext:
    return EvalContext(make_test_ctx(), no_chat)


def attempt(output: Any = "", *, expected: Any = None, transcript: tuple[Message, ...] | None = None,
            usage: Usage | None = None, latency: float = 0.5, citation_ids: tuple[str, ...] = (),
            task: str = "the task") -> Attempt:
    """An attempt whose run answered ``output`` (its text: ``output`` when a str, else "")."""
    if transcript is None:
        transcript = (Message.user(task), Message.assistant(output if isinstance(output, str) else "{}"))
    result = AgentResult(output, transcript, usage if usage is not None else Usage(), "completed", "run-1",
                         citation_ids=citation_ids)
    return Attempt(EvalCase("c1", task, expected), 0, result, None, latency)


def failed_attempt(error: str = "ProviderError(timeout): too slow", *, expected: Any = "x") -> Attempt:
    return Attempt(EvalCase("c1", "the task", expected), 0, None, error, 7.5)


def with_tools(*calls: tuple[str, dict[str, Any]], answer: str = "done", results: tuple[str, ...] = ()) -> Attempt:
    """An attempt whose run made ``calls`` (name, arguments) in one batch, then answered."""
    tcs = tuple(ToolCall(f"call_{i}", name, args) for i, (name, args) in enumerate(calls))
    res = tuple(ToolResult(tc.id, tc.name, results[i] if i < len(results) else "ok") for i, tc in enumerate(tcs))
    transcript: tuple[Message, ...] = (Message.user("the task"),)
    if tcs:
        transcript += (Message("assistant", tcs), Message("tool", res))
    transcript += (Message.assistant(answer),)
    return attempt(answer, transcript=transcript)


def build(yaml_text: str) -> Any:
    """Build the evaluator written as YAML (``{use: NAME, **params}``) through the registry."""
    doc = parse_yaml(yaml_text, {})
    assert not doc.problems, doc.problems
    raw = dict(doc.data)
    return get_registry().build("evaluator", raw.pop("use"), raw)


def located_issues(yaml_text: str, file: str = "suite.yaml") -> list[ConfigIssue]:
    """The issues loading ``evaluators:`` (a YAML list of evaluator slots) reports, located as a
    composition's are (file, line, column, key path); ``[]`` when every entry is valid."""
    doc = parse_yaml(yaml_text, {})
    assert not doc.problems, doc.problems
    ctx = Context(file, doc.values, doc.keys, doc.secret_paths, doc.secrets, set(doc.poisoned))
    for i, raw in enumerate(doc.data["evaluators"]):
        check_slot(ctx, get_registry(), _ref_class("evaluator"), raw, ("evaluators", i))
    return ctx.issues


FREE = Usage(input_tokens=10, output_tokens=5, requests=1, cost=Decimal(0), cost_source="local")
