"""seamkit.plugin has every name a store or checkpoint plugin needs (docs/plugins/stores.md imports
only from it), the codec module among them, loaded only when asked for."""

from __future__ import annotations

import subprocess
import sys

import seamkit.plugin as plugin

STORE_NAMES = (
    "Scope", "StorePort", "CheckpointPort", "ClockPort", "CheckpointRecord", "CheckpointInfo", "StoredCheckpoint",
    "FINISHED_STATUSES", "scope_namespace", "SingleFlight", "StoreUnavailable", "StoreValueError",
    "TTLNotSupported", "CheckpointConflict", "CodecError", "codec", "hookimpl", "freeze", "FrozenDict",
)


def test_every_store_name_is_exported() -> None:
    for name in STORE_NAMES:
        assert name in plugin.__all__ and name in dir(plugin), name
        assert getattr(plugin, name) is not None


def test_codec_is_the_codec_module_and_loads_lazily() -> None:
    from seamkit._durability import codec

    assert plugin.codec is codec
    code = ("import sys, seamkit.plugin as p; assert 'seamkit._durability.codec' not in sys.modules; "
            "c = p.codec; assert c.loads(c.dumps({'a': [1]})) == {'a': [1]}")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
