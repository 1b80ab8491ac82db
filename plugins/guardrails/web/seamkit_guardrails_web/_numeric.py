"""Numeric host interpretation: the WHATWG URL standard's IPv4 parser (the legacy inet_aton forms).

Sources:

- WHATWG URL Standard, section 3.5 "Host parsing": the *ends in a number checker* and the *IPv4
  parser* / *IPv4 number parser* (https://url.spec.whatwg.org/#concept-ipv4-parser).
- inet_aton(3) (glibc, BSD): "a.b.c.d", "a.b.c", "a.b", "a"; each part decimal, octal (leading
  ``0``) or hexadecimal (leading ``0x``); the last part fills the remaining bytes. glibc's
  getaddrinfo(3) accepts the same forms for a numeric host (``__inet_aton_exact``), so
  ``http://2130706433/`` or ``http://0x7f.1/`` reach 127.0.0.1 through httpx, which passes such a
  host to getaddrinfo unchanged.
"""

from __future__ import annotations

__all__ = ["NotNumeric", "ends_in_a_number", "parse_ipv4"]

_DIGITS = frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_OCT = frozenset("01234567")


class NotNumeric(ValueError):
    """A host that ends in a number but is not a valid IPv4 spelling (e.g. ``1.2.3.4.5``,
    ``08.1``, ``256.256``): a resolver's answer for it is not predictable, so it is refused."""


def _last_label(host: str) -> str:
    if host.endswith("."):
        host = host[:-1]
    return host.rpartition(".")[2]


def ends_in_a_number(host: str) -> bool:
    """True when ``host`` (ASCII, lower case) ends in a number per the WHATWG *ends in a number
    checker*: its last label (ignoring one trailing dot) is all ASCII digits, or ``0x`` followed
    by hexadecimal digits only (possibly none)."""
    last = _last_label(host)
    if not last or last[0] not in _DIGITS:  # the common case, a name ending in letters, stops here
        return False
    if _DIGITS.issuperset(last):
        return True
    return last[:2] in ("0x", "0X") and _HEX.issuperset(last[2:])


def _number(part: str) -> int:
    """The WHATWG *IPv4 number parser*: ``0x``/``0X`` prefix: hexadecimal; otherwise a leading
    ``0`` (and more digits): octal; else decimal. Raises :class:`NotNumeric`, also for a bare
    ``0x``, which WHATWG reads as 0 but inet_aton refuses."""
    if not part:
        raise NotNumeric("empty part")
    if part[:2] in ("0x", "0X"):
        digits, radix, allowed = part[2:], 16, _HEX
    elif len(part) > 1 and part[0] == "0":
        digits, radix, allowed = part[1:], 8, _OCT
    else:
        digits, radix, allowed = part, 10, _DIGITS
    if not digits:
        if radix == 16:
            # WHATWG reads a bare "0x" as 0, glibc's inet_aton refuses it (and getaddrinfo then
            # looks the host up as a name): the readings disagree, so the host is refused.
            raise NotNumeric(f"{part!r} has no digits")
        return 0
    if not allowed.issuperset(digits):
        raise NotNumeric(f"{part!r} is not a number in base {radix}")
    return int(digits, radix)


def parse_ipv4(host: str) -> int:
    """The IPv4 address (as an integer, 0..2**32-1) that ``host`` spells, per the WHATWG IPv4
    parser: 1 to 4 dot-separated numbers (one trailing dot ignored), every part but the last at
    most 255, the last filling the remaining bytes. Raises :class:`NotNumeric` otherwise."""
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4:
        raise NotNumeric("more than four parts")
    numbers = [_number(p) for p in parts]
    last = numbers.pop()
    if any(n > 255 for n in numbers):
        raise NotNumeric("a part other than the last is over 255")
    if last >= 256 ** (4 - len(numbers)):
        raise NotNumeric("the last part is too large")
    value = last
    for i, n in enumerate(numbers):
        value += n << (8 * (3 - i))
    return value
