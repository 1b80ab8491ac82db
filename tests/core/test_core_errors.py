"""The error tree (seamkit.errors): every error class in one module, the drawing in its docstring
matches the classes, and the family bases catch their members."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
import seamkit
import seamkit.errors as errors
from seamkit.errors import (
    BudgetExceeded,
    CheckpointConflict,
    EffectUncertain,
    GuardrailTripped,
    RunCancelled,
    RunError,
    RunNotResumable,
    SeamkitError,
    StoreError,
    StoreUnavailable,
    StoreValueError,
    TTLNotSupported,
)

_LINE = re.compile(r"^(?P<prefix>[ │]*)[├└]── (?P<name>\w+)")


def _drawn_tree() -> dict[str, str]:
    """``{class name: parent name}`` as the module docstring draws it."""
    parents: dict[str, str] = {}
    stack = ["SeamkitError"]
    for line in (errors.__doc__ or "").splitlines():
        m = _LINE.match(line.removeprefix("    "))
        if not m:
            continue
        depth = len(m.group("prefix")) // 4
        del stack[depth + 1:]
        parents[m.group("name")] = stack[depth]
        stack.append(m.group("name"))
    return parents


def _error_classes() -> dict[str, type[BaseException]]:
    return {n: c for n in errors.__all__ if isinstance(c := getattr(errors, n), type) and issubclass(c, BaseException)}


def test_the_drawn_tree_is_the_class_tree() -> None:
    drawn = _drawn_tree()
    classes = _error_classes()
    assert set(drawn) | {"SeamkitError"} == set(classes)
    for name, parent in drawn.items():
        seamkit_bases = [b.__name__ for b in classes[name].__bases__ if issubclass(b, SeamkitError)]
        assert seamkit_bases == [parent], name


def test_every_seamkit_error_class_is_defined_in_seamkit_errors() -> None:
    """No stray error classes elsewhere in the host: each subclass of SeamkitError the host's
    public modules reach lives in seamkit.errors (and is exported there)."""
    import seamkit.capabilities
    import seamkit.composition
    import seamkit.plugin
    import seamkit.workflows

    found = set()
    for mod in (seamkit, seamkit.plugin, seamkit.composition, seamkit.workflows, seamkit.capabilities):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if isinstance(obj, type) and issubclass(obj, SeamkitError):
                found.add(obj)
    strays = sorted(c.__qualname__ for c in found if c.__module__ != "seamkit.errors")
    assert strays == []
    assert {c.__name__ for c in found} <= set(errors.__all__)


def _store_errors() -> list[StoreError]:
    return [StoreUnavailable("down"), StoreValueError("not an int"), TTLNotSupported("ttl=0"),
            CheckpointConflict("run-1", 2, 3)]


def _run_errors() -> list[RunError]:
    return [RunCancelled("stop"), RunNotResumable("run-1", "finished"),
            BudgetExceeded("over", ceiling=Decimal("1"), spent=Decimal("1"), reserved=Decimal("0"),
                           needed=Decimal("0.1")),
            GuardrailTripped("pii", "output", "an email address"), EffectUncertain("k1", "crashed")]


@pytest.mark.parametrize("exc", _store_errors(), ids=lambda e: type(e).__name__)
def test_except_store_error_catches_each_store_failure(exc: StoreError) -> None:
    with pytest.raises(StoreError):
        raise exc
    assert not isinstance(exc, RunError)


@pytest.mark.parametrize("exc", _run_errors(), ids=lambda e: type(e).__name__)
def test_except_run_error_catches_each_unfinished_run(exc: RunError) -> None:
    with pytest.raises(RunError):
        raise exc
    assert isinstance(exc, SeamkitError) and not isinstance(exc, StoreError)


def test_value_errors_stay_value_errors() -> None:
    """Moving into the tree kept the builtin bases callers may already catch."""
    assert issubclass(TTLNotSupported, ValueError)
    assert issubclass(errors.PromptVariablesError, ValueError)
    assert issubclass(errors.ContextBudgetExceeded, ValueError)
    assert issubclass(errors.UnsupportedSchemaType, TypeError)
    assert issubclass(errors.ComponentBuildError, errors.ConfigError)


def test_moved_classes_are_the_ones_their_modules_raise() -> None:
    from seamkit._calls.answer import AskFailed
    from seamkit._guardrails import GuardrailTripped as FromGuardrails
    from seamkit.composition import ComponentBuildError
    from seamkit.workflows import StepError, WorkflowFailed, WorkflowInvalid

    assert AskFailed is errors.AskFailed is seamkit.AskFailed
    assert ComponentBuildError is errors.ComponentBuildError
    assert FromGuardrails is GuardrailTripped
    assert (StepError, WorkflowFailed, WorkflowInvalid) == (errors.StepError, errors.WorkflowFailed,
                                                            errors.WorkflowInvalid)


def test_unsupported_schema_type_describes_the_type() -> None:
    exc = errors.UnsupportedSchemaType(list[int], ("pydantic",))
    assert "list[int]" in str(exc) and "pydantic" in str(exc)
