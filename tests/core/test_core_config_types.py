"""core/seamkit/_config_types.py: check_base_url, shared by the HTTP providers and the otel exporter."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from seamkit._config_types import check_base_url


@pytest.mark.parametrize(("url", "expected"), [
    ("  https://api.example.com/v1/  ", "https://api.example.com/v1"),
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
])
def test_a_good_url_comes_back_stripped(url: str, expected: str) -> None:
    assert check_base_url(url) == expected


@pytest.mark.parametrize(("url", "says"), [
    ("ftp://example.com", "base_url must start with http:// or https:// (got 'ftp://example.com')"),
    ("https://", "base_url 'https://' has no host"),
    ("https://example.com:99999", "base_url 'https://example.com:99999' is not a valid URL"),
])
def test_a_bad_url_is_named_with_its_field(url: str, says: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(says)):
        check_base_url(url)


def test_the_field_name_is_the_callers() -> None:
    with pytest.raises(ValueError, match=r"^endpoint must start with http:// or https://$"):
        check_base_url("grpc://collector", field="endpoint", echo=False)


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!$&'()*+,;=-._~",
               min_size=6, max_size=30),
       st.sampled_from(["ftp://u:{p}@h", "https://u:{p}@h:99999", "https://u:{p}@", "https://u:{p}@:1"]))
def test_a_url_with_credentials_is_never_repeated_in_the_error(password: str, template: str) -> None:
    url = template.format(p=password)
    try:
        check_base_url(url)
    except ValueError as exc:
        assert password not in str(exc)
