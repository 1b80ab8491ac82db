"""seamkit-embeddings-st: sentence-transformers embeddings (kind ``memory``, name ``sentence_transformers``)."""
