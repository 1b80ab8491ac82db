"""Request building: a versioned prompt, a cache-stable prefix with grounding, a compacted tail.

See :mod:`seamkit._request.builder`, and :mod:`seamkit._request.fit` for a request over its budget.
"""

from seamkit._request.builder import (
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
from seamkit._request.fit import Fitting, fit_request

__all__ = [
    "BuiltRequest",
    "ContextBudgetExceeded",
    "Fitting",
    "GROUNDING_HEADER",
    "PromptVariablesError",
    "RECORD_KEY",
    "RequestBuilder",
    "SCHEMA_HEADER",
    "WorkingContext",
    "check_variables",
    "fit_request",
    "last_user_text",
    "load_grounding",
    "record_grounding",
]
