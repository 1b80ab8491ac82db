"""pytest plugin (entry point ``pytest11`` of pytest-seamkit): fixtures of the seamkit test kit.

- ``seamkit_ctx``: a :class:`~seamkit._runtime.context.RunContext` from ``make_test_ctx()``.
- ``register_plugin``: ``register_plugin(module_or_object, name=...)`` registers a plugin into
  the process-wide registry for one test and removes it afterwards.
- ``no_network``: blocks non-loopback connections for the test; ``--seamkit-block-network``
  blocks them for the whole session. The plugin defines no autouse fixture.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from seamkit.testing import block_network, make_test_ctx


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--seamkit-block-network",
        action="store_true",
        default=False,
        help="seamkit: refuse every non-loopback network connection during the test session",
    )


_BLOCK = pytest.StashKey[contextlib.ExitStack]()


def pytest_configure(config: pytest.Config) -> None:
    # a hook, not an autouse fixture: without the option, installing the plugin changes nothing
    if config.getoption("--seamkit-block-network", default=False):
        stack = contextlib.ExitStack()
        stack.enter_context(block_network())
        config.stash[_BLOCK] = stack


_LEFT_OUT = pytest.StashKey[dict[str, int]]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the conformance checks that do not apply to the component under test, as its test
    class declares it (``declared_features`` of a provider suite, ``declared_persistent`` of a
    store suite): they are deselected with the reason counted in the summary, not skipped."""
    left_out: dict[str, int] = {}
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        reason = _not_applicable(item)
        if reason is None:
            keep.append(item)
        else:
            drop.append(item)
            left_out[reason] = left_out.get(reason, 0) + 1
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
        config.stash[_LEFT_OUT] = left_out


def _not_applicable(item: pytest.Item) -> str | None:
    cls = getattr(item, "cls", None)
    if cls is None or "pytest_seamkit.conformance" not in sys.modules:
        return None  # no suite was imported: nothing to leave out
    from pytest_seamkit.conformance import CheckpointConformance, ProviderConformance, StoreConformance

    if not issubclass(cls, ProviderConformance | StoreConformance | CheckpointConformance):
        return None
    callspec = getattr(item, "callspec", None)
    params = dict(callspec.params) if callspec is not None else {}
    name = getattr(item, "originalname", item.name)
    decide = getattr(cls, "not_applicable", None)
    reason: str | None = decide(name, params) if decide is not None else None
    return None if reason is None else f"{cls.__name__}: {reason}"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    left_out = config.stash.get(_LEFT_OUT, None)
    if left_out:
        terminalreporter.write_sep("-", "seamkit conformance checks left out as not applicable")
        for reason, n in sorted(left_out.items()):
            terminalreporter.write_line(f"{n:4d}  {reason}")


def pytest_unconfigure(config: pytest.Config) -> None:
    stack = config.stash.get(_BLOCK, None)
    if stack is not None:
        stack.close()


@pytest.fixture
def seamkit_ctx() -> Any:
    return make_test_ctx()


@pytest.fixture
def no_network() -> Iterator[None]:
    with block_network():
        yield


@pytest.fixture
def register_plugin() -> Iterator[Callable[..., Any]]:
    from seamkit.plugin import get_registry

    registry = get_registry()
    added: list[str] = []

    def register(plugin: object, name: str | None = None, *, distribution: str = "test-plugin",
                 version: str = "0") -> Any:
        pname = name or getattr(plugin, "__name__", None) or f"test-plugin-{len(added)}"
        known = {r.plugin for r in registry.reports}
        report = registry.register_plugin(plugin, pname, distribution=distribution, version=version)
        if report.status == "ok" and report.plugin not in known:  # not one registered before, under any name
            added.append(report.plugin)
        return report

    yield register
    for name in added:
        registry.unregister_plugin(name)
