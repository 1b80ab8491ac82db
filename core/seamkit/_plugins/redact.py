"""Masking secrets in the messages of a plugin's exceptions before seamkit shows them.

A plugin that fails often says why with what it was given: ``cannot connect to
postgres://admin:pw@db/prod``, ``bad token sk-...``. ``seamkit plugins`` (its table, ``--json``
and ``--check``) shows those messages, so :func:`mask_message` masks, as ``***``:

- the user-info of a URL (``scheme://user:password@host`` becomes ``scheme://***@host``), as
  :func:`seamkit._config_types.check_base_url` refuses to echo such a URL;
- the value after a name that looks secret (:func:`is_secret_name`'s words: ``token=...``,
  ``api_key: ...``, ``password ...``);
- words shaped like a provider's API key (``sk-...``, ``ghp_...``, ``xoxb-...``, ``AKIA...``, ``Bearer ...``);
- the value of every environment variable whose name looks secret (``OPENAI_API_KEY``...), as the
  CLI masks a composition's ``${NAME}`` values.
"""

from __future__ import annotations

import os
import re

__all__ = ["MASK", "MIN_SECRET_LENGTH", "is_secret_name", "mask_message"]

# seamkit's one vocabulary of secrets (a light module: the composition models re-export it)
MASK = "***"
#: Environment values shorter than this are not masked: masking them would garble text.
MIN_SECRET_LENGTH = 4
_WORDS = r"api[_-]?key|token|secret|passw(?:or)?d|credential|private[_-]?key|auth"
_SECRET_NAME = re.compile(rf"(?i)({_WORDS})")


def is_secret_name(name: str) -> bool:
    """Whether a parameter called ``name`` holds a secret (``api_key``, ``token``, ``password``...)."""
    return bool(_SECRET_NAME.search(name))
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"]+@")
_NAMED = re.compile(rf"(?i)(\b[\w.-]*(?:{_WORDS})[\w.-]*['\"]?\s*[=:]\s*['\"]?)([^\s'\",;)]+)")
_KEY_SHAPES = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{6,}|\bgh[pousr]_[A-Za-z0-9]{10,}|\bgithub_pat_[A-Za-z0-9_]{10,}"
    r"|\bxox[abpr]-[A-Za-z0-9-]{6,}|\bAKIA[A-Z0-9]{12,}|(?<=\bBearer )[^\s'\"]+"
)


def _env_secrets() -> list[str]:
    values = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def mask_message(text: str) -> str:
    """``text`` with what looks like a secret replaced by ``***`` (see the module doc). Masks too
    much rather than too little: the word after ``token`` is masked even when it is not one."""
    for value in _env_secrets():
        text = text.replace(value, MASK)
    text = _URL_USERINFO.sub(rf"\1{MASK}@", text)
    text = _KEY_SHAPES.sub(MASK, text)
    return _NAMED.sub(lambda m: m.group(1) + (m.group(2) if m.group(2) == MASK else MASK), text)
