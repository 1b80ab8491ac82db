"""The ``clock`` tool reads the run's clock (FakeClock in tests)."""

from __future__ import annotations

from datetime import UTC, datetime

import pydantic
import pytest
from seamkit.errors import ToolArgumentError, ToolError
from seamkit.testing import FakeClock, make_test_ctx
from seamkit_tools_basic.clock import build_clock, now_in
from seamkit_tools_basic.config import ClockConfig
from seamkit_tools_basic.errors import ClockError


async def call(tool, clock, **arguments):  # type: ignore[no-untyped-def]
    return await tool.invoke(tool.validate(arguments), make_test_ctx(clock=clock))


def test_schema_hides_the_context_and_documents_timezone() -> None:
    schema = build_clock().schema
    assert (schema.name, schema.side_effecting) == ("clock", False)
    props = schema.parameters["properties"]
    assert list(props) == ["timezone"]
    assert "IANA" in props["timezone"]["description"]
    assert "required" not in schema.parameters or schema.parameters["required"] == []
    assert "ISO 8601" in schema.description


async def test_utc_by_default_from_the_run_clock() -> None:
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    tool = build_clock()
    assert await call(tool, clock) == "2026-01-01T00:00:00+00:00"
    clock.advance(90.5)
    assert await call(tool, clock) == "2026-01-01T00:01:30+00:00"


@pytest.mark.parametrize(
    ("when", "zone", "expected"),
    [
        (datetime(2026, 1, 15, 12, tzinfo=UTC), "Europe/Paris", "2026-01-15T13:00:00+01:00"),
        (datetime(2026, 7, 15, 12, tzinfo=UTC), "Europe/Paris", "2026-07-15T14:00:00+02:00"),  # DST
        (datetime(2026, 1, 15, 3, tzinfo=UTC), "America/New_York", "2026-01-14T22:00:00-05:00"),
        (datetime(2026, 1, 15, 12, tzinfo=UTC), "Asia/Kolkata", "2026-01-15T17:30:00+05:30"),
        (datetime(2026, 1, 15, 12, tzinfo=UTC), "UTC", "2026-01-15T12:00:00+00:00"),
    ],
)
async def test_timezones(when: datetime, zone: str, expected: str) -> None:
    assert await call(build_clock(), FakeClock(when), timezone=zone) == expected


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "", "../../../etc/passwd", "/etc/localtime", "Europe/\x00"])
async def test_unknown_timezone_is_a_tool_error(zone: str) -> None:
    with pytest.raises(ClockError) as info:
        await call(build_clock(), FakeClock(), timezone=zone)
    assert isinstance(info.value, ToolError)
    assert "IANA" in str(info.value)


async def test_configured_default_timezone() -> None:
    tool = build_clock(ClockConfig(default_timezone="Asia/Tokyo"))
    assert await call(tool, FakeClock(datetime(2026, 1, 1, tzinfo=UTC))) == "2026-01-01T09:00:00+09:00"
    assert await call(tool, FakeClock(datetime(2026, 1, 1, tzinfo=UTC)), timezone="UTC") == "2026-01-01T00:00:00+00:00"


def test_config_validates_the_default_timezone() -> None:
    with pytest.raises(pydantic.ValidationError, match="unknown IANA time zone"):
        ClockConfig(default_timezone="Nowhere/Special")
    with pytest.raises(pydantic.ValidationError):
        ClockConfig.model_validate({"tz": "UTC"})


def test_validate_rejects_non_string_timezone() -> None:
    with pytest.raises(ToolArgumentError):
        build_clock().validate({"timezone": 5})


def test_naive_clock_values_are_taken_as_utc() -> None:
    assert now_in(datetime(2026, 3, 1, 8, 0), "Europe/Paris") == "2026-03-01T09:00:00+01:00"
