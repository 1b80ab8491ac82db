"""seamkit's ``dataclass`` typed-output flavour (a ``schema_adapter`` component)."""
