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
from collections.abc import Iterable

__all__ = ["MASK", "MIN_SECRET_LENGTH", "is_secret_name", "mask_message", "mask_secrets", "secret_contexts",
           "short_secret_pattern"]

# seamkit's one vocabulary of secrets (a light module: the composition models re-export it)
MASK = "***"
#: Secrets shorter than this are masked only inside the longer value they were put into (a DSN
#: holding a one-letter password: :func:`secret_contexts`), never on their own; environment
#: values shorter than this that are no secret are not masked.
MIN_SECRET_LENGTH = 4
# "token" is a credential (token, access_token, AUTH_TOKEN, bearer_token), but not a count of the
# model's tokens (max_tokens, max_output_tokens, n_tokens, tokens_per_minute, budget_tokens,
# max_token_count) nor a tokenizer: those are settings, shown and stored like any other
_TOKEN = r"(?<!max[_-])(?<!min[_-])(?<!num[_-])(?<![^a-z0-9]n[_-])(?<!^n[_-])token(?!s|iz)"
_WORDS = rf"api[_-]?key|{_TOKEN}|secret|passw(?:or)?d|credential|private[_-]?key|auth"
_SECRET_NAME = re.compile(rf"(?i)({_WORDS})")


def is_secret_name(name: str) -> bool:
    """Whether a parameter called ``name`` holds a secret (``api_key``, ``token``, ``access_token``,
    ``password``, ``Authorization``...); a count of tokens (``max_tokens``, ``n_tokens``,
    ``tokens_per_minute``) is not one."""
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


def short_secret_pattern(secrets: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern of the secrets shorter than :data:`MIN_SECRET_LENGTH` as tokens of their own: not
    next to a letter, digit or ``_``. ``None`` when there is none. (No masker uses it any more: a
    short secret is masked only inside the longer value it was put into, see :func:`mask_secrets`;
    kept for plugins that imported it.)"""
    parts: list[str] = []
    for s in sorted({s for s in secrets if s and len(s) < MIN_SECRET_LENGTH}, key=len, reverse=True):
        before = r"(?<!\w)" if _WORD.match(s[0]) else ""
        after = r"(?!\w)" if _WORD.match(s[-1]) else ""
        parts.append(before + re.escape(s) + after)
    return re.compile("|".join(parts)) if parts else None


_WORD = re.compile(r"\w")
_USERINFO = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://([^/\s@'\"]+@)")


def secret_contexts(value: str, secret: str) -> list[str]:
    """Where a short ``secret`` (under :data:`MIN_SECRET_LENGTH` characters) is to be masked, given
    ``value``, the longer text it was put into (``postgresql://user:${PW}@host/db`` with ``PW=g``):
    ``value`` itself and the user-info of each URL in it that holds the secret (``user:g@``), each
    of :data:`MIN_SECRET_LENGTH` characters or more. A short secret is never masked on its own: a
    one-letter password would garble every word and every ``e`` (and show where it is)."""
    if not secret or secret not in value:
        return []
    found = [value] + [m.group(1) for m in _USERINFO.finditer(value) if secret in m.group(1)]
    return [f for f in dict.fromkeys(found) if len(f) >= MIN_SECRET_LENGTH]


def mask_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` of :data:`MIN_SECRET_LENGTH` characters or more replaced by
    ``***`` wherever it occurs, longest first. Shorter ones are not masked on their own: pass the
    longer values they were put into instead (:func:`secret_contexts`: a DSN holding a one-letter
    password, its ``user:g@``), so that a one-letter password neither masks that letter in every
    word nor shows itself by where the masks are. A short one among ``secrets`` adds the URL
    user-info of each longer one holding it (``user:g@`` of the DSN), as :func:`secret_contexts`."""
    values = {s for s in secrets if s}
    long = {s for s in values if len(s) >= MIN_SECRET_LENGTH}
    for short in values - long:
        for value in list(long):
            long.update(secret_contexts(value, short))
    for s in sorted(long, key=len, reverse=True):
        text = text.replace(s, MASK)
    return text


def mask_message(text: str) -> str:
    """``text`` with what looks like a secret replaced by ``***`` (see the module doc). Masks too
    much rather than too little: the word after ``token`` is masked even when it is not one."""
    for value in _env_secrets():
        text = text.replace(value, MASK)
    text = _URL_USERINFO.sub(rf"\1{MASK}@", text)
    text = _KEY_SHAPES.sub(MASK, text)
    return _NAMED.sub(lambda m: m.group(1) + (m.group(2) if m.group(2) == MASK else MASK), text)
