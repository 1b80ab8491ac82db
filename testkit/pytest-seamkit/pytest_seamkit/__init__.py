"""pytest-seamkit: seamkit's test kit as a pytest plugin (``pip install seamkit[test]`` once it is
published; until then ``pip install -e testkit/pytest-seamkit`` from a checkout of seamkit).

- :mod:`pytest_seamkit.conformance`: the conformance suites a plugin's tests subclass
  (:class:`~pytest_seamkit.conformance.StoreConformance`,
  :class:`~pytest_seamkit.conformance.CheckpointConformance`,
  :class:`~pytest_seamkit.conformance.ProviderConformance`).
- :mod:`pytest_seamkit.plugin` (entry point ``pytest11``): the fixtures ``seamkit_ctx``,
  ``register_plugin`` and ``no_network``, and the ``--seamkit-block-network`` option. Installing
  the plugin adds no autouse fixture: nothing runs in a test that does not ask for it.

The scripted model, the in-memory store and the other test values stay in the host
(:mod:`seamkit.testing`), importable without pytest.
"""
