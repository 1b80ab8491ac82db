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
    "FakeClock": "seamkit.testing._clock",
    "make_test_ctx": "seamkit.testing._context",
    "MemoryStore": "seamkit.testing._memory_store",
    "SchemaDrivenModel": "seamkit.testing._models",
    "ScriptedModel": "seamkit.testing._models",
    "ScriptedTurn": "seamkit.testing._models",
    "example_for_schema": "seamkit.testing._models",
    "NetworkBlocked": "seamkit.testing._network",
    "block_network": "seamkit.testing._network",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())


if TYPE_CHECKING:
    from seamkit.testing._clock import FakeClock as FakeClock
    from seamkit.testing._context import make_test_ctx as make_test_ctx
    from seamkit.testing._memory_store import MemoryStore as MemoryStore
    from seamkit.testing._models import (
        SchemaDrivenModel as SchemaDrivenModel,
    )
    from seamkit.testing._models import (
        ScriptedModel as ScriptedModel,
    )
    from seamkit.testing._models import (
        ScriptedTurn as ScriptedTurn,
    )
    from seamkit.testing._models import (
        example_for_schema as example_for_schema,
    )
    from seamkit.testing._network import NetworkBlocked as NetworkBlocked
    from seamkit.testing._network import block_network as block_network
