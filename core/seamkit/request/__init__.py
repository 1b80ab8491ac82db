"""Request building: a versioned prompt, a cache-stable prefix with grounding, a compacted tail.

See :mod:`seamkit.request.builder`.
"""

from seamkit.request.builder import (
    GROUNDING_HEADER,
    RECORD_KEY,
    SCHEMA_HEADER,
    BuiltRequest,
    ContextBudgetExceeded,
    PromptVariablesError,
    RequestBuilder,
    WorkingContext,
    check_variables,
    last_user_text,
    load_grounding,
    record_grounding,
)

__all__ = [
    "BuiltRequest",
    "ContextBudgetExceeded",
    "GROUNDING_HEADER",
    "PromptVariablesError",
    "RECORD_KEY",
    "RequestBuilder",
    "SCHEMA_HEADER",
    "WorkingContext",
    "check_variables",
    "last_user_text",
    "load_grounding",
    "record_grounding",
]
