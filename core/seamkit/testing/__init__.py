"""seamkit's test kit for applications and plugin authors (also a pytest plugin).

- :class:`ScriptedModel`: plays back scripted turns and records the requests it received.
- :class:`SchemaDrivenModel`: calls every advertised tool once with valid arguments, then answers.
- :func:`make_test_ctx`, :class:`FakeClock`, :func:`block_network`.
- :class:`MemoryStore`: the in-memory reference backend of the store and checkpoint ports; their
  conformance suites are in :mod:`pytest_seamkit.conformance`.

Names load lazily: the package is imported on every start (it registers the ``scripted``
provider), so it must stay cheap.
"""

from __future__ import annotations

from seamkit._lazy import lazy_attributes

TYPE_CHECKING = False

_EXPORTS = {
    "FakeClock": "seamkit.testing.clock",
    "make_test_ctx": "seamkit.testing.context",
    "MemoryStore": "seamkit.testing.memory_store",
    "SchemaDrivenModel": "seamkit.testing.models",
    "ScriptedModel": "seamkit.testing.models",
    "ScriptedTurn": "seamkit.testing.models",
    "example_for_schema": "seamkit.testing.models",
    "NetworkBlocked": "seamkit.testing.network",
    "block_network": "seamkit.testing.network",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())


if TYPE_CHECKING:
    from seamkit.testing.clock import FakeClock as FakeClock
    from seamkit.testing.context import make_test_ctx as make_test_ctx
    from seamkit.testing.memory_store import MemoryStore as MemoryStore
    from seamkit.testing.models import (
        SchemaDrivenModel as SchemaDrivenModel,
    )
    from seamkit.testing.models import (
        ScriptedModel as ScriptedModel,
    )
    from seamkit.testing.models import (
        ScriptedTurn as ScriptedTurn,
    )
    from seamkit.testing.models import (
        example_for_schema as example_for_schema,
    )
    from seamkit.testing.network import NetworkBlocked as NetworkBlocked
    from seamkit.testing.network import block_network as block_network
