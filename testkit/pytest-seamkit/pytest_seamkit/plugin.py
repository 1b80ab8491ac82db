"""pytest plugin (entry point ``pytest11`` of pytest-seamkit): fixtures of the seamkit test kit.

- ``seamkit_ctx``: a :class:`~seamkit.runtime.context.RunContext` from ``make_test_ctx()``.
- ``register_plugin``: ``register_plugin(module_or_object, name=...)`` registers a plugin into
  the process-wide registry for one test and removes it afterwards.
- ``no_network``: blocks non-loopback connections for the test; ``--seamkit-block-network``
  blocks them for the whole session. The plugin defines no autouse fixture.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from seamkit.testing.context import make_test_ctx
from seamkit.testing.network import block_network


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
    from seamkit.plugins.registry import get_registry

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
