"""Config models of the basic tools (imports only pydantic and the standard library)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["CalculatorConfig", "ClockConfig", "ReadFileConfig", "WriteFileConfig"]

_MiB = 1024 * 1024


class CalculatorConfig(BaseModel):
    """Parameters of ``use: calculator``."""

    model_config = ConfigDict(extra="forbid")
    max_length: int = Field(
        default=500, ge=1, le=100_000, description="Longest expression accepted, in characters"
    )
    max_digits: int = Field(
        default=1000,
        ge=16,
        le=100_000,
        description="Largest number (numerator or denominator of any intermediate result) in decimal "
        "digits; bigger results are refused instead of computed",
    )


class ClockConfig(BaseModel):
    """Parameters of ``use: clock``."""

    model_config = ConfigDict(extra="forbid")
    default_timezone: str = Field(
        default="UTC",
        description="IANA time zone (e.g. 'Europe/Paris') used when the call names none",
    )

    @field_validator("default_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        import zoneinfo

        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            raise ValueError(f"unknown IANA time zone {value!r}") from None
        return value


def _check_root(value: Any) -> Any:
    text = str(value) if isinstance(value, Path) else value
    if isinstance(text, str):
        if not text.strip():
            raise ValueError("root must name a directory")
        if "\x00" in text:
            raise ValueError("root contains a NUL byte")
    return value


class ReadFileConfig(BaseModel):
    """Parameters of ``use: read_file``."""

    model_config = ConfigDict(extra="forbid")
    root: Path = Field(
        description="Directory the tool may read under; it must exist (checked by `seamkit validate`). "
        "A relative path is resolved against the composition file's directory (in YAML) or the working "
        "directory when the tool is built. "
        "Nothing outside it can be read, symlinks included."
    )
    max_bytes: int = Field(
        default=_MiB, ge=1, description="Most bytes one call returns; a call's own max_bytes cannot exceed it"
    )

    _root = field_validator("root", mode="before")(_check_root)

    @field_validator("root", mode="after")
    @classmethod
    def _root_exists(cls, value: Path) -> Path:
        # After the composition made a relative root absolute (next to the YAML file), so
        # `seamkit validate` reports a missing root instead of the first run.
        if not value.exists():
            raise ValueError(f"the root directory {str(value)!r} does not exist")
        if not value.is_dir():
            raise ValueError(f"the root {str(value)!r} is not a directory")
        return value


class WriteFileConfig(BaseModel):
    """Parameters of ``use: write_file``."""

    model_config = ConfigDict(extra="forbid")
    root: Path = Field(
        description="Directory the tool may write under. A relative path is resolved against the composition "
        "file's directory (in YAML) or the working directory when the tool is built. Nothing outside it can "
        "be written, symlinks included."
    )
    create_dirs: bool = Field(
        default=True, description="Create missing parent directories (inside root only), and root itself"
    )
    max_bytes: int = Field(default=_MiB, ge=1, description="Largest content one call may write, in bytes (UTF-8)")

    _root = field_validator("root", mode="before")(_check_root)
