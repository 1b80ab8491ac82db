"""The service catalog and the word-overlap search over it.

A catalog is JSON: ``{"services": [{"id", "name", "description", "keywords": [...], "team"}, ...]}``
(the bundled one, ``catalog.json`` in this package, lists twelve IT and facilities services).
:func:`search` scores each service by the query words it shares with the service's name, keywords
and description; no index, no dependencies: a desk catalog has tens of entries, not millions.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Service", "bundled_catalog", "load_catalog", "parse_catalog", "search"]

_WORD = re.compile(r"[a-z0-9]+")
# words that say nothing about which service is meant; counting them would rank by chance
_STOP = frozenset(
    "a an and are as at be but by can do for from get have help i in is it me my need not of on or our "
    "please the to up we with would you your".split()
)
# a name or keyword word is a stronger signal than a word of the description
_NAME_WEIGHT, _KEYWORD_WEIGHT, _DESCRIPTION_WEIGHT = 3, 2, 1
_ID = re.compile(r"[a-z0-9][a-z0-9-]*")


@dataclass(frozen=True, slots=True)
class Service:
    """One catalog entry: ``id`` (lower-case, ``-``), ``name``, ``description``, ``keywords`` and
    the ``team`` that handles it."""

    id: str
    name: str
    description: str
    keywords: tuple[str, ...]
    team: str

    def summary(self) -> dict[str, str]:
        """``{"id", "name", "team"}``: what a match shows."""
        return {"id": self.id, "name": self.name, "team": self.team}


def _words(text: str) -> set[str]:
    out = set()
    for w in _WORD.findall(text.lower()):
        if w in _STOP:
            continue
        # plural and singular match ("printers" finds "printer"); not "ss" ("access")
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.add(w)
    return out


def parse_catalog(data: Any, *, source: str = "catalog") -> tuple[Service, ...]:
    """The services of catalog JSON data (see the module doc). Raises ``ValueError`` naming
    ``source`` and the entry for a wrong shape, a missing or empty field, an invalid or repeated id."""
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, list) or not services:
        raise ValueError(f"{source}: expected an object with a non-empty 'services' list")
    out: list[Service] = []
    seen: set[str] = set()
    for i, entry in enumerate(services):
        where = f"{source}: services[{i}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where} is not an object")
        extra = set(entry) - {"id", "name", "description", "keywords", "team"}
        if extra:
            raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
        for key in ("id", "name", "description", "team"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise ValueError(f"{where}: {key!r} must be a non-empty string")
        keywords = entry.get("keywords", [])
        if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
            raise ValueError(f"{where}: 'keywords' must be a list of strings")
        if not _ID.fullmatch(entry["id"]):
            raise ValueError(f"{where}: id {entry['id']!r} must be lower-case letters, digits and '-'")
        if entry["id"] in seen:
            raise ValueError(f"{where}: id {entry['id']!r} appears twice")
        seen.add(entry["id"])
        out.append(Service(entry["id"], entry["name"], entry["description"], tuple(keywords), entry["team"]))
    return tuple(out)


def load_catalog(path: Path) -> tuple[Service, ...]:
    """The services of the catalog file ``path`` (UTF-8 JSON). Raises ``ValueError`` when it cannot
    be read or parsed, or has the wrong shape (see :func:`parse_catalog`)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read the catalog {str(path)!r}: {exc}") from None
    return parse_catalog(data, source=str(path))


@functools.cache
def bundled_catalog() -> tuple[Service, ...]:
    """The bundled catalog (read once, on first use)."""
    from importlib.resources import files

    text = files("seamkit_servicedesk").joinpath("catalog.json").read_text(encoding="utf-8")
    return parse_catalog(json.loads(text), source="seamkit_servicedesk/catalog.json")


@functools.cache
def _index(service: Service) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    return (frozenset(_words(service.name)), frozenset(_words(" ".join(service.keywords))),
            frozenset(_words(service.description)))


def score(query: str, service: Service) -> int:
    """How well ``query`` matches ``service``: each query word found in the name counts 3, in the
    keywords 2, in the description 1 (case-insensitive, stop words ignored); 0 is no match."""
    name, keywords, description = _index(service)
    return sum(_NAME_WEIGHT * (w in name) + _KEYWORD_WEIGHT * (w in keywords)
               + _DESCRIPTION_WEIGHT * (w in description) for w in _words(query))


def search(query: str, services: tuple[Service, ...], *, limit: int = 3) -> list[Service]:
    """The at most ``limit`` services matching ``query`` best, best first (ties: catalog order);
    ``[]`` when no service shares a word with it."""
    scored = [(score(query, s), -i, s) for i, s in enumerate(services)]
    hits = sorted((t for t in scored if t[0] > 0), key=lambda t: (t[0], t[1]), reverse=True)
    return [s for _, _, s in hits[:limit]]
