"""Model-neutral calls: ``seamkit.ask(binding, prompt, ...) -> Answer``.

- :mod:`seamkit._calls.binding`: ``Binding``, ``CredentialRef``, ``CallLimits`` (light: no pydantic).
- :mod:`seamkit._calls.answer`: ``Answer``, ``Session``, ``AskFailed``.
- :mod:`seamkit._calls.ask`: ``ask`` and ``ask_sync`` (they load the agent machinery).

Use them from the top level: ``from seamkit import ask, Binding, CallLimits``.
"""
