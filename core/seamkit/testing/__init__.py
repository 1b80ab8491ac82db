"""seamkit's test kit for applications and plugin authors (also a pytest plugin).

- :class:`ScriptedModel`: plays back scripted turns and records the requests it received.
- :class:`SchemaDrivenModel`: calls every advertised tool once with valid arguments, then answers.
- :func:`make_test_ctx`, :class:`FakeClock`, :func:`block_network`.
"""

from seamkit.testing.clock import FakeClock
from seamkit.testing.context import make_test_ctx
from seamkit.testing.models import SchemaDrivenModel, ScriptedModel, ScriptedTurn, example_for_schema
from seamkit.testing.network import NetworkBlocked, block_network

__all__ = [
    "FakeClock",
    "NetworkBlocked",
    "SchemaDrivenModel",
    "ScriptedModel",
    "ScriptedTurn",
    "block_network",
    "example_for_schema",
    "make_test_ctx",
]
