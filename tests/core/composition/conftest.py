"""Fixtures of the composition tests."""

from __future__ import annotations

import pytest
from composition_plugins import make_registry
from seamkit._plugins.registry import Registry


@pytest.fixture
def registry() -> Registry:
    """A private registry: the test kit's ``scripted`` provider plus the components of
    :mod:`composition_plugins` (tools, a middleware, providers, a name two distributions share)."""
    return make_registry()
