"""seamkit-retrieval: the ``vector_memory`` grounding source (see :mod:`seamkit_retrieval.memory`)."""
