"""seamkit's ``pydantic`` typed-output flavour (a ``schema_adapter`` component)."""
