"""Fixtures for the anthropic provider's tests (helpers live in ``anthropic_wire_helpers``)."""

from __future__ import annotations

import pytest
from anthropic_wire_helpers import Build, build


@pytest.fixture
def build_provider() -> Build:
    """``build_provider(*replies, env=None, **config) -> (provider, transport)``: a provider on a
    replaying transport (see :func:`anthropic_wire_helpers.build`)."""
    return build
