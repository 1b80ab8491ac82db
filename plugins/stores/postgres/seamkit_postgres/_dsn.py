"""Keeping the DSN secret in messages (standard library only: imported by the light config module).

- :func:`secret_fragments`: the substrings of a DSN that must never be shown (the DSN itself and
  its password, as written and percent-decoded).
- :func:`scrub`: a message with those fragments masked and, for libpq's connection-string parse
  errors (which quote pieces of the DSN, e.g. ``invalid percent-encoded token: "s3cr%zzpw"``),
  the quoted pieces hidden too. Option names stay visible when they are plain identifiers that
  are not part of a password (``invalid connection option "bogus"``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

__all__ = ["MASK", "conninfo_problem", "is_conninfo_error", "password_fragments", "scrub", "secret_fragments"]

MASK = "***"

# ``password=...`` in a libpq key=value string: quoted ('...' with \' and \\ escapes) or up to a space
_KV_PASSWORD = re.compile(r"(?:^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'?|\S+)", re.IGNORECASE)
_QUOTED = re.compile(r'"([^"]*)"')
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
# words of libpq's connection-string parse errors (fe-connect.c conninfo_parse / conninfo_uri_parse)
_PARSE_ERROR_WORDS = (
    "connection info string",
    "percent-encoded",
    "in URI",
    "URI query parameter",
    "invalid connection option",
    "internal parser routine",
)
# quoted tokens that are libpq's own punctuation, never a piece of the DSN
_PUNCTUATION = frozenset({"=", "]", ":", "/"})


def password_fragments(dsn: str) -> list[str]:
    """The password of ``dsn`` as it may be shown by libpq or Python: raw and percent-decoded for
    a URL; as written, unquoted and unescaped for a key=value string. Never raises."""
    parts: set[str] = set()
    text = dsn.strip()
    if "://" in text:
        try:
            password = urlsplit(text).password
        except ValueError:
            password = None
        if password is None:
            # urlsplit gives up on some malformed URLs: take what lies between "user:" and "@"
            match = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://[^:/@]*:([^@]*)@", text)
            password = match.group(1) if match else None
        if password:
            parts.update({password, unquote(password)})
    else:
        for match in _KV_PASSWORD.finditer(text):
            raw = match.group(1)
            parts.add(raw)
            if raw.startswith("'"):
                inner = raw[1:-1] if raw.endswith("'") and len(raw) > 1 else raw[1:]
                parts.update({inner, re.sub(r"\\(.)", r"\1", inner)})
    return sorted((p for p in parts if p), key=len, reverse=True)


def secret_fragments(dsn: str) -> list[str]:
    """Substrings of ``dsn`` that must never be shown, longest first: the whole DSN and its
    password (see :func:`password_fragments`). Never raises."""
    parts = {dsn, dsn.strip(), *password_fragments(dsn)}
    return sorted((p for p in parts if p), key=len, reverse=True)


def is_conninfo_error(message: str) -> bool:
    """True when ``message`` looks like one of libpq's connection-string parse errors."""
    return any(word in message for word in _PARSE_ERROR_WORDS)


def scrub(message: str, secrets: Iterable[str], passwords: Iterable[str] = ()) -> str:
    """``message`` with every secret fragment replaced by ``***``; in a libpq parse error, the
    quoted pieces of the DSN are hidden as well, but for option names that are identifiers and
    no part of any of ``passwords`` (see the module docstring)."""
    fragments = sorted((s for s in secrets if s), key=len, reverse=True)
    hidden = [p for p in passwords if p]
    if is_conninfo_error(message):

        def hide(match: re.Match[str]) -> str:
            token = match.group(1)
            before = message[: match.start()].rstrip(": ")
            named = before.endswith(("invalid connection option", "invalid URI query parameter"))
            if token in _PUNCTUATION:
                return match.group(0)
            if named and _IDENTIFIER.match(token) and not any(token in p for p in hidden):
                return match.group(0)
            return f'"{MASK}"'

        message = _QUOTED.sub(hide, message)
    # a short password (one letter) only inside the DSN and its user:pw@, never on its own
    from seamkit.plugin import mask_secrets  # light (the standard library only)

    return mask_secrets(message, fragments)


def conninfo_problem(exc: BaseException, dsn: str) -> str:
    """A one-line description of ``exc`` (raised for ``dsn``) without any part of the DSN's secrets."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = scrub(text, secret_fragments(dsn), password_fragments(dsn))
    if "://" not in dsn and "=" not in dsn:
        text += " (expected a postgresql://user:password@host:port/dbname URL or key=value pairs)"
    return text
