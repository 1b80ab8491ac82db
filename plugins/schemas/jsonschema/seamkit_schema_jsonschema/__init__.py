"""seamkit's ``jsonschema`` typed-output flavour (a ``schema_adapter`` component)."""
