"""Config models of the service-desk capabilities (imports only pydantic and the standard library)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RequestStatusConfig", "SearchServicesConfig", "SubmitRequestConfig"]


class SearchServicesConfig(BaseModel):
    """Parameters of ``use: search_services``."""

    model_config = ConfigDict(extra="forbid")
    catalog: Path | None = Field(
        default=None,
        description="A catalog JSON file ({services: [{id, name, description, keywords, team}]}) instead of "
        "the bundled one; a relative path is resolved against the composition file's directory. It is read "
        "and checked when the capability is built.",
    )
    max_matches: int = Field(default=3, ge=1, le=10, description="Most services one search returns")


class SubmitRequestConfig(BaseModel):
    """Parameters of ``use: submit_request`` (none yet; unknown keys are refused)."""

    model_config = ConfigDict(extra="forbid")


class RequestStatusConfig(BaseModel):
    """Parameters of ``use: request_status`` (none yet; unknown keys are refused)."""

    model_config = ConfigDict(extra="forbid")
