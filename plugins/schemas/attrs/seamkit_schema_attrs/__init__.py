"""seamkit's ``attrs`` typed-output flavour (a ``schema_adapter`` component)."""
