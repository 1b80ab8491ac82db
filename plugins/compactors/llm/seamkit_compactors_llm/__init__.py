"""seamkit compactors that call a model: ``summarization`` and ``importance``.

Components (kind ``compactor``) are registered lazily by :mod:`seamkit_compactors_llm.plugin`;
the implementations are in :mod:`seamkit_compactors_llm.summarization` and
:mod:`seamkit_compactors_llm.importance`.
"""
